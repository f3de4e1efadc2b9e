"""A sentence longer than the parser's limit is parsed in pieces, in every input path, into
one valid tree, with a warning that names its file and line (issue 28, item 3)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from arborist.components.parser import MAX_SENTENCE_LENGTH, LongSentenceWarning
from arborist.corpus import read_conllu
from arborist.model import load


def chain(path, n: int) -> None:
    """One sentence of n words, each attached to the one before it."""
    lines = [f"{m}\tw{m % 50}\tw{m % 50}\tNOUN\tNN\t_\t{m - 1}\t{'root' if m == 1 else 'dep'}\t_\t_"
             for m in range(1, n + 1)]
    path.write_text("# sent_id = long\n" + "\n".join(lines) + "\n\n", encoding="utf-8")


def is_tree(heads) -> bool:
    n = len(heads) - 1
    for m in range(1, n + 1):
        seen, h = set(), m
        while h != 0:
            if h in seen or not 0 <= heads[h] <= n:
                return False
            seen.add(h)
            h = heads[h]
    return True


@pytest.mark.parametrize("n", [MAX_SENTENCE_LENGTH + 1, 3 * MAX_SENTENCE_LENGTH + 17])
def test_a_long_sentence_is_one_tree_parsed_in_pieces(tiny_model, tmp_path, n):
    chain(tmp_path / "long.conllu", n)
    sentence = next(read_conllu(tmp_path / "long.conllu", require_heads=True))
    pipeline = load(tiny_model)
    with pytest.warns(LongSentenceWarning, match=f"long.conllu:1: a sentence of {n} words is parsed in pieces"):
        parsed = pipeline.annotate(sentence)
    heads = parsed.heads
    assert len(heads) == n + 1 and heads[0] == -1 and is_tree(heads)
    assert (heads[1:] == 0).sum() == 1  # single_root: one root, the first piece's
    assert parsed.deprels.count("root") == 1 and parsed.deprels[int(np.flatnonzero(heads == 0)[0])] == "root"
    # the first piece is parsed as that piece alone is (with the file's tags: the taggers see
    # the whole sentence, so their tags near the cut may differ from the piece's alone)
    short = tmp_path / "short.conllu"
    chain(short, MAX_SENTENCE_LENGTH)
    alone = pipeline.annotate(next(read_conllu(short, require_heads=True)), gold_tags=True).heads
    with pytest.warns(LongSentenceWarning):
        cut = pipeline.annotate(sentence, gold_tags=True).heads
    assert np.array_equal(cut[:MAX_SENTENCE_LENGTH + 1], alone)


def test_short_sentences_are_not_cut(tiny_model, tmp_path):
    chain(tmp_path / "s.conllu", MAX_SENTENCE_LENGTH)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LongSentenceWarning)
        load(tiny_model).annotate(next(read_conllu(tmp_path / "s.conllu", require_heads=True)))


def test_probabilities_of_a_long_sentence_are_its_pieces(tiny_model, tmp_path):
    """With probabilities, a long sentence is parsed in the same pieces (the same tree as
    without them), and a word's head distribution is its piece's: the first piece's rows are
    those of that piece parsed alone; a later piece's root column goes to the first piece's
    root word, the head its root word gets."""
    from arborist.sentence import SentenceBatch

    n = 3 * MAX_SENTENCE_LENGTH + 17
    chain(tmp_path / "long.conllu", n)
    chain(tmp_path / "short.conllu", MAX_SENTENCE_LENGTH)
    sentence = next(read_conllu(tmp_path / "long.conllu", require_heads=True))
    short = next(read_conllu(tmp_path / "short.conllu", require_heads=True))
    parser = load(tiny_model).components["parser"]
    with pytest.warns(LongSentenceWarning):
        plain = parser.predict_batch(SentenceBatch.from_sentences([short, sentence]))
    with pytest.warns(LongSentenceWarning):
        heads, distributions = parser.batch_distributions(SentenceBatch.from_sentences([short, sentence]))
    np.testing.assert_array_equal(heads, plain)
    alone, whole = distributions
    assert alone.shape == (MAX_SENTENCE_LENGTH, MAX_SENTENCE_LENGTH + 1) and whole.shape == (n, n + 1)
    np.testing.assert_allclose(whole.sum(axis=1), 1.0)
    np.testing.assert_allclose(whole[:MAX_SENTENCE_LENGTH, :MAX_SENTENCE_LENGTH + 1], alone, atol=1e-12)
    tree = heads[MAX_SENTENCE_LENGTH + 1:]
    first_root = int(np.flatnonzero(tree == 0)[0])
    later = whole[MAX_SENTENCE_LENGTH:]  # no mass outside a word's piece, its root column aside
    for m in range(MAX_SENTENCE_LENGTH, n):
        start = (m // MAX_SENTENCE_LENGTH) * MAX_SENTENCE_LENGTH
        outside = np.ones(n + 1, dtype=bool)
        outside[start + 1:start + 1 + MAX_SENTENCE_LENGTH] = False
        outside[first_root] = False
        assert later[m - MAX_SENTENCE_LENGTH, outside].sum() == 0.0
        assert whole[m, tree[m + 1]] > 0.0  # the predicted head has probability
    with pytest.warns(LongSentenceWarning):
        predicted, found = parser.annotate_confident(SentenceBatch.from_sentences([short, sentence]), 2)
    np.testing.assert_array_equal(predicted, plain)


@pytest.mark.parametrize("projective, single_root", [(False, True), (True, False), (False, False)])
def test_long_sentences_under_probabilities_keep_annotates_pieces(tmp_path, projective, single_root):
    """Every decoder (the first-order projective batch kernel, the matrix-tree theorem sentence
    by sentence), one or several root words: with probabilities, long sentences (two in one
    batch, one of MAX_SENTENCE_LENGTH + 1 words whose last piece is one word) get annotate's
    tree, and each word's head distribution is a distribution that gives its head its piece's
    probability."""
    from arborist.components.parser import Parser
    from arborist.parser.tree import DependencyTree
    from arborist.sentence import SentenceBatch

    rng = np.random.default_rng(int(projective) + 2 * int(single_root))
    parser = Parser(DependencyTree(hash_bits=14, projective=projective, single_root=single_root),
                    rng.normal(size=1 << 14))
    sentences = []
    for name, n in (("a", MAX_SENTENCE_LENGTH + 1), ("b", 12), ("c", 2 * MAX_SENTENCE_LENGTH + 40)):
        chain(tmp_path / f"{name}.conllu", n)
        sentences.append(next(read_conllu(tmp_path / f"{name}.conllu", require_heads=True)))
    with pytest.warns(LongSentenceWarning):
        plain = parser.predict_batch(SentenceBatch.from_sentences(sentences))
    with pytest.warns(LongSentenceWarning):
        predicted, found = parser.annotate_confident(SentenceBatch.from_sentences(sentences), 1)
    np.testing.assert_array_equal(predicted, plain)
    with pytest.warns(LongSentenceWarning):
        _, distributions = parser.batch_distributions(SentenceBatch.from_sentences(sentences))
    batch = SentenceBatch.from_sentences(sentences)
    for i, (x, d) in enumerate(zip(sentences, distributions)):
        np.testing.assert_allclose(d.sum(axis=1), 1.0)
        heads = predicted[batch.starts[i] + 1:batch.starts[i + 1]]
        got = found["head"].prob[batch.starts[i] + 1:batch.starts[i + 1]]
        np.testing.assert_allclose(got, d[np.arange(x.n), heads])
        assert (got > 0).all()


def test_the_command_line_prints_the_warning_as_a_line(tiny_model, tmp_path):
    """`arborist parse` prints arborist's warnings as "warning: WHERE: WHAT", as it prints errors,
    without Python's file, line and source of the call that warned."""
    import subprocess
    import sys

    chain(tmp_path / "long.conllu", MAX_SENTENCE_LENGTH + 4)
    done = subprocess.run([sys.executable, "-m", "arborist.cli", "parse", str(tiny_model), str(tmp_path / "long.conllu"),
                           "--no-progress"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert f"warning: {tmp_path / 'long.conllu'}:1: a sentence of {MAX_SENTENCE_LENGTH + 4} words is parsed in pieces " \
           f"of at most {MAX_SENTENCE_LENGTH} words" in lines
    assert "LongSentenceWarning" not in done.stderr and "predict_batch" not in done.stderr
