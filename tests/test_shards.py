"""Cutting a file into shards that read as the whole does (`distributed` parses huge
inputs in shards): every cut place `paragraph_boundaries` and `conllu_boundaries` give
splits the file into parts whose paragraphs or sentences are the whole file's, with the
file's own line numbers in errors. No Ray needed."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from arborist import batch
from arborist.batch import Job, paragraph_boundaries, read_paragraphs
from arborist.corpus import CorpusError, conllu_boundaries, read_conllu
from arborist.distributed import shard

DEV = Path(__file__).resolve().parents[1] / "corpora" / "sample" / "sample-dev.conllu"


def text_file(tmp_path: Path) -> Path:
    path = tmp_path / "in.txt"
    long_paragraph = " ".join(["word"] * 400)  # cut for its length below (the limit is patched to 300)
    parts = ["\ufeffFirst paragraph,\non two lines.", "\n\nSecond one.", "\n\n\n  \nThird, after blank lines.",
             f"\n\n{long_paragraph}", "\n\nÜnïcödé paragraph: ελληνικά.", "\n\nLast, without a final newline"]
    path.write_bytes("".join(parts).encode("utf-8"))
    return path


def test_every_paragraph_boundary_splits_the_file_into_its_paragraphs(tmp_path, monkeypatch):
    monkeypatch.setattr(batch, "MAX_PARAGRAPH_CHARS", 300)
    path = text_file(tmp_path)
    whole = [text for text, _ in read_paragraphs(path)]
    boundaries = list(paragraph_boundaries(path))
    # (paragraph number, piece, glued, places, text) of each paragraph or piece of a long one
    items = [item for item, _ in batch._numbered_paragraphs(Job(path, None, False))]
    assert [text for *_, text in items] == whole
    assert [(n, piece) for n, piece, *_ in items] == [(1, 0), (2, 0), (3, 0), (4, 0), (4, 1), (4, 2), (4, 3), (4, 4),
                                                       (4, 5), (4, 6), (5, 0), (6, 0)]
    # after each paragraph but the last; the long one's pieces are one paragraph, and no places to cut
    assert [before for _, _, before, _ in boundaries] == [1, 2, 3, 4, 5]
    size = path.stat().st_size
    raw = path.read_bytes()
    for offset, line, before, chars in boundaries:
        head = [text for text, _ in read_paragraphs(path, 0, offset)]
        tail = [text for text, _ in read_paragraphs(path, offset, None, line)]
        assert head + tail == whole and items[len(head) - 1][0] == before and items[len(head)][1] == 0
        assert sum(n for _, n in read_paragraphs(path, offset, None, line)) <= size - offset
        assert chars == len(raw[:offset].decode("utf-8").lstrip("\ufeff"))  # characters, without the BOM
        # a shard that starts `chars` characters into the file numbers its paragraphs, and places
        # them (`--ranges`), as the whole file's reading does
        job = Job(path, None, False, start=offset, line=line, paragraph=before, char=chars)
        assert [item for item, _ in batch._numbered_paragraphs(job)] == items[len(head):]
    cuts = [0] + [b[0] for b in boundaries] + [None]
    pieces = [text for start, end in zip(cuts, cuts[1:]) for text, _ in read_paragraphs(path, start, end)]
    assert pieces == whole


def test_a_shard_reports_errors_at_the_file_s_own_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"one\n\ntwo\n\nthree \xff\n")
    found = []
    with pytest.raises(batch.InputError, match=r"bad.txt:5: invalid UTF-8"):
        for boundary in paragraph_boundaries(path):
            found.append(boundary)
    assert found == [(5, 3, 1, 5), (10, 5, 2, 10)]
    with pytest.raises(batch.InputError, match=r"bad.txt:5: invalid UTF-8"):
        list(read_paragraphs(path, 10, None, 5))


def test_every_conllu_boundary_splits_the_file_into_its_sentences(tmp_path):
    path = tmp_path / "in.conllu"
    data = DEV.read_bytes()
    path.write_bytes(b"\xef\xbb\xbf" + data.replace(b"\n\n", b"\n\n\n", 1))  # a BOM and a doubled blank line
    whole = [s.lines for s in read_conllu(path)]
    boundaries = list(conllu_boundaries(path))
    assert len(boundaries) == len(whole) - 1
    raw = path.read_bytes()
    for offset, line in boundaries[:: max(1, len(boundaries) // 7)]:
        assert raw[:offset].count(b"\n") == line - 1 and raw[offset - 1:offset] == b"\n"
        head = [s.lines for s in read_conllu(path, end=offset)]
        tail = [s.lines for s in read_conllu(path, start=offset, first_line=line)]
        assert head + tail == whole


def test_a_conllu_shard_reports_errors_at_the_file_s_own_line(tmp_path):
    path = tmp_path / "bad.conllu"
    good = DEV.read_text(encoding="utf-8").split("\n\n")[0] + "\n\n"
    path.write_text(good + "1\tonly\tthree\n\n", encoding="utf-8")
    (offset, line), = conllu_boundaries(path)
    assert line == good.count("\n") + 1
    with pytest.raises(CorpusError, match=rf"bad.conllu:{line}:"):
        list(read_conllu(path, start=offset, first_line=line))


@pytest.mark.parametrize("conllu", [False, True])
def test_shards_cover_the_file_once_in_order(tmp_path, conllu):
    path = tmp_path / ("in.conllu" if conllu else "in.txt")
    path.write_bytes(DEV.read_bytes() * 3 if conllu else (b"Some words here.\n\n" * 2000))
    job = Job(path, tmp_path / "out" / "in.conllu", conllu)
    parts = shard(job, 5000)
    assert len(parts) > 3
    assert parts[0].start == 0 and parts[-1].end is None
    assert all(a.end == b.start for a, b in zip(parts, parts[1:]))
    assert all(4000 <= p.size for p in parts[:-1]) and sum(p.size for p in parts) == path.stat().st_size
    assert [p.target.name for p in parts] == [f"{k:05d}.conllu" for k in range(len(parts))]
    assert {p.target.parent for p in parts} == {tmp_path / "out" / "in.shards"}
    assert shard(Job(path, tmp_path / "x.conllu", conllu), path.stat().st_size) == [Job(path, tmp_path / "x.conllu",
                                                                                          conllu, path.stat().st_size)]


PRETOKENIZED = {
    "horizontal": "\ufeffFirst line of words\nsecond\tline\n\n\n  \nafter blank lines\n{long}\n{exact}\n"
                  "Ünïcödé ελληνικά\n\nlast",
    "vertical": "\ufeffFirst\nsentence\n\n\n  \nsecond\tX\n{long}\n\n{exact}\n\nÜnïcödé\nελληνικά\n\nlast",
}


def pretokenized_file(tmp_path: Path, layout: str, lead: str = "") -> Path:
    """A file of the layout; {long} is cut for its length (the limit is patched to 300), and
    {exact} is a line of exactly 300 characters, read in two pieces, the second only its
    newline (once taken for a blank line: the sentence went on into the next line)."""
    path = tmp_path / f"{layout}.txt"
    text = lead + PRETOKENIZED[layout].format(long=" ".join(["word"] * 200), exact="wort " * 60)
    path.write_bytes(text.encode("utf-8"))
    return path


def shard_output(job: Job) -> str:
    """The CoNLL-U lines `chunks` gives a job (a file or a shard), before parsing."""
    return "".join(line for payload, _ in batch.chunks(job) for sentence in payload[1] for line in sentence.lines)


@pytest.mark.parametrize("lead", ["", "\n" * 50])
@pytest.mark.parametrize("layout", ["horizontal", "vertical"])
def test_every_pretokenized_boundary_splits_the_file_into_its_sentences(tmp_path, monkeypatch, layout, lead):
    """Pre-tokenized text (`-i horizontal|vertical`): at every place `pretokenized_boundaries`
    gives, the two parts, the second numbered on and without the document id, read as the
    whole file's sentences, lines (sent_id, newpar) and line numbers included; the shards'
    CoNLL-U concatenated is the whole file's, `# newdoc` once, also when the first shard holds
    only blank lines."""
    monkeypatch.setattr(batch, "MAX_PARAGRAPH_CHARS", 300)
    path = pretokenized_file(tmp_path, layout, lead)
    read = lambda *args: [(s.lines, s.first_line) for s, _ in batch.read_pretokenized(path, layout, *args)]
    whole = read(1, "x.txt")
    exact = f"# text = {('wort ' * 60).strip()}\n"  # {exact}: a sentence of its own
    assert [exact in lines for lines, _ in whole].count(True) == 1
    boundaries = list(batch.pretokenized_boundaries(path, layout))
    assert len(boundaries) >= 5 and len(whole) >= 6
    for offset, line, before in boundaries:
        head = read(1, "x.txt", 0, offset)
        tail = read(before + 1, "x.txt" if before == 0 else None, offset, None, line)
        assert head + tail == whole and len(head) == before, (offset, line, before)
    job = Job(path, tmp_path / "out" / "in.conllu", False, pretokenized=layout)
    parts = shard(job, 10)
    assert len(parts) > 3 and {p.paragraph for p in parts[1:]} <= {b[2] for b in boundaries}
    expected = shard_output(job)
    assert expected.count("# newdoc id = ") == 1
    assert "".join(shard_output(p) for p in parts) == expected


def test_horizontal_text_without_blank_lines_is_cut_after_any_line(tmp_path):
    """The usual horizontal file, a sentence per line and no paragraphs, is still sharded."""
    path = tmp_path / "lines.txt"
    path.write_text("".join(f"sentence number {k} .\n" for k in range(300)), encoding="utf-8")
    job = Job(path, tmp_path / "out" / "lines.conllu", False, pretokenized="horizontal")
    parts = shard(job, 500)
    assert len(parts) > 5 and "".join(shard_output(p) for p in parts) == shard_output(job)
    assert shard_output(job).count("# newpar") == 1


@pytest.mark.parametrize("input_format,conllu,layout", [("auto", True, None), ("text", False, None),
                                                         ("vertical", False, "vertical"), ("conllu", True, None)])
def test_plan_any_reads_the_input_format_for_paths_and_urls(tmp_path, input_format, conllu, layout):
    """`--engine ray -i FORMAT`: the jobs of local paths and of URLs read their inputs alike."""
    from arborist.distributed import plan_any

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.conllu").write_bytes(DEV.read_bytes())
    for given in (tmp_path / "in", f"file://{tmp_path / 'in'}"):
        [job] = plan_any([given], tmp_path / "out", "conllu", input_format)
        assert (job.conllu, job.pretokenized) == (conllu, layout), given
    with pytest.raises(ValueError, match="unknown input format"):
        plan_any([tmp_path / "in"], tmp_path / "out", "conllu", "xml")


def test_counting_the_boundaries_finds_the_places_reading_does(tmp_path, monkeypatch):
    """`pretokenized_boundaries` counts sentences without making them, and takes a short cut
    for plain lines; on random files of awkward pieces (long lines read in pieces, tabs,
    U+00A0, U+2028, control characters, CRLF, a BOM) it gives the places and counts of the
    reader that makes every sentence."""
    import random

    from arborist.batch import _pretokenized

    def made(path, layout):
        out, sentences = [], 0
        for kind, a, b in _pretokenized(path, layout):
            if kind == "sentence":
                sentences += 1
            else:
                out.append((a, b, sentences))
        return out

    monkeypatch.setattr(batch, "MAX_PARAGRAPH_CHARS", 12)
    pieces = ["a", "bb", "ccc", "é", "ελ", " ", "  ", "\t", "\n", "\n", "\n", "\r\n", "\xa0", "\x01", "x" * 15,
              " \n", "\t\n", "\u2028"]
    rng = random.Random(0)
    path = tmp_path / "r.txt"
    for _ in range(400):
        path.write_bytes(("\ufeff" if rng.random() < 0.2 else "").encode() +
                         "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))).encode("utf-8"))
        for layout in ("horizontal", "vertical"):
            assert list(batch.pretokenized_boundaries(path, layout)) == made(path, layout), path.read_bytes()


PRESEGMENTED_FILES = {
    "no blank lines": "".join(f"Sentence number {k}. It has two parts.\n" for k in range(40)),
    "paragraphs": "\n\n\ufeffnot a BOM here\n" + "".join(
        f"Line {k} of the text.\n" + ("\n \n\x01\n" if k % 7 == 3 else "") for k in range(40)) + "last line",
    "long lines": "".join(("word " * 90 if k % 5 == 2 else f"short {k}") + "\n" for k in range(30)),
}


def line_items(job: Job) -> list:
    """The (paragraph, line, piece, glued, places, text) items `chunks` gives a presegmented job."""
    return [item for payload, _ in batch.chunks(job) for item in payload[1]]


@pytest.mark.parametrize("name", sorted(PRESEGMENTED_FILES))
def test_every_presegmented_boundary_splits_the_file_into_its_lines(tmp_path, monkeypatch, name):
    """Presegmented text (`-i presegmented`): at every place `sentence_line_boundaries` gives
    (after any line, so a file without blank lines is sharded too), the two parts, the second
    numbered on from the paragraphs and the paragraph's lines before it, give the whole file's
    numbered lines, each placed where it is in the file (`--ranges`); and the shards `shard`
    makes give them in order."""
    monkeypatch.setattr(batch, "MAX_PARAGRAPH_CHARS", 200)
    path = tmp_path / "p.txt"
    path.write_bytes(PRESEGMENTED_FILES[name].encode("utf-8"))
    job = Job(path, tmp_path / "out" / "p.conllu", False, presegmented=True)
    whole = line_items(job)
    assert len({(p, k, piece) for p, k, piece, _, _, _ in whole}) == len(whole) >= 30  # unique ids
    text = PRESEGMENTED_FILES[name]
    assert all(text[places[0][1]:places[0][1] + len(line)] == line and len(places) == 1
               for _, _, _, _, places, line in whole)
    boundaries = list(batch.sentence_line_boundaries(path))
    assert len(boundaries) >= 30
    for offset, line, paragraphs, lines, chars in boundaries:
        head = line_items(dataclasses.replace(job, end=offset))
        tail = line_items(dataclasses.replace(job, start=offset, line=line, paragraph=paragraphs,
                                              paragraph_lines=lines, char=chars))
        assert head + tail == whole, (offset, line, paragraphs, lines)
    parts = shard(job, 100)
    assert len(parts) > 5
    assert [item for p in parts for item in line_items(p)] == whole


@pytest.mark.parametrize("limit", [5, 12, 40])
def test_places_map_every_item_back_to_the_file(tmp_path, monkeypatch, limit):
    """The places of `_paragraphs`' and `_sentence_lines`' items (`--ranges`), on random files of
    awkward pieces and a small reader limit (paragraphs and lines cut for their length): each
    line or piece of an item is the file's text at its place, character for character, control
    characters read as spaces; a shard read from any cut place with its character count gives
    the same items."""
    import random
    import re

    monkeypatch.setattr(batch, "MAX_PARAGRAPH_CHARS", limit)
    pieces = ["a", "bb", "ccc dd", "é", "ελ", "😀", " ", "   ", "\t", "\n", "\n", "\r\n", "\xa0", "\x01", "\x85",
              "\u2028", "x" * 15, " \n", "\t\n"]
    control = re.compile("[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f]")
    rng = random.Random(limit)
    path = tmp_path / "r.txt"
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 60)))
        path.write_bytes(("\ufeff" if rng.random() < 0.2 else "").encode() + text.encode("utf-8"))
        seen = control.sub(" ", text)
        for presegmented in (False, True):
            job = Job(path, None, False, presegmented=presegmented)
            items = [item for payload, _ in batch.chunks(job) for item in payload[1]]
            for item in items:
                places, item_text = item[-2], item[-1]
                ends = [p for p, _ in places[1:]] + [len(item_text) + 1]
                for (p, f), end in zip(places, ends):  # a join's space between two places
                    assert item_text[p:end - 1] == seen[f:f + end - 1 - p], (text, item)
            boundaries = batch.sentence_line_boundaries(path) if presegmented else (
                (o, ln, par, 0, c) for o, ln, par, c in paragraph_boundaries(path))
            for offset, line, paragraphs, lines, chars in boundaries:
                tail = dataclasses.replace(job, start=offset, line=line, paragraph=paragraphs, paragraph_lines=lines,
                                           char=chars)
                read = [item for payload, _ in batch.chunks(tail) for item in payload[1]]
                assert read == items[len(items) - len(read):], (text, offset)


def test_a_plan_without_the_settings_parses_every_shard_again(tmp_path):
    """`keep_shards`: shards are kept only when the plan written before them has the same cut
    places and settings; a plan from before settings were recorded (or with others) removes
    them, so that they are parsed again."""
    import json

    from arborist.distributed import keep_shards, shard_paths

    path = tmp_path / "in.txt"
    path.write_text("".join(f"Paragraph {k} here.\n\n" for k in range(200)), encoding="utf-8")
    job = Job(path, tmp_path / "out" / "in.conllu", False)
    parts = shard(job, 500)
    assert len(parts) > 2
    settings = {"ranges": True, "trees": True}
    assert not keep_shards(job, parts, settings=settings)  # no plan yet: written now
    for part in parts:
        part.target.write_text("parsed\n")
    assert keep_shards(job, parts, settings=settings)  # the same plan: kept
    plan_path = shard_paths(job.target)[0] / "plan.json"
    plan = json.loads(plan_path.read_text())
    del plan["settings"]
    plan_path.write_text(json.dumps(plan))
    assert not keep_shards(job, parts, settings=settings)
    assert not any(part.target.exists() for part in parts)
    assert json.loads(plan_path.read_text())["settings"] == settings
    for part in parts:
        part.target.write_text("parsed\n")
    assert not keep_shards(job, parts, settings={"ranges": False, "trees": True})
    assert not any(part.target.exists() for part in parts)
