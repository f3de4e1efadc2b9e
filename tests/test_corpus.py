"""Tests for the CoNLL-U layer (arborist.corpus), Sentence and attachment scores."""
from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

from arborist.corpus import CorpusError, read_conllu, read_corpus, write_conllu
from arborist.evaluate import attachment_scores
from arborist.sentence import ATTR_NAMES, FORM, LEMMA, LOWER, PREFIX, PREFIX_LENGTH, ROOT, UPOS, XPOS, Sentence
from arborist.strings import hash_string

REPO = Path(__file__).resolve().parents[1]
SAMPLE_DIR = REPO / "corpora" / "sample"
SAMPLE_FILES = [SAMPLE_DIR / "sample-train.conllu", SAMPLE_DIR / "sample-dev.conllu"]
SHARED_CORPORA = Path(__file__).resolve().parents[1] / "../shared/corpora"
EWT_DEV = SHARED_CORPORA / "ud" / "en_ewt" / "en_ewt-ud-dev.conllu"


def row(i, form, head, deprel="dep", upos="X", lemma=None, end="\n") -> str:
    """One CoNLL-U word line."""
    lemma = form.lower() if lemma is None else lemma
    return f"{i}\t{form}\t{lemma}\t{upos}\t_\t_\t{head}\t{deprel}\t_\t_{end}"


def write_text(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def split_lines(data: bytes) -> list[bytes]:
    """Lines with their endings ('\\n' or '\\r\\n')."""
    return data.splitlines(keepends=True)


def body_and_ending(line: bytes) -> tuple[bytes, bytes]:
    body = line.rstrip(b"\r\n")
    return body, line[len(body):]


def is_word_line(body: bytes) -> bool:
    if not body.strip() or body.startswith(b"#"):
        return False
    return body.split(b"\t", 1)[0].isdigit()


# A hand-written file: CRLF line endings, a leading blank line, several blank
# lines between sentences, comments, a multiword token (3-4), an empty node
# (5.1) and no final newline.
CRLF_TEXT = (
    "\r\n"
    "# sent_id = crlf-1\r\n"
    "# text = They say won't leave.\r\n"
    "1\tThey\tthey\tPRON\tPRP\tCase=Nom|Number=Plur\t2\tnsubj\t_\t_\r\n"
    "2\tsay\tsay\tVERB\tVBP\t_\t0\troot\t_\t_\r\n"
    "3-4\twon't\t_\t_\t_\t_\t_\t_\t_\t_\r\n"
    "3\two\twill\tAUX\tMD\t_\t5\taux\t_\t_\r\n"
    "4\tn't\tnot\tPART\tRB\t_\t5\tadvmod\t_\t_\r\n"
    "5\tleave\tleave\tVERB\tVB\t_\t2\tccomp\t_\tSpaceAfter=No\r\n"
    "6\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_\r\n"
    "\r\n"
    "\r\n"
    "\r\n"
    "# sent_id = crlf-2\r\n"
    "# text = Mary bought apples and John pears.\r\n"
    "1\tMary\tMary\tPROPN\tNNP\tNumber=Sing\t2\tnsubj\t_\t_\r\n"
    "2\tbought\tbuy\tVERB\tVBD\tTense=Past\t0\troot\t_\t_\r\n"
    "3\tapples\tapple\tNOUN\tNNS\tNumber=Plur\t2\tobj\t_\t_\r\n"
    "4\tand\tand\tCCONJ\tCC\t_\t5\tcc\t_\t_\r\n"
    "5\tJohn\tJohn\tPROPN\tNNP\tNumber=Sing\t2\tconj\t_\t_\r\n"
    "5.1\tbought\tbuy\tVERB\tVBD\tTense=Past\t_\t_\t2:conj\tCopyOf=2\r\n"
    "6\tpears\tpear\tNOUN\tNNS\tNumber=Plur\t5\torphan\t_\tSpaceAfter=No\r\n"
    "7\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_"
)


@pytest.fixture
def crlf_file(tmp_path) -> Path:
    return write_text(tmp_path / "crlf.conllu", CRLF_TEXT)


def ewt_dev() -> Path:
    if not EWT_DEV.is_file():
        pytest.skip(f"UD English EWT dev not available at {EWT_DEV}")
    return EWT_DEV


# ---------------------------------------------------------------------------
# 1. Round trip
# ---------------------------------------------------------------------------
def assert_round_trip(source: Path, tmp_path: Path) -> list[Sentence]:
    sentences = list(read_conllu(source))
    assert sentences, f"no sentences read from {source}"
    out = tmp_path / ("copy-" + source.name)
    write_conllu(out, sentences)
    assert out.read_bytes() == source.read_bytes()
    return sentences


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_round_trip_sample_files(path, tmp_path):
    sentences = assert_round_trip(path, tmp_path)
    assert all(s.has_heads for s in sentences)


def test_round_trip_en_ewt_dev(tmp_path):
    sentences = assert_round_trip(ewt_dev(), tmp_path)
    assert len(sentences) > 1000


def test_round_trip_hand_written_crlf(crlf_file, tmp_path):
    sentences = assert_round_trip(crlf_file, tmp_path)
    assert len(sentences) == 2
    # The CRLF endings were kept on the lines themselves.
    assert sentences[0].lines[1].endswith("\r\n")
    assert not sentences[1].lines[-1].endswith("\n")


def test_round_trip_crlf_with_require_heads(crlf_file, tmp_path):
    out = tmp_path / "out.conllu"
    write_conllu(out, read_corpus(crlf_file, require_heads=True))
    assert out.read_bytes() == crlf_file.read_bytes()


def test_crlf_file_contents(crlf_file):
    first, second = read_conllu(crlf_file)
    assert first.forms == [ROOT, "They", "say", "wo", "n't", "leave", "."]
    assert list(first.heads) == [-1, 2, 0, 5, 5, 2, 2]
    assert first.deprels == ["", "nsubj", "root", "aux", "advmod", "ccomp", "punct"]
    assert first.upos == [ROOT, "PRON", "VERB", "AUX", "PART", "VERB", "PUNCT"]
    # The leading blank line belongs to the first block.
    assert first.first_line == 1
    # The blank lines after the first sentence belong to it; the second starts at its comment.
    assert second.first_line == 14
    assert second.forms == [ROOT, "Mary", "bought", "apples", "and", "John", "pears", "."]
    assert list(second.heads) == [-1, 2, 0, 2, 5, 2, 5, 2]
    assert second.source == str(crlf_file)


# ---------------------------------------------------------------------------
# 2. Writing predictions changes only HEAD (and DEPREL)
# ---------------------------------------------------------------------------
def fake_heads(sentence: Sentence) -> np.ndarray:
    """Heads that differ from gold on most words (a right-branching chain)."""
    n = sentence.n
    heads = np.full(n + 1, -1, dtype=np.int32)
    heads[1:] = np.arange(0, n)
    return heads


def fake_deprels(sentence: Sentence) -> list[str]:
    return [""] + [f"pred{m}" for m in range(1, sentence.n + 1)]


def assert_only_columns_changed(original: bytes, written: bytes, sentences, heads, deprels=None):
    old_lines, new_lines = split_lines(original), split_lines(written)
    assert len(old_lines) == len(new_lines)
    expected_heads = [int(h) for s, hs in zip(sentences, heads) for h in hs[1:]]
    expected_deprels = [d for ds in deprels for d in ds[1:]] if deprels is not None else None
    m = 0
    for number, (old, new) in enumerate(zip(old_lines, new_lines), start=1):
        old_body, old_end = body_and_ending(old)
        new_body, new_end = body_and_ending(new)
        assert old_end == new_end, f"line {number}: line ending changed"
        if not is_word_line(old_body):
            assert old == new, f"line {number}: non-word line changed"
            continue
        old_cols, new_cols = old_body.split(b"\t"), new_body.split(b"\t")
        assert len(old_cols) == len(new_cols) == 10, f"line {number}"
        assert new_cols[6] == str(expected_heads[m]).encode(), f"line {number}: HEAD"
        if expected_deprels is not None:
            assert new_cols[7] == expected_deprels[m].encode(), f"line {number}: DEPREL"
            unchanged = [0, 1, 2, 3, 4, 5, 8, 9]
        else:
            unchanged = [0, 1, 2, 3, 4, 5, 7, 8, 9]
        for c in unchanged:
            assert old_cols[c] == new_cols[c], f"line {number}: column {c + 1} changed"
        m += 1
    assert m == len(expected_heads)


def prediction_sources():
    params = [pytest.param(p, id=p.name) for p in SAMPLE_FILES]
    params.append(pytest.param("crlf", id="crlf"))
    return params


@pytest.mark.parametrize("source", prediction_sources())
@pytest.mark.parametrize("with_deprels", [False, True], ids=["heads", "heads+deprels"])
def test_write_predictions_changes_only_predicted_columns(source, with_deprels, tmp_path):
    path = write_text(tmp_path / "crlf.conllu", CRLF_TEXT) if source == "crlf" else source
    sentences = list(read_conllu(path))
    heads = [fake_heads(s) for s in sentences]
    out = tmp_path / "pred.conllu"
    if with_deprels:
        deprels = [fake_deprels(s) for s in sentences]
        write_conllu(out, [(s, h, d) for s, h, d in zip(sentences, heads, deprels)])
    else:
        deprels = None
        write_conllu(out, [(s, h) for s, h in zip(sentences, heads)])
    original, written = path.read_bytes(), out.read_bytes()
    assert written != original
    assert_only_columns_changed(original, written, sentences, heads, deprels)
    # Writing the predictions did not alter the Sentence objects.
    write_conllu(tmp_path / "again.conllu", sentences)
    assert (tmp_path / "again.conllu").read_bytes() == original


def test_write_predictions_en_ewt_dev(tmp_path):
    path = ewt_dev()
    sentences = list(read_conllu(path))
    heads = [fake_heads(s) for s in sentences]
    out = tmp_path / "pred.conllu"
    write_conllu(out, [(s, h) for s, h in zip(sentences, heads)])
    assert_only_columns_changed(path.read_bytes(), out.read_bytes(), sentences, heads)


def test_write_predictions_read_back(crlf_file, tmp_path):
    sentences = list(read_conllu(crlf_file))
    gold = [s.heads.copy() for s in sentences]
    out = tmp_path / "pred.conllu"
    write_conllu(out, [(s, h) for s, h in zip(sentences, gold)])
    assert out.read_bytes() == crlf_file.read_bytes()  # writing gold heads changes nothing
    chain = [fake_heads(s) for s in sentences]
    write_conllu(out, [(s, h) for s, h in zip(sentences, chain)])
    back = list(read_conllu(out, require_heads=True))
    assert [list(s.heads) for s in back] == [list(h) for h in chain]


def test_write_is_atomic_when_input_fails(tmp_path):
    bad = write_text(tmp_path / "bad.conllu", row(1, "A", 0, "root") + "\n" + row(1, "B", "x") + "\n")
    out = write_text(tmp_path / "out.conllu", "previous contents\n")
    with pytest.raises(CorpusError):
        write_conllu(out, read_conllu(bad))
    assert out.read_bytes() == b"previous contents\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.conllu", "out.conllu"]


# ---------------------------------------------------------------------------
# 3. Multiword tokens and empty nodes are not words
# ---------------------------------------------------------------------------
def test_multiword_tokens_and_empty_nodes_are_not_words(crlf_file):
    first, second = read_conllu(crlf_file)
    assert first.n == 6  # '3-4' is not counted
    assert second.n == 7  # '5.1' is not counted
    for s in (first, second):
        assert s.forms[0] == "<ROOT>" == ROOT
        assert len(s.forms) == s.n + 1
        assert s.heads.shape == (s.n + 1,)
        assert s.heads[0] == -1
        assert s.attrs.shape == (len(ATTR_NAMES), s.n + 1)
        assert s.attrs.dtype == np.uint64
        assert len(s.deprels) == s.n + 1 and s.deprels[0] == ""
        assert len(s.word_lines) == s.n
        assert s.has_heads
    assert "won't" not in first.forms
    # word_lines point at the integer-ID lines only.
    assert [first.lines[i].split("\t")[0] for i in first.word_lines] == ["1", "2", "3", "4", "5", "6"]
    assert [second.lines[i].split("\t")[0] for i in second.word_lines] == ["1", "2", "3", "4", "5", "6", "7"]


def test_sample_multiword_tokens_not_words():
    for path in SAMPLE_FILES:
        text = path.read_text(encoding="utf-8")
        blocks = [b for b in text.split("\n\n") if b.strip()]
        sentences = list(read_conllu(path))
        assert len(sentences) == len(blocks)
        for block, s in zip(blocks, sentences):
            ids = [line.split("\t")[0] for line in block.splitlines() if line and not line.startswith("#")]
            assert s.n == sum(i.isdigit() for i in ids)
            assert s.forms[0] == "<ROOT>"


# ---------------------------------------------------------------------------
# 4. Errors name file and line
# ---------------------------------------------------------------------------
GOOD = "# sent_id = ok\n" + row(1, "Dogs", 2, "nsubj") + row(2, "bark", 0, "root") + "\n"  # lines 1-4

ERROR_CASES = {
    # name: (text, expected line, substring of the message)
    "wrong_column_count": (
        "# c\n" + row(1, "A", 0, "root") + "2\tB\tb\tX\t_\t_\t1\tdep\t_\n\n",
        3,
        "columns",
    ),
    "tab_in_form": (
        GOOD + row(1, "A", 0, "root") + row(2, "B\tC", 1, lemma="bc") + "\n",
        6,
        "found 11",
    ),
    "non_integer_head": (
        GOOD + row(1, "A", 0, "root") + row(2, "B", "one") + "\n",
        6,
        "head",
    ),
    "head_out_of_range": (
        GOOD + "# sent_id = oor\n" + row(1, "A", 0, "root") + row(2, "B", 9) + row(3, "C", 1) + "\n",
        7,
        "out of range",
    ),
    "cycle": (
        GOOD + row(1, "A", 2) + row(2, "B", 1) + row(3, "C", 0, "root") + "\n",
        5,
        "cycle",
    ),
    "no_root": (
        GOOD + "\n\n# sent_id = noroot\n# text = A B\n" + row(1, "A", 2) + row(2, "B", 1) + "\n",
        7,
        "no root",
    ),
    "empty_sentence": (
        GOOD + "\n# sent_id = empty\n# text = nothing\n\n" + row(1, "A", 0, "root") + "\n",
        6,
        "empty sentence",
    ),
    "empty_sentence_after_blank_lines": (  # named by its comment's line, not the blank file start
        "\n\n# sent_id = empty\n\n" + GOOD,
        3,
        "empty sentence",
    ),
    "id_out_of_sequence": (
        GOOD + row(1, "A", 0, "root") + row(3, "B", 1) + "\n",
        6,
        "out of sequence",
    ),
    "partial_underscore_heads": (
        GOOD + row(1, "A", 0, "root") + row(2, "B", "_") + "\n",
        6,
        "HEAD",
    ),
}


@pytest.mark.parametrize("name", list(ERROR_CASES))
def test_corpus_errors_name_file_and_line(name, tmp_path):
    text, line, fragment = ERROR_CASES[name]
    path = write_text(tmp_path / f"{name}.conllu", text)
    with pytest.raises(CorpusError) as info:
        list(read_conllu(path))
    message = str(info.value)
    assert message.startswith(f"{path}:{line}:"), message
    assert fragment.lower() in message.lower()
    assert info.value.line == line
    assert info.value.path == str(path)
    assert isinstance(info.value, ValueError)


def test_invalid_utf8_names_line(tmp_path):
    data = GOOD.encode() + row(1, "A", 0, "root").encode() + b"2\tB\xff\xfe\tb\tX\t_\t_\t1\tdep\t_\t_\n\n"
    path = write_text(tmp_path / "latin.conllu", data)
    with pytest.raises(CorpusError) as info:
        list(read_conllu(path))
    assert str(info.value).startswith(f"{path}:6:"), str(info.value)
    assert "utf-8" in str(info.value).lower()
    assert info.value.line == 6


def test_errors_in_crlf_file_count_lines(tmp_path):
    text = CRLF_TEXT.replace("5\tleave\tleave\tVERB\tVB\t_\t2\t", "5\tleave\tleave\tVERB\tVB\t_\t12\t")
    path = write_text(tmp_path / "crlf-bad.conllu", text)
    with pytest.raises(CorpusError) as info:
        list(read_conllu(path))
    assert str(info.value).startswith(f"{path}:9:"), str(info.value)


def test_underscore_heads_accepted_without_require_heads(tmp_path):
    text = GOOD + "# sent_id = raw\n" + row(1, "A", "_", "_") + row(2, "B", "_", "_") + row(3, "C", "_", "_") + "\n"
    path = write_text(tmp_path / "raw.conllu", text)
    first, raw = read_conllu(path)
    assert first.has_heads
    assert raw.n == 3
    assert list(raw.heads) == [-1, -1, -1, -1]
    assert not raw.has_heads
    # Still written back byte for byte, and predicted heads can be filled in.
    out = tmp_path / "out.conllu"
    write_conllu(out, [first, raw])
    assert out.read_bytes() == path.read_bytes()
    write_conllu(out, [first, (raw, np.array([-1, 0, 1, 2]))])
    assert list(list(read_conllu(out, require_heads=True))[1].heads) == [-1, 0, 1, 2]

    with pytest.raises(CorpusError) as info:
        list(read_conllu(path, require_heads=True))
    assert str(info.value).startswith(f"{path}:6:"), str(info.value)  # the first word of that sentence
    with pytest.raises(CorpusError):
        read_corpus(path)  # require_heads defaults to True


def test_negative_head_is_rejected(tmp_path):
    path = write_text(tmp_path / "neg.conllu", row(1, "A", -1, "root") + "\n")
    with pytest.raises(CorpusError) as info:
        list(read_conllu(path))
    assert str(info.value).startswith(f"{path}:1:")


# ---------------------------------------------------------------------------
# 5. Streaming
# ---------------------------------------------------------------------------
def test_read_conllu_is_a_generator(tmp_path):
    assert inspect.isgenerator(read_conllu(SAMPLE_FILES[1]))
    # Nothing is read until iteration starts: a missing file fails only then.
    gen = read_conllu(tmp_path / "missing.conllu")
    assert inspect.isgenerator(gen)
    with pytest.raises(OSError):
        next(gen)


@pytest.mark.parametrize(
    "bad_tail, line",
    [
        pytest.param(row(1, "A", 0, "root").encode() + b"2\tB\tb\n\n", 6, id="columns"),
        pytest.param(row(1, "A", 0, "root").encode() + b"2\t\xff\tb\tX\t_\t_\t1\tdep\t_\t_\n\n", 6, id="utf8"),
        pytest.param(row(1, "A", 0, "root").encode() + row(2, "B", 7).encode() + b"\n", 6, id="tree"),
    ],
)
def test_streaming_yields_first_sentence_before_error(bad_tail, line, tmp_path):
    path = write_text(tmp_path / "tail.conllu", GOOD.encode() + bad_tail)
    gen = read_conllu(path)
    first = next(gen)
    assert first.forms == [ROOT, "Dogs", "bark"]
    assert list(first.heads) == [-1, 2, 0]
    with pytest.raises(CorpusError) as info:
        next(gen)
    assert str(info.value).startswith(f"{path}:{line}:"), str(info.value)


def test_streaming_yields_complete_sentence_before_utf8_error_on_next_line(tmp_path):
    path = write_text(tmp_path / "tail.conllu", GOOD.encode() + b"1\t\xff\tb\tX\t_\t_\t0\troot\t_\t_\n\n")
    gen = read_conllu(path)
    first = next(gen)
    assert first.forms == [ROOT, "Dogs", "bark"]
    with pytest.raises(CorpusError) as info:
        next(gen)
    assert str(info.value).startswith(f"{path}:5:")


# ---------------------------------------------------------------------------
# 6. spaCy-compatible hashes
# ---------------------------------------------------------------------------
def test_hash_string_matches_spacy():
    spacy = pytest.importorskip("spacy")
    strings = spacy.blank("en").vocab.strings
    assert hash_string("dog") == strings["dog"]
    # Ordinary strings (not among spaCy's built-in symbols).
    for text in ["Dog", "NN", "<ROOT>", "n't", "naïve", "東京", "emoji 🙂", "case", "flat"]:
        assert hash_string(text) == strings[text], text


def test_hash_string_matches_spacy_for_symbol_strings():
    spacy = pytest.importorskip("spacy")
    nlp = spacy.blank("en")
    for text in ["NOUN", "PUNCT", "_", "mark", ""]:
        assert hash_string(text) == nlp.vocab.strings[text], text
    sentence = Sentence.from_columns(["mark"], upos=["NOUN"])
    assert sentence.attrs[FORM, 1] == nlp("mark")[0].orth


def test_sentence_attrs_are_string_hashes(crlf_file):
    first, _ = read_conllu(crlf_file)
    lemmas = [ROOT, "they", "say", "will", "not", "leave", "."]
    xpos = [ROOT, "PRP", "VBP", "MD", "RB", "VB", "."]
    for i, form in enumerate(first.forms):
        assert first.attrs[FORM, i] == hash_string(form)
        lower = form if i == 0 else form.lower()
        assert first.attrs[LOWER, i] == hash_string(lower)
        assert first.attrs[LEMMA, i] == hash_string(lemmas[i])
        assert first.attrs[UPOS, i] == hash_string(first.upos[i])
        assert first.attrs[XPOS, i] == hash_string(xpos[i])
        prefix = form if i == 0 else form.lower()[:PREFIX_LENGTH]
        assert first.attrs[PREFIX, i] == hash_string(prefix)
    assert first.attrs[FORM, 1] == hash_string("They")
    assert first.attrs[LOWER, 1] == hash_string("they")


def test_sentence_attrs_match_spacy_vocab():
    spacy = pytest.importorskip("spacy")
    strings = spacy.blank("en").vocab.strings
    sentence = next(read_conllu(SAMPLE_FILES[1]))
    for i, form in enumerate(sentence.forms):
        assert int(sentence.attrs[FORM, i]) == strings[form]


# ---------------------------------------------------------------------------
# 7. Attachment scores
# ---------------------------------------------------------------------------
def scoring_example():
    s1 = Sentence.from_columns(
        ["Mary", "'s", "dog", "barked", "."],
        upos=["PROPN", "PART", "NOUN", "VERB", "PUNCT"],
        heads=[3, 1, 4, 0, 4],
        deprels=["nmod:poss", "case", "nsubj", "root", "punct"],
    )
    s2 = Sentence.from_columns(
        ["Dogs", "bark", "!"],
        upos=["NOUN", "VERB", "PUNCT"],
        heads=[2, 0, 2],
        deprels=["nsubj", "root", "punct"],
    )
    s3 = Sentence.from_columns(["Hi"], upos=["INTJ"], heads=[0], deprels=["root"])
    # s1: heads right except the punctuation; 'nmod' vs gold 'nmod:poss' is a right label,
    #     'obj' vs 'nsubj' is wrong; the '.' label is right but its head is wrong.
    p1 = (np.array([-1, 3, 1, 4, 0, 3]), ["", "nmod", "case", "obj", "root", "punct"])
    # s2: 'Dogs' gets a wrong head; '!' has a subtyped but right label.
    p2 = (np.array([-1, 3, 0, 2]), ["", "nsubj", "root", "punct:extra"])
    # s3: all right.
    p3 = (np.array([-1, 0]), ["", "root"])
    return [(s1, *p1), (s2, *p2), (s3, *p3)]


def test_attachment_scores_hand_computed():
    scores = attachment_scores(scoring_example())
    assert scores["words"] == 9
    assert scores["sentences"] == 3
    # heads right: s1 4/5, s2 2/3, s3 1/1 -> 7/9
    assert scores["uas"] == pytest.approx(100 * 7 / 9)
    # without PUNCT: s1 4/4, s2 1/2, s3 1/1 -> 6/7
    assert scores["uas_nopunct"] == pytest.approx(100 * 6 / 7)
    # head and universal label right: s1 3/5 (Mary, 's, barked), s2 2/3 (bark, !), s3 1/1 -> 6/9
    assert scores["las"] == pytest.approx(100 * 6 / 9)
    # without PUNCT: s1 3/4, s2 1/2, s3 1/1 -> 5/7
    assert scores["las_nopunct"] == pytest.approx(100 * 5 / 7)
    # head and full label (subtype included) right: s1 2/5 ('s, barked; nmod is not nmod:poss),
    # s2 1/3 (bark; punct:extra is not punct), s3 1/1 -> 4/9
    assert scores["las_full"] == pytest.approx(100 * 4 / 9)
    # only s3 entirely right
    assert scores["exact_match"] == pytest.approx(100 / 3)


def test_attachment_scores_without_deprels():
    pairs = [(s, h, None) for s, h, _ in scoring_example()]
    scores = attachment_scores(pairs)
    assert "las" not in scores and "las_nopunct" not in scores and "las_full" not in scores
    assert scores["uas"] == pytest.approx(100 * 7 / 9)
    assert scores["uas_nopunct"] == pytest.approx(100 * 6 / 7)
    assert scores["exact_match"] == pytest.approx(100 / 3)
    assert scores["words"] == 9 and scores["sentences"] == 3


def test_attachment_scores_subtype_only_differs():
    s = Sentence.from_columns(["my", "dog"], upos=["PRON", "NOUN"], heads=[2, 0], deprels=["nmod:poss", "root"])
    scores = attachment_scores([(s, np.array([-1, 2, 0]), ["", "nmod", "root"])])
    assert scores["las"] == pytest.approx(100.0)
    scores = attachment_scores([(s, np.array([-1, 2, 0]), ["", "det", "root"])])
    assert scores["las"] == pytest.approx(50.0)
    assert scores["uas"] == pytest.approx(100.0)
    scores = attachment_scores([(s, np.array([-1, 2, 0]), ["", "nmod", "root"])])
    assert scores["las_full"] == pytest.approx(50.0)
    with pytest.raises(ValueError, match="1 predicted labels for 2 words"):
        attachment_scores([(s, np.array([-1, 2, 0]), ["nmod"])])


def test_attachment_scores_gold_is_perfect():
    sentences = list(read_conllu(SAMPLE_FILES[1], require_heads=True))
    scores = attachment_scores((s, s.heads, s.deprels) for s in sentences)
    for key in ("uas", "uas_nopunct", "las", "las_nopunct", "las_full", "exact_match"):
        assert scores[key] == pytest.approx(100.0), key
    assert scores["sentences"] == len(sentences)
    assert scores["words"] == sum(s.n for s in sentences)


def test_attachment_scores_empty():
    scores = attachment_scores([])
    assert scores["words"] == 0 and scores["sentences"] == 0
    assert scores["uas"] == 0.0


def test_sentences_from_forms_equal_from_columns():
    from arborist.sentence import Sentence

    sentences = [["Hello", "World", "!"], [], ["ÉCOLE", "straße", "İstanbul", "a" * 9], ["x"]]
    many = Sentence.from_forms(sentences)
    assert len(many) == len(sentences)
    for forms, got in zip(sentences, many):
        one = Sentence.from_columns(forms)
        np.testing.assert_array_equal(got.attrs, one.attrs)
        np.testing.assert_array_equal(got.heads, one.heads)
        assert (got.forms, got.upos, got.xpos, got.deprels) == (one.forms, one.upos, one.xpos, one.deprels)


def test_read_conllu_yields_at_the_blank_line_when_idle(tmp_path):
    """With `idle` true (standard input with nothing waiting), a sentence comes at its first
    blank line; the blank lines after it lead the next sentence, so the lines written back are
    the input's, and those that end the input are dropped. Without `idle`, or when it is false,
    a sentence keeps the blank lines after it."""
    one = "# text = a\n1\ta\t_\t_\t_\t_\t_\t_\t_\t_\n"
    two = "1\tb\t_\t_\t_\t_\t_\t_\t_\t_\n"
    path = tmp_path / "x.conllu"
    path.write_text(one + "\n\n" + two + "\n\n", encoding="utf-8")
    lines = lambda **kw: [s.lines for s in read_conllu(path, **kw)]
    kept = [one.splitlines(keepends=True) + ["\n", "\n"], [two, "\n", "\n"]]
    assert lines() == lines(idle=lambda: False) == kept
    eager = list(read_conllu(path, idle=lambda: True))
    assert [s.lines for s in eager] == [one.splitlines(keepends=True) + ["\n"], ["\n", two, "\n"]]
    assert [s.forms[1:] for s in eager] == [["a"], ["b"]] and eager[1].first_line == 4
