"""SWVP (Algorithm 2 of Dror and Reichart): SetGamma, the update against hand-computed
coefficients, CSP as the JJ = {[L]} special case against an independent Algorithm 1,
learning on trees and chains, checkpoints and the config registry."""
from __future__ import annotations

import ast
import io
import json
import tokenize
from pathlib import Path

import numpy as np
import pytest
from confection import Config

import arborist.learn.perceptron
from arborist.experiments import synthetic
from arborist.learn.perceptron import SWVP, Perceptron, set_gamma
from arborist.weights import Weights
from arborist.parser.tree import DependencyTree
from arborist.registry import registry
from arborist.sentence import Sentence
from arborist.structure import differing_positions
from arborist.tagger.chain import LinearChain
from trackers import Quiet

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "corpora" / "sample"
BITS = 14
VARIANTS = [("wm", False), ("wmr", False), ("wm", True), ("wmr", True)]  # B-WM, B-WMR, A-WM, A-WMR
VARIANT_IDS = ["B-WM", "B-WMR", "A-WM", "A-WMR"]


# -- a toy language with gold tags and projective gold trees ---------------------

NOUNS = ["dog", "cat", "bird", "Anna", "park"]
VERBS = ["sees", "chased", "likes"]
AMBIGUOUS = ["walk", "run", "watch"]  # NOUN after a determiner or adjective, VERB after a noun
ADJS = ["big", "small", "old"]


def corpus(n_sentences: int, seed: int, pos: bool = True) -> list[Sentence]:
    """NP VERB NP [in NP] . with UPOS and XPOS (unless not `pos`) and UD-style heads (the verb
    is the root; a determiner and an adjective attach to their noun, the preposition to its
    noun, nouns and the full stop to the verb). Every gold tree is projective with a single root."""
    rng = np.random.default_rng(seed)
    pick = lambda words: words[int(rng.integers(len(words)))]  # noqa: E731
    out = []
    for i in range(n_sentences):
        words, tags, heads = [], [], []
        pending = []  # words whose head is the verb, placed before we know where it is

        def noun_phrase(case=None):
            start = len(words) + 1
            if case:
                words.append(case)
                tags.append("ADP")
                heads.append(None)
            words.append(pick(["the", "a"]))
            tags.append("DET")
            heads.append(None)
            if rng.random() < 0.4:
                words.append(pick(ADJS))
                tags.append("ADJ")
                heads.append(None)
            words.append(pick(NOUNS + AMBIGUOUS))
            tags.append("NOUN")
            noun = len(words)
            heads.append(None)
            for k in range(start, noun):
                heads[k - 1] = noun
            pending.append(noun)

        noun_phrase()
        words.append(pick(VERBS + AMBIGUOUS))
        tags.append("VERB")
        heads.append(0)
        verb = len(words)
        noun_phrase()
        if rng.random() < 0.5:
            noun_phrase(case="in")
        words.append(".")
        tags.append("PUNCT")
        heads.append(None)
        pending.append(len(words))
        for k in pending:
            heads[k - 1] = verb
        assert None not in heads
        out.append(Sentence.from_columns(words, None, tags if pos else None,
                                         [t.lower() for t in tags] if pos else None, heads=heads,
                                         source="toy", first_line=i + 1))
    return out


def random_corpus(n_sentences: int, seed: int) -> list[Sentence]:
    """Sentences of 3-9 random words with random tags and random gold trees (each word attaches to
    a word placed before it in a random order: a tree, often non-projective). Nothing here is
    learnable, so the perceptron keeps updating: every update rule is exercised on every pass."""
    rng = np.random.default_rng(seed)
    vocabulary = [f"w{k}" for k in range(15)]
    tags = ["A", "B", "C", "D"]
    out = []
    for i in range(n_sentences):
        n = int(rng.integers(3, 10))
        order = rng.permutation(n) + 1
        heads = [0] * n
        for k, m in enumerate(order[1:], start=1):
            heads[m - 1] = int(order[rng.integers(k)])
        words = [vocabulary[j] for j in rng.integers(len(vocabulary), size=n)]
        upos = [tags[j] for j in rng.integers(len(tags), size=n)]
        out.append(Sentence.from_columns(words, None, upos, upos, heads=heads, source="random", first_line=i + 1))
    return out


def tree() -> DependencyTree:
    return DependencyTree(hash_bits=BITS)


def chain(examples) -> LinearChain:
    return LinearChain.from_sentences(examples, "upos", order=1, hash_bits=BITS)


def accuracy(structure, examples, w) -> float:
    """Fraction of positions (words' heads, tokens' tags) right under weights w."""
    right = total = 0
    for x in examples:
        r, n = structure.hits(x, structure.gold(x), structure.argmax(x, structure.scores(x, w)))
        right, total = right + r, total + n
    return right / total


def reference_csp(structure, examples, initial: np.ndarray, epochs: int) -> Weights:
    """Algorithm 1 (averaged), written directly against the protocol: for each example in
    order, decode; if any position is wrong, w += phi(gold) - phi(pred); advance the clock."""
    w = Weights(BITS, averaged=True, array=initial.copy())
    for _ in range(epochs):
        for x in examples:
            gold = structure.gold(x)
            pred = structure.argmax(x, structure.scores(x, w))
            right, positions = structure.hits(x, gold, pred)
            if right < positions:
                structure.add_features(x, structure.indicator(x, gold) - structure.indicator(x, pred), w, 1.0)
            w.tick()
    return w


def run(trainer, structure, examples, initial: np.ndarray | None, epochs: int) -> list[dict]:
    trainer.begin(structure, examples, BITS)
    if initial is not None:
        trainer.weights.array[:] = initial
    return [trainer.epoch(structure, examples) for _ in range(epochs)]


# -- 1. CSP is SWVP with JJ = {[L]} -------------------------------------------------

FULL_TRAINERS = {
    "Perceptron": lambda: Perceptron(shuffle=False),
    "full-B-WM-1": lambda: SWVP("full", "wm", False, 1.0, shuffle=False),
    "full-A-WM-2": lambda: SWVP("full", "wm", True, 2.0, shuffle=False),
    "full-B-WMR-0.5": lambda: SWVP("full", "wmr", False, 0.5, shuffle=False),
    "full-A-WMR-3": lambda: SWVP("full", "wmr", True, 3.0, shuffle=False),
}


@pytest.mark.parametrize("kind", ["tree", "chain"])
def test_full_substructures_are_exactly_csp(kind):
    """Starting from the same random non-zero w, every JJ = {[L]} trainer (whatever its
    gamma settings: with one mixed assignment, y* itself, gamma must be 1) makes exactly the
    updates of an independent Algorithm 1, so w and the averaging accumulator are bit-identical.
    The single-difference SWVP must differ there, or "single" has silently become CSP."""
    examples = random_corpus(30, seed=1)
    structure = tree() if kind == "tree" else chain(examples)
    initial = np.random.default_rng(7).normal(scale=0.3, size=1 << BITS)
    epochs = 2
    expected = reference_csp(structure, examples, initial, epochs)
    assert expected.step == epochs * len(examples)
    assert not np.array_equal(expected.array, initial)  # the reference did update
    for name, make in FULL_TRAINERS.items():
        trainer = make()
        history = run(trainer, structure, examples, initial, epochs)
        np.testing.assert_array_equal(trainer.weights.array, expected.array, err_msg=name)
        np.testing.assert_array_equal(trainer.weights.accumulator, expected.accumulator, err_msg=name)
        assert trainer.weights.step == expected.step
        assert all(h["updates"] > 0 for h in history), name
    single = SWVP("single", "wm", False, 1.0, shuffle=False)
    run(single, structure, examples, initial, epochs)
    assert not np.array_equal(single.weights.array, expected.array)


def test_perceptron_is_swvp_with_full_substructures():
    """The CSP class is the special case, not a separate implementation."""
    p = Perceptron()
    assert isinstance(p, SWVP)
    assert (p.substructures, p.name) == ("full", "perceptron")
    assert SWVP().substructures == "single"  # the default SWVP is the paper's single-difference JJ


# -- 2. SetGamma --------------------------------------------------------------------

@pytest.mark.parametrize("weighting,aggressive", VARIANTS, ids=VARIANT_IDS)
def test_set_gamma_is_a_distribution_ordered_by_margin(weighting, aggressive):
    """Definition 3 (1): gamma >= 0 and sums to 1, for random margins and betas. Both schemes
    give a larger |margin| at least the weight of a smaller one; aggressive gives every
    non-violation (margin > 0) exactly 0."""
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 9))
        margins = rng.normal(scale=3.0, size=n)
        margins[0] = -abs(margins[0])  # at least one violation, so aggressive has a gamma
        beta = float(rng.choice([0.5, 1.0, 2.0, 5.0]))
        gamma = set_gamma(margins, weighting, beta, aggressive)
        assert gamma.shape == margins.shape
        assert (gamma >= 0).all() and np.isclose(gamma.sum(), 1.0, atol=1e-12), (margins, gamma)
        considered = margins <= 0 if aggressive else np.ones(n, dtype=bool)
        assert (gamma[~considered] == 0).all()
        assert (gamma[considered] > 0).all()
        mags, g = np.abs(margins[considered]), gamma[considered]
        for i in range(len(mags)):
            for j in range(len(mags)):
                if mags[i] > mags[j]:
                    assert g[i] >= g[j] - 1e-15, (margins, gamma)


def test_set_gamma_weighted_margin_by_hand():
    """WM: gamma ~ |margin|^beta over all mixed assignments (balanced) or the violations (aggressive)."""
    np.testing.assert_allclose(set_gamma(np.array([-2.0, -1.0, 3.0]), "wm", 2.0, False),
                               np.array([4.0, 1.0, 9.0]) / 14.0, rtol=1e-12)
    np.testing.assert_allclose(set_gamma(np.array([-2.0, -1.0, 3.0]), "wm", 1.0, False),
                               [2 / 6, 1 / 6, 3 / 6], rtol=1e-12)
    np.testing.assert_allclose(set_gamma(np.array([-2.0, -1.0, 3.0]), "wm", 1.0, True),
                               [2 / 3, 1 / 3, 0.0], rtol=1e-12)
    np.testing.assert_allclose(set_gamma(np.array([-4.0, 9.0, -1.0]), "wm", 0.5, True),
                               [2 / 3, 0.0, 1 / 3], rtol=1e-12)
    assert set_gamma(np.array([-2.0, -1.0, 3.0]), "wm", 1.0, True)[2] == 0.0  # exactly 0, not tiny


def test_set_gamma_weighted_margin_rank_by_hand():
    """WMR: gamma ~ ((N - r) / N)^beta, r = 0 for the largest |margin|, ties share the better
    (smaller) rank; it depends on the order of the margins, not their size."""
    # |margins| 2, 1, 3 -> ranks 1, 2, 0 -> raw 2/3, 1/3, 1 -> normalized by 2.
    np.testing.assert_allclose(set_gamma(np.array([-2.0, 1.0, -3.0]), "wmr", 1.0, False),
                               [1 / 3, 1 / 6, 1 / 2], rtol=1e-12)
    # Same ranks, other magnitudes: same gamma (WM would give 5/12.5, 0.5/12.5, 7/12.5).
    np.testing.assert_allclose(set_gamma(np.array([5.0, -0.5, -7.0]), "wmr", 1.0, False),
                               [1 / 3, 1 / 6, 1 / 2], rtol=1e-12)
    # beta 2: raw 4/9, 1/9, 1 -> / (14/9).
    np.testing.assert_allclose(set_gamma(np.array([-2.0, 1.0, -3.0]), "wmr", 2.0, False),
                               [4 / 14, 1 / 14, 9 / 14], rtol=1e-12)
    # Ties: |margins| 2, 2, 1 -> ranks 0, 0, 2 -> raw 1, 1, 1/3 -> / (7/3).
    np.testing.assert_allclose(set_gamma(np.array([-2.0, 2.0, -1.0]), "wmr", 1.0, False),
                               [3 / 7, 3 / 7, 1 / 7], rtol=1e-12)
    # |margins| 1, 3, 3, 2 -> ranks 3, 0, 0, 2 -> raw 1/4, 1, 1, 2/4 -> / (11/4).
    np.testing.assert_allclose(set_gamma(np.array([-1.0, -3.0, 3.0, 2.0]), "wmr", 1.0, False),
                               [1 / 11, 4 / 11, 4 / 11, 2 / 11], rtol=1e-12)
    # Aggressive: N counts only the violations -2 and -3 -> ranks 1, 0 -> raw 1/2, 1 -> / (3/2).
    np.testing.assert_allclose(set_gamma(np.array([-2.0, 1.0, -3.0]), "wmr", 1.0, True),
                               [1 / 3, 0.0, 2 / 3], rtol=1e-12)


@pytest.mark.parametrize("weighting", ["wm", "wmr"])
def test_set_gamma_edge_cases(weighting):
    """Aggressive with no violation: no gamma meets condition (1), None. A margin of exactly 0
    is a violation (Definition 2: w . Delta phi <= 0). All-zero margins (w = 0): uniform."""
    assert set_gamma(np.array([0.5, 2.0, 1e-12]), weighting, 1.0, True) is None
    np.testing.assert_array_equal(set_gamma(np.array([0.0, 1.0]), weighting, 1.0, True), [1.0, 0.0])
    np.testing.assert_array_equal(set_gamma(np.array([3.0, 0.0, 0.0]), weighting, 2.0, True), [0.0, 0.5, 0.5])
    for aggressive in (False, True):
        np.testing.assert_allclose(set_gamma(np.zeros(4), weighting, 2.0, aggressive), np.full(4, 0.25))
    np.testing.assert_array_equal(set_gamma(np.array([-5.0]), weighting, 3.0, False), [1.0])


def test_set_gamma_and_swvp_reject_bad_settings():
    """An unknown weighting is an error, not a silent default."""
    with pytest.raises(ValueError, match="weighting"):
        set_gamma(np.array([-1.0, 2.0]), "wmx", 1.0, False)
    with pytest.raises(ValueError, match="weighting"):
        set_gamma(np.array([-1.0, 2.0]), "WM", 1.0, True)
    with pytest.raises(ValueError, match="weighting"):
        SWVP(weighting="rank")
    with pytest.raises(ValueError, match="substructures"):
        SWVP(substructures="pairs")
    for beta in (0.0, -1.0):
        with pytest.raises(ValueError, match="beta"):
            SWVP(beta=beta)


# -- 3. the update against hand-computed coefficients --------------------------------

def tiny():
    """A 4-word sentence; gold tree root -> 2, 2 -> 1, 2 -> 3, 3 -> 4; the (projective) prediction
    gets words 3 and 4 wrong: 4 -> 3 and 2 -> 4."""
    x = Sentence.from_columns(["a", "b", "c", "d"], None, ["X"] * 4, ["X"] * 4, heads=[2, 0, 2, 3])
    gold = np.array([-1, 2, 0, 2, 3], dtype=np.int32)
    pred = np.array([-1, 2, 0, 4, 2], dtype=np.int32)
    assert differing_positions(gold, pred).tolist() == [3, 4]
    return x, gold, pred


def arc_scores(s23, s43, s34, s24):
    """Arc scores [head, modifier]. Arc-factored, so the single-difference margins are
    s23 - s43 (word 3: m3 = heads 2, 0, 4, 3) and s34 - s24 (word 4: m4 = heads 2, 0, 2, 2).
    The other arcs get scores that cancel in every margin."""
    s = np.zeros((5, 5))
    s[0, 2], s[2, 1], s[1, 2], s[0, 1], s[4, 1] = 5.0, -1.0, 0.5, 0.25, -2.0
    s[2, 3], s[4, 3], s[3, 4], s[2, 4] = s23, s43, s34, s24
    return s


def coef(entries: dict) -> np.ndarray:
    out = np.zeros((5, 5))
    for (h, m), v in entries.items():
        out[h, m] = v
    return out


CSP_UPDATE = coef({(2, 3): 1.0, (4, 3): -1.0, (3, 4): 1.0, (2, 4): -1.0})  # phi(gold) - phi(pred)


@pytest.mark.parametrize("weighting,aggressive,beta,expected", [
    # margins -2 (word 3), +1 (word 4). B-WM beta 1: gamma = [2/3, 1/3] (B-WMR beta 1 too: ranks
    # 0, 1 -> raw 1, 1/2). coef = phi(gold) - 2/3 phi(m3) - 1/3 phi(m4), arc by arc:
    # (0,2), (2,1): 1 - 2/3 - 1/3 = 0 (in all three); (2,3): 1 - 1/3 (m4 keeps it); (4,3): -2/3;
    # (3,4): 1 - 2/3 (m3 keeps it); (2,4): -1/3.
    ("wm", False, 1.0, coef({(2, 3): 2 / 3, (4, 3): -2 / 3, (3, 4): 1 / 3, (2, 4): -1 / 3})),
    ("wmr", False, 1.0, coef({(2, 3): 2 / 3, (4, 3): -2 / 3, (3, 4): 1 / 3, (2, 4): -1 / 3})),
    # B-WM beta 2: gamma = [4/5, 1/5]; condition (2): -8/5 + 1/5 <= 0.
    ("wm", False, 2.0, coef({(2, 3): 4 / 5, (4, 3): -4 / 5, (3, 4): 1 / 5, (2, 4): -1 / 5})),
    # B-WMR beta 2: raw 1, 1/4 -> gamma = [4/5, 1/5] as well.
    ("wmr", False, 2.0, coef({(2, 3): 4 / 5, (4, 3): -4 / 5, (3, 4): 1 / 5, (2, 4): -1 / 5})),
    # Aggressive: only word 3 is a violation, gamma = [1, 0]: the update of m3 alone.
    ("wm", True, 1.0, coef({(2, 3): 1.0, (4, 3): -1.0})),
    ("wmr", True, 3.0, coef({(2, 3): 1.0, (4, 3): -1.0})),
])
def test_single_difference_update_by_hand(weighting, aggressive, beta, expected):
    """update_coefficients = phi(gold) - sum_j gamma_j phi(m^{j}), checked against explicit
    entries, and no back-off when condition (2) holds."""
    x, gold, pred = tiny()
    scores = arc_scores(s23=1.0, s43=3.0, s34=2.0, s24=1.0)  # margins -2, +1
    trainer = SWVP("single", weighting, aggressive, beta)
    got, backed_off = trainer.update_coefficients(tree(), x, scores, gold, pred)
    assert backed_off is False
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


def test_balanced_update_backs_off_when_condition_2_fails():
    """Margins -1 (word 3) and +3 (word 4): B-WM beta 1 gives gamma = [1/4, 3/4] and
    sum gamma * margin = -1/4 + 9/4 = 2 > 0, so condition (2) fails and the update is CSP's.
    B-WMR beta 1 (gamma = [1/3, 2/3], sum 5/3) backs off too; A-WM uses word 3 alone."""
    x, gold, pred = tiny()
    scores = arc_scores(s23=0.0, s43=1.0, s34=3.0, s24=0.0)
    for weighting in ("wm", "wmr"):
        for beta in (1.0, 3.0):
            got, backed_off = SWVP("single", weighting, False, beta).update_coefficients(
                tree(), x, scores, gold, pred)
            assert backed_off is True, (weighting, beta)
            np.testing.assert_array_equal(got, CSP_UPDATE)
    got, backed_off = SWVP("single", "wm", True, 1.0).update_coefficients(tree(), x, scores, gold, pred)
    assert backed_off is False
    np.testing.assert_allclose(got, coef({(2, 3): 1.0, (4, 3): -1.0}), rtol=0, atol=1e-12)


@pytest.mark.parametrize("weighting", ["wm", "wmr"])
def test_aggressive_update_backs_off_without_a_violation(weighting):
    """Margins +2 and +1: no single-difference assignment is a violation, so no aggressive gamma
    exists and the update is CSP's; the balanced one backs off too (every margin is positive,
    so condition (2) fails)."""
    x, gold, pred = tiny()
    scores = arc_scores(s23=3.0, s43=1.0, s34=2.0, s24=1.0)
    for aggressive in (True, False):
        got, backed_off = SWVP("single", weighting, aggressive, 1.0).update_coefficients(
            tree(), x, scores, gold, pred)
        assert backed_off is True
        np.testing.assert_array_equal(got, CSP_UPDATE)


def test_full_update_is_the_csp_update():
    """JJ = {[L]}: one mixed assignment (y* itself), gamma = 1: phi(gold) - phi(pred), and never a
    back-off: also when y* is not a violation (the gold label outscores the decoder's best, as a
    non-projective gold tree can under the projective decoder), the update is CSP's own."""
    x, gold, pred = tiny()
    for scores, backs_off in ((arc_scores(1.0, 3.0, 2.0, 1.0), False), (arc_scores(3.0, 1.0, 2.0, 1.0), False)):
        for weighting, aggressive in VARIANTS:
            got, backed_off = SWVP("full", weighting, aggressive, 2.0).update_coefficients(
                tree(), x, scores, gold, pred)
            np.testing.assert_array_equal(got, CSP_UPDATE)
            assert backed_off is backs_off


def test_chain_update_by_hand():
    """On a first-order chain a single difference at position j changes two parts (into and out
    of j). Gold tags [0, 1, 0], prediction [1, 1, 1]: m^{0} = [1, 1, 0], m^{2} = [0, 1, 1].
    With scores chosen so the margins are -3 (position 0) and -1 (position 2), A-WM beta 1 gives
    gamma = [3/4, 1/4]."""
    structure = LinearChain(["A", "B"], hash_bits=8)
    x = Sentence.from_columns(["p", "q", "r"], None, ["A", "B", "A"])
    gold = np.array([0, 1, 0], dtype=np.int32)
    pred = np.array([1, 1, 1], dtype=np.int32)
    START = 2
    s = np.zeros(structure.shape(3))  # [t, prev, cur]
    s[0, START, 0], s[0, START, 1] = 1.0, 2.0  # y0 = A vs B
    s[1, 0, 1], s[1, 1, 1] = 0.0, 2.0  # A -> B vs B -> B
    s[2, 1, 0], s[2, 1, 1] = 0.0, 1.0  # B -> A vs B -> B
    # margin(m0) = (1 + 0) - (2 + 2) = -3; margin(m2) = 0 - 1 = -1.
    got, backed_off = SWVP("single", "wm", True, 1.0).update_coefficients(structure, x, s, gold, pred)
    assert backed_off is False
    expected = np.zeros(structure.shape(3))
    # phi(gold) - 3/4 phi(m0) - 1/4 phi(m2): gold's parts at t = 0, 1 are kept only by m2,
    # its part at t = 2 only by m0.
    expected[0, START, 0], expected[0, START, 1] = 1 - 1 / 4, -3 / 4
    expected[1, 0, 1], expected[1, 1, 1] = 1 - 1 / 4, -3 / 4
    expected[2, 1, 0], expected[2, 1, 1] = 1 - 3 / 4, -1 / 4
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


# -- 4. every variant learns --------------------------------------------------------

@pytest.mark.parametrize("kind", ["tree", "chain"])
@pytest.mark.parametrize("weighting,aggressive", VARIANTS, ids=VARIANT_IDS)
def test_single_difference_swvp_learns(kind, weighting, aggressive):
    """Each of B-WM, B-WMR, A-WM, A-WMR (beta 2) fits the toy corpus (the parser from the
    words alone, no tags): accuracy after a few epochs far above the untrained model's, on
    unseen sentences too; back-offs are a subset of updates. On an arc-factored tree the
    single-difference margins sum to score(gold) - score(y*) <= 0 (exact Eisner, projective
    gold), so some single difference is always a violation and aggressive weighting never
    backs off."""
    examples = corpus(40, seed=5, pos=kind == "chain")
    structure = tree() if kind == "tree" else chain(examples)
    before = accuracy(structure, examples, Weights(BITS))
    trainer = SWVP("single", weighting, aggressive, beta=2.0, seed=1)
    history = run(trainer, structure, examples, None, 5)
    after = accuracy(structure, examples, trainer.prediction_weights())
    assert before < 0.6 and after >= 0.97, (before, after, history)
    held_out = corpus(20, seed=99, pos=kind == "chain")
    assert accuracy(structure, held_out, trainer.prediction_weights()) >= 0.95
    for h in history:
        assert 0 <= h["backoffs"] <= h["updates"] <= len(examples)
        assert set(SWVP.columns) <= set(h)
    assert history[-1]["updates"] < history[0]["updates"]
    if kind == "tree" and aggressive:
        assert sum(h["backoffs"] for h in history) == 0


@pytest.mark.parametrize("weighting,aggressive", VARIANTS, ids=VARIANT_IDS)
def test_single_difference_swvp_learns_an_hmm(weighting, aggressive):
    """On HMM data (setup 1, the SWVP paper's Section 6; the CRF feature set) no labeling is
    separable, so SWVP keeps updating and backs off now and then; after a few epochs its dev
    accuracy is close to that of Viterbi decoding with the true HMM (the Bayes-optimal
    sequence predictor) and far above the untrained model's."""
    hmm, data = synthetic.dataset(1, 0, splits=(300, 300, 0))
    train_x, dev_x = synthetic.to_sentences(*data["train"], "train"), synthetic.to_sentences(*data["dev"], "dev")
    structure = LinearChain(synthetic.tag_names(1), templates=synthetic.HMM_TEMPLATES, hash_bits=BITS)
    oracle = np.mean([hmm.viterbi(o) == y for y, o in zip(*data["dev"])])
    before = accuracy(structure, dev_x, Weights(BITS))
    trainer = SWVP("single", weighting, aggressive, beta=2.0, seed=1)
    history = run(trainer, structure, train_x, None, 4)
    after = accuracy(structure, dev_x, trainer.prediction_weights())
    assert before < 0.4 and after >= oracle - 0.04 and oracle > 0.65, (before, after, oracle)
    for h in history:
        assert 0 <= h["backoffs"] <= h["updates"] <= len(train_x)
    assert sum(h["backoffs"] for h in history) > 0


# -- 5. structure-agnostic ----------------------------------------------------------

def test_trainer_source_names_no_structure():
    """The trainer sees structures through the protocol only: no identifier, comment or string
    of arborist/learn/perceptron.py mentions trees, chains, heads, tags or a decoder. Docstrings
    are prose and are left out (the module docstring illustrates "a position" with "a word and
    its head, a token and its tag")."""
    source = Path(arborist.learn.perceptron.__file__).read_text(encoding="utf-8")
    docstring_lines = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                docstring_lines.update(range(first.lineno, first.end_lineno + 1))
    assert docstring_lines  # the module has docstrings, so this found them
    kinds = {tokenize.NAME, tokenize.COMMENT, tokenize.STRING} | {
        getattr(tokenize, k) for k in ("FSTRING_START", "FSTRING_MIDDLE") if hasattr(tokenize, k)}
    checked = [tok.string.lower() for tok in tokenize.generate_tokens(io.StringIO(source).readline)
               if tok.type in kinds and not (tok.type != tokenize.NAME and tok.start[0] in docstring_lines)]
    assert "update_coefficients" in checked and any(c.startswith("#") for c in checked)
    for word in ("tree", "chain", "head", "tag", "eisner", "viterbi"):
        hits = [c for c in checked if word in c]
        assert not hits, (word, hits)


# -- 6. registry, checkpoints ---------------------------------------------------------

def test_registry_builds_swvp():
    """"arborist.SWVP.v1" is the SWVP class; a config section sets its parameters."""
    make = registry.trainers.get("arborist.SWVP.v1")
    trainer = make(weighting="wmr", aggressive=True, beta=2.5)
    assert type(trainer) is SWVP
    resolved = registry.resolve(Config({"t": {"@trainers": "arborist.SWVP.v1", "weighting": "wmr",
                                              "aggressive": True, "beta": 0.5, "seed": 4}}), validate=True)["t"]
    assert type(resolved) is SWVP
    assert resolved.settings() == {"trainer": "swvp", "averaged": True, "substructures": "single",
                                   "weighting": "wmr", "aggressive": True, "beta": 0.5}
    assert type(registry.trainers.get("arborist.Perceptron.v1")()) is Perceptron


def _through_json(arrays, meta):
    """What a checkpoint on disk holds: copies of the arrays and the meta through JSON."""
    return {k: np.array(v, copy=True) for k, v in arrays.items()}, json.loads(json.dumps(meta))


def test_state_restore_continues_identically():
    """Train 1 epoch (shuffled: the order generator is part of the state), checkpoint, restore
    into a fresh SWVP with the same settings but another seed, train one more epoch on both:
    identical weights, accumulator and clock."""
    examples = random_corpus(25, seed=2)
    structure = chain(examples)
    settings = dict(substructures="single", weighting="wmr", aggressive=False, beta=1.5)
    a = SWVP(**settings, seed=11)
    run(a, structure, examples, None, 1)
    arrays, meta = _through_json(*a.state())
    b = SWVP(**settings, seed=12345)
    b.restore(structure, examples, arrays, meta)
    np.testing.assert_array_equal(b.weights.array, a.weights.array)
    a.epoch(structure, examples)
    b.epoch(structure, examples)
    np.testing.assert_array_equal(b.weights.array, a.weights.array)
    np.testing.assert_array_equal(b.weights.accumulator, a.weights.accumulator)
    assert b.weights.step == a.weights.step == 2 * len(examples)
    np.testing.assert_array_equal(b.prediction_weights().array, a.prediction_weights().array)
    # Without the order generator's state the second epoch would go differently: the test can tell.
    c = SWVP(**settings, seed=12345)
    c.restore(structure, examples, *_through_json(arrays, {**meta, "rng": SWVP(seed=12345).rng.bit_generator.state}))
    c.epoch(structure, examples)
    assert not np.array_equal(c.weights.array, a.weights.array)


def test_restore_refuses_other_settings_and_csp_checkpoints():
    """A checkpoint records the SWVP variant; restoring it into another (beta, weighting,
    aggressiveness, substructures) or a CSP checkpoint into an SWVP is an error, and vice versa."""
    examples = corpus(10, seed=3)
    structure = tree()
    swvp = SWVP("single", "wm", False, 1.0, seed=0)
    run(swvp, structure, examples, None, 1)
    state = _through_json(*swvp.state())
    SWVP("single", "wm", False, 1.0).restore(structure, examples, *state)  # same settings: fine
    for other in (SWVP("single", "wm", False, 2.0), SWVP("single", "wmr", False, 1.0),
                  SWVP("single", "wm", True, 1.0), SWVP("full", "wm", False, 1.0), Perceptron()):
        with pytest.raises(ValueError, match="checkpoint"):
            other.restore(structure, examples, *state)
    csp = Perceptron(seed=0)
    run(csp, structure, examples, None, 1)
    csp_state = _through_json(*csp.state())
    Perceptron().restore(structure, examples, *csp_state)
    for other in (SWVP(), SWVP("full", "wm", False, 1.0)):
        with pytest.raises(ValueError, match="checkpoint"):
            other.restore(structure, examples, *csp_state)
    # A CSP checkpoint from before SWVP existed holds only trainer and averaged: still a CSP one.
    arrays, meta = csp_state
    old = {k: meta[k] for k in ("trainer", "averaged", "step", "rng")}
    restored = Perceptron()
    restored.restore(structure, examples, arrays, old)
    np.testing.assert_array_equal(restored.weights.array, csp.weights.array)
    with pytest.raises(ValueError, match="checkpoint"):
        SWVP("full").restore(structure, examples, arrays, old)


# -- 7. end to end --------------------------------------------------------------------

def test_train_a_parser_with_swvp_from_a_config(tmp_path):
    """`@trainers = "arborist.SWVP.v1"` trains a parser through the driver; the report's
    history has the update and back-off counts, and the checkpoint records the variant."""
    from arborist.train import load_checkpoint, train

    text = f'''
[components]

[components.parser]

[components.parser.structure]
@structures = "arborist.DependencyTree.v1"
hash_bits = 16

[components.parser.trainer]
@trainers = "arborist.SWVP.v1"
weighting = "wm"
aggressive = false
beta = 2.0
seed = 3

[training]
train_path = "{SAMPLE / 'sample-train.conllu'}"
dev_path = "{SAMPLE / 'sample-dev.conllu'}"
max_epochs = 2
max_train_sentences = 30
'''
    tracker = Quiet()
    _, report = train(Config().from_str(text), tmp_path / "run", tracker)
    assert "backoffs" in tracker.columns
    history = report["components"]["parser"]["history"]
    assert [h["epoch"] for h in history] == [1, 2]
    for h in history:
        assert {"backoffs", "updates", "train_accuracy", "dev_uas"} <= set(h)
        assert 0 <= h["backoffs"] <= h["updates"] <= 30 and h["updates"] > 0
    state, _ = load_checkpoint(tmp_path / "run" / "checkpoint")
    assert state["trainer"]["trainer"] == "swvp" and state["trainer"]["beta"] == 2.0


def test_wm_gamma_survives_extreme_margins():
    """|margin|**beta would overflow (1e70**5) or underflow (1e-70**5) without scaling."""
    np.testing.assert_allclose(set_gamma([-1e70, -1.0], "wm", 5.0, False), [1.0, 0.0])
    np.testing.assert_allclose(set_gamma([-1e-70, -3e-70], "wm", 5.0, False), [1 / 244, 243 / 244])
