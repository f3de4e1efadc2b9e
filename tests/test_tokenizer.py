"""The tokenizer: character chain (protocol, features, batch kernel), decoding rules, multiword
expander, raw-text reader, Tokenizer API, CoNLL-U output, robustness."""
from __future__ import annotations

import json
import re

import itertools
import os
import subprocess
import sys
import tracemalloc
from functools import cache, lru_cache

import numpy as np
import pytest
from arborist.tagger.viterbi import chain_argmax
from arborist.tokenizer.features import CONTEXT, VALUES
from arborist.weights import Weights
from protocol import check_gradient, check_protocol

from arborist.learn.perceptron import Perceptron
from arborist.tokenizer import (
    CharacterChain,
    MultiwordExpander,
    Tokenizer,
    align,
    conllu_lines,
    decode_tags,
    make_example,
    paragraph_examples,
    read_paragraphs,
    split_paragraphs,
    train_tokenizer,
    write_conllu,
)
from arborist.tokenizer.chain import B, I, O, S
from arborist.tokenizer.chars import code_points
from arborist.tokenizer.features import char_values
from arborist.tokenizer.mwt import apply_case

HASH_BITS = 14
UD = "/work/shared/corpora/ud"
TOOLS = "/work/shared/tools"
IT_TRAIN = os.path.join(UD, "it_partut", "it_partut-ud-train.conllu")
SCORER = os.path.join(TOOLS, "conll18_ud_eval.py")


@cache
def all_labels(n: int, K: int = 4) -> tuple:
    return tuple(np.array(y, dtype=np.int32) for y in itertools.product(range(K), repeat=n))


def hamming(a, b) -> int:
    return int((np.asarray(a) != np.asarray(b)).sum())


# -- the Structure protocol ---------------------------------------------------------

@pytest.mark.parametrize("text,tags", [("a", [S]), ("a.", [S, B]), ("I a", [S, O, B]), ("x. Y", [S, B, O, S])])
def test_protocol(text, tags):
    rng = np.random.default_rng(len(text))
    chain = CharacterChain(HASH_BITS)
    x = make_example(text, tags)
    labels = all_labels(len(text))
    assert np.array_equal(chain.gold(x), tags)
    for _ in range(2):
        scores = rng.normal(size=chain.shape(len(text))) * 2.0  # invalid parts random too: ignored
        gold = labels[int(rng.integers(len(labels)))]
        check_protocol(chain, x, scores, labels, gold, hamming, rng, HASH_BITS)


def test_marginals_are_gradient_of_log_z():
    chain = CharacterChain(HASH_BITS)
    x = make_example("ab c", [S, I, O, B])
    check_gradient(chain, x, np.random.default_rng(3).normal(size=chain.shape(4)))


def test_perceptron_learns_a_tiny_tokenization():
    texts = ["Hi, you. Go now.", "It is. We go, now.", "Go, you. Hi now."]
    examples = []
    for text in texts:
        tags = []
        for i, ch in enumerate(text):
            if ch == " ":
                tags.append(O)
            elif i == 0 or (text[i - 2:i] == ". "):
                tags.append(S)
            elif ch in ",." or text[i - 1] == " ":
                tags.append(B)
            else:
                tags.append(I)
        examples.append(make_example(text, tags))
    chain = CharacterChain(16)
    trainer = Perceptron(seed=1)
    trainer.begin(chain, examples, 16)
    for _ in range(10):
        trainer.epoch(chain, examples)
    w = trainer.prediction_weights()
    for x in examples:
        assert np.array_equal(chain.argmax(x, chain.scores(x, w)), x.tags)


# -- features and the batch kernel ---------------------------------------------------

def test_batch_kernel_equals_one_text_path():
    rng = np.random.default_rng(0)
    chain = CharacterChain(16)
    w = rng.normal(size=1 << 16)
    texts = ["Hello, world.", "", "x", "Mr. Smith said: don't!  Νέα  αρχή.", "a\tb\nc", "ΑΒΓ 123 ... ???"]
    cps = [code_points(t) for t in texts]
    starts = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in texts], out=starts[1:])
    batch = chain.features.tag_many(char_values(np.concatenate(cps)), starts, w)
    weights = Weights(16, False, w)
    for i, text in enumerate(texts):
        one = chain.argmax(None, chain.scores(make_example(text), weights)) if text else np.zeros(0)
        assert np.array_equal(batch[starts[i]:starts[i + 1]], one), text
    # tag_texts (windows of whole texts) agrees too
    for text, tags in zip(texts, chain.tag_texts(texts, w)):
        one = chain_argmax(chain.features.score(make_example(text).chars, w))[0] if text else np.zeros(0)
        assert np.array_equal(tags, one)


def test_window_margin_gives_exact_features():
    """A window with CONTEXT characters of margin gives its kept characters the features of the whole text."""
    chain = CharacterChain(16)
    rng = np.random.default_rng(5)
    alphabet = list("abcXY.,'- \u00a0Ωω1")
    text = "".join(rng.choice(alphabet, size=1500))
    text = text[:700] + "x" * 60 + text[700:]  # a chunk longer than MAX_CHUNK across the cut
    full = chain.features.keys(make_example(text).chars)
    for a, b in ((300, 500), (690, 730), (0, 100), (1400, 1560)):
        lo, hi = max(0, a - CONTEXT), min(len(text), b + CONTEXT)
        part = chain.features.keys(make_example(text[lo:hi]).chars)
        assert np.array_equal(part[a - lo:min(b, len(text)) - lo], full[a:min(b, len(text))])
    # ...and with too little margin they differ somewhere (the test can fail)
    part = chain.features.keys(make_example(text[300:500]).chars)
    assert not np.array_equal(part, full[300:500])


def test_long_text_windows_agree_with_one_window():
    """Decoding a long text in windows gives the tags of decoding it whole (trained weights)."""
    tok = small_tokenizer()
    text = " ".join(p for p in raw_paragraphs()[:1])[:6000]
    whole = tok.chain.tag_texts([text], tok.weights, window=len(text) + 1)[0]
    windows = tok.chain.tag_texts([text], tok.weights, window=700)[0]
    assert np.array_equal(whole, windows)


def _combine(seed: int, value: int) -> int:
    """hashing.combine in Python: the reference the kernel's keys are checked against."""
    m = (1 << 64) - 1
    x = seed ^ ((value + 0x9E3779B97F4A7C15 + (seed << 6) + (seed >> 2)) & m)
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & m
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & m
    return x ^ (x >> 31)


KEY_TEMPLATE_SETS = [
    ("bias", "low-3", "low+3", "cp-1|cp", "prev|chunk|pos", "four+3", "cls-2|low|cls+2"),
    ("low-5", "cp-2|cp-1"),            # reach from one side only
    ("low+4", "bias"),
    ("low-4|low+4|cls-1|cp+2|tri-3",),  # five parts
    ("low", "cp"),                     # reach 0: every row reads at fixed distances
    ("bias",),
    (),
]


@pytest.mark.parametrize("templates", KEY_TEMPLATE_SETS)
@pytest.mark.parametrize("design", ["start", "end"])
def test_keys_are_the_templates_combined_values(templates, design):
    """Every key is its template's seed combined with the values at its parts' offsets (BOS /
    EOS outside the text), at the text's edges, inside it (the kernel reads those rows at fixed
    distances), and across its blocks of KEY_BLOCK characters; tag_many (blocks of keys summed
    into emissions, then Viterbi over emissions and bigrams) gives score's tags, ties included,
    for 4 tags (design "start") and 5 ("end")."""
    from arborist.strings import hash_string, hash_strings
    from arborist.tokenizer.features import template_parts

    chain = CharacterChain(16, templates, None, design)
    bos, eos = hash_string("<char-bos>"), hash_string("<char-eos>")
    seeds = [int(x) for x in hash_strings([f"char/{t}" for t in templates])] if templates else []
    for length in (0, 1, 5, 6, 7, 63, 64, 65, 128, 129, 150):
        text = ("Mr. Smith said: don't!  Νέα αρχή, 12.5%. " * 4)[:length]
        chars = make_example(text).chars
        vals = chain.features.values(chars).tolist()
        expected = np.zeros((length, len(templates)), dtype=np.uint64)
        for j, (name, seed) in enumerate(zip(templates, seeds)):
            for t in range(length):
                key = seed
                for column, offset in template_parts(name):
                    pos = t + offset
                    key = _combine(key, bos if pos < 0 else eos if pos >= length else vals[pos][column])
                expected[t, j] = key
        assert np.array_equal(chain.features.keys(chars), expected), (templates, length)
        w = np.random.default_rng(length).normal(size=1 << 16)
        starts = np.array([0, length], dtype=np.int64)
        for weights in (w, np.zeros(1 << 16), np.round(w)):  # ties: the first maximum wins, as in chain_argmax
            tags = chain.features.tag_many(chars, starts, weights)
            one = chain_argmax(chain.features.score(chars, weights))[0] if length else np.zeros(0)
            assert np.array_equal(tags, one), (templates, length)


@pytest.mark.parametrize("design", ["start", "end"])
def test_tag_many_batch_of_mixed_lengths(design):
    """One tag_many call over texts of mixed lengths (the kernel reuses its buffers from one
    text to the next) gives each text the tags of scoring it alone."""
    chain = CharacterChain(16, None, None, design)
    base = "Dr. Νέα αρχή: 12,5% — don't stop!  Then \ta new line.\n" * 4
    texts = [base[:n] for n in (150, 0, 1, 64, 65, 6, 129, 3)]
    starts = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in texts], out=starts[1:])
    w = np.random.default_rng(3).normal(size=1 << 16)
    batch = chain.features.tag_many(char_values(np.concatenate([code_points(t) for t in texts])), starts, w)
    for i, text in enumerate(texts):
        one = chain_argmax(chain.features.score(make_example(text).chars, w))[0] if text else np.zeros(0)
        assert np.array_equal(batch[starts[i]:starts[i + 1]], one), len(text)


def test_offsets_are_bounded_and_infinite_weights_refused():
    from arborist.tokenizer.features import MAX_OFFSET, template_parts

    assert template_parts(f"low-{MAX_OFFSET}|low+{MAX_OFFSET}") == ((1, -MAX_OFFSET), (1, MAX_OFFSET))
    with pytest.raises(ValueError, match="beyond"):
        CharacterChain(16, (f"low+{MAX_OFFSET + 1}",))
    with pytest.raises(ValueError, match="beyond"):
        template_parts("low-2147483648")
    chain = CharacterChain(16)
    chars = make_example("a b").chars
    for bad in (np.inf, -np.inf, np.nan):
        w = np.zeros(1 << 16)
        w[::3] = bad
        with pytest.raises(ValueError, match="finite score"):
            chain.features.tag_many(chars, np.array([0, 3], dtype=np.int64), w)


def test_feature_values():
    chain = CharacterChain(16)
    text = "ab cd. ab"
    vals = chain.features.values(make_example(text).chars)
    col = {name: i for i, name in enumerate(VALUES)}
    # the same chunk and position: the same value; different chunks: different
    assert vals[0, col["chunk"]] == vals[7, col["chunk"]] and vals[0, col["chunk"]] != vals[3, col["chunk"]]
    assert list(vals[3:6, col["pos"]]) == [0, 1, 2] and list(vals[3:6, col["rev"]]) == [2, 1, 0]
    # the prefix (token so far) is empty at a chunk start, and the same string gives the same value
    assert vals[0, col["prefix"]] == vals[3, col["prefix"]] == vals[7, col["prefix"]]
    assert vals[1, col["prefix"]] == vals[8, col["prefix"]] != vals[4, col["prefix"]]
    # "prev" at a chunk start is the previous chunk's value; inside a chunk a constant
    assert vals[3, col["prev"]] == vals[0, col["chunk"]] and vals[7, col["prev"]] == vals[3, col["chunk"]]
    assert vals[1, col["prev"]] == vals[4, col["prev"]]
    # whitespace has one value for every chunk column
    assert len({int(vals[2, col[c]]) for c in ("chunk", "prefix", "suffix", "prev")}) == 1
    # lowercase: "AB" and "ab" share low and chunk but not cp
    v2 = chain.features.values(make_example("AB").chars)
    assert v2[0, col["low"]] == vals[0, col["low"]] and v2[0, col["cp"]] != vals[0, col["cp"]]
    assert v2[0, col["chunk"]] == vals[0, col["chunk"]]


def test_pplast_value_and_templates():
    """pplast: at a chunk's first character, the last character of the chunk before the
    previous one when it is punctuation (the same value for "." whatever the chunk), else one
    constant; a constant inside chunks."""
    from arborist.tokenizer.features import DEFAULT_TEMPLATES, PPLAST_TEMPLATES
    chain = CharacterChain(16)
    col = {name: i for i, name in enumerate(VALUES)}
    text = "fine. 1. Definizioni. 4. Restrizioni ab 1. Cd"
    vals = chain.features.values(make_example(text).chars)
    at = lambda word: int(vals[text.index(word), col["pplast"]])
    assert at("Definizioni") == at("Restrizioni")  # "fine." and "Definizioni." end with "."
    assert at("Cd") != at("Definizioni")  # "Restrizioni" ... "ab" ends with a letter
    assert at("Cd") == at("fine")  # a letter and no chunk at all: one constant
    assert at("ab") == at("Definizioni")  # "4." before "Restrizioni" before "ab"
    assert int(vals[1, col["pplast"]]) == int(vals[text.index("efinizioni"), col["pplast"]])  # inside chunks
    assert at("Definizioni") != int(vals[1, col["pplast"]])
    assert PPLAST_TEMPLATES == DEFAULT_TEMPLATES + ("pplast|prevshape|cls",)
    keys = CharacterChain(16, PPLAST_TEMPLATES).features.keys(make_example(text).chars)
    base = chain.features.keys(make_example(text).chars)
    assert keys.shape[1] == base.shape[1] + 1


def test_add_features_matches_scores_on_a_real_text():
    chain = CharacterChain(12)
    x = make_example("Don't stop. Go!", None)
    rng = np.random.default_rng(2)
    coef = rng.normal(size=chain.shape(x.n))
    w = Weights(12, False, rng.normal(size=1 << 12))
    delta = Weights(12, False)
    chain.add_features(x, coef, delta, 1.0)
    valid = chain.valid_parts(x.n)
    assert np.isclose((coef * valid * chain.scores(x, w)).sum(), w.array @ delta.array)


# -- decoding rules ------------------------------------------------------------------

def spans(text, tags, max_sentence_tokens=0):
    ts, te, sent, after = decode_tags(code_points(text), np.array(tags, dtype=np.int8), max_sentence_tokens)
    return [text[a:b] for a, b in zip(ts, te)], sent.tolist(), after.tolist()


def test_decode_rules():
    assert spans("ab cd", [S, I, O, B, I]) == (["ab", "cd"], [True, False], [True, True])
    # a non-space O belongs to a token; a space tagged I between tokens does not
    assert spans("ab cd", [O, O, I, O, I])[0] == ["ab", "cd"]
    # an inner space between characters tagged I stays (FORMs with spaces), a tab or newline never
    assert spans("1 000", [S, I, I, I, I])[0] == ["1 000"]
    assert spans("1\t000", [S, I, I, I, I])[0] == ["1", "000"]
    assert spans("a\nb", [S, I, I])[0] == ["a", "b"]
    # a sentence start tagged on a space moves to the next token; the first token starts one
    assert spans("a. b", [B, B, S, B])[1] == [True, False, True]
    # no space between tokens: SpaceAfter=No
    assert spans("ab.", [S, I, B])[2] == [False, True]
    # sentences are cut at max_sentence_tokens
    assert spans("a b c d e", [B, O] * 4 + [B], 2)[1] == [True, False, True, False, True]


# -- multiword tokens -----------------------------------------------------------------

def test_mwt_lexicon_and_case():
    tokens = [("della", ("di", "la"))] * 3 + [("Della", ("di", "la"))] + [("casa", None)] * 5
    tokens += [("don't", ("do", "n't"))] * 2 + [("dont", None)]
    exp = MultiwordExpander().fit(tokens)
    assert exp.expand("della") == ("di", "la")
    assert exp.expand("Della") == ("Di", "la")
    assert exp.expand("DELLA") == ("DI", "LA")
    assert exp.expand("casa") is None and exp.expand("dont") is None
    assert exp.expand("Don't") == ("Do", "n't")
    assert apply_case("Στο", ("σε", "το")) == ("Σε", "το")


def test_mwt_words_that_spell_the_surface_keep_its_characters():
    """Seen or not, words that spell their surface token are its pieces, as every such multiword
    token of the treebanks is written ("NASA's" is "NASA" + "'s" in en_ewt, not "Nasa" + "'s";
    "McDonalds" is "McDonald" + "s"); other words take the surface's case pattern."""
    exp = MultiwordExpander().fit([("NASA's", ("NASA", "'s")), ("nasa's", ("nasa", "'s")), ("mcdonalds", ("mcdonald", "s")),
                                   ("MCDONALDS", ("MCDONALD", "S"))])
    assert exp.expand("NASA's") == ("NASA", "'s") and exp.expand("Nasa's") == ("Nasa", "'s")
    assert exp.expand("McDonalds") == ("McDonald", "s") and exp.expand("mcDonalds") == ("mcDonald", "s")
    assert apply_case("DoN'T", ("do", "n't")) == ("Do", "N'T")
    assert apply_case("Dalla", ("da", "la")) == ("Da", "la") and apply_case("DALLA", ("da", "la")) == ("DA", "LA")


def test_mwt_lexicon_majority():
    # seen mostly as one word: stays one word
    exp = MultiwordExpander().fit([("al", ("a", "il"))] + [("al", None)] * 3)
    assert exp.expand("al") is None
    exp = MultiwordExpander().fit([("al", ("a", "il"))] * 3 + [("al", None)])
    assert exp.expand("al") == ("a", "il")


def test_mwt_suffix_rule_for_unseen_tokens():
    verbs = ["far", "dir", "por", "trar", "dar", "aver", "esser", "veder"]
    tokens = [(v + "lo", (v, "lo")) for v in verbs]
    tokens += [(w, None) for w in ["quello", "bello", "cielo", "melo", "volo", "palo"]]  # "lo" alone is ambiguous
    exp = MultiwordExpander(min_types=3, min_share=0.6).fit(tokens)
    assert exp.expand("prenderlo") == ("prender", "lo")   # unseen, ends in "rlo": the rule
    assert exp.expand("Prenderlo") == ("Prender", "lo")
    assert exp.expand("cavallo") is None                   # "lo" without "r": not enough evidence
    assert exp.expand("quello") is None                    # seen single
    # Greek-style rewrite that changes the stem: cut "το" -> ("ε", "το")
    g = MultiwordExpander(min_types=1, min_share=0.5).fit([("στο", ("σε", "το"))])
    assert g.expand("στο") == ("σε", "το")
    # JSON round trip keeps every decision
    back = MultiwordExpander.from_json(exp.to_json())
    for form in ("prenderlo", "cavallo", "quello", "farlo", "Dirlo"):
        assert back.expand(form) == exp.expand(form)


def _stem_treebank():
    """Nominal stems (ADJ alone) take the copula "ti" as a second word; verb stems (VERB alone)
    make one-word past forms in "ti": half the "ti" types split, so the rules' precision
    (0.5 < min_share) splits none, and what decides is the stem's UPOS."""
    nominal = ["aka", "bel", "cur", "dom", "eft", "fip", "gan", "hor"]
    verbal = ["gor", "hal", "jun", "kem", "lop", "mur", "nak", "pel"]
    tokens = [(s, None, "ADJ") for s in nominal + ["nes", "sor"]] + [(s + "ti", (s, "ti")) for s in nominal]
    tokens += [(v, None, "VERB") for v in verbal + ["pas", "tav"]] + [(v + "ti", None, "VERB") for v in verbal]
    return tokens


def test_mwt_classifier_reads_the_stems_upos():
    tokens = _stem_treebank()
    rules = MultiwordExpander(classifier=False).fit(tokens)
    assert rules.expand("nesti") is None and rules.expand("pasti") is None
    exp = MultiwordExpander(classifier=True).fit(tokens)
    assert exp.expand("nesti") == ("nes", "ti")     # unseen, its stem a known ADJ
    assert exp.expand("Sorti") == ("Sor", "ti")
    assert exp.expand("pasti") is None              # unseen, its stem a known VERB
    assert exp.expand("tavti") is None
    assert exp.expand("gorti") is None and exp.expand("akati") == ("aka", "ti")  # seen: the lexicon
    # Without UPOS every known word looks alike: no stem to tell them apart.
    blind = MultiwordExpander(classifier=True).fit([t[:2] for t in tokens])
    assert (blind.expand("nesti") is None) == (blind.expand("pasti") is None)


def test_unseen_words_keep_the_surfaces_characters():
    # An unseen token whose words are its pieces keeps its own case in each ("McFarlo" is
    # not "Mcfar" + "lo"); a rewrite that changes letters puts the case pattern back.
    verbs = ["far", "dir", "por", "trar", "dar", "aver"]
    tokens = [(v + "lo", (v, "lo")) for v in verbs] + [("della", ("di", "la"))] * 3
    for classifier in (False, True):
        exp = MultiwordExpander(min_types=3, min_share=0.6, classifier=classifier).fit(tokens)
        assert exp.expand("McPrenderlo") == ("McPrender", "lo")
        assert exp.expand("PRENDERLO") == ("PRENDER", "LO")
        assert exp.expand("Della") == ("Di", "la")


def test_mwt_classifier_leaves_each_training_type_out():
    exp = MultiwordExpander(classifier=True).fit([("xyzlo", ("xyz", "lo")), ("abc", None, "NOUN")])
    r = exp.rules.index(("lo", ("", "lo")))
    assert exp.rule_types[r] == 1
    assert exp._classifier_candidates("xyzlo", leave_out=r) == [-1]  # its own rule only: nothing to learn
    assert exp._classifier_candidates("abclo") == [-1, r]
    assert exp.weights is None or not exp.weights.any()


def test_mwt_classifier_is_deterministic_and_round_trips():
    tokens = _stem_treebank()
    a, b = (MultiwordExpander(classifier=True, seed=3).fit(tokens) for _ in range(2))
    np.testing.assert_array_equal(a.weights, b.weights)
    data = json.loads(json.dumps(a.to_json()))
    back = MultiwordExpander.from_json(data)
    np.testing.assert_array_equal(back.weights, a.weights)
    assert (back.classifier, back.classifier_runs, back.seed) == (True, 4, 3)
    for form in ("nesti", "Sorti", "pasti", "akati", "gorti", "zzz"):
        assert back.expand(form) == a.expand(form)
    # a model of the rules (or one written before the classifier) loads without it
    old = MultiwordExpander(classifier=False).fit(tokens).to_json()
    assert old["classifier"] is None
    del old["classifier"]
    assert MultiwordExpander.from_json(old).classifier is False
    bad = json.loads(json.dumps(data))
    bad["classifier"]["slots"] = [1 << 30]
    bad["classifier"]["weights"] = [1.0]
    with pytest.raises(ValueError, match="malformed"):
        MultiwordExpander.from_json(bad)
    for key, value in (("word_upos", ["x"]), ("slots", 3), ("weights", None)):
        broken = json.loads(json.dumps(data))
        broken["classifier"][key] = value
        with pytest.raises(ValueError, match="malformed"):
            MultiwordExpander.from_json(broken)
    with pytest.raises(ValueError, match="at least 1"):
        MultiwordExpander(classifier=True, classifier_runs=0)
    # the margin of its perceptrons (30 by default) is saved; a file without it was trained at 0
    assert a.classifier_margin == 30.0 and back.classifier_margin == 30.0
    plain = MultiwordExpander(classifier=True, seed=3, classifier_margin=0.0).fit(tokens)
    assert not np.array_equal(plain.weights, a.weights)  # the margin changes what is learned
    before = json.loads(json.dumps(plain.to_json()))
    del before["classifier"]["margin"]
    assert MultiwordExpander.from_json(before).classifier_margin == 0.0
    np.testing.assert_array_equal(MultiwordExpander.from_json(before).weights, plain.weights)
    with pytest.raises(ValueError, match="negative"):
        MultiwordExpander(classifier=True, classifier_margin=-1.0)
    from arborist.registry import make_structure
    chain = make_structure({"@structures": "arborist.Tokenizer.v1", "hash_bits": 12, "mwt_classifier_margin": 5.0})
    assert chain.expander.classifier_margin == 5.0 and chain.registry_call()["mwt_classifier_margin"] == 5.0


# -- reading CoNLL-U ------------------------------------------------------------------

CONLLU = """# newdoc id = d1
# newpar
# sent_id = 1
# text = Vado alla casa.
1\tVado\tandare\tVERB\t_\t_\t0\troot\t_\t_
2-3\talla\t_\t_\t_\t_\t_\t_\t_\t_
2\ta\ta\tADP\t_\t_\t4\tcase\t_\t_
3\tla\til\tDET\t_\t_\t4\tdet\t_\t_
4\tcasa\tcasa\tNOUN\t_\t_\t1\tobl\t_\tSpaceAfter=No
5\t.\t.\tPUNCT\t_\t_\t1\tpunct\t_\t_

# sent_id = 2
# text = Sì.
1\tSì\tsì\tINTJ\t_\t_\t0\troot\t_\tSpaceAfter=No
2\t.\t.\tPUNCT\t_\t_\t1\tpunct\t_\t_

# newpar
# sent_id = 3
# text = Poi
1\tPoi\tpoi\tADV\t_\t_\t0\troot\t_\t_

"""


def test_reader_and_examples(tmp_path):
    path = tmp_path / "a.conllu"
    path.write_text(CONLLU, encoding="utf-8")
    paragraphs = read_paragraphs(path)
    assert [len(p.sentences) for p in paragraphs] == [2, 1]
    first = paragraphs[0].sentences[0]
    assert [t.form for t in first.tokens] == ["Vado", "alla", "casa", "."]
    assert first.tokens[1].words == ("a", "la") and first.tokens[2].space_after is False
    assert align(first) == [(0, 4), (5, 9), (10, 14), (14, 15)]
    examples = paragraph_examples(paragraphs)
    assert [x.text for x in examples] == ["Vado alla casa. Sì.", "Poi"]
    assert "".join("OBIS"[t] for t in examples[0].tags) == "SIIIOBIIIOBIIIBOSIB"
    # SpaceAfter=No on a sentence's last token joins it to the next sentence as written
    glued = CONLLU.replace("5\t.\t.\tPUNCT\t_\t_\t1\tpunct\t_\t_", "5\t.\t.\tPUNCT\t_\t_\t1\tpunct\t_\tSpaceAfter=No")
    path.write_text(glued, encoding="utf-8")
    joined = paragraph_examples(read_paragraphs(path), join="spaceafter")
    assert joined[0].text == "Vado alla casa.Sì." and "".join("OBIS"[t] for t in joined[0].tags) == "SIIIOBIIIOBIIIBSIB"
    assert paragraph_examples(read_paragraphs(path))[0].text == "Vado alla casa. Sì."
    with pytest.raises(ValueError, match="join"):
        paragraph_examples(paragraphs, join="newline")


def test_reader_errors_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.conllu"
    bad.write_text("# text = a b\n1\ta\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.conllu:2"):
        read_paragraphs(bad)
    wrong = tmp_path / "wrong.conllu"
    wrong.write_text("# text = a c\n" + "1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n2\tb\t_\t_\t_\t_\t1\tdep\t_\t_\n\n",
                     encoding="utf-8")
    (paragraph,) = read_paragraphs(wrong)
    with pytest.raises(ValueError, match=r"wrong\.conllu:1: token 2 'b'"):
        align(paragraph.sentences[0])
    problems = []
    assert paragraph_examples([paragraph], problems=problems) == [] and "wrong.conllu:1" in problems[0]
    with pytest.raises(ValueError, match="wrong.conllu:1"):
        paragraph_examples([paragraph], strict=True)


# -- a tokenizer trained on a treebank slice -------------------------------------------

SLICE_SENTENCES = 400


def treebank_slice(path, n, out):
    """The first n sentences of a CoNLL-U file, written to out."""
    lines, count = [], 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            lines.append(line)
            if not line.strip():
                count += 1
                if count == n:
                    break
    with open(out, "w", encoding="utf-8") as f:
        f.writelines(lines)
    return out


@lru_cache(maxsize=1)
def _slice_path():
    if not os.path.exists(IT_TRAIN):
        pytest.skip(f"{IT_TRAIN} is not there (the UD treebanks are read from {UD})")
    import atexit
    import shutil
    import tempfile
    directory = tempfile.mkdtemp(prefix="tok-test-")
    atexit.register(shutil.rmtree, directory, True)
    out = os.path.join(directory, "it_slice.conllu")
    return treebank_slice(IT_TRAIN, SLICE_SENTENCES, out)


@lru_cache(maxsize=1)
def small_tokenizer() -> Tokenizer:
    return train_tokenizer(_slice_path(), epochs=15, hash_bits=20, window_sentences=3)


def raw_paragraphs():
    return [" ".join(s.text for s in p.sentences) for p in read_paragraphs(_slice_path())]


def test_round_trip_on_training_text():
    tok = small_tokenizer()
    paragraphs = read_paragraphs(_slice_path())
    texts = raw_paragraphs()
    docs = tok.tokenize(texts)
    gold_tokens, gold_sents, gold_mwt = set(), set(), {}
    for d, p in enumerate(paragraphs):
        pos = 0
        for s in p.sentences:
            sp = align(s)
            gold_sents.add((d, pos + sp[0][0]))
            for t, (a, b) in zip(s.tokens, sp):
                gold_tokens.add((d, pos + a, pos + b))
                if t.words:
                    gold_mwt[(d, pos + a, pos + b)] = tuple(w.lower() for w in t.words)
            pos += len(s.text) + 1
    sys_tokens, sys_sents, sys_mwt = set(), set(), {}
    for d, doc in enumerate(docs):
        for s in doc.sentences:
            sys_sents.add((d, s.start))
            for t in s.tokens:
                sys_tokens.add((d, t.start, t.end))
                if t.words:
                    sys_mwt[(d, t.start, t.end)] = tuple(w.lower() for w in t.words)
    assert len(gold_mwt) > 100
    token_recall = len(gold_tokens & sys_tokens) / len(gold_tokens)
    token_precision = len(gold_tokens & sys_tokens) / len(sys_tokens)
    sent_recall = len(gold_sents & sys_sents) / len(gold_sents)
    sent_precision = len(gold_sents & sys_sents) / len(sys_sents)
    mwt = sum(sys_mwt.get(k) == v for k, v in gold_mwt.items()) / len(gold_mwt)
    assert token_recall > 0.995 and token_precision > 0.995, (token_recall, token_precision)
    assert sent_recall > 0.97 and sent_precision > 0.97, (sent_recall, sent_precision)
    assert mwt > 0.99, mwt


def test_save_load_round_trip(tmp_path):
    tok = small_tokenizer()
    tok.save(tmp_path / "tok")
    assert sorted(os.listdir(tmp_path / "tok")) == ["tokenizer.json", "vocab.npy", "weights.npy"]
    back = Tokenizer.load(tmp_path / "tok")
    texts = raw_paragraphs()[:3] + ["Nella casa dell'uomo c'è un gatto. Poi, niente."]
    a, b = tok.tokenize(texts), back.tokenize(texts)
    assert [[(t.form, t.start, t.words) for s in d.sentences for t in s.tokens] for d in a] == \
           [[(t.form, t.start, t.words) for s in d.sentences for t in s.tokens] for d in b]
    (tmp_path / "tok" / "tokenizer.json").write_text('{"format": "other"}')
    with pytest.raises(ValueError, match="tokenizer.json"):
        Tokenizer.load(tmp_path / "tok")


def test_conllu_output_format():
    tok = small_tokenizer()
    docs = tok.tokenize(["Vado nella casa. Sono qui.\n\nPoi vado.", "Altro."])
    lines = list(conllu_lines(docs))
    assert lines[0].startswith("# newdoc") and lines[1] == "# newpar" and lines[2] == "# sent_id = 1"
    assert lines[3] == "# text = Vado nella casa."
    assert "2-3\tnella\t_\t_\t_\t_\t_\t_\t_\t_" in lines
    assert "2\tin\t_\t_\t_\t_\t1\tdep\t_\t_" in lines and "3\tla\t_\t_\t_\t_\t1\tdep\t_\t_" in lines
    assert "4\tcasa\t_\t_\t_\t_\t1\tdep\t_\tSpaceAfter=No" in lines
    assert "1\tVado\t_\t_\t_\t_\t0\troot\t_\t_" in lines
    assert lines.count("# newpar") == 3 and sum(l.startswith("# newdoc") for l in lines) == 2
    for line in lines:
        assert line.startswith("#") or line == "" or len(line.split("\t")) == 10


def test_scorer_accepts_output(tmp_path):
    if not os.path.exists(SCORER):
        pytest.skip(f"the official scorer is not at {SCORER}")
    tok = small_tokenizer()
    gold = _slice_path()
    raw = tmp_path / "raw.txt"
    subprocess.run([sys.executable, os.path.join(TOOLS, "ud_raw_text.py"), gold, str(raw)], check=True,
                   capture_output=True)
    docs = tok.tokenize([raw.read_text(encoding="utf-8")])
    system = tmp_path / "sys.conllu"
    write_conllu(docs, system)
    out = subprocess.run([sys.executable, SCORER, "-v", gold, str(system)], check=False, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    words = next(line for line in out.stdout.splitlines() if line.startswith("Words"))
    assert float(words.split("|")[3]) > 99.0, words


# -- robustness ---------------------------------------------------------------------------

CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def covered(doc) -> bool:
    """Every character of the text but whitespace and control characters is in exactly one
    token, in order, and no token holds a control character."""
    chars = "".join(t.form for s in doc.sentences for t in s.tokens)
    return not CONTROL.search(chars) and "".join(chars.split()) == "".join(CONTROL.sub(" ", doc.text).split())


@pytest.mark.parametrize("text", [
    "", "   ", "\n\n\n", "a", ".", "?!?!...;;;,,,", "\x00\x01\x02 \x07bell\x1b[0m", "tab\there\r\nnext\rline",
    "Hello\x01world is\x7fhere.\x1b[31m Red\x9ftext\x85.", "\x01", "a \x01\x02 b",
    "Ελληνικά and English и русский 中文字符 العربية 😀👍🏽", "\u200b\u200d zero\u200bwidth", "a\u2028b\u2029c\x85d",
    "\ud800 lone surrogate", "x" * 5000, "word " * 3000, "\n\n  \n\npara one.\n\n\n\npara two.\n \n",
])
def test_bad_input_never_crashes(text):
    tok = small_tokenizer()
    (doc,) = tok.tokenize([text])
    assert covered(doc)
    for s in doc.sentences:
        assert s.tokens and all(t.form and t.form.strip() == t.form for t in s.tokens)
        for t in s.tokens:
            assert doc.text[t.start:t.end] == t.form
    for line in conllu_lines([doc]):
        assert not CONTROL.search(line.replace("\t", ""))
        assert line.startswith("#") or line == "" or len(line.split("\t")) == 10


def test_untrained_weights_do_not_crash():
    tok = Tokenizer(CharacterChain(10), np.zeros(1 << 10), MultiwordExpander())
    (doc,) = tok.tokenize(["Some text. More text!"])
    assert covered(doc) and doc.sentences


def test_two_megabyte_line_in_bounded_memory():
    tok = small_tokenizer()
    text = ("abcdefghij" * 200_000)  # 2 MB, no space at all
    tracemalloc.start()
    (doc,) = tok.tokenize([text])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert covered(doc)
    # the character values of one kernel call (32 bytes a character, 1 MB at most) and the
    # int8 tags, not a score array over all 2M characters (2M x 20 x 8 bytes = 320 MB)
    assert peak < 120e6, peak


def test_split_paragraphs():
    text = "one\ntwo\n\n  three \n \n\nfour"
    assert [text[a:b] for a, b in split_paragraphs(text)] == ["one\ntwo", "three", "four"]
    assert split_paragraphs("") == [] and split_paragraphs(" \n\n ") == []


def test_known_token_features():
    from arborist.tokenizer.chain import known_tokens
    col = {name: i for i, name in enumerate(VALUES)}
    table = known_tokens(["(", "(", "οι", "Οι", "π.μ.", "π.μ.", "once"])  # "once" is seen once: unknown
    chain = CharacterChain(12, None, table)
    vals = chain.features.values(make_example("(οι π.μ. once").chars)
    assert vals[1, col["kpre"]] == 1 and vals[1, col["ksuf"]] == 1   # "(" | "οι"
    assert vals[0, col["klong"]] == 1 and vals[1, col["klong"]] == 2
    assert vals[2, col["kpre"]] == 0 and vals[2, col["ksuf"]] == 0   # "(ο" | "ι"
    assert vals[4, col["klong"]] == 4 and vals[4, col["ksuf"]] == 1  # "π.μ." known whole
    assert vals[6, col["kpre"]] == 0                                 # "π." is not a token
    assert vals[9, col["klong"]] == 0                                # "once" seen once only
    # no table: every token unknown
    plain = CharacterChain(12).features.values(make_example("(οι").chars)
    assert not plain[:, col["klong"]].any() and not plain[:, col["kpre"]].any()


def _tiny_examples():
    texts = ["Hi, you. Go now.", "It is. We go, now.", "Go, you. Hi now.", "(Go) now."]
    examples = []
    for text in texts:
        tags = []
        for i, ch in enumerate(text):
            if ch == " ":
                tags.append(O)
            elif i == 0 or text[i - 2:i] == ". ":
                tags.append(S)
            elif ch in ",.()" or text[i - 1] in " (":
                tags.append(B)
            else:
                tags.append(I)
        examples.append(make_example(text, tags))
    return examples


def test_margin_perceptron_zero_margin_is_the_perceptron():
    from arborist.learn.perceptron import MarginPerceptron
    examples = _tiny_examples()
    chain = CharacterChain(14)
    plain, margin0 = Perceptron(seed=3), MarginPerceptron(0.0, seed=3)
    for trainer in (plain, margin0):
        trainer.begin(chain, examples, 14)
        for _ in range(3):
            trainer.epoch(chain, examples)
    np.testing.assert_array_equal(plain.prediction_weights().array, margin0.prediction_weights().array)


def test_margin_perceptron_separates_with_a_margin():
    from arborist.learn.perceptron import MarginPerceptron
    examples = _tiny_examples()
    chain = CharacterChain(16)
    trainer = MarginPerceptron(5.0, seed=1)
    trainer.begin(chain, examples, 16)
    for _ in range(30):
        metrics = trainer.epoch(chain, examples)
    assert metrics["updates"] == 0  # every example beats every other tagging by 5 per wrong tag
    w = trainer.weights
    for x in examples:
        scores = chain.scores(x, w)
        gold_score = (scores * chain.indicator(x, x.tags)).sum()  # w is the last (not averaged) vector
        best = chain.argmax(x, scores + 5.0 * chain.part_cost(x, x.tags))
        assert np.array_equal(best, x.tags)
        # ...so any single wrong tag costs at least the margin
        for t in range(x.n):
            other = x.tags.copy()
            other[t] = (other[t] + 1) % 4
            assert gold_score - (scores * chain.indicator(x, other)).sum() >= 5.0 - 1e-9


@pytest.mark.parametrize("make_trainer,epochs", [
    (lambda: __import__("arborist.learn.perceptron", fromlist=["SWVP"]).SWVP(seed=0), 15),
    (lambda: __import__("arborist.learn.eg", fromlist=["EG"]).EG("crf", C=10.0, eta=0.5, seed=0), 15),
    (lambda: __import__("arborist.learn.eg", fromlist=["EG"]).EG("m3n", C=10.0, seed=0), 15),
    (lambda: __import__("arborist.learn.baselines", fromlist=["SGD"]).SGD(C=1.0, eta0=0.1, seed=0), 15),
    (lambda: __import__("arborist.learn.medn", fromlist=["MaxEnDNet"]).MaxEnDNet(
        prior="gaussian", C=10.0, inner_epochs=2, eta=0.5, seed=0), 8),
], ids=["swvp", "eg-crf", "eg-m3n", "sgd", "medn"])
def test_every_trainer_trains_the_chain(make_trainer, epochs):
    """The trainers of arborist.learn see only the protocol: each one fits the tiny examples."""
    examples = _tiny_examples()
    chain = CharacterChain(14)
    trainer = make_trainer()
    trainer.begin(chain, examples, 14)
    for _ in range(epochs):
        trainer.epoch(chain, examples)
    w = trainer.prediction_weights()
    right = sum(int((chain.argmax(x, chain.scores(x, w)) == x.tags).sum()) for x in examples)
    assert right / sum(x.n for x in examples) > 0.95


# -- the other sentence-tag design: sentence ends (O B I E F) ---------------------------

def test_protocol_end_design():
    from arborist.tokenizer.chain import E, F
    rng = np.random.default_rng(7)
    chain = CharacterChain(HASH_BITS, design="end")
    assert chain.tags == ("O", "B", "I", "E", "F") and chain.n_tags == 5
    for text, tags in (("a.", [B, F]), ("ab", [B, E]), ("x y", [B, O, F])):
        x = make_example(text, tags)
        labels = all_labels(len(text), 5)
        scores = rng.normal(size=chain.shape(len(text))) * 2.0
        check_protocol(chain, x, scores, labels, labels[int(rng.integers(len(labels)))], hamming, rng, HASH_BITS)


def test_decode_rules_end_design():
    from arborist.tokenizer.chain import E, F

    def spans_end(text, tags):
        ts, te, sent, _ = decode_tags(code_points(text), np.array(tags, dtype=np.int8), 0, 1)
        return [text[a:b] for a, b in zip(ts, te)], sent.tolist()

    # "a." ends a sentence at the one-character token ".", "b" starts the next
    assert spans_end("a. b", [B, F, O, B]) == (["a", ".", "b"], [True, False, True])
    # E inside a token ends the sentence after that token
    assert spans_end("ab cd ef", [B, E, O, B, I, O, B, I]) == (["ab", "cd", "ef"], [True, True, False])
    # an end tagged on a space still ends the sentence
    assert spans_end("ab cd", [B, I, E, B, I]) == (["ab", "cd"], [True, True])


@pytest.mark.parametrize("design, letters, first_tags, second_tags, design_id", [
    ("end", "OBIEF", "BIIIOBIIIOBIIIFOBIF", "BIE", 1),
    ("both", "OBISEF", "SIIIOBIIIOBIIIFOSIF", "SIE", 2),
])
def test_examples_by_design(design, letters, first_tags, second_tags, design_id, tmp_path):
    path = tmp_path / "a.conllu"
    path.write_text(CONLLU, encoding="utf-8")
    (first, second) = paragraph_examples(read_paragraphs(path), design=design)
    assert "".join(letters[t] for t in first.tags) == first_tags
    assert "".join(letters[t] for t in second.tags) == second_tags
    chain = CharacterChain.from_config(CharacterChain(12, design=design).config())
    assert chain.design == design and chain.n_tags == len(letters) and chain.design_id == design_id


# -- multiword tokens conditioned on their neighbours --------------------------------

def _ambiguous_dei():
    """"dei" is one word (gods) twice as often as "di" + "i", except before "diritti"."""
    sentences = [[("Gli", None), ("dei", None), ("sono", None)]] * 4
    sentences += [[("tutela", None), ("dei", ("di", "i")), ("diritti", None)]] * 2
    sentences += [[("uno", None), ("dei", ("di", "i")), ("libri", None)]]  # one occurrence: below min_count
    exp = MultiwordExpander().fit([t for s in sentences for t in s])
    return exp.fit_context(sentences, min_count=2, min_share=0.7), sentences


def test_mwt_context_overrides_the_lexicon():
    exp, _ = _ambiguous_dei()
    assert exp.expand("dei") is None  # the lexicon's majority
    assert exp.expand_in_context("dei", "tutela", "diritti") == ("di", "i")
    assert exp.expand_in_context("Dei", "<s>", "diritti") == ("Di", "i")  # case put back
    assert exp.expand_in_context("dei", "uno", "libri") is None  # seen once: the lexicon decides
    assert exp.expand_in_context("dei", "gli", "sono") is None
    # only the contexts that change the lexicon's decision are kept
    assert exp.context == {"dei\tn\tdiritti": ("di", "i"), "dei\tp\ttutela": ("di", "i")}
    assert exp.expand_in_context("dei", "tutela", "altro") == ("di", "i")  # back-off to the previous token
    back = MultiwordExpander.from_json(exp.to_json())
    assert back.context == exp.context and back.expand_in_context("dei", "x", "diritti") == ("di", "i")
    # a context whose majority is below min_share does not decide
    mixed = [[("a", None), ("dei", ("di", "i")), ("b", None)], [("a", None), ("dei", None), ("b", None)]] * 2
    mixed += [[("x", None), ("dei", ("di", "i")), ("y", None)]] * 3
    exp = MultiwordExpander().fit([t for s in mixed for t in s]).fit_context(mixed, 2, 0.7)
    assert exp.expand("dei") == ("di", "i") and exp.context == {}


def test_tokenizer_expands_in_context():
    tok = small_tokenizer()
    exp, _ = _ambiguous_dei()
    text = "Gli dei sono qui. La tutela dei diritti. Dei diritti."
    for expander, expected in ((exp, [None, ("di", "i"), ("Di", "i")]),
                               (MultiwordExpander().fit([t for s in _ambiguous_dei()[1] for t in s]), [None] * 3)):
        ours = Tokenizer(tok.chain, tok.weights, expander)
        for _ in range(2):  # the second call answers from the expander's cache
            tokens = [t for s in ours.tokenize([text])[0].sentences for t in s.tokens]
            assert [t.words for t in tokens if t.form.lower() == "dei"] == expected


def test_mwt_context_pairs_memorize_the_training_decisions():
    """pair_min_count = 1: a seen (previous, next) pair with one outcome decides, before the
    single neighbours; only pairs that change the decision are stored."""
    exp, sentences = _ambiguous_dei()
    assert exp.expand_in_context("dei", "uno", "libri") is None  # seen once: below min_count
    pairs = MultiwordExpander().fit([t for s in sentences for t in s]).fit_context(sentences, 2, 0.7, 1)
    assert pairs.expand_in_context("dei", "uno", "libri") == ("di", "i")
    assert pairs.expand_in_context("Dei", "Uno", "libri") == ("Di", "i")
    assert pairs.expand_in_context("dei", "uno", "altro") is None  # not the pair: the lexicon
    assert pairs.expand_in_context("dei", "tutela", "diritti") == ("di", "i")
    assert {k: v for k, v in pairs.context.items() if "\tb\t" in k} == {"dei\tb\tuno\tlibri": ("di", "i")}
    back = MultiwordExpander.from_json(pairs.to_json())
    assert back.context == pairs.context and back.expand_in_context("dei", "uno", "libri") == ("di", "i")
    # a pair seen both ways does not decide
    mixed = sentences + [[("uno", None), ("dei", None), ("libri", None)]]
    exp = MultiwordExpander().fit([t for s in mixed for t in s]).fit_context(mixed, 2, 0.7, 1)
    assert exp.expand_in_context("dei", "uno", "libri") is None


def test_pprev_value_is_the_chunk_before_the_previous_one():
    chain = CharacterChain(16)
    col = {name: i for i, name in enumerate(VALUES)}
    text = "aa bb cc aa bb dd"
    vals = chain.features.values(make_example(text).chars)
    at = lambda k: int(vals[k, col["pprev"]])
    chunk = lambda k: int(vals[k, col["chunk"]])
    assert at(6) == chunk(0) and at(9) == chunk(3) and at(12) == chunk(6) and at(15) == chunk(9)
    assert at(0) == at(3) and at(0) not in (chunk(0), chunk(3))  # no chunk two back: one constant
    assert at(7) == at(1) == at(16) and at(7) != at(6)  # inside a chunk: one constant
    keys = CharacterChain(16, ("pprev|prev|chunk",)).features.keys(make_example(text).chars)
    # "aa bb" at 3 and at 12: the same bigram, told apart by the chunk before ("cc" at 12)
    assert keys[3, 0] != keys[12, 0] and keys[4, 0] == keys[13, 0]


def test_margin_schedule():
    from arborist.learn.perceptron import MarginPerceptron
    examples = _tiny_examples()
    chain = CharacterChain(14)
    trainer = MarginPerceptron(50.0, seed=3, margin_epochs=2, final_margin=0.0)
    trainer.begin(chain, examples, 14)
    assert [trainer.epoch(chain, examples)["margin"] for _ in range(4)] == [50.0, 50.0, 0.0, 0.0]
    # margin_epochs=0 is the plain perceptron from the start
    plain, zero = Perceptron(seed=3), MarginPerceptron(50.0, seed=3, margin_epochs=0)
    for trainer in (plain, zero):
        trainer.begin(chain, examples, 14)
        for _ in range(3):
            trainer.epoch(chain, examples)
    np.testing.assert_array_equal(plain.prediction_weights().array, zero.prediction_weights().array)
    with pytest.raises(ValueError):
        MarginPerceptron(1.0, margin_epochs=-1)
    # a checkpoint keeps where the schedule is: resumed after epoch 2, epoch 3 has margin 0,
    # and the weights end as the uninterrupted run's
    whole = MarginPerceptron(50.0, seed=3, margin_epochs=2, final_margin=0.0)
    whole.begin(chain, examples, 14)
    for _ in range(4):
        whole.epoch(chain, examples)
    first = MarginPerceptron(50.0, seed=3, margin_epochs=2, final_margin=0.0)
    first.begin(chain, examples, 14)
    first.epoch(chain, examples)
    first.epoch(chain, examples)
    arrays, meta = first.state()
    resumed = MarginPerceptron(50.0, seed=3, margin_epochs=2, final_margin=0.0)
    resumed.begin(chain, examples, 14)
    resumed.restore(chain, examples, arrays, meta)
    assert [resumed.epoch(chain, examples)["margin"] for _ in range(2)] == [0.0, 0.0]
    np.testing.assert_array_equal(resumed.prediction_weights().array, whole.prediction_weights().array)


# -- the combined design: sentence starts and ends (O B I S E F) ---------------------

def test_decode_both_design():
    chain = CharacterChain(12, design="both")

    def spans(text, tags):
        ts, te, sent, _ = decode_tags(code_points(text), np.array(tags, dtype=np.int8), 0, 2)
        return [text[a:b] for a, b in zip(ts, te)], sent.tolist()

    # a start (S) or an end (E/F) before is enough
    assert spans("Ab. Cd. Ef", [S, I, 5, O, B, I, B, O, B, I]) == (["Ab", ".", "Cd", ".", "Ef"],
                                                                   [True, False, True, False, False])
    assert spans("ab cd ef", [B, 4, O, B, I, O, S, I]) == (["ab", "cd", "ef"], [True, True, True])
    rng = np.random.default_rng(3)
    x = make_example("a .", [S, O, 5])
    labels = all_labels(3, 6)
    check_protocol(chain, x, rng.normal(size=chain.shape(3)), labels, labels[5], hamming, rng, 12)


# -- presegmented text: a sentence per line --------------------------------------------

@pytest.mark.parametrize("design", ["start", "end", "both"])
def test_no_sentence_tags_keep_the_token_boundaries(design):
    """NO_SENTENCE maps each design's tags to tags with the same tokens and no sentence
    boundary: on random tags, decoding the mapped tags gives the same token spans and
    space-after flags, and only the text's first token starts a sentence."""
    from arborist.tokenizer.api import NO_SENTENCE
    from arborist.tokenizer.chain import DESIGN_IDS, DESIGNS

    rng = np.random.default_rng(0)
    text = "Ab. c d-e, f.  G h! i 1 000 j.k"
    cps = code_points(text)
    K = len(DESIGNS[design])
    mapping = NO_SENTENCE[design]
    assert len(mapping) == K
    split = 0
    for _ in range(300):
        tags = rng.integers(0, K, len(text)).astype(np.int8)
        ts, te, sent, after = decode_tags(cps, tags, 0, DESIGN_IDS[design])
        ts2, te2, sent2, after2 = decode_tags(cps, mapping[tags], 0, DESIGN_IDS[design])
        assert ts.tolist() == ts2.tolist() and te.tolist() == te2.tolist() and after.tolist() == after2.tolist()
        assert sent2.tolist() == [True] + [False] * (len(ts2) - 1)
        split += int(sent.sum()) > 1
    assert split > 250  # the unmapped tags did split sentences


def test_presegmented_text_has_a_sentence_per_line():
    """`tokenize(presegmented=True)`: each non-blank line of a paragraph is one sentence (a
    sentence end inside it is not split), with the tokens and multiword tokens the line gets
    as a text of its own; blank lines still separate paragraphs; offsets index the text."""
    tok = small_tokenizer()
    sentences = [s.text for p in read_paragraphs(_slice_path()) for s in p.sentences]
    lines = [" ".join(sentences[k:k + 2]) for k in range(0, 12, 2)]  # two sentences a line
    text = "  " + lines[0] + "\n" + lines[1] + " \n\t\n" + lines[2] + "\n \n\n" + "\n".join(lines[3:]) + "\n"
    (doc,) = tok.tokenize([text], presegmented=True)
    assert [[s.text for s in p.sentences] for p in doc.paragraphs] == [lines[:2], [lines[2]], lines[3:]]
    for s, line in zip(doc.sentences, lines):
        (alone,) = tok.tokenize([line])
        assert len(alone.sentences) == 2  # what tokenizing without the lines splits
        expected = [(t.form, t.words, t.space_after) for x in alone.sentences for t in x.tokens]
        assert [(t.form, t.words, t.space_after) for t in s.tokens] == expected
        assert all(text[t.start:t.end] == t.form for t in s.tokens) and text[s.start:s.end] == s.text
    assert [text[p.start:p.end] for p in doc.paragraphs] == [lines[0] + "\n" + lines[1], lines[2], "\n".join(lines[3:])]
    # the same through the CoNLL-U writer: one sentence per line
    assert sum(line.startswith("# text = ") for line in conllu_lines([doc])) == 6


def test_presegmented_lines_are_still_cut_at_the_sentence_limit():
    tok = small_tokenizer()
    tok_limit = Tokenizer(tok.chain, tok.weights, tok.expander, max_sentence_tokens=3)
    (doc,) = tok_limit.tokenize(["uno due tre quattro cinque\nsei sette"], presegmented=True)
    assert [[t.form for t in s.tokens] for s in doc.sentences] == [["uno", "due", "tre"], ["quattro", "cinque"],
                                                                   ["sei", "sette"]]


def test_presegmented_paragraphs_across_tagging_batches():
    """Lines tagged in different kernel batches (batch_chars small) still fill one paragraph."""
    tok = small_tokenizer()
    text = "Prima riga.\nSeconda riga. Con due frasi.\nTerza.\n\nAltro paragrafo."
    whole = tok.tokenize([text], presegmented=True)
    small = tok.tokenize([text], batch_chars=5, presegmented=True)
    view = [[[(t.form, t.start) for t in s.tokens] for s in p.sentences] for d in whole for p in d.paragraphs]
    assert view == [[[(t.form, t.start) for t in s.tokens] for s in p.sentences] for d in small for p in d.paragraphs]
    assert [len(p.sentences) for p in whole[0].paragraphs] == [3, 1]
