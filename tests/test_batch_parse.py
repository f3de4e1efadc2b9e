"""Batch parsing (arborist.batch, `arborist parse`): text and CoNLL-U files and directories,
the three output formats, unreadable files, resuming, parallel workers, bounded reading."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import spacy
from typer.testing import CliRunner

import arborist
import arborist.batch as batch
from arborist.cli import app
from arborist.corpus import read_conllu
from arborist.model import load

REPO = Path(__file__).resolve().parents[1]
DEV = REPO / "corpora" / "sample" / "sample-dev.conllu"
PARAGRAPHS = [
    "The tired girl is not happy. He read the stories\nand smiled politely.",
    "She wrote the address down. Then she left the house.",
    "Über café naïve résumé: it is fine.",
]
TEXT = "\n\n".join(PARAGRAPHS) + "\n"


def expected_sentences() -> list[list[str]]:
    """The words of each sentence of TEXT, by spaCy's English tokenizer and sentencizer."""
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return [[t.text for t in s if not t.is_space] for p in PARAGRAPHS for s in nlp(" ".join(p.split("\n"))).sents]


@pytest.fixture()
def runner():
    return CliRunner()


def invoke(runner, *args):
    result = runner.invoke(app, ["parse", *map(str, args), "--no-progress"])
    return result, result.output


def corpus_dir(tmp_path) -> Path:
    """A directory of two text files (one in a subdirectory) and a CoNLL-U file."""
    root = tmp_path / "in"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text(TEXT, encoding="utf-8")
    (root / "sub" / "b.txt").write_text(PARAGRAPHS[1] + "\n", encoding="utf-8")
    (root / "c.conllu").write_bytes(DEV.read_bytes())
    return root


def test_directory_of_text_and_conllu(tiny_model, runner, tmp_path):
    out = tmp_path / "out"
    result, output = invoke(runner, tiny_model, corpus_dir(tmp_path), "-d", out)
    assert result.exit_code == 0, output
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == ["a.conllu", "c.conllu", "sub", "sub/b.conllu"]
    # Text: the sentences of spaCy's tokenizer and sentencizer, every word a tree node.
    parsed = list(read_conllu(out / "a.conllu", require_heads=True))
    assert [s.forms[1:] for s in parsed] == expected_sentences()
    assert all(int((s.heads[1:] == 0).sum()) == 1 for s in parsed)
    text = (out / "a.conllu").read_text(encoding="utf-8")
    assert text.startswith("# newdoc id = a.txt\n# newpar\n# sent_id = 1.1\n# text = The tired girl is not happy.\n")
    assert text.count("# newpar") == 3 and "Über" in text and "SpaceAfter=No" in text
    # CoNLL-U input: the same bytes as `arborist parse` of the file alone.
    alone = tmp_path / "alone"
    assert invoke(runner, tiny_model, DEV, "-d", alone)[0].exit_code == 0
    assert (out / "c.conllu").read_bytes() == (alone / DEV.name).read_bytes()


def test_text_output_equals_the_spacy_pipeline(tiny_model, tmp_path):
    """The CoNLL-U written for a text is the annotation of the spaCy pipeline."""
    pipeline = arborist.load(tiny_model)
    jobs = batch.plan([corpus_dir(tmp_path) / "a.txt"], tmp_path / "out", "conllu")
    report = batch.parse_files(pipeline, jobs, progress=False)
    assert report.exit_code == 0 and report.words > 30
    nlp = batch.spacy_pipeline(pipeline)
    rows = [line.split("\t") for line in (tmp_path / "out" / "a.conllu").read_text().splitlines() if "\t" in line]
    expected = []
    for p in PARAGRAPHS:
        for sent in nlp(" ".join(p.split("\n"))).sents:
            words = [t for t in sent if not t.is_space]
            for t in words:
                head = 0 if t.head.i == t.i else words.index(t.head) + 1
                expected.append([t.text, t.pos_, t.tag_, str(head), "root" if t.dep_ == "ROOT" else t.dep_])
    assert [[r[1], r[3], r[4], r[6], r[7]] for r in rows] == expected


def test_json_and_html(tiny_model, runner, tmp_path):
    root = corpus_dir(tmp_path)
    result, output = invoke(runner, tiny_model, root / "a.txt", root / "c.conllu", "-d", tmp_path / "j", "-f", "json")
    assert result.exit_code == 0, output
    docs = [json.loads(line) for line in (tmp_path / "j" / "a.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(docs) == len(PARAGRAPHS) and docs[2]["text"].startswith("Über")
    assert all("dep" in t and "head" in t and "pos" in t for d in docs for t in d["tokens"])
    conllu_docs = (tmp_path / "j" / "c.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(conllu_docs) == len(list(read_conllu(DEV)))  # a Doc per CoNLL-U sentence
    result, output = invoke(runner, tiny_model, root / "a.txt", "-d", tmp_path / "h", "-f", "html")
    assert result.exit_code == 0, output
    page = (tmp_path / "h" / "a.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert page.count("<svg") == len(expected_sentences())  # a rendering per sentence


def test_corrupt_and_unreadable_files_are_reported_and_the_rest_parsed(tiny_model, runner, tmp_path):
    root = corpus_dir(tmp_path)
    (root / "binary.txt").write_bytes(b"PK\x03\x04\x00\x00\x14\x00" + bytes(range(256)))
    (root / "latin1.txt").write_bytes("first line\nsecond\ncaf\xe9 au lait\n".encode("latin-1"))
    (root / "gone.txt").symlink_to(tmp_path / "does-not-exist")  # listed, cannot be opened
    unreadable = root / "secret.txt"
    unreadable.write_text("private\n")
    unreadable.chmod(0)
    out = tmp_path / "out"
    result, output = invoke(runner, tiny_model, root, "-d", out)
    assert result.exit_code == 2, output  # partial success
    assert f"{root / 'binary.txt'}:1: binary file" in output
    assert f"{root / 'latin1.txt'}:3: invalid UTF-8" in output
    assert f"{root / 'gone.txt'}: No such file or directory" in output
    names = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    if os.geteuid() != 0:  # root reads anything
        assert f"{unreadable}: Permission denied" in output
        assert "3 parsed, 0 skipped (already parsed), 4 failed" in output
    else:
        assert "4 parsed, 0 skipped (already parsed), 3 failed" in output
    assert names == ["a.conllu", "c.conllu"] + (["secret.conllu"] if os.geteuid() == 0 else []) + ["sub/b.conllu"]
    # Every input unreadable: exit status 1.
    result, output = invoke(runner, tiny_model, root / "binary.txt", "-d", tmp_path / "none")
    assert result.exit_code == 1, output


def test_malformed_conllu_names_file_and_line(tiny_model, runner, tmp_path):
    lines = DEV.read_text(encoding="utf-8").splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if line.startswith("3\t"))
    cols = lines[index].split("\t")
    cols[6] = "x"
    lines[index] = "\t".join(cols)
    bad = tmp_path / "bad.conllu"
    bad.write_text("".join(lines), encoding="utf-8")
    result, output = invoke(runner, tiny_model, bad, DEV, "-d", tmp_path / "out")
    assert result.exit_code == 2
    assert f"{bad}:{index + 1}: Failed parsing field 'head'" in output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [DEV.name]


def test_resume_skips_complete_outputs(tiny_model, runner, tmp_path):
    root = corpus_dir(tmp_path)
    out = tmp_path / "out"
    assert invoke(runner, tiny_model, root, "-d", out)[0].exit_code == 0
    first = out / "a.conllu"
    first.write_text("kept\n")  # not re-parsed, so not overwritten
    (out / "sub" / "b.conllu").unlink()  # missing: parsed again
    (out / ".c.conllu.tmp999999999").write_text("half")  # a killed run's temporary file (no such process)
    live = out / "sub" / f".b.conllu.tmp{os.getppid()}"  # a live process's: another run still writing
    live.write_text("busy")
    result, output = invoke(runner, tiny_model, root, "-d", out)
    assert result.exit_code == 0, output
    assert "1 parsed, 2 skipped" in output
    assert first.read_text() == "kept\n" and (out / "sub" / "b.conllu").exists()
    assert live.read_text() == "busy"
    live.unlink()
    result, output = invoke(runner, tiny_model, root, "-d", out, "--overwrite")
    assert result.exit_code == 0 and "3 parsed" in output
    assert first.read_text() != "kept\n"
    assert not [p for p in out.rglob(".*")]  # no temporary file left


def test_interrupted_run_leaves_no_output(tiny_model, tmp_path, monkeypatch):
    monkeypatch.setattr(batch, "CHUNK_CHARS", 10)  # a chunk per paragraph
    calls = []
    original = batch.Annotator.__call__

    def interrupted(self, payload, name):
        calls.append(name)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return original(self, payload, name)

    monkeypatch.setattr(batch.Annotator, "__call__", interrupted)
    jobs = batch.plan([corpus_dir(tmp_path) / "a.txt"], tmp_path / "out", "conllu")
    with pytest.raises(KeyboardInterrupt):
        batch.parse_files(arborist.load(tiny_model), jobs, progress=False)
    assert len(calls) == 2
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


def test_killed_process_leaves_no_half_file(tiny_model, tmp_path):
    """SIGKILL in the middle of a file: no output under its name; the rerun completes it."""
    text = tmp_path / "long.txt"
    text.write_text((TEXT + "\n") * 1000, encoding="utf-8")  # 4 chunks
    out = tmp_path / "out"
    command = [sys.executable, "-m", "arborist.cli", "parse", str(tiny_model), str(text), "-d", str(out),
               "--no-progress"]
    process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=open(tmp_path / "log", "w"))
    deadline = time.time() + 60
    while time.time() < deadline and not list(out.glob(".long.conllu.tmp*")) and process.poll() is None:
        time.sleep(0.02)
    assert list(out.glob(".long.conllu.tmp*")), (tmp_path / "log").read_text()
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (out / "long.conllu").exists()
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert len(list(read_conllu(out / "long.conllu"))) == 1000 * len(expected_sentences())
    assert [p.name for p in out.iterdir()] == ["long.conllu"]


@pytest.mark.parametrize("fmt", ["conllu", "json"])
def test_two_processes_write_what_one_does(tiny_model, tmp_path, monkeypatch, fmt):
    monkeypatch.setattr(batch, "CHUNK_CHARS", 200)  # many chunks in flight
    monkeypatch.setattr(batch, "CHUNK_SENTENCES", 3)
    root = corpus_dir(tmp_path)
    (root / "long.txt").write_text(TEXT * 30, encoding="utf-8")
    pipeline = arborist.load(tiny_model)
    for n in (1, 2):
        jobs = batch.plan([root], tmp_path / f"out{n}", fmt)
        report = batch.parse_files(pipeline, jobs, fmt, model_path=tiny_model, n_process=n, progress=False)
        assert report.exit_code == 0 and len(report.written) == 4
    for one in sorted((tmp_path / "out1").rglob("*.*")):
        assert one.read_bytes() == (tmp_path / "out2" / one.relative_to(tmp_path / "out1")).read_bytes(), one


def test_reading_is_bounded(tmp_path, monkeypatch):
    """A file without line breaks comes in paragraph-sized pieces, multibyte characters intact."""
    monkeypatch.setattr(batch, "MAX_PARAGRAPH_CHARS", 50)
    words = ["naïve", "café", "über", "x" * 70] * 40
    path = tmp_path / "one-line.txt"
    path.write_text(" ".join(words), encoding="utf-8")
    pieces = [text for text, _ in batch.read_paragraphs(path)]
    assert len(pieces) > 40 and all(len(p) <= 50 for p in pieces)
    assert "".join("".join(pieces).split()) == "".join(words)  # nothing lost or garbled
    assert sum(n for _, n in batch.read_paragraphs(path)) == path.stat().st_size


def test_paragraphs_and_bytes(tmp_path):
    path = tmp_path / "p.txt"
    path.write_bytes("\ufeffone\ntwo\n\n\n  three  \r\n\r\nfour".encode("utf-8"))
    got = list(batch.read_paragraphs(path))
    assert [t for t, _ in got] == ["one two", "three", "four"]
    assert sum(n for _, n in got) == path.stat().st_size


def test_clashing_outputs_and_bad_format_are_refused(tiny_model, runner, tmp_path):
    (tmp_path / "x.txt").write_text("A.")
    (tmp_path / "x.conllu").write_bytes(DEV.read_bytes())
    result, output = invoke(runner, tiny_model, tmp_path / "x.txt", tmp_path / "x.conllu", "-d", tmp_path / "o")
    assert result.exit_code == 1 and "same output" in output
    result, output = invoke(runner, tiny_model, tmp_path / "x.txt", "-d", tmp_path / "o", "-f", "xml")
    assert result.exit_code == 1 and "--format" in output


def test_spacy_vocabulary_stops_growing(tiny_model, monkeypatch):
    """Past VOCAB_LIMIT words, the words of a chunk leave spaCy's vocabulary with it."""
    monkeypatch.setattr(batch, "VOCAB_LIMIT", 0)
    annotator = batch.Annotator(arborist.load(tiny_model), "conllu")
    # (paragraph, piece, glued, places, text) items
    items = [(1, 0, False, ((0, 0),), "Zyxwv qwerty uiop asdf ghjkl."), (2, 0, False, ((0, 31),), "Mnbvc lkjhg.")]
    text, words = annotator(("text", items, 1), "x.txt")
    assert words == 9 and "Zyxwv" in text
    assert "qwerty" not in annotator.nlp.vocab and "qwerty" not in annotator.nlp.vocab.strings


def test_batch_gc_restores_the_collector_and_keeps_a_program_s_frozen_objects():
    import gc

    from arborist.batch import GC_THRESHOLD, batch_gc

    before = gc.get_threshold()
    # Python 3.12's collector moves immortal objects into the frozen generation: unfreezing
    # (what a program's own freeze would be undone by) leaves it empty until the next collection.
    gc.unfreeze()
    with batch_gc():
        assert gc.get_threshold()[0] == max(GC_THRESHOLD, before[0]) and gc.get_freeze_count() > 0
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    gc.freeze()  # the program's own
    try:
        frozen = gc.get_freeze_count()
        with batch_gc():
            pass
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


# -- standard input and standard output ----------------------------------------------
def file_output(runner, model, source: Path, out: Path, *options) -> str:
    """What `arborist parse` writes for `source` into a directory."""
    result, output = invoke(runner, model, source, "-d", out, *options)
    assert result.exit_code == 0, output
    return (out / (source.stem + ".conllu")).read_text(encoding="utf-8")


def parse_command(model, *args) -> list[str]:
    return [sys.executable, "-m", "arborist.cli", "parse", str(model), *map(str, args), "--no-progress"]


def test_standard_input_to_standard_output_is_the_file_s_output(tiny_model, runner, tmp_path):
    """`arborist parse MODEL - < a.txt > a.conllu` (real pipes) writes what -d writes for the
    file, but for the document id, which standard input does not have (`# newdoc`)."""
    source = corpus_dir(tmp_path) / "a.txt"
    expected = file_output(runner, tiny_model, source, tmp_path / "out")
    assert expected.startswith("# newdoc id = a.txt\n")
    done = subprocess.run(parse_command(tiny_model, "-"), input=source.read_bytes(), capture_output=True,
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode("utf-8") == expected.replace("# newdoc id = a.txt\n", "# newdoc\n", 1)
    assert b"1 parsed" in done.stderr and not list(tmp_path.glob("*.conllu"))  # nothing written to a file


def test_conllu_on_standard_input(tiny_model, runner, tmp_path):
    """--input-format conllu: standard input read as CoNLL-U, written back byte for byte but
    for the predicted columns, as the file is; a .txt file of CoNLL-U read as CoNLL-U too."""
    expected = file_output(runner, tiny_model, DEV, tmp_path / "out")
    result = runner.invoke(app, ["parse", str(tiny_model), "-", "-i", "conllu", "--no-progress"],
                           input=DEV.read_bytes())
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes.decode("utf-8") == expected
    renamed = tmp_path / "dev.txt"
    renamed.write_bytes(DEV.read_bytes())
    assert file_output(runner, tiny_model, renamed, tmp_path / "out2", "-i", "conllu") == expected
    # read as text, the same file is paragraphs of words, not sentences of CoNLL-U
    assert file_output(runner, tiny_model, renamed, tmp_path / "out3") != expected


def renumbered(conllu: str, paragraphs_before: int) -> str:
    """CoNLL-U of a text file with its sentence ids `P.S` moved on by that many paragraphs."""
    return re.sub(r"^# sent_id = (\d+)\.", lambda m: f"# sent_id = {int(m.group(1)) + paragraphs_before}.",
                  conllu, flags=re.MULTILINE)


def test_inputs_to_standard_output_in_input_order(tiny_model, runner, tmp_path):
    """Files and standard input, one after the other in input order: each document as -d
    writes it, but the text inputs' paragraph numbers go on from one to the next, so the
    sentence ids stay unique in the stream."""
    root = corpus_dir(tmp_path)
    b, a = root / "sub" / "b.txt", root / "a.txt"
    outputs = [file_output(runner, tiny_model, p, tmp_path / f"out{i}") for i, p in enumerate((b, DEV, a))]
    result = runner.invoke(app, ["parse", str(tiny_model), str(b), str(DEV), "-", str(a), "--no-progress"],
                           input=a.read_bytes())
    assert result.exit_code == 0, result.output
    stdin_part = renumbered(outputs[2], 1).replace("# newdoc id = a.txt\n", "# newdoc\n")
    assert result.stdout_bytes.decode("utf-8") == (outputs[0] + outputs[1] + stdin_part + renumbered(outputs[2], 4))
    ids = re.findall(r"^# sent_id = (.*)$", result.stdout_bytes.decode("utf-8"), flags=re.MULTILINE)
    assert len(ids) == len(set(ids))


def test_json_and_html_on_standard_output(tiny_model, runner, tmp_path):
    source = corpus_dir(tmp_path) / "a.txt"
    assert invoke(runner, tiny_model, source, "-d", tmp_path / "out", "-f", "json")[0].exit_code == 0
    result = runner.invoke(app, ["parse", str(tiny_model), "-", "-f", "json", "--no-progress"],
                           input=source.read_bytes())
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == (tmp_path / "out" / "a.jsonl").read_bytes()
    result = runner.invoke(app, ["parse", str(tiny_model), "-", "-f", "html", "--no-progress"],
                           input=source.read_bytes())
    page = result.stdout_bytes.decode("utf-8")
    assert result.exit_code == 0 and page.startswith("<!DOCTYPE html>") and page.endswith(batch.HTML_TAIL)
    assert "<title>stdin</title>" in page and page.count("<svg") == len(expected_sentences())


def test_standard_output_edge_cases(tiny_model, runner, tmp_path):
    """Empty standard input: no output; --input-format text on a .conllu file; a CoNLL-U
    input without its final blank line does not run into the next document, and gets it in its
    own line ending, on standard output and in a file (a file lacked it; a CRLF file got \\n)."""
    result = runner.invoke(app, ["parse", str(tiny_model), "-", "--no-progress"], input=b"")
    assert result.exit_code == 0 and result.stdout_bytes == b""
    as_text = runner.invoke(app, ["parse", str(tiny_model), str(DEV), "-i", "text", "--no-progress"])
    assert as_text.exit_code == 0 and as_text.stdout_bytes.startswith(b"# newdoc id = sample-dev.conllu\n# newpar\n")
    sentence = "# sent_id = s1\n1\tHi\t_\t_\t_\t_\t0\troot\t_\t_\n"
    (tmp_path / "no_blank.conllu").write_text(sentence, encoding="utf-8")
    result, output = invoke(runner, tiny_model, tmp_path / "no_blank.conllu", tmp_path / "no_blank.conllu")
    assert result.exit_code == 0, output
    blocks = result.stdout_bytes.decode("utf-8").split("\n\n")
    assert len(blocks) == 3 and blocks[2] == "" and all(b.startswith("# sent_id = s1\n1\tHi\t") for b in blocks[:2])
    # CRLF lines: the blank line in their ending, none added after one there already; in a file too
    crlf = sentence.replace("\n", "\r\n")
    for name, text, ending in (("crlf", crlf, "\r\n\r\n"), ("crlf_blank", crlf + "\r\n", "\r\n\r\n"),
                               ("unterminated", crlf.rstrip(), "\r\n\r\n"), ("lf", sentence, "\n\n"),
                               ("lf_unterminated", sentence.rstrip(), "\n\n")):
        source = tmp_path / f"{name}.conllu"
        source.write_bytes(text.encode("utf-8"))
        result, output = invoke(runner, tiny_model, source)
        assert result.exit_code == 0 and result.stdout_bytes.endswith(ending.encode()), (name, result.stdout_bytes)
        assert not result.stdout_bytes.endswith(b"\n" + ending.encode()) and b"\n\n" not in result.stdout_bytes[:-2]
        assert invoke(runner, tiny_model, source, "-d", tmp_path / name)[0].exit_code == 0
        assert (tmp_path / name / f"{name}.conllu").read_bytes() == result.stdout_bytes


def test_a_file_failing_on_standard_output(tiny_model, runner, tmp_path, monkeypatch):
    """A file that fails after some chunks: those stay written (the paragraphs read with the
    failing one are not parsed), the error is reported, the next input is parsed, and the exit
    status is 2."""
    monkeypatch.setattr(batch, "CHUNK_CHARS", 100)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(TEXT.encode("utf-8") + b"\n\nbroken \xff here\n")
    good = tmp_path / "good.txt"
    good.write_text(PARAGRAPHS[1], encoding="utf-8")
    result, output = invoke(runner, tiny_model, bad, good)
    assert result.exit_code == 2 and f"{bad}:9: invalid UTF-8" in output
    written = result.stdout_bytes.decode("utf-8")
    assert written.startswith("# newdoc id = bad.txt\n") and "# text = Then she left the house." in written
    assert "Über" not in written  # the third paragraph was in the failing chunk
    assert "# newdoc id = good.txt" in written and written.endswith("\n\n")


def test_standard_input_in_two_processes_writes_what_one_does(tiny_model, runner, monkeypatch):
    monkeypatch.setattr(batch, "CHUNK_CHARS", 200)  # many chunks in flight, written in input order
    outputs = []
    for n in ("1", "2"):
        result = runner.invoke(app, ["parse", str(tiny_model), "-", "-n", n, "--no-progress"],
                               input=((TEXT + "\n") * 20).encode("utf-8"))
        assert result.exit_code == 0, result.output
        outputs.append(result.stdout_bytes)
    assert outputs[0] == outputs[1] and outputs[0].count(b"# newpar") == 60


def test_standard_input_errors(tiny_model, runner, tmp_path):
    """Bad standard input is reported with its line; '-' where it cannot go is refused."""
    result = runner.invoke(app, ["parse", str(tiny_model), "-", "--no-progress"], input=b"fine text\n\xff bad\n")
    assert result.exit_code == 1 and "<stdin>:2: invalid UTF-8" in result.output
    (tmp_path / "x.txt").write_text("A.")
    for args, message in [
        (["-", "-d", tmp_path / "o"], "leave out --output-dir"),
        (["-", "-"], "can be read once"),
        ([tmp_path / "x.txt", tmp_path / "x.txt", "-f", "html"], "give one input, or --output-dir"),
        (["-", "--engine", "ray", "-d", tmp_path / "o"], "not standard input and output"),
        ([tmp_path / "x.txt", "--engine", "ray"], "not standard input and output"),
        ([tmp_path / "x.txt", "-i", "xml"], "--input-format"),
    ]:
        result, output = invoke(runner, tiny_model, *args)
        assert result.exit_code == 1 and message in output, (args, output)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("n_process", ["1", "2"])
def test_a_closed_pipe_stops_the_run_quietly(tiny_model, tmp_path, n_process):
    """`arborist parse MODEL - < big.txt | head`: when the reader goes away, the run stops
    with status 1 and no traceback, as a filter does. With workers it must not hang: chunks
    are larger than a pipe's buffer, and Pool.terminate() could wait for ever on the one
    being sent (6 runs of 8 hung before `_WorkerPool._help_stuff_finish`), so three runs."""
    text = tmp_path / "text.txt"
    text.write_text((TEXT + "\n") * 100, encoding="utf-8")  # one chunk
    many = tmp_path / "many.conllu"
    many.write_bytes(DEV.read_bytes() * 60)  # 1,800 sentences: 5 chunks, each larger than a pipe's buffer
    for _ in range(3 if n_process == "2" else 1):
        with open(text, "rb") as stdin:
            process = subprocess.Popen(parse_command(tiny_model, "-", "-n", n_process, many), stdin=stdin,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
            assert process.stdout.read(100).startswith(b"# newdoc\n")
            process.stdout.close()
            try:
                _, stderr = process.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
                raise AssertionError("the run did not stop when its output pipe closed")
        assert process.returncode == 1, stderr.decode()
        assert b"Traceback" not in stderr and b"error" not in stderr.lower() and b"pipe" not in stderr, stderr.decode()


def _read_until(process, done) -> bytes:
    """What the process writes to standard output until `done(what came)`, or a failure after 120 s."""
    import select

    got = b""
    deadline = time.time() + 120
    while not done(got):
        assert time.time() < deadline, f"no output for what was written: {got!r}"
        if select.select([process.stdout], [], [], 1)[0]:
            got += os.read(process.stdout.fileno(), 65536)
            assert got, "standard output closed early"
    return got


@pytest.mark.parametrize("n_process", ["1", "2"])
def test_standard_input_is_parsed_as_it_comes(tiny_model, tmp_path, n_process):
    """A paragraph written to the pipe is parsed and its CoNLL-U comes out while the writer
    still holds the pipe open, not when 50,000 characters or the end have come."""
    process = subprocess.Popen(parse_command(tiny_model, "-", "-n", n_process), stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        process.stdin.write(PARAGRAPHS[0].encode("utf-8") + b"\n\n")
        process.stdin.flush()
        got = _read_until(process, lambda got: b"\n\n" in got.split(b"# sent_id = 1.2", 1)[-1]
                          and b"# sent_id = 1.2" in got)
        assert got.startswith(b"# newdoc\n# newpar\n# sent_id = 1.1\n")
        rest, stderr = process.communicate(input=PARAGRAPHS[1].encode("utf-8"), timeout=120)
    finally:
        process.kill()
    assert process.returncode == 0, stderr.decode()
    assert (got + rest).count(b"# sent_id = ") == 4 and b"# sent_id = 2.2" in rest


@pytest.mark.parametrize("layout", ["horizontal", "vertical"])
def test_pretokenized_standard_input_is_parsed_as_it_comes(tiny_model, tmp_path, layout):
    """The same for pre-tokenized text: a sentence comes out at its line (horizontal) or blank
    line (vertical) while the writer holds the pipe open."""
    first = "The girl smiled .\n" if layout == "horizontal" else "The\ngirl\nsmiled\n.\n\n"
    process = subprocess.Popen(parse_command(tiny_model, "-", "-i", layout), stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        process.stdin.write(first.encode("utf-8"))
        process.stdin.flush()
        got = _read_until(process, lambda got: got.endswith(b"\n\n"))
        assert b"# text = The girl smiled .\n" in got and got.count(b"# sent_id") == 1
        rest, stderr = process.communicate(input=first.encode("utf-8"), timeout=120)
    finally:
        process.kill()
    assert process.returncode == 0, stderr.decode()
    assert b"# sent_id = 2\n" in rest


def test_conllu_standard_input_is_parsed_as_it_comes(tiny_model, tmp_path):
    """The same for CoNLL-U: a sentence comes out at its blank line, not when the next one
    starts (a writer waiting for it would wait for ever). Blank lines after that one lead the
    next sentence, so the stream is the input's bytes but for the predicted columns."""
    sentences = DEV.read_text(encoding="utf-8").split("\n\n")[:3]
    first, second, third = (s.strip("\n") + "\n\n" for s in sentences)
    process = subprocess.Popen(parse_command(tiny_model, "-", "-i", "conllu"), stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        for text in (first, "\n" + second):  # the second with a blank line of its own before it
            process.stdin.write(text.encode("utf-8"))
            process.stdin.flush()
            got = _read_until(process, lambda got: got.count(b"\n\n") == 1)
            assert len(got.splitlines()) == len(text.splitlines())
        rest, stderr = process.communicate(input=third.encode("utf-8"), timeout=120)
    finally:
        process.kill()
    assert process.returncode == 0, stderr.decode()
    with_words = [line.split("\t")[1] for line in rest.decode("utf-8").splitlines() if "\t" in line]
    assert with_words == [line.split("\t")[1] for line in third.splitlines() if "\t" in line]


def test_closed_standard_input_or_output(tiny_model, tmp_path):
    """Started with standard input or output closed (`<&-`, `>&-`): a message, no traceback."""
    (tmp_path / "x.txt").write_text("A short text.", encoding="utf-8")
    for fd, args, message in [(0, ["-"], b"<stdin>: standard input is closed"),
                              (1, [tmp_path / "x.txt"], b"error: standard output: closed")]:
        done = subprocess.run(parse_command(tiny_model, *args), capture_output=fd == 0, stderr=subprocess.PIPE
                              if fd == 1 else None, cwd=tmp_path, timeout=300, preexec_fn=lambda fd=fd: os.close(fd))
        assert done.returncode == 1 and message in done.stderr and b"Traceback" not in done.stderr, done.stderr


PRETOKENIZED_INPUTS = {
    # horizontal: a sentence per line, tokens separated by spaces and tabs (a blank line starts a
    # paragraph); "don't" and "e-mail," stay one word (spaCy's tokenizer splits them); U+00A0 is a
    # space inside a token, as in UDPipe
    "horizontal": ("The girl read the e-mail, then smiled .\n\n  I don't \t know .  \nShe left New\u00a0York\n",
                   [["The", "girl", "read", "the", "e-mail,", "then", "smiled", "."], ["I", "don't", "know", "."],
                    ["She", "left", "New York"]]),
    # vertical: a token per line, its first tab-separated field (leading tabs skipped, as UDPipe
    # does); blank lines (several, or only spaces) end a sentence; a control character is left
    # out; a token may hold a space
    "vertical": ("The\n\tgirl\tNOUN\tx\nsmiled\n.\n\n\n \nNew York\x01\n  is \nbig\n",
                 [["The", "girl", "smiled", "."], ["New York", "is", "big"]]),
}


@pytest.mark.parametrize("layout", ["horizontal", "vertical"])
def test_pretokenized_input_keeps_its_tokens_and_sentences(tiny_model, runner, tmp_path, layout):
    """`-i horizontal` and `-i vertical` (UDPipe's pre-tokenized formats): each token is a word
    and each line (horizontal) or blank-line-separated block (vertical) a sentence, whatever the
    tokenizer would do; the output is CoNLL-U with a document id, sentence ids and # text, which
    the reader takes back; JSON too."""
    text, expected = PRETOKENIZED_INPUTS[layout]
    source = tmp_path / f"in.{layout[0]}"
    source.write_text(text, encoding="utf-8")
    result, output = invoke(runner, tiny_model, source, "-i", layout, "-d", tmp_path / "out")
    assert result.exit_code == 0, output
    written = (tmp_path / "out" / f"in.conllu").read_text(encoding="utf-8")
    sentences = list(read_conllu(tmp_path / "out" / "in.conllu", require_heads=True))
    assert [s.forms[1:] for s in sentences] == expected
    newpar = "# newpar\n" if layout == "horizontal" else ""
    assert written.startswith(f"# newdoc id = {source.name}\n{newpar}# sent_id = 1\n# text = {' '.join(expected[0])}\n")
    assert written.count("# newpar") == (2 if layout == "horizontal" else 0)
    assert [line for line in written.splitlines() if line.startswith("# sent_id")] == [
        f"# sent_id = {k}" for k in range(1, len(expected) + 1)]
    assert all(t != "_" for s in sentences for t in s.upos[1:])
    result, output = invoke(runner, tiny_model, source, "-i", layout, "-f", "json")
    assert result.exit_code == 0, output
    docs = [json.loads(line) for line in result.stdout.splitlines()]
    assert [[t["end"] - t["start"] for t in d["tokens"]] for d in docs] == [[len(w) for w in s] for s in expected]


def test_pretokenized_standard_input_numbers_on(tiny_model, tmp_path):
    """On standard output, the sentence ids go on from one pre-tokenized input to the next."""
    (tmp_path / "b.txt").write_text("One more sentence .\n", encoding="utf-8")
    done = subprocess.run(parse_command(tiny_model, "-", tmp_path / "b.txt", "-i", "horizontal"),
                          input=b"A first one .\nA second one .\n", capture_output=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    comments = [line for line in done.stdout.decode("utf-8").splitlines() if line.startswith("# newdoc")
                or line.startswith("# sent_id")]
    assert comments == ["# newdoc", "# sent_id = 1", "# sent_id = 2", "# newdoc id = b.txt", "# sent_id = 3"]


@pytest.mark.parametrize("layout", ["horizontal", "vertical"])
def test_pretokenized_input_errors(tiny_model, runner, tmp_path, layout):
    """Invalid UTF-8 is reported with its line, also a character cut at the end after a long line
    (a traceback once), and the other inputs are parsed; --gold-tags has no tags to keep there."""
    (tmp_path / "bad.txt").write_bytes(b"fine words\n\xff bad\n")
    (tmp_path / "cut.txt").write_bytes(b"a " + b"x" * (batch.MAX_PARAGRAPH_CHARS - 2) + b"\xc3")
    (tmp_path / "fine.txt").write_text("A fine sentence .\n", encoding="utf-8")
    result, output = invoke(runner, tiny_model, tmp_path / "bad.txt", tmp_path / "cut.txt", tmp_path / "fine.txt",
                            "-i", layout, "-d", tmp_path / "out")
    assert result.exit_code == 2 and "bad.txt:2: invalid UTF-8" in output, output
    assert "cut.txt:1: invalid UTF-8 at the end of the file" in output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["fine.conllu"]
    result, output = invoke(runner, tiny_model, tmp_path / "bad.txt", "-i", "horizontal", "--gold-tags")
    assert result.exit_code == 1 and "--gold-tags" in output and "horizontal text has none" in output


@pytest.mark.parametrize("layout", ["horizontal", "vertical"])
def test_pretokenized_line_of_control_characters_is_blank(tmp_path, layout):
    """A line of nothing but control characters (and spaces) is a blank line, as in raw text:
    a new paragraph (horizontal) or the end of a sentence (vertical), where it was ignored."""
    source = tmp_path / "in.txt"
    text = "a b\n\x01 \x1b\x7f\nc d\n" if layout == "horizontal" else "a\nb\n\x01 \x1b\x7f\nc\nd\n"
    source.write_text(text, encoding="utf-8")
    sentences = [s for s, _ in batch.read_pretokenized(source, layout)]
    assert [s.forms[1:] for s in sentences] == [["a", "b"], ["c", "d"]]
    if layout == "horizontal":
        assert ["# newpar\n" in s.lines for s in sentences] == [True, True]
    # a place to cut after each line that ends a sentence (horizontal), at each blank line (vertical)
    assert len(list(batch.pretokenized_boundaries(source, layout))) == (2 if layout == "horizontal" else 1)


@pytest.mark.parametrize("layout", ["horizontal", "vertical"])
def test_pretokenized_memory_is_bounded(tmp_path, monkeypatch, layout):
    """A line longer than the limit, with spaces or without, never becomes one sentence or one
    token longer than MAX_PARAGRAPH_CHARS, and no character but the spaces is lost."""
    monkeypatch.setattr(batch, "MAX_PARAGRAPH_CHARS", 1000)
    words = " ".join(f"w{k}" for k in range(1500))  # ~ 8,800 characters
    glued = "x" * 4321 + "é" * 997  # a long token that starts inside a line (and a piece), multi-byte characters
    source = tmp_path / "long.txt"
    source.write_text(f"{words}\nab {glued}\n" if layout == "horizontal" else f"ab {glued}\n\n{words}\n",
                      encoding="utf-8")
    sentences = [s for s, _ in batch.read_pretokenized(source, layout)]
    sizes = [sum(map(len, s.forms[1:])) + s.n - 1 for s in sentences]
    assert max(sizes) <= 1000 and max(len(f) for s in sentences for f in s.forms[1:]) <= 1000
    forms = "".join(f for s in sentences for f in s.forms[1:])  # a vertical token may hold spaces
    assert sorted(forms.replace(" ", "")) == sorted(words.replace(" ", "") + "ab" + glued)
    if layout == "horizontal":
        assert [f for s in sentences for f in s.forms[1:]][:1500] == words.split()
    assert sum(n for _, n in batch.read_pretokenized(source, layout)) == source.stat().st_size


def _columns(conllu: str) -> list[list[str]]:
    return [line.split("\t") for line in conllu.splitlines() if "\t" in line]


@pytest.mark.parametrize("n_process", ["1", "2"])
def test_no_parse_writes_the_tags_without_trees(tiny_model, runner, tmp_path, n_process):
    """`--no-parse`: the same tokens, sentences and tags as a full parse, HEAD and DEPREL '_',
    for text (spaCy's tokenizer here), CoNLL-U (its own HEAD and DEPREL kept) and
    pre-tokenized input, in one process or several; html, which draws trees, is refused."""
    root = corpus_dir(tmp_path)
    full = {}
    for name, options in (("full", ()), ("tags", ("--no-parse",))):
        outputs = {}
        for source in (root / "a.txt", root / "c.conllu"):
            outputs[source.name] = file_output(runner, tiny_model, source, tmp_path / f"{name}_{n_process}",
                                               "-n", n_process, *options)
        full[name] = outputs
    text_full, text_tags = _columns(full["full"]["a.txt"]), _columns(full["tags"]["a.txt"])
    assert [r[:6] + r[8:] for r in text_full] == [r[:6] + r[8:] for r in text_tags]
    assert all(r[6] == r[7] == "_" for r in text_tags) and any(r[6] != "_" for r in text_full)
    gold, tags = _columns(DEV.read_text(encoding="utf-8")), _columns(full["tags"]["c.conllu"])
    assert [r[6:8] for r in tags] == [r[6:8] for r in gold]  # CoNLL-U input keeps its own tree
    assert [r[3] for r in tags] == [r[3] for r in _columns(full["full"]["c.conllu"])]
    result, output = invoke(runner, tiny_model, root / "a.txt", "--no-parse", "-f", "html")
    assert result.exit_code == 1 and "--no-parse leaves them out" in output


def test_a_missing_input_is_reported_and_the_others_parsed(tiny_model, runner, tmp_path):
    """As the help says of any input that cannot be read (a named file that does not exist
    stopped the whole run before anything was parsed)."""
    root = corpus_dir(tmp_path)
    result, output = invoke(runner, tiny_model, tmp_path / "typo.txt", root / "a.txt", "-d", tmp_path / "out")
    assert result.exit_code == 2, output
    assert f"{tmp_path / 'typo.txt'}: No such file or directory" in output and "1 parsed" in output
    assert (tmp_path / "out" / "a.conllu").exists()
    result, output = invoke(runner, tiny_model, tmp_path / "typo.txt")
    assert result.exit_code == 1 and "0 parsed" in output


def test_a_directory_without_files_is_reported(tiny_model, runner, tmp_path):
    (tmp_path / "empty" / ".hidden").mkdir(parents=True)
    (tmp_path / "empty" / ".hidden" / "a.txt").write_text("Hidden.\n")
    result, output = invoke(runner, tiny_model, tmp_path / "empty", corpus_dir(tmp_path) / "a.txt")
    assert result.exit_code == 0 and f"warning: {tmp_path / 'empty'}: no files to parse" in output
    result, output = invoke(runner, tiny_model, tmp_path / "in")
    assert result.exit_code == 0 and "no files to parse" not in output


def test_an_output_directory_that_is_a_file_is_refused_cleanly(tiny_model, runner, tmp_path):
    (tmp_path / "afile").write_text("mine\n")
    result, output = invoke(runner, tiny_model, corpus_dir(tmp_path) / "a.txt", "-d", tmp_path / "afile")
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)  # no traceback
    assert f"error: {tmp_path / 'afile'}: File exists (and is not a directory)" in output
    assert (tmp_path / "afile").read_text() == "mine\n"


def test_gold_tags_are_refused_for_text_which_has_none(tiny_model, runner, tmp_path):
    """Text, by name or -i text, and standard input read as text (it was parsed with every tag
    '_'); a CoNLL-U file keeps its tags."""
    root = corpus_dir(tmp_path)
    for args, name in [((root / "a.txt",), "a.txt"), ((root,), "a.txt"), ((root / "c.conllu", "-i", "text"), "text")]:
        result, output = invoke(runner, tiny_model, *args, "--gold-tags")
        assert result.exit_code == 1 and "--gold-tags keeps the tags of CoNLL-U input" in output and name in output
    result = runner.invoke(app, ["parse", str(tiny_model), "-", "--gold-tags"], input="Hello there.\n")
    assert result.exit_code == 1 and "<stdin> is read as text" in result.output
    result, output = invoke(runner, tiny_model, root / "c.conllu", "--gold-tags")
    assert result.exit_code == 0 and "warning" not in output, output
    # CoNLL-U without tags: parsed as asked, with a warning (it said nothing)
    untagged = tmp_path / "untagged.conllu"
    untagged.write_text("1\tdo\t_\t_\t_\t_\t_\t_\t_\t_\n2\tgo\t_\t_\t_\t_\t_\t_\t_\t_\n\n", encoding="utf-8")
    result, output = invoke(runner, tiny_model, untagged, "--gold-tags")
    assert result.exit_code == 0 and f"warning: {untagged}: gold tags asked for (gold_tags, --gold-tags), and the " \
        "sentences have no UPOS" in output and output.count("warning") == 1, output


def test_a_model_without_a_parser_runs_what_it_has(tiny_model, runner, tmp_path):
    """A model of taggers only (or a tokenizer alone) is no longer refused: `arborist parse`
    writes its tags with HEAD and DEPREL '_', as `--no-parse` does with the whole model; html
    and --gold-tags, which need a parser, are refused with the reason."""
    from arborist.batch import without_trees

    tags_only = tmp_path / "tags_only"
    without_trees(load(tiny_model)).save(tags_only)
    assert load(tags_only).writer("head") is None
    source = corpus_dir(tmp_path) / "a.txt"
    assert file_output(runner, tags_only, source, tmp_path / "a") == file_output(runner, tiny_model, source,
                                                                                tmp_path / "b", "--no-parse")
    for args, message in [(("-f", "html"), "has no parser"), (("--gold-tags",), "has no parser")]:
        result, output = invoke(runner, tags_only, source, *args)
        assert result.exit_code == 1 and message in output, output


def test_a_tokenizer_alone_writes_json_of_input_without_tags(tiny_model, runner, tmp_path):
    """A model with no UPOS tagger, on CoNLL-U or pre-tokenized input whose UPOS is '_', writes
    JSON (spaCy was handed None for a missing POS and raised E1021); --min-prob, which marks
    arcs, is refused without a parser."""
    from arborist.batch import without_trees

    no_upos = tmp_path / "no_upos"
    without_trees(load(tiny_model)).subset(lambda c: "upos" not in c.writes).save(no_upos)
    (tmp_path / "h.txt").write_text("The girl smiled .\n", encoding="utf-8")
    (tmp_path / "bare.conllu").write_text("".join(f"{k}\t{w}\t_\t_\t_\t_\t_\t_\t_\t_\n" for k, w in
                                                  enumerate(["The", "girl", "smiled", "."], start=1)) + "\n",
                                          encoding="utf-8")
    for args in (("-i", "horizontal"), ("-i", "conllu")):
        source = tmp_path / ("h.txt" if args[1] == "horizontal" else "bare.conllu")
        result, output = invoke(runner, no_upos, source, *args, "-f", "json")
        assert result.exit_code == 0, output
        assert all("pos" not in t or t["pos"] == "" for line in result.stdout.splitlines()
                   for t in json.loads(line)["tokens"])
    result, output = invoke(runner, no_upos, tmp_path / "h.txt", "-i", "horizontal", "--min-prob", "0.5")
    assert result.exit_code == 1 and "--min-prob marks (or drops) arcs" in output, output


# -- presegmented text: a sentence per line ------------------------------------------------
PRESEGMENTED = ("The tired girl is not happy. He smiled.\n  Then she left!   \n\x01\n\n"
                "\"Yes,\" she said. - A dash.\n(Aside) text.\n")
PRESEGMENTED_LINES = [["The tired girl is not happy. He smiled.", "Then she left!"],
                      ['"Yes," she said. - A dash.', "(Aside) text."]]


@pytest.mark.parametrize("n_process", ["1", "2"])
def test_presegmented_text_has_a_sentence_per_line(tiny_model, runner, tmp_path, n_process):
    """`-i presegmented` (UDPipe's --tokenizer presegmented): each line is one sentence,
    tokenized by the tokenizer (spaCy's here) and never split, even where it begins with
    punctuation; a blank line or one of control characters starts a paragraph. CoNLL-U (read
    back by arborist's reader) and JSON, a line each."""
    source = tmp_path / "p.txt"
    source.write_text(PRESEGMENTED, encoding="utf-8")
    written = file_output(runner, tiny_model, source, tmp_path / "out", "-i", "presegmented", "-n", n_process)
    texts = [line[len("# text = "):] for line in written.splitlines() if line.startswith("# text = ")]
    assert texts == [line for paragraph in PRESEGMENTED_LINES for line in paragraph]
    assert [line for line in written.splitlines() if line.startswith("# sent_id")] == [
        "# sent_id = 1.1", "# sent_id = 1.2", "# sent_id = 2.1", "# sent_id = 2.2"]
    assert written.startswith("# newdoc id = p.txt\n# newpar\n") and written.count("# newpar") == 2
    sentences = list(read_conllu(tmp_path / "out" / "p.conllu", require_heads=True))
    assert [" ".join(s.forms[1:]) for s in sentences][1] == "Then she left !"
    result, output = invoke(runner, tiny_model, source, "-i", "presegmented", "-f", "json")
    assert result.exit_code == 0, output
    docs = [json.loads(line) for line in result.stdout.splitlines()]
    assert [d["text"][s["start"]:s["end"]] for d in docs for s in d["sents"]] == texts
    # read as text, the same file is split into sentences by the sentencizer
    assert file_output(runner, tiny_model, source, tmp_path / "text").count("# text = ") > 4


def test_presegmented_standard_input_and_gold_tags(tiny_model, runner, tmp_path):
    """Standard input is read as the file is, CRLF line ends too; --gold-tags has no tags to
    keep there."""
    source = tmp_path / "p.txt"
    source.write_text(PRESEGMENTED, encoding="utf-8")
    expected = file_output(runner, tiny_model, source, tmp_path / "out", "-i", "presegmented")
    result = runner.invoke(app, ["parse", str(tiny_model), "-", "-i", "presegmented", "--no-progress"],
                           input=PRESEGMENTED.replace("\n", "\r\n").encode("utf-8"))
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes.decode("utf-8") == expected.replace("# newdoc id = p.txt\n", "# newdoc\n", 1)
    result, output = invoke(runner, tiny_model, source, "-i", "presegmented", "--gold-tags")
    assert result.exit_code == 1 and "presegmented text has none" in output
    # two inputs on standard output: the second one's paragraphs are numbered on (unique ids)
    done = subprocess.run(parse_command(tiny_model, "-", source, "-i", "presegmented"),
                          input=PRESEGMENTED.encode("utf-8"), capture_output=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    assert [line for line in done.stdout.decode("utf-8").splitlines() if line.startswith("# sent_id")] == [
        f"# sent_id = {p}.{k}" for p in (1, 2, 3, 4) for k in (1, 2)]


def test_presegmented_numbering_needs_no_blank_lines(tiny_model, runner, tmp_path, monkeypatch):
    """A file of sentences without blank lines is one paragraph whatever its size (its ids
    1.1 to 1.N: the reader's limit cuts no paragraph); a line longer than the limit comes in
    pieces cut at spaces, whose sentences are numbered PARAGRAPH.LINE.PIECE.K."""
    monkeypatch.setattr(batch, "MAX_PARAGRAPH_CHARS", 40)
    lines = [f"This is sentence number {k} here." for k in range(30)]
    long_line = " ".join(f"word{k}" for k in range(20))  # 129 characters: four pieces
    source = tmp_path / "s.txt"
    source.write_text("\n".join(lines[:10] + [long_line] + lines[10:]) + "\n", encoding="utf-8")
    annotator = batch.Annotator(arborist.load(tiny_model), "conllu")
    job = batch.plan([source], None, "conllu", "presegmented")[0]
    written = "".join(annotator(payload, "s.txt")[0] for payload, _ in batch.chunks(job))
    ids = [line[len("# sent_id = "):] for line in written.splitlines() if line.startswith("# sent_id")]
    assert written.count("# newpar") == 1
    assert ids == [f"1.{k}" for k in range(1, 12)] + ["1.11.2.1", "1.11.3.1", "1.11.4.1"] + [
        f"1.{k}" for k in range(12, 32)]
    words = [line.split("\t")[1] for line in written.splitlines() if "\t" in line]
    assert [w for w in words if w.startswith("word")] == long_line.split()  # no word cut in two


def test_presegmented_reading_keeps_lines_and_bounds_them(tmp_path, monkeypatch):
    """`read_sentence_lines`: a line each (stripped, control characters as spaces), the first
    of each paragraph marked; a line longer than MAX_PARAGRAPH_CHARS in pieces cut at spaces;
    a line of nothing but spaces is blank however long, in text mode too (`_paragraphs`), and
    `paragraph_boundaries` cuts after blank lines only."""
    path = tmp_path / "p.txt"
    path.write_text("one two\n three \x01\n\n\x01\n\nfour\n", encoding="utf-8")
    assert [(t, opens, piece) for t, _, opens, piece in batch.read_sentence_lines(path)] == [
        ("one two", True, 0), ("three", False, 0), ("four", True, 0)]
    assert sum(n for _, n, _, _ in batch.read_sentence_lines(path)) == path.stat().st_size
    path.write_text("a\n \x01\x1b \nb\n", encoding="utf-8")  # a line of control characters alone is blank
    assert [(t, opens) for t, _, opens, _ in batch.read_sentence_lines(path)] == [("a", True), ("b", True)]
    monkeypatch.setattr(batch, "MAX_PARAGRAPH_CHARS", 20)
    path.write_text("alpha beta gammadelta epsilonzeta\n" + " " * 45 + "\nnext\n" + "abcdefghij" * 5 + "\n",
                    encoding="utf-8")
    assert [(t, opens, piece) for t, _, opens, piece in batch.read_sentence_lines(path)] == [
        ("alpha beta", True, 0), ("gammadelta", False, 1), ("epsilonzeta", False, 2), ("next", True, 0),
        ("abcdefghij" * 2, False, 0), ("abcdefghij" * 2, False, 1), ("abcdefghij", False, 2)]
    first = len("alpha beta gammadelta epsilonzeta\n")
    offset = first + 46
    # presegmented: a place to cut after each line (and the blank line), with the lines of the
    # paragraph before it; text: after the blank line only
    # (the file is ASCII: its characters before a place are its bytes)
    assert list(batch.sentence_line_boundaries(path))[:3] == [(first, 2, 1, 1, first), (offset, 3, 1, 0, offset),
                                                              (offset + 5, 4, 2, 1, offset + 5)]
    assert list(batch.paragraph_boundaries(path)) == [(offset, 3, 1, offset)]  # text: its pieces are one paragraph
    # a line whose trailing spaces make a piece of their own ends no paragraph (it did in text mode)
    path.write_text("abcdefghij abcdefghi" + " " * 25 + "\nnext\n", encoding="utf-8")
    assert list(batch.paragraph_boundaries(path)) == []
    assert [b[3] for b in batch.sentence_line_boundaries(path)] == [1, 2]
    assert [opens for _, _, opens, _ in batch.read_sentence_lines(path)] == [True, False, False]


def test_line_sentences_component():
    """`arborist_line_sentences` after spaCy's tokenizer: a sentence per line, whatever the line
    begins with (spaCy's sentencizer cutting at "\\n" keeps a leading quote or bracket in the
    sentence before) and whatever whitespace holds the line break (CRLF, indentation, blank
    lines: one whitespace token each); no sentence is only whitespace but a leading one."""
    nlp = spacy.blank("en")
    nlp.add_pipe("arborist_line_sentences")
    text = ' \nHe said hello.\r\n"Yes," she answered. - No.\n  (Aside) text.\t\n\n***\n¿Qué?'
    sentences = [s.text.strip() for s in nlp(text).sents]
    assert sentences == ["", "He said hello.", '"Yes," she answered. - No.', "(Aside) text.", "***", "¿Qué?"]
    assert [s.text for s in nlp("One line. Two sentences.").sents] == ["One line. Two sentences."]


# --ranges: BOM, CRLF, runs of spaces and tabs, control characters, a character outside the BMP,
# an indented paragraph after a blank line, a line longer than the reader's limit (patched to 60)
RANGES_TEXT = ("\ufeffThe  girl\tis not happy.\r\nShe   left \U0001F600 the house.\r\n\r\n"
               "  \x01Über café\x1b naïve résumé: it is fine.\n\n\n"
               + "".join(f"word{k}" + " \t  "[: 1 + k % 3] for k in range(30)) + ".\nEnd")  # runs of spaces, tabs


def ranged_tokens(conllu: str) -> list[tuple[str, str, int, int]]:
    """(ID, FORM, START, END) of each token line with a TokenRange, checking there is one per line
    of a token (a multiword token's line, a word outside one) and none on a multiword token's words."""
    out, inside_until = [], 0
    for line in conllu.splitlines():
        if "\t" not in line:
            inside_until = 0 if not line else inside_until  # a sentence's end
            continue
        row = line.split("\t")
        items = [i[len("TokenRange="):] for i in row[9].split("|") if i.startswith("TokenRange=")]
        first = int(row[0].split("-")[0])
        inside = "-" not in row[0] and first <= inside_until
        assert len(items) == (0 if inside else 1), line
        if "-" in row[0]:
            inside_until = int(row[0].split("-")[1])
        if items:
            start, end = map(int, items[0].split(":"))
            out.append((row[0], row[1], start, end))
    return out


def without_ranges(conllu: str) -> str:
    return re.sub(r"\|TokenRange=\d+:\d+", "", re.sub(r"\tTokenRange=\d+:\d+(\||\n)",
                                                   lambda m: "\t" if m.group(1) == "|" else "\t_\n", conllu))


@pytest.mark.parametrize("mode,n_process", [("text", "1"), ("text", "2"), ("presegmented", "2")])
def test_token_ranges_index_the_input(tiny_model, runner, tmp_path, monkeypatch, mode, n_process):
    """--ranges (UDPipe's TokenRange=START:END in MISC): each token's place in the file, in
    characters (a BOM not counted), END exclusive: the file's text[START:END] is the FORM, the
    tokens in order, through CRLF, tabs, control characters, a character outside the BMP and a line
    cut for its length. Otherwise the output is the one without --ranges."""
    monkeypatch.setattr(batch, "MAX_PARAGRAPH_CHARS", 60)
    source = tmp_path / "r.txt"
    source.write_bytes(RANGES_TEXT.encode("utf-8"))
    text = RANGES_TEXT[1:]
    written = file_output(runner, tiny_model, source, tmp_path / "ranges", "--ranges", "-i", mode, "-n", n_process)
    tokens = ranged_tokens(written)
    assert [text[a:b] for _, _, a, b in tokens] == [form for _, form, _, _ in tokens]
    assert all(b <= c for (_, _, _, b), (_, _, c, _) in zip(tokens, tokens[1:]))
    assert {"\U0001F600", "word29", "End", "Über"} <= {form for _, form, _, _ in tokens}
    assert len(tokens) == sum(1 for line in written.splitlines() if "\t" in line)  # spaCy's tokens: no multiword
    assert without_ranges(written) == file_output(runner, tiny_model, source, tmp_path / "plain", "-i", mode)
    result = runner.invoke(app, ["parse", str(tiny_model), "-", "--ranges", "-i", mode, "--no-progress"],
                           input=RANGES_TEXT.encode("utf-8"))  # standard input counts from its start too
    assert result.exit_code == 0 and result.stdout_bytes.decode("utf-8") == written.replace(
        "# newdoc id = r.txt\n", "# newdoc\n", 1)


def test_token_ranges_map_a_paragraph_s_offsets_to_the_file_s():
    """`token_ranges`: a paragraph's text is its lines joined by a space, each line somewhere in
    the file (places: where each starts in the paragraph, and in the file). A token ending just
    before the join, or running over it (a token with a space), ends where it does in the file."""
    places = ((0, 0), (4, 10))  # "abc" at 0 of the file, "defg" at 10: the paragraph "abc defg"
    assert batch.token_ranges(places, [(0, 3), (1, 3), (2, 6), (4, 8), (5, 6), (2, 4)]) == [
        "TokenRange=0:3", "TokenRange=1:3", "TokenRange=2:12", "TokenRange=10:14", "TokenRange=11:12",
        "TokenRange=2:4"]  # the last ends with the join: its end is placed by its last character


def test_token_ranges_are_refused_where_there_is_no_raw_text(tiny_model, runner, tmp_path):
    """--ranges is for raw text: refused with JSON or html output and with tokenized input;
    a CoNLL-U file among text files keeps its MISC."""
    source = tmp_path / "r.txt"
    source.write_text("Hello there.\n", encoding="utf-8")
    for options, message in ((["-f", "json"], "--ranges writes CoNLL-U's MISC, not json"),
                             (["-i", "horizontal"], "horizontal input is already tokenized"),
                             (["-i", "conllu"], "conllu input is already tokenized")):
        result, output = invoke(runner, tiny_model, source, "--ranges", *options)
        assert result.exit_code == 1 and message in output, output
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "c.conllu").write_bytes(DEV.read_bytes())
    result, output = invoke(runner, tiny_model, tmp_path / "in", "--ranges", "-d", tmp_path / "out")
    assert result.exit_code == 0, output
    assert "TokenRange" not in (tmp_path / "out" / "c.conllu").read_text(encoding="utf-8")


def test_a_link_to_a_directory_is_not_an_input_and_a_failed_rename_leaves_no_temporary(tiny_model, runner, tmp_path):
    """From a review of the Ray path, true of both engines: a link to a directory inside an
    input directory was a failed input ("Is a directory"); an output whose final rename fails
    (a directory of its name, with --overwrite) left its `.NAME.tmpPID` behind, and the error
    named that temporary file."""
    root = corpus_dir(tmp_path)
    (root / "linked").symlink_to(root / "sub", target_is_directory=True)
    out = tmp_path / "out"
    result, output = invoke(runner, tiny_model, root, "-d", out)
    assert result.exit_code == 0, output
    assert "linked" not in output and not (out / "linked").exists()
    (out / "a.conllu").unlink()
    (out / "a.conllu").mkdir()  # the output's name taken by a directory
    result, output = invoke(runner, tiny_model, root / "a.txt", "-d", out, "--overwrite")
    assert result.exit_code == 1 and f"{out / 'a.conllu'}: Is a directory" in output, output
    assert not list(out.glob(".a.conllu.tmp*"))
