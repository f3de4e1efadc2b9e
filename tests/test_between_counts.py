"""The in-between count templates of the arc features ("between_count.upos=VERB": TurboParser's
counts of verbs, punctuation and coordinations between head and modifier, capped at 15),
against a count written in Python, and the kernels that use them (scores, the batch parser,
the two-thread split) against one another."""
from __future__ import annotations

from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from arborist import Parser
from arborist.parser.features import ArcFeatures
from arborist.parser.tree import DependencyTree
from arborist.sentence import Sentence, SentenceBatch
from arborist.weights import Weights

UPOS = ("VERB", "NOUN", "PUNCT", "CCONJ", "DET")
COUNTS = ("between_count.upos=VERB", "between_count.upos=PUNCT")
BITS = 20


def random_sentences(rng, count: int, lengths: tuple[int, int], p_verb: float = 0.5) -> list[Sentence]:
    """Sentences whose UPOS are mostly VERB (p_verb), so that long arcs pass more than 15 verbs;
    with p_verb above 0.5 the others are NOUN alone (fewer distinct features)."""
    out = []
    for _ in range(count):
        n = int(rng.integers(*lengths))
        rest = (1 - p_verb) / 4
        p = [p_verb, 1 - p_verb, 0, 0, 0] if p_verb > 0.5 else [p_verb, rest, rest, rest, rest]
        upos = rng.choice(UPOS, n, p=p).tolist()
        forms = [f"w{int(rng.integers(5))}" for _ in range(n)]
        out.append(Sentence.from_columns(forms, forms, upos, upos, ["_"] * n, [0] * n))
    return out


def coarse_code(h: int, m: int) -> int:
    """The coarse layout's direction-distance code (features.pyx `_coarse_distance`)."""
    d = abs(m - h)
    if m > h:
        return 0 if d == 1 else 1 if d == 2 else 2 if d <= 6 else 3
    return 4 if d == 1 else 5 if d <= 3 else 6


def test_count_features_are_the_capped_count_with_the_two_tags_and_nothing_else():
    """With only a count template, an arc's four features (the count, and the count with the
    head's and modifier's UPOS, each plain and with direction-distance) are equal for two arcs
    exactly when their capped counts (counted here in Python), tags and codes are; arcs share a
    feature exactly when their capped counts are equal. Long sentences pass the cap of 15."""
    rng = np.random.default_rng(3)
    features = ArcFeatures(["between_count.upos=VERB"], bits=20, distance_features="coarse")
    by_key, by_count = defaultdict(set), defaultdict(list)
    for x in random_sentences(rng, 3, (40, 45), p_verb=0.6):
        tags = x.upos  # tags[0] is the root's
        arcs = [(h, m) for h in range(x.n + 1) for m in range(1, x.n + 1) if h != m]
        for k in rng.choice(len(arcs), 400, replace=False):
            h, m = arcs[k]
            count = min(sum(tags[i] == "VERB" for i in range(min(h, m) + 1, max(h, m))), 15)
            indices = features.arc_indices(x, h, m).tolist()
            assert len(indices) == 4
            by_key[(count, tags[h], tags[m], coarse_code(h, m))].add(frozenset(indices))
            by_count[count].append(frozenset(indices))
    assert max(by_count) == 15 and len(by_count) == 16  # every count, the cap reached
    # one feature set per key, and distinct keys give distinct sets
    assert all(len(sets) == 1 for sets in by_key.values())
    assert len({next(iter(sets)) for sets in by_key.values()}) == len(by_key)
    # the plain count feature: shared by every arc of a count, by no arc of another
    shared = {count: frozenset.intersection(*sets) for count, sets in by_count.items()}
    assert all(shared.values())
    for count in by_count:
        others = set().union(*(s for c, sets in by_count.items() if c != count for s in sets))
        assert not shared[count] & others


@pytest.mark.parametrize("coarse", [False, True])
def test_scores_batch_parses_and_the_split_equal_the_enumerated_features(coarse):
    rng = np.random.default_rng(int(coarse))
    tree = DependencyTree(("h.upos m.upos", "between.upos") + COUNTS, hash_bits=16,
                          distance_features="coarse" if coarse else "fine")
    w = Weights(16, False, rng.normal(size=1 << 16))
    sentences = random_sentences(rng, 12, (1, 30))
    for x in sentences[:4]:
        scores = tree.scores(x, w)
        for h in range(x.n + 1):
            for m in range(1, x.n + 1):
                if h != m:
                    idx = tree.features.arc_indices(x, h, m).astype(np.int64)
                    assert np.isclose(scores[h, m], w.array[idx].sum())
    with ThreadPoolExecutor(1) as helper:
        for x in sentences:
            np.testing.assert_array_equal(tree.scores(x, w), tree.features.score(x, w.array, helper=helper))
    parser = Parser(tree, w.array)
    one_by_one = [parser.predict(x) for x in sentences]
    np.testing.assert_array_equal(parser.predict_batch(SentenceBatch.from_sentences(sentences)),
                                  np.concatenate(one_by_one))


def test_count_templates_leave_the_other_features_alone():
    x = random_sentences(np.random.default_rng(5), 1, (12, 13))[0]
    base = ArcFeatures(["h.upos m.upos", "between.upos"], bits=BITS)
    more = ArcFeatures(["h.upos m.upos", "between.upos", *COUNTS], bits=BITS)
    for h, m in [(0, 5), (3, 9), (9, 3), (4, 5)]:
        a, b = base.arc_indices(x, h, m).tolist(), more.arc_indices(x, h, m).tolist()
        assert len(b) == len(a) + 4 * len(COUNTS)
        assert not set(a) - set(b)


@pytest.mark.parametrize("template", ["between_count.upos", "between_count.upos=", "between_count.tag=VERB"])
def test_bad_count_templates_are_refused(template):
    with pytest.raises(ValueError, match="between_count.ATTR=VALUE"):
        ArcFeatures([template])
    with pytest.raises(ValueError, match="at most 4 in-between count"):
        ArcFeatures([f"between_count.upos=T{i}" for i in range(5)])
