"""LinearChain, Viterbi and forward-backward against brute-force enumeration of tag sequences."""
from __future__ import annotations

import inspect
import itertools
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arborist.learn.eg
import arborist.learn.perceptron
from arborist.learn.baselines import SGD
from arborist.learn.eg import EG
from arborist.learn.perceptron import Perceptron
from arborist.weights import Weights
from arborist.sentence import Sentence
from arborist.tagger.chain import LinearChain
from arborist.tagger.features import CONJUNCTIONS, EMISSION_TEMPLATES, word_shape
from arborist.tagger.viterbi import chain_argmax, chain_log_z, chain_marginals, chain_tag_marginals
from arborist.legacy import structure_call
from arborist.registry import make_structure

from protocol import check_gradient, check_protocol, label_score

HASH_BITS = 14
WORDS = ["The", "dog", "saw", "a", "cat", "in", "Paris", "today", "1,984", "well-known", "."]
TAGS = ["DET", "NOUN", "VERB"]


@lru_cache(maxsize=None)
def all_sequences(n: int, K: int) -> tuple:
    return tuple(np.array(y, dtype=np.int32) for y in itertools.product(range(K), repeat=n))


def sentence(n: int, K: int = 3, **provenance) -> Sentence:
    words = [WORDS[i % len(WORDS)] for i in range(n)]
    tags = [TAGS[i % K] for i in range(n)]
    return Sentence.from_columns(words, None, tags, [t.lower() for t in tags], **provenance)


def chain(K: int, order: int, hash_bits: int = HASH_BITS, attribute: str = "upos") -> LinearChain:
    return LinearChain(TAGS[:K], attribute=attribute, order=order, hash_bits=hash_bits)


def random_scores(rng, structure, n, scale=2.0):
    # Invalid parts get random values too: every operation must ignore them.
    return rng.normal(size=structure.shape(n)) * scale


def hamming(gold, y):
    return int((np.asarray(gold) != np.asarray(y)).sum())


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("K", [1, 2, 3])
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_protocol_against_brute_force(n, K, order):
    rng = np.random.default_rng(1000 * order + 10 * n + K)
    structure = chain(K, order)
    labels = all_sequences(n, K)
    x = sentence(n, K)
    assert np.array_equal(structure.gold(x), [i % K for i in range(n)])
    for _ in range(2):
        scores = random_scores(rng, structure, n)
        gold = labels[int(rng.integers(len(labels)))]
        check_protocol(structure, x, scores, labels, gold, hamming, rng, HASH_BITS)


@pytest.mark.parametrize("order,n,K", [(1, 1, 3), (1, 3, 3), (2, 1, 2), (2, 2, 3), (2, 3, 2), (2, 4, 2)])
def test_marginals_are_gradient_of_log_z(order, n, K):
    rng = np.random.default_rng(10 * n + K)
    structure = chain(K, order)
    check_gradient(structure, sentence(n, K), random_scores(rng, structure, n))


@pytest.mark.parametrize("order", [1, 2])
def test_no_overflow_with_large_scores(order):
    rng = np.random.default_rng(3 + order)
    structure = LinearChain(["A", "B", "C", "D"], order=order, hash_bits=10)
    for n in (1, 5, 60):
        scores = random_scores(rng, structure, n, scale=1e4)
        mu, logz = chain_marginals(scores)
        assert np.isfinite(logz) and np.isfinite(mu).all()
        assert (mu >= 0).all() and (mu <= 1 + 1e-9).all()
        np.testing.assert_allclose(mu.reshape(n, -1).sum(axis=1), 1.0, atol=1e-6)
        assert not mu[~structure.valid_parts(n)].any()
        marg, _ = chain_tag_marginals(scores)  # the tag marginals, without the parts
        assert np.isfinite(marg).all()
        np.testing.assert_allclose(marg.sum(axis=1), 1.0, atol=1e-6)
        np.testing.assert_allclose(marg, mu.sum(axis=tuple(range(1, mu.ndim - 1))), atol=1e-9)
        tags, best = chain_argmax(scores)
        assert np.isclose(best, label_score(structure, None, scores, tags))
        # At this scale the distribution is nearly a point mass on the argmax, and log Z >= best.
        assert logz >= best - 1e-9 * abs(best)


@pytest.mark.parametrize("order", [1, 2])
def test_invalid_parts_are_never_used_and_start_parts_can_be_forbidden(order):
    rng = np.random.default_rng(21)
    K, n = 3, 5
    structure = chain(K, order)
    scores = random_scores(rng, structure, n)
    invalid = ~structure.valid_parts(n)
    # Exactly one valid part per (t, cur) history: K parts at t = 0, K^2 (K^3) later.
    assert (~invalid).sum() == (K + (n - 1) * K * K if order == 1 else K + K * K + (n - 2) * K ** 3)
    clean = np.where(invalid, 0.0, scores)
    tempting = np.where(invalid, 1e9, scores)  # START after the first word, real tags before it, ...
    for s in (tempting, np.where(invalid, -np.inf, scores), np.where(invalid, np.nan, scores)):
        assert np.array_equal(chain_argmax(s)[0], chain_argmax(clean)[0])
        assert np.isclose(chain_argmax(s)[1], chain_argmax(clean)[1])
        assert np.isclose(chain_log_z(s), chain_log_z(clean))
        mu, logz = chain_marginals(s)
        np.testing.assert_allclose(mu, chain_marginals(clean)[0], atol=1e-12)
        assert not mu[invalid].any() and np.isclose(logz, chain_log_z(clean))
    # The valid START parts are real parts: forbidding "tag 0 first" changes the decoding.
    first = (0, K, 0) if order == 1 else (0, K, K, 0)
    forced = clean.copy()
    forced[first] = 50.0
    assert chain_argmax(forced)[0][0] == 0
    forced[first] = -np.inf
    tags, _ = chain_argmax(forced)
    assert tags[0] != 0
    mu, _ = chain_marginals(forced)
    assert mu[first] == 0 and np.isclose(mu[0].sum(), 1.0)
    labels = [y for y in all_sequences(n, K) if y[0] != 0]
    best = max(label_score(structure, None, clean, y) for y in labels)
    assert np.isclose(label_score(structure, None, clean, tags), best)
    everything = np.full(structure.shape(n), -np.inf)
    with pytest.raises(ValueError, match="no tag sequence"):
        chain_argmax(everything)
    with pytest.raises(ValueError, match="no tag sequence"):
        chain_marginals(everything)


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("n,K", [(1, 1), (1, 3), (2, 2), (3, 3), (4, 2)])
def test_tag_marginals_against_brute_force(order, n, K):
    # P(y[t] = c) by enumerating every tag sequence, and equal to the parts summed over history.
    rng = np.random.default_rng(100 * order + 10 * n + K)
    structure = chain(K, order)
    x = sentence(n, K)
    for scale in (2.0, 40.0):
        scores = random_scores(rng, structure, n, scale)
        weights = np.array([label_score(structure, x, scores, y) for y in all_sequences(n, K)])
        p = np.exp(weights - weights.max())
        p /= p.sum()
        expected = np.zeros((n, K))
        for prob, y in zip(p, all_sequences(n, K)):
            expected[np.arange(n), y] += prob
        marg, logz = chain_tag_marginals(scores)
        np.testing.assert_allclose(marg, expected, atol=1e-12)
        assert np.isclose(logz, chain_log_z(scores))
        mu, _ = chain_marginals(scores)
        np.testing.assert_allclose(marg, mu.sum(axis=tuple(range(1, mu.ndim - 1))), atol=1e-12)
        np.testing.assert_array_equal(structure.tag_marginals(x, scores), marg)


@pytest.mark.parametrize("order", [1, 2])
def test_tag_marginals_with_forbidden_scores(order):
    rng = np.random.default_rng(7 + order)
    structure = LinearChain(["A", "B", "C", "D"], order=order, hash_bits=10)
    scores = random_scores(rng, structure, 4)
    scores[(1,) + (slice(None),) * order + (2,)] = -np.inf  # tag C can never be word 1's
    marg, _ = chain_tag_marginals(scores)
    assert marg[1, 2] == 0 and np.isclose(marg[1].sum(), 1.0)
    with pytest.raises(ValueError, match="no tag sequence"):
        chain_tag_marginals(np.full(structure.shape(3), -np.inf))
    assert chain_tag_marginals(np.zeros(structure.shape(0)))[0].shape == (0, 4)


def test_second_order_uses_the_trigram():
    # Only the trigram part (A, B -> C) at t = 2 rewards anything; a bigram model cannot see it.
    structure = chain(3, 2)
    scores = np.zeros(structure.shape(3))
    scores[2, 0, 1, 2] = 5.0
    assert list(chain_argmax(scores)[0]) == [0, 1, 2]
    scores[2, 1, 1, 2] = 6.0
    assert list(chain_argmax(scores)[0]) == [1, 1, 2]


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 30), K=st.integers(1, 5), order=st.sampled_from([1, 2]), seed=st.integers(0, 2**32 - 1),
       scale=st.sampled_from([0.1, 1.0, 10.0, 1e4]))
def test_argmax_beats_random_sequences_and_marginals_are_distributions(n, K, order, seed, scale):
    rng = np.random.default_rng(seed)
    structure = LinearChain([f"T{i}" for i in range(K)], order=order, hash_bits=8)
    scores = random_scores(rng, structure, n, scale)
    tags, best = chain_argmax(scores)
    assert tags.dtype == np.int32 and tags.shape == (n,) and ((0 <= tags) & (tags < K)).all()
    assert np.isclose(best, label_score(structure, None, scores, tags))
    for _ in range(5):
        y = rng.integers(K, size=n)
        assert label_score(structure, None, scores, y) <= best + 1e-9 * max(1.0, abs(best))
    mu, logz = chain_marginals(scores)
    assert logz >= best - 1e-9 * max(1.0, abs(best))
    np.testing.assert_allclose(mu.reshape(n, -1).sum(axis=1), 1.0, atol=1e-6)
    # Consecutive positions agree on the tag they share.
    tag_at = mu.reshape(n, -1, K).sum(axis=1)  # P(y_t = c)
    prev_at = (mu.sum(axis=2) if order == 1 else mu.sum(axis=(1, 3)))[:, :K]  # P(y_{t-1} = p)
    np.testing.assert_allclose(prev_at[1:], tag_at[:-1], atol=1e-6)


# -- features -----------------------------------------------------------------

@pytest.mark.parametrize("order", [1, 2])
def test_scores_are_sums_of_enumerated_feature_weights(order):
    rng = np.random.default_rng(11)
    structure = chain(3, order, hash_bits=16)
    x = sentence(5)
    w = rng.normal(size=1 << 16)
    scores = structure.scores(x, Weights(16, False, w))
    valid = structure.valid_parts(5)
    assert not scores[~valid].any()
    for part in zip(*np.nonzero(valid)):
        idx = structure.features.part_indices(x, part)
        assert len(idx) == structure.features.features_per_part == len(EMISSION_TEMPLATES) + 1 + order
        assert np.isclose(scores[part], w[idx.astype(np.int64)].sum())


def test_emission_features_are_shared_and_depend_on_words():
    structure = chain(3, 1, hash_bits=20)
    f = structure.features
    x = sentence(6)
    n_emission = len(EMISSION_TEMPLATES)
    a, b = set(f.part_indices(x, (3, 0, 2)).tolist()), set(f.part_indices(x, (3, 1, 2)).tolist())
    assert len(a & b) == n_emission  # same (t, cur): the emission features; different bigrams
    c = set(f.part_indices(x, (3, 0, 1)).tolist())
    assert len(a & c) == 0  # another current tag: nothing shared
    # Word 4 is "a"; in another sentence, "x" shares with it only the tag bigram and the
    # emission features that do not look at the words: bias, the four flags (all off) and the shape "x".
    y = Sentence.from_columns(["x"] * 6, None, ["DET"] * 6)
    assert len(a & set(f.part_indices(y, (3, 0, 2)).tolist())) == 7
    # The tag bigram is the same feature at every position, the bigram+word one is not;
    # "a" and "cat" share bias and flags, not the shape.
    d = set(f.part_indices(x, (4, 0, 2)).tolist())
    assert len(a & d) == 6
    # Every template contributes: in a 2**20 table, features of one part hardly ever collide.
    assert len(a) == f.features_per_part


def test_context_features_see_the_words_two_either_side():
    f = chain(3, 2, hash_bits=20).features
    words = ["The", "dog", "saw", "a", "cat", "in", "Paris"]
    x = Sentence.from_columns(words)
    y = Sentence.from_columns(words[:4] + ["birds"] + words[5:])  # position 4 changes
    changed = []
    for t in range(7):
        part = (t, 0, 1, 2) if t >= 2 else (t, 3, 1, 2) if t == 1 else (0, 3, 3, 2)
        a, b = set(f.part_indices(x, part).tolist()), set(f.part_indices(y, part).tolist())
        changed.append(len(a - b))
    # Positions 2 and 6 see the word through lower+-2 and suffix3+-2; positions 3 and 5 through
    # lower+-1, suffix3+-1, the word bigram, the word with the neighbour's suffix and the shape
    # trigram; position 4 through everything about itself (its values, and the five conjunctions
    # that contain them) and the bigram+word feature; 0 and 1 are too far.
    # "cat" and "birds" differ in form, lower, 6 prefixes, 8 suffixes and shape, not in the 4 flags.
    own = [name for name in EMISSION_TEMPLATES if name != "bias" and "|" not in name
           and name[-2:] not in ("-2", "-1", "+1", "+2")]
    assert len(own) == 21
    assert len(CONJUNCTIONS) == 5
    assert changed == [0, 0, 2, 5, 17 + 5 + 1, 5, 2]


def test_weights_follow_tag_names_not_tag_order():
    rng = np.random.default_rng(4)
    x = sentence(4)
    w = Weights(12, False, rng.normal(size=1 << 12))
    for order in (1, 2):
        s1 = LinearChain(["A", "B"], order=order, hash_bits=12).scores(x, w)
        s2 = LinearChain(["B", "A"], order=order, hash_bits=12).scores(x, w)
        perm = [1, 0, 2]  # A <-> B, START stays last
        swapped = s2[:, perm][..., [1, 0]] if order == 1 else s2[:, perm][:, :, perm][..., [1, 0]]
        np.testing.assert_allclose(s1, swapped)


def test_word_shape():
    assert word_shape("Washington") == "Xxxxx"
    assert word_shape("1,000") == "d,ddd"
    assert word_shape("well-known") == "xxxx-xxxx"
    assert word_shape("U.S.") == "X.X."


def test_features_reject_wrong_weights_and_coefficients():
    structure = chain(3, 1)
    x = sentence(3)
    with pytest.raises(ValueError, match="2\\*\\*14"):
        structure.scores(x, Weights(10))
    with pytest.raises(ValueError, match="shape"):
        structure.add_features(x, np.zeros((3, 3, 3)), Weights(HASH_BITS), 1.0)


# -- the structure ------------------------------------------------------------

def test_gold_with_an_unknown_tag_names_the_tag_and_the_source():
    structure = chain(2, 1)  # DET, NOUN
    x = sentence(3, 3, source="train.conllu", first_line=17)  # word 3 is a VERB
    with pytest.raises(ValueError, match=r"train\.conllu:17: UPOS tag 'VERB' of word 3"):
        structure.gold(x)
    missing = Sentence.from_columns(["a", "b"], None, ["DET", "_"], source="dev.conllu", first_line=3)
    with pytest.raises(ValueError, match=r"dev\.conllu:3: UPOS tag '_' of word 2 .*missing"):
        structure.gold(missing)


def test_xpos_attribute_and_from_sentences():
    xs = [Sentence.from_columns(["a", "dog"], None, ["DET", "NOUN"], ["DT", "NN"]),
          Sentence.from_columns(["dogs", "run", "x"], None, ["NOUN", "VERB", "X"], ["NNS", "VBP", "_"])]
    upos = LinearChain.from_sentences(xs, "upos")
    assert upos.tags == ("DET", "NOUN", "VERB", "X")
    xpos = LinearChain.from_sentences(xs, "xpos", order=2, hash_bits=12)
    assert xpos.tags == ("DT", "NN", "NNS", "VBP") and xpos.order == 2 and xpos.hash_bits == 12
    assert xpos.tag_names(xpos.gold(xs[0])) == ["DT", "NN"]
    with pytest.raises(ValueError, match="XPOS tag '_' of word 3"):
        xpos.gold(xs[1])
    with pytest.raises(ValueError, match="no XPOS tags"):
        LinearChain.from_sentences([Sentence.from_columns(["a"], None, ["DET"])], "xpos")
    with pytest.raises(ValueError, match="attribute"):
        LinearChain(["A"], attribute="deprel")
    with pytest.raises(ValueError, match="order"):
        LinearChain(["A"], order=3)
    with pytest.raises(ValueError, match="duplicate"):
        LinearChain(["A", "B", "A"])


def test_config_round_trip_gives_the_same_scores():
    rng = np.random.default_rng(8)
    structure = LinearChain(["N", "V", "D"], attribute="xpos", order=2, hash_bits=12)
    again = make_structure(structure.registry_call())
    assert again.registry_call() == structure.registry_call() == {
        "@structures": "arborist.LinearChain.v1", "tags": ["N", "V", "D"], "attribute": "xpos", "order": 2,
        "hash_bits": 12, "templates": list(EMISSION_TEMPLATES)}
    w = Weights(12, False, rng.normal(size=1 << 12))
    x = sentence(4)
    np.testing.assert_array_equal(structure.scores(x, w), again.scores(x, w))
    # A model written before templates were configurable has no "templates": the default set.
    old = {"structure": "chain", **{k: v for k, v in structure.registry_call().items()
                                     if k not in ("@structures", "templates")}}
    np.testing.assert_array_equal(structure.scores(x, w), make_structure(structure_call(old)).scores(x, w))


def test_template_subset_has_exactly_those_emission_features():
    """The HMM feature set of the SWVP experiments: the tag bias and the form, plus transitions."""
    full = LinearChain(["N", "V"], hash_bits=14)
    hmm = LinearChain(["N", "V"], hash_bits=14, templates=["bias", "form"])
    x = sentence(3)
    assert hmm.features.features_per_part == 2 + 2
    # The shared templates hash to the same slots in both feature sets.
    shared = set(hmm.features.part_indices(x, (1, 0, 1)).tolist())
    assert shared < set(full.features.part_indices(x, (1, 0, 1)).tolist())
    again = make_structure(hmm.registry_call())
    assert again.templates == ("bias", "form")
    with pytest.raises(ValueError, match="not a WORD_VALUES name"):
        LinearChain(["N"], templates=["bias", "colour"])
    with pytest.raises(ValueError, match="duplicate emission templates"):
        LinearChain(["N"], templates=["form", "form"])


def test_mix_indicator_and_part_cost():
    structure = chain(3, 2)
    gold = np.array([0, 1, 2, 0], dtype=np.int32)
    pred = np.array([2, 2, 2, 2], dtype=np.int32)
    mixed = structure.mix(gold, pred, [0, 3])
    assert mixed.tolist() == [2, 1, 2, 2] and gold.tolist() == [0, 1, 2, 0]
    ind = structure.indicator(None, gold)
    assert ind.sum() == 4 and ind[0, 3, 3, 0] == ind[1, 3, 0, 1] == ind[2, 0, 1, 2] == ind[3, 1, 2, 0] == 1
    cost = structure.part_cost(None, gold)
    assert not cost[~structure.valid_parts(4)].any()
    assert (cost * structure.indicator(None, pred)).sum() == 3


def test_empty_sentence():
    structure = chain(2, 1)
    x = Sentence.from_columns([])
    assert structure.argmax(x, structure.scores(x, Weights(HASH_BITS))).shape == (0,)
    mu, logz = structure.marginals(x, np.zeros(structure.shape(0)))
    assert logz == 0.0 and mu.shape == (0, 3, 2)


# -- training with the generic trainers ----------------------------------------

NOUNS = ["dog", "cat", "bird", "Anna", "park"]
VERBS = ["sees", "chased", "likes"]
AMBIGUOUS = ["walk", "run", "watch"]  # NOUN after a determiner or adjective, VERB after a noun
ADJS = ["big", "small", "old"]


def synthetic_corpus(n_sentences: int, seed: int) -> list[Sentence]:
    rng = np.random.default_rng(seed)
    pick = lambda words: words[int(rng.integers(len(words)))]  # noqa: E731
    out = []
    for i in range(n_sentences):
        words, tags = [], []

        def noun_phrase():
            words.append(pick(["the", "a", "The"] if not words else ["the", "a"]))
            tags.append("DET")
            if rng.random() < 0.4:
                words.append(pick(ADJS))
                tags.append("ADJ")
            words.append(pick(NOUNS + AMBIGUOUS))
            tags.append("NOUN")

        noun_phrase()
        words.append(pick(VERBS + AMBIGUOUS))
        tags.append("VERB")
        noun_phrase()
        if rng.random() < 0.5:
            words.append("in")
            tags.append("ADP")
            noun_phrase()
        words.append(".")
        tags.append("PUNCT")
        out.append(Sentence.from_columns(words, None, tags, source="synthetic", first_line=i + 1))
    return out


def token_accuracy(structure, examples, w) -> float:
    correct = total = 0
    for x in examples:
        pred = structure.argmax(x, structure.scores(x, w))
        correct += int((pred == structure.gold(x)).sum())
        total += x.n
    return correct / total


@pytest.mark.parametrize("make_trainer,order,epochs", [
    (lambda: Perceptron(seed=0), 1, 4),
    (lambda: Perceptron(seed=0), 2, 4),
    (lambda: EG("crf", seed=0), 1, 12),  # C = 1, rate searched: slower from the large w(sigma(0))
    (lambda: EG("crf", C=10.0, eta=0.5, seed=0), 2, 6),
    (lambda: EG("m3n", C=10.0, seed=0), 1, 8),
    (lambda: SGD(C=1.0, eta0=0.1, seed=0), 1, 8),
])
def test_generic_trainers_learn_a_tagger(make_trainer, order, epochs):
    for module in (arborist.learn.perceptron, arborist.learn.eg, arborist.learn.baselines):
        source = inspect.getsource(module).lower()
        assert not any(word in source for word in ("tagger", "chain", "viterbi", "upos"))
    examples = synthetic_corpus(60, seed=order)
    structure = LinearChain.from_sentences(examples, "upos", order=order, hash_bits=16)
    assert structure.tags == ("ADJ", "ADP", "DET", "NOUN", "PUNCT", "VERB")
    before = token_accuracy(structure, examples, Weights(structure.hash_bits))  # untrained: all one tag
    trainer = make_trainer()
    trainer.begin(structure, examples, structure.hash_bits)
    for _ in range(epochs):
        metrics = trainer.epoch(structure, examples)
    after = token_accuracy(structure, examples, trainer.prediction_weights())
    assert before < 0.6 and after >= 0.95, (before, after, metrics)
    # The ambiguous words are tagged by context, on unseen sentences too.
    held_out = synthetic_corpus(30, seed=99)
    assert token_accuracy(structure, held_out, trainer.prediction_weights()) >= 0.9
