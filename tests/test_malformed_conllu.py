"""Generated malformed and edge-case CoNLL-U files (issue 28, hardening).

Every file is built here by code, in tmp_path. Each invalid file must be refused by
read_conllu and read_corpus with a CorpusError naming the file and the offending line;
each valid edge case must be read with the right content and written back byte for
byte. What is invalid follows the UD validator's format (level 1) and tree rules; see
arborist/corpus.py. A few of the files also go through `arborist evaluate` and
`arborist parse`, which must fail with the file:line message and no traceback.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arborist.corpus import _needs_check, CorpusError, read_conllu, read_corpus, write_conllu
from arborist.sentence import ROOT

BOM = b"\xef\xbb\xbf"


def row(i, form="w", head=0, deprel="dep", lemma=None, upos="X", xpos="_", feats="_", deps="_", misc="_") -> str:
    """One CoNLL-U token line (a word, a multiword token '1-2' or an empty node '2.1'), without its ending."""
    lemma = form.lower() if lemma is None else lemma
    return "\t".join(map(str, (i, form, lemma, upos, xpos, feats, head, deprel, deps, misc)))


def mwt(span: str, form: str = "ab") -> str:
    return row(span, form, "_", "_", lemma="_", upos="_")


def empty(node_id: str, form: str = "e") -> str:
    return row(node_id, form, "_", "_", deps="1:dep")


def chain(n: int, start_comment: str | None = None) -> list[str]:
    """A well-formed n-word sentence: word 1 is the root, word m > 1 attaches to m - 1."""
    lines = [f"# sent_id = {start_comment}"] if start_comment else []
    return lines + [row(m, f"w{m}", m - 1, "root" if m == 1 else "dep") for m in range(1, n + 1)]


def text(*sentences: list[str], ending: str = "\n", final_newline: bool = True) -> bytes:
    """Sentences (lists of lines) joined into a file: each line ends with `ending`, a blank
    line after every sentence (after the last one only with `final_newline`)."""
    out = "".join(ending.join(s) + ending + ending for s in sentences)
    if not final_newline:
        out = out[: -2 * len(ending)]
    return out.encode("utf-8")


GOOD = chain(3, "good")  # 4 lines, then a blank line: a following sentence starts at line 6


@dataclass
class Bad:
    data: bytes
    line: int  # the offending line, 1-based
    fragment: str  # part of the message (case-insensitive)


def bad_cases() -> dict[str, Bad]:
    cases = {}

    # -- two roots in a gold tree (UD's tree rule); the line is the second root's ------
    cases["two_roots"] = Bad(text(["# sent_id = 2r", row(1, "A", 0, "root"), row(2, "B", 0, "root")]), 3, "second root")
    cases["two_roots_second_sentence"] = Bad(
        text(GOOD, [row(1, "A", 0, "root"), row(2, "B", 1), row(3, "C", 0, "root"), row(4, "D", 3)]), 8, "second root")
    cases["three_roots"] = Bad(text([row(1, "A", 0), row(2, "B", 0), row(3, "C", 0)]), 2, "second root")
    cases["two_roots_after_multiword"] = Bad(
        text([mwt("1-2"), row(1, "A", 3), row(2, "B", 3), row(3, "C", 0), empty("3.1"), row(4, "D", 0)]), 6,
        "words 3 and 4")
    cases["two_roots_crlf"] = Bad(text(GOOD, [row(1, "A", 0), row(2, "B", 0)], ending="\r\n"), 7, "second root")
    cases["two_roots_no_final_newline"] = Bad(
        text(GOOD, [row(1, "A", 2), row(2, "B", 0), row(3, "C", 0)], final_newline=False), 8, "second root")

    # -- multiword token ranges -----------------------------------------------------
    cases["mwt_overlap"] = Bad(
        text([mwt("1-2"), row(1, "A", 0), mwt("2-3"), row(2, "B", 1), row(3, "C", 1)]), 3, "overlaps 1-2 (line 1)")
    cases["mwt_overlap_after_its_words"] = Bad(  # 2-3 placed before word 3, but word 2 is in 1-2
        text([mwt("1-2"), row(1, "A", 0), row(2, "B", 1), mwt("2-3"), row(3, "C", 1)]), 4, "overlaps 1-2 (line 1)")
    cases["mwt_overlap_same_start"] = Bad(
        text(GOOD, [mwt("1-2"), mwt("1-3"), row(1, "A", 0), row(2, "B", 1), row(3, "C", 1)]), 7, "overlaps")
    cases["mwt_overlap_nested"] = Bad(
        text([mwt("1-4"), row(1, "A", 0), mwt("2-3"), row(2, "B", 1), row(3, "C", 1), row(4, "D", 1)]), 3,
        "overlaps")
    cases["mwt_past_end"] = Bad(
        text(["# text = ABCD", mwt("1-9"), row(1, "A", 0), row(2, "B", 1), row(3, "C", 1), row(4, "D", 1)]), 2,
        "past the sentence's last word (4)")
    cases["mwt_past_end_at_sentence_end"] = Bad(
        text(GOOD, [row(1, "A", 0), row(2, "B", 1), mwt("3-4")]), 8, "past the sentence's last word (2)")
    cases["mwt_past_end_parse_input"] = Bad(  # a format rule: applies without heads too
        text([mwt("1-3"), row(1, "A", "_", "_"), row(2, "B", "_", "_")]), 1, "past")
    cases["mwt_one_word"] = Bad(text([row(1, "A", 0), mwt("2-2"), row(2, "B", 1)]), 2, "two or more words")
    cases["mwt_reversed"] = Bad(text([mwt("2-1"), row(1, "A", 0), row(2, "B", 1)]), 1, "not a valid ID")
    cases["mwt_after_its_words"] = Bad(
        text([row(1, "A", 0), row(2, "B", 1), mwt("1-2")]), 3, "not just before its first word")
    cases["mwt_before_a_later_word"] = Bad(
        text([row(1, "A", 0), mwt("3-4"), row(2, "B", 1), row(3, "C", 1), row(4, "D", 1)]), 2,
        "the next word is 2")

    # -- empty nodes ----------------------------------------------------------------
    cases["empty_node_after_wrong_word"] = Bad(
        text([row(1, "A", 0), row(2, "B", 1), empty("5.1"), row(3, "C", 1), row(4, "D", 1), row(5, "E", 1)]), 3,
        "expected 2.1")
    cases["empty_node_before_its_word"] = Bad(
        text(GOOD, [row(1, "A", 0), empty("2.1"), row(2, "B", 1)]), 7, "expected 1.1")
    cases["empty_node_skips_index"] = Bad(text([row(1, "A", 0), row(2, "B", 1), empty("2.2")]), 3, "expected 2.1")
    cases["empty_node_repeated"] = Bad(
        text([row(1, "A", 0), empty("1.1"), empty("1.1"), row(2, "B", 1)]), 3, "expected 1.2")
    cases["empty_node_parse_input"] = Bad(
        text([row(1, "A", "_", "_"), empty("3.1"), row(2, "B", "_", "_")]), 2, "out of place")

    # -- characters -----------------------------------------------------------------
    cases["nul_in_form"] = Bad(text(GOOD, [row(1, "A\x00B", 0)]), 6, "U+0000 in the FORM column")
    cases["nul_in_misc"] = Bad(text([row(1, "A", 0, misc="Note=\x00")]), 1, "U+0000 in the MISC column")
    cases["escape_in_lemma"] = Bad(text([row(1, "A", 0), row(2, "B", 1, lemma="b\x1b[0m")]), 2, "U+001B")
    cases["carriage_return_inside_line"] = Bad(text([row(1, "A\rB", 0)]), 1, "U+000D")
    cases["delete_in_deprel"] = Bad(text([row(1, "A", 0, "ro\x7fot")]), 1, "U+007F in the DEPREL")
    cases["empty_form"] = Bad(text(GOOD, [row(1, "A", 0), row(2, "", 1, lemma="b")]), 7, "empty FORM")
    cases["empty_form_of_multiword_token"] = Bad(
        text([mwt("1-2", ""), row(1, "A", 0), row(2, "B", 1)]), 1, "empty FORM")
    cases["empty_id"] = Bad(text([row(1, "A", 0), row("", "B", 1)]), 2, "empty ID")
    cases["empty_deprel"] = Bad(text([row(1, "A", 0, "")]), 1, "empty DEPREL")
    cases["empty_misc_trailing_tab"] = Bad(text([row(1, "A", 0, misc="")]), 1, "empty MISC")
    cases["form_leading_space"] = Bad(text([row(1, " A", 0, lemma="a")]), 1, "leading or trailing whitespace")
    cases["form_trailing_space"] = Bad(text([row(1, "A", 0), row(2, "B ", 1, lemma="b")]), 2, "FORM")
    cases["form_only_a_space"] = Bad(text([row(1, " ", 0, lemma="_")]), 1, "whitespace in the FORM")
    cases["form_double_space"] = Bad(text([row(1, "New  York", 0)]), 1, "two whitespace characters")
    cases["space_in_upos"] = Bad(text([row(1, "A", 0, upos="NO UN")]), 1, "whitespace in the UPOS column")
    cases["nbsp_in_deprel"] = Bad(text([row(1, "A", 0, "root\u00a0x")]), 1, "whitespace in the DEPREL")
    cases["space_in_head"] = Bad(text([row(1, "A", 0), row(2, "B", " 1")]), 2, "HEAD")
    cases["bom_inside_file"] = Bad(BOM + text(GOOD) + BOM + text(chain(2, "cat")), 6, "byte-order mark")
    cases["invalid_utf8"] = Bad(text(GOOD) + b"1\tA\xff\ta\tX\t_\t_\t0\troot\t_\t_\n\n", 6, "utf-8")

    # -- classes the reader refused before (kept refused) -----------------------------
    cases["nine_columns"] = Bad(text([row(1, "A", 0).rsplit("\t", 1)[0]]), 1, "found 9")
    cases["tab_in_form"] = Bad(text([row(1, "A\tB", 0, lemma="ab")]), 1, "found 11")
    cases["head_out_of_range"] = Bad(text([row(1, "A", 0), row(2, "B", 3)]), 2, "out of range")
    cases["own_head"] = Bad(text([row(1, "A", 0), row(2, "B", 2)]), 2, "its own head")
    cases["cycle"] = Bad(text(GOOD, [row(1, "A", 0), row(2, "B", 3), row(3, "C", 2)]), 7, "cycle")
    cases["no_root"] = Bad(text(GOOD, ["# sent_id = x", row(1, "A", 2), row(2, "B", 1)]), 6, "no root")
    cases["word_id_gap"] = Bad(text([row(1, "A", 0), row(3, "B", 1)]), 2, "out of sequence")
    cases["sentences_not_separated"] = Bad(text(GOOD[:3] + [row(1, "C", 1)]), 4, "expected 3")
    cases["partial_underscore_heads"] = Bad(text([row(1, "A", 0), row(2, "B", "_")]), 2, "HEAD is '_'")
    cases["comment_only_block"] = Bad(text(GOOD, ["# sent_id = none", "# text = nothing"]), 6, "empty sentence")
    return cases


@dataclass
class Good:
    data: bytes
    forms: list[list[str]]  # per sentence, without the root
    heads: list[list[int] | None] = field(default_factory=list)  # per sentence, None: no heads ('_')


def good_cases() -> dict[str, Good]:
    def forms(n):
        return [f"w{m}" for m in range(1, n + 1)]

    def chain_heads(n):
        return list(range(0, n))

    cases = {}
    cases["crlf"] = Good(text(GOOD, chain(2, "b"), ending="\r\n"), [forms(3), forms(2)], [chain_heads(3), chain_heads(2)])
    cases["no_final_newline"] = Good(text(GOOD, chain(2), final_newline=False), [forms(3), forms(2)],
                                     [chain_heads(3), chain_heads(2)])
    cases["no_final_newline_crlf"] = Good(text(chain(2), ending="\r\n", final_newline=False), [forms(2)],
                                          [chain_heads(2)])
    cases["one_word_sentences"] = Good(text(chain(1, "a"), chain(1), [row(1, "Hi", 0, "root")]),
                                       [["w1"], ["w1"], ["Hi"]], [[0], [0], [0]])
    cases["form_with_space"] = Good(
        text([row(1, "New York", 2, "nsubj", lemma="New York", misc="Translit=new york"), row(2, "sleeps", 0)]),
        [["New York", "sleeps"]], [[2, 0]])
    cases["form_with_nbsp"] = Good(text([row(1, "10\u00a0000", 0)]), [["10\u00a0000"]], [[0]])
    cases["form_underscore"] = Good(text([row(1, "_", 0, lemma="_")]), [["_"]], [[0]])
    cases["empty_node_after_its_word"] = Good(
        text([row(1, "A", 2), row(2, "B", 0), empty("2.1"), empty("2.2"), row(3, "C", 2)]), [["A", "B", "C"]],
        [[2, 0, 2]])
    cases["empty_node_before_first_word"] = Good(text([empty("0.1"), row(1, "A", 0)]), [["A"]], [[0]])
    cases["empty_node_at_sentence_end"] = Good(text([row(1, "A", 0), row(2, "B", 1), empty("2.1")]), [["A", "B"]],
                                               [[0, 1]])
    cases["empty_node_inside_multiword_token"] = Good(
        text([mwt("1-2"), row(1, "A", 0), empty("1.1"), row(2, "B", 1)]), [["A", "B"]], [[0, 1]])
    cases["adjacent_multiword_tokens"] = Good(
        text([mwt("1-2"), row(1, "A", 0), row(2, "B", 1), mwt("3-4"), row(3, "C", 1), row(4, "D", 3)]),
        [["A", "B", "C", "D"]], [[0, 1, 1, 3]])
    cases["multiword_token_ends_sentence"] = Good(
        text([row(1, "A", 0), mwt("2-3"), row(2, "B", 1), row(3, "C", 1)]), [["A", "B", "C"]], [[0, 1, 1]])
    cases["bom_before_comment"] = Good(BOM + text(GOOD), [forms(3)], [chain_heads(3)])
    cases["bom_before_word_line"] = Good(BOM + text(chain(2), chain(1)), [forms(2), forms(1)],
                                         [chain_heads(2), chain_heads(1)])
    cases["bom_crlf_no_final_newline"] = Good(BOM + text(chain(2, "x"), ending="\r\n", final_newline=False),
                                              [forms(2)], [chain_heads(2)])
    cases["bom_then_blank_lines"] = Good(BOM + b"\n\n" + text(chain(2)), [forms(2)], [chain_heads(2)])
    cases["leading_and_repeated_blank_lines"] = Good(b"\n\n" + text(chain(2)) + b"\n\n\n" + text(chain(1)),
                                                     [forms(2), forms(1)], [chain_heads(2), chain_heads(1)])
    cases["parse_input_without_heads"] = Good(
        text([row(1, "A", "_", "_"), row(2, "B", "_", "_"), row(3, "C", "_", "_")]), [["A", "B", "C"]], [None])
    cases["comment_with_tab_and_controls"] = Good(text(["# text = a\tb \x07 c", row(1, "A", 0)]), [["A"]], [[0]])
    cases["unicode_forms"] = Good(
        text([row(1, "naïve", 0), row(2, "東京", 1), row(3, "🙂", 1), row(4, "co\u00adop", 1), row(5, "a\u200db", 1)]),
        [["naïve", "東京", "🙂", "co\u00adop", "a\u200db"]], [[0, 1, 1, 1, 1]])
    cases["long_sentence"] = Good(text(chain(500)), [forms(500)], [chain_heads(500)])
    return cases


BAD = bad_cases()
GOOD_CASES = good_cases()


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / f"{name}.conllu"
    path.write_bytes(data)
    return path


def test_case_counts():
    # The issue asks for at least 40 generated files.
    assert len(BAD) + len(GOOD_CASES) >= 40
    assert len(BAD) >= 30 and len(GOOD_CASES) >= 15


@pytest.mark.parametrize("reader", ["read_conllu", "read_corpus"])
@pytest.mark.parametrize("name", list(BAD))
def test_invalid_file_is_refused_with_file_and_line(name, reader, tmp_path):
    case = BAD[name]
    path = write(tmp_path, name, case.data)
    # Both readers refuse: read_conllu (input to parse, HEAD may be '_') and read_corpus
    # (gold data, heads required) apply the same format rules, and the tree rules
    # wherever heads are given.
    with pytest.raises(CorpusError) as info:
        list(read_conllu(path)) if reader == "read_conllu" else read_corpus(path)
    message = str(info.value)
    assert message.startswith(f"{path}:{case.line}: "), message
    assert info.value.line == case.line and info.value.path == str(path)
    assert case.fragment.lower() in message.lower(), message
    # The line named is the offending one: the message is not about a neighbouring line.
    lines = case.data.split(b"\n")
    assert case.line <= len(lines)


@pytest.mark.parametrize("name", list(GOOD_CASES))
def test_valid_edge_case_is_read_and_written_back(name, tmp_path):
    case = GOOD_CASES[name]
    path = write(tmp_path, name, case.data)
    sentences = list(read_conllu(path))
    assert [s.forms[1:] for s in sentences] == case.forms
    assert all(s.forms[0] == ROOT for s in sentences)
    for s, heads in zip(sentences, case.heads):
        if heads is None:
            assert not s.has_heads and list(s.heads) == [-1] * (s.n + 1)
        else:
            assert list(s.heads) == [-1] + heads
    if all(h is not None for h in case.heads):
        assert [list(s.heads) for s in read_corpus(path)] == [list(s.heads) for s in sentences]
    # Written back byte for byte (a byte-order mark included).
    out = tmp_path / "out.conllu"
    write_conllu(out, sentences)
    assert out.read_bytes() == case.data


def test_bom_line_numbers_unchanged(tmp_path):
    """With a byte-order mark, errors still name the right line (the mark is not a line)."""
    path = write(tmp_path, "bom_bad", BOM + text(GOOD, [row(1, "A", 0), row(2, "B", 0)]))
    with pytest.raises(CorpusError) as info:
        list(read_conllu(path))
    assert info.value.line == 7


def test_bom_first_sentence_contents(tmp_path):
    path = write(tmp_path, "bom", BOM + text([row(1, "Dogs", 2, "nsubj", upos="NOUN"), row(2, "bark", 0, "root")]))
    (sentence,) = read_conllu(path)
    assert sentence.forms == [ROOT, "Dogs", "bark"]  # not "\ufeffDogs"
    assert sentence.upos == [ROOT, "NOUN", "X"]
    assert sentence.deprels == ["", "nsubj", "root"]
    assert sentence.first_line == 1


def test_every_whitespace_and_control_character_is_checked():
    """corpus._needs_check picks the lines _check_columns examines; a character it let
    through would never be checked. Every whitespace character but TAB (the separator),
    every C0 control character and DEL must make a line need the check."""
    line = row(1, "A", 0)
    assert not _needs_check(line)
    for c in range(sys.maxunicode + 1):
        char = chr(c)
        if char != "\t" and (char.isspace() or c < 0x20 or c == 0x7F):
            assert _needs_check(row(1, f"A{char}B", 0)), f"U+{c:04X}"
    for empty_column in (row("", "A", 0), row(1, "", 0), row(1, "A", 0, misc="")):
        assert _needs_check(empty_column)


# ---------------------------------------------------------------------------
# The command line: evaluate and parse fail cleanly on a malformed file
# ---------------------------------------------------------------------------
CLI_BAD = ["two_roots_second_sentence", "mwt_overlap", "mwt_past_end", "empty_node_after_wrong_word", "nul_in_form",
           "empty_form"]


def output_of(result) -> str:
    """stdout and stderr of a CliRunner result."""
    text = result.output
    try:
        err = result.stderr
    except ValueError:  # older click: stderr mixed into output
        err = ""
    return text + ("" if err and err in text else err or "")


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner()


def assert_clean_failure(result, path: Path, line: int):
    out = output_of(result)
    assert result.exit_code != 0, out
    assert f"{path}:{line}:" in out, out
    assert "Traceback" not in out, out
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)


@pytest.mark.parametrize("name", CLI_BAD)
def test_cli_evaluate_refuses_malformed_file(name, tiny_model, runner, tmp_path):
    from arborist.cli import app

    case = BAD[name]
    path = write(tmp_path, name, case.data)
    result = runner.invoke(app, ["evaluate", str(tiny_model), str(path), "--json"])
    assert_clean_failure(result, path, case.line)
    assert result.stdout.strip() == "" or "{" not in result.stdout  # no scores printed


@pytest.mark.parametrize("name", CLI_BAD)
def test_cli_parse_refuses_malformed_file(name, tiny_model, runner, tmp_path):
    from arborist.cli import app

    case = BAD[name]
    path = write(tmp_path, name, case.data)
    out_dir = tmp_path / "out"
    result = runner.invoke(app, ["parse", str(tiny_model), str(path), "--output-dir", str(out_dir), "--no-progress"])
    assert_clean_failure(result, path, case.line)
    assert result.exit_code == 1  # every input failed
    assert sorted(p.name for p in out_dir.iterdir()) == []  # no output, not even a temporary file


def test_cli_parse_skips_malformed_file_and_parses_the_rest(tiny_model, runner, tmp_path):
    from arborist.cli import app

    inputs = tmp_path / "in"
    inputs.mkdir()
    bad = write(inputs, "a_two_roots", BAD["two_roots"].data)
    write(inputs, "b_bom", GOOD_CASES["bom_before_word_line"].data)
    out_dir = tmp_path / "out"
    result = runner.invoke(app, ["parse", str(tiny_model), str(inputs), "--output-dir", str(out_dir), "--no-progress"])
    out = output_of(result)
    assert result.exit_code == 2, out  # some failed
    assert f"{bad}:3:" in out and "Traceback" not in out
    assert sorted(p.name for p in out_dir.iterdir()) == ["b_bom.conllu"]
    # The byte-order mark is kept, and the output reads back as trees.
    written = (out_dir / "b_bom.conllu").read_bytes()
    assert written.startswith(BOM)
    parsed = list(read_conllu(out_dir / "b_bom.conllu", require_heads=True))
    assert [s.n for s in parsed] == [2, 1]


def test_cli_evaluate_accepts_bom_file(tiny_model, runner, tmp_path):
    from arborist.cli import app

    path = write(tmp_path, "bom", GOOD_CASES["bom_before_comment"].data)
    result = runner.invoke(app, ["evaluate", str(tiny_model), str(path), "--json"])
    assert result.exit_code == 0, output_of(result)
    assert '"words": 3' in result.stdout
    # the official scorer's table too: it read the byte-order mark as part of the first line
    import json

    assert json.loads(result.stdout)["conll18"]["Words"]["f1"] == 100.0
