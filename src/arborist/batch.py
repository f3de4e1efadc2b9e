"""Batch parsing of text and CoNLL-U files (`arborist parse`).

Inputs are files or directories (searched recursively). A `.conllu` file is read
sentence by sentence and, as CoNLL-U output, written back byte for byte with only
the predicted columns changed (`corpus.write_conllu`); any other file is raw UTF-8
text, parsed by the spaCy pipeline `spacy_pipeline` builds (the language's tokenizer,
the sentencizer, `arborist_tagger`, `arborist_parser`). Paragraphs are separated by
blank lines; the lines of a paragraph are joined by spaces (presegmented text, `-i
presegmented`, is read a line at a time: each line is a sentence, tokenized but not split,
`read_sentence_lines`). Pre-tokenized text
(`read_pretokenized`: UDPipe's horizontal and vertical formats) is made into CoNLL-U
sentences and parsed as CoNLL-U is.

Memory is bounded whatever the input size: a file is read in chunks of about
CHUNK_CHARS characters of whole paragraphs (a line is read at most MAX_PARAGRAPH_CHARS
at a time, and a longer paragraph is cut at a space), at most WINDOW chunks per
worker are in flight, and output is written as each chunk comes back, in input order.
With n_process > 1 the chunks go to worker processes, which return finished output
text, so the parent only reads and writes.

Every output is written to a temporary file in the output directory and renamed
into place when complete: an output that exists is complete, so a rerun skips it
(unless `overwrite`) and a killed run leaves no half file under the final name. A
file that cannot be read (binary, invalid UTF-8, malformed CoNLL-U, permissions) is
reported with the reason (and the line, where there is one) and skipped; the others
are parsed.

Without an output directory the outputs go to standard output, one after the other in
input order, each chunk as it is done (a stream: a filter in a shell pipeline, as
UDPipe's command is); standard input is an input then (`corpus.STDIN`, `-` on the
command line), and a chunk of it also ends when nothing more is waiting (`stdin_idle`), so
what came is parsed and written before the read blocks (CoNLL-U: a sentence at its blank
line, `read_conllu`'s `idle`, so blank lines that end the input after a pause are dropped).
The stream is one CoNLL-U file: the text inputs' paragraph numbers (`# sent_id = P.S`) and
the pre-tokenized inputs' sentence numbers go on from one to the next. A CoNLL-U input
without its final blank line gets one there and in a file (`OutputEnd`). A file that fails there has had its
earlier chunks written already.
"""
from __future__ import annotations

import bisect
import codecs
import contextlib
import dataclasses
import errno
import functools
import gc
import json
import multiprocessing
import multiprocessing.pool
import os
import re
import signal
import sys
import time
import warnings
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np

from .confidence import ARC, LOW, NO_MISC_CANDIDATES, confidence_keys, format_prob, misc_items, misc_key
from .corpus import STDIN, CorpusError, StandardInput, format_sentence, merge_misc, read_conllu
from .model import Pipeline, UntaggedInputWarning  # (re-exported: it was defined here)
from .sentence import Sentence
from .tokenizer.chars import CONTROL

FORMATS = {"conllu": ".conllu", "json": ".jsonl", "html": ".html"}
INPUT_FORMATS = ("auto", "text", "conllu", "horizontal", "vertical", "presegmented")  # auto: a .conllu file is
# CoNLL-U, anything else (and stdin) text; horizontal and vertical: pre-tokenized text (read_pretokenized), as
# UDPipe's --input; presegmented: text with a sentence per line, as UDPipe's --tokenizer presegmented
PRETOKENIZED = ("horizontal", "vertical")
CONLLU_SUFFIX = ".conllu"
CHUNK_CHARS = 50_000  # a unit of work: ~10,000 words, a fraction of a second
CHUNK_SENTENCES = 400  # the same for CoNLL-U input
MAX_PARAGRAPH_CHARS = 100_000  # well under spaCy's nlp.max_length (10^6)
VOCAB_LIMIT = 100_000  # words kept in spaCy's vocabulary (see Annotator.__call__)
WINDOW = 3  # chunks in flight per worker: enough to keep it busy, few enough to bound memory
HTML_HEAD = ('<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n<title>{title}</title>\n'
             '</head>\n<body style="font-family: sans-serif">\n')
HTML_TAIL = "</body>\n</html>\n"


@dataclass(frozen=True)
class ConfidenceOptions:
    """What `arborist parse --probs --k-best K --min-prob P [--drop-low]` asks for: write
    each word's probabilities (and K best values); mark (or drop) the arcs whose head
    probability is under P."""

    probs: bool = False
    k_best: int = 0
    min_prob: float | None = None
    drop_low: bool = False


def low_words(confidences: dict, min_prob: float | None) -> set[int]:
    """The words (1-based) whose head probability is under `min_prob`."""
    head = confidences.get("head")
    if min_prob is None or head is None:
        return set()
    return {int(m) + 1 for m in np.flatnonzero(head.prob < min_prob)}


def confidence_misc(confidences: dict, n: int, options: ConfidenceOptions, low: set[int]) -> list[str]:
    """Each word's MISC items for the options (probabilities, k best, LowProb=Yes)."""
    out = []
    for m in range(n):
        items = misc_items(confidences, m, options.k_best) if options.probs else []
        if m + 1 in low and not options.drop_low:
            items.append(f"{LOW}=Yes")
        out.append("|".join(items))
    return out


class InputError(ValueError):
    """An input file that cannot be read; the message names the file (and line)."""


@dataclass
class Job:
    source: Path | StandardInput
    target: Path | None  # None: standard output
    conllu: bool
    size: int = 0
    # A shard of a file (`distributed` cuts huge inputs): its bytes [start, end), which
    # begin at line `line`, after `paragraph` paragraphs (text) of the file.
    start: int = 0
    end: int | None = None
    line: int = 1
    paragraph: int = 0
    # The paragraph number that opens the document (`# newdoc id`): 1, which a later shard
    # never has; on standard output, the numbers go on from one text input to the next.
    newdoc_paragraph: int = 1
    # Pre-tokenized text: "horizontal" or "vertical" (read_pretokenized; `conllu` is False),
    # its sentences numbered after `paragraph` sentences.
    pretokenized: str | None = None
    # Text with a sentence per line (`-i presegmented`): tokenized, its lines never split. A
    # shard of it that starts inside paragraph `paragraph` has `paragraph_lines` of its lines
    # before it (0: the shard's first line opens a paragraph).
    presegmented: bool = False
    paragraph_lines: int = 0
    # The characters of the file before `start` (text): where TokenRange offsets start.
    char: int = 0


@dataclass
class Report:
    written: list[Path] = field(default_factory=list)  # the inputs parsed (sources, as in skipped and failed)
    skipped: list[Path] = field(default_factory=list)  # complete outputs from an earlier run
    failed: list[tuple[Path, str]] = field(default_factory=list)
    words: int = 0
    seconds: float = 0.0

    @property
    def exit_code(self) -> int:
        """0: every input parsed (or already parsed); 2: some failed; 1: all failed."""
        if not self.failed:
            return 0
        return 1 if not self.written and not self.skipped else 2


# -- planning ---------------------------------------------------------------------
def directory_files(directory: Path) -> list[Path]:
    """The files below a directory, recursively, sorted; hidden ones (a name starting with ".",
    or below such a directory) are left out, and so are links to directories (not followed,
    as `find` does not: a link to a directory was a failed input, "Is a directory"); a broken
    link is kept, to be reported as an input that cannot be read."""
    return sorted(p for p in directory.rglob("*")
                  if not any(part.startswith(".") for part in p.relative_to(directory).parts)
                  and (p.is_file() or (p.is_symlink() and not p.exists())))


def text_job_error(jobs: list[Job]) -> str | None:
    """Why --gold-tags cannot run on these jobs (one of them is read as text, which has no tags
    to keep), or None."""
    text = next((job.source for job in jobs if not job.conllu), None)
    if text is None:
        return None
    return (f"--gold-tags keeps the tags of CoNLL-U input; {text} is read as text, which has none (-i conllu reads "
            "it as CoNLL-U)")


def plan(inputs: list[Path | StandardInput], output_dir: Path | None, fmt: str,
         input_format: str = "auto") -> list[Job]:
    """One job per input file (a directory contributes its files, recursively, in sorted
    order; hidden files are left out). A file's output is its name with the format's
    suffix, below the output directory at its path relative to the directory given;
    without an output directory, every output goes to standard output (target None).
    `input_format`: one of INPUT_FORMATS."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")
    if input_format not in INPUT_FORMATS:
        raise ValueError(f"unknown input format {input_format!r}: one of {', '.join(INPUT_FORMATS)}")
    reads_stdin = sum(given is STDIN for given in inputs)
    if reads_stdin > 1:
        raise ValueError("standard input ('-') can be read once")
    if reads_stdin and output_dir is not None:
        raise ValueError("standard input ('-') is parsed to standard output: leave out --output-dir")
    jobs = []
    for given in inputs:
        if given is STDIN:
            jobs.append(Job(STDIN, None, **input_kind("", input_format)))
            continue
        if given.is_dir():
            pairs = [(p, p.relative_to(given).parent) for p in directory_files(given)]
        else:
            pairs = [(given, Path())]
        for path, relative in pairs:
            target = None if output_dir is None else output_dir / relative / (path.stem + FORMATS[fmt])
            jobs.append(Job(path, target, **input_kind(path.suffix, input_format)))
    if output_dir is None:
        if fmt == "html" and len(jobs) > 1:
            raise ValueError(f"--format html writes one page per input and {len(jobs)} inputs would go to "
                             "standard output: give one input, or --output-dir")
        return jobs
    by_target: dict[Path, list[Path]] = {}
    for job in jobs:
        by_target.setdefault(job.target, []).append(job.source)
    clashes = {t: s for t, s in by_target.items() if len(s) > 1}
    if clashes:
        raise ValueError("two inputs would write the same output: " + "; ".join(
            f"{', '.join(map(str, s))} -> {t}" for t, s in clashes.items()))
    return jobs


def input_kind(suffix: str, input_format: str) -> dict:
    """How an input with this file name suffix is read as `input_format` (one of INPUT_FORMATS;
    "auto": a .conllu file is CoNLL-U): the `Job` fields conllu, pretokenized (the layout or
    None) and presegmented."""
    conllu = suffix == CONLLU_SUFFIX if input_format == "auto" else input_format == "conllu"
    return {"conllu": conllu, "pretokenized": input_format if input_format in PRETOKENIZED else None,
            "presegmented": input_format == "presegmented"}


# -- reading ----------------------------------------------------------------------
def read_paragraphs(path: Path | str, start: int = 0, end: int | None = None,
                    line: int = 1) -> Iterator[tuple[str, int]]:
    """(paragraph, bytes read) for each paragraph of a UTF-8 text file (a path or a URL),
    streamed; with `start`, `end` and `line`, of the shard [start, end) of the file, which
    begins at line `line` (`paragraph_boundaries` finds such places).

    Raises InputError for a binary file (a NUL byte) or invalid UTF-8, with the line."""
    for text, nbytes, *_ in _paragraphs(path, start, end, line):
        yield text, nbytes


def read_sentence_lines(path: Path | str, start: int = 0, end: int | None = None,
                        line: int = 1) -> Iterator[tuple[str, int, bool, int]]:
    """Presegmented text (`-i presegmented`, a sentence per line): (line, bytes read, whether it
    opens a paragraph, piece) for each non-blank line of a UTF-8 text file, stripped, its
    control characters read as spaces. A blank line (or one of nothing but control characters)
    ends a paragraph. A line longer than MAX_PARAGRAPH_CHARS comes in pieces (piece 0, 1...),
    cut at a space where there is one. `start`, `end` and `line` as `read_paragraphs`'s, at a
    place `sentence_line_boundaries` gives (`_numbered_lines` reads a shard that starts inside
    a paragraph).

    Raises InputError for a binary file (a NUL byte) or invalid UTF-8, with the line."""
    for kind, *item in _sentence_lines(path, start, end, line):
        if kind == "line":
            text, nbytes, _, number, piece, _, _ = item
            yield text, nbytes, number == 1 and piece == 0, piece


def sentence_line_boundaries(path: Path | str) -> Iterator[tuple[int, int, int, int, int]]:
    """(byte offset, line number, paragraphs before, lines of the last of them before, characters
    before) of every place a presegmented text file can be cut so that `read_sentence_lines` of
    the two parts gives the lines of the whole: after any line (every line ends a sentence; not
    between the pieces of a long line) and after a blank line that ends a paragraph. So a file
    of sentences without blank lines is cut too. Reads the whole file with the same reader."""
    for kind, *item in _sentence_lines(path, 0, None, 1):
        if kind == "cut":
            yield tuple(item)


def paragraph_boundaries(path: Path | str) -> Iterator[tuple[int, int, int, int]]:
    """(byte offset, line number, paragraphs before, characters before) of every place a text
    file can be cut so that `read_paragraphs` of the two parts gives the paragraphs of the
    whole: just after a blank line that ends a paragraph. (A paragraph cut for its length is
    not such a place.) Reads the whole file with the same reader, so the counts agree."""
    position = paragraphs = 0
    for _, nbytes, number, blank_ended, _, chars, piece, _ in _paragraphs(path, 0, None, 1):
        position += nbytes
        paragraphs += piece == 0
        if blank_ended:
            yield position, number, paragraphs, chars


def _paragraphs(path, start: int, end: int | None, line: int, char: int = 0
                ) -> Iterator[tuple[str, int, int, bool, tuple, int, int, bool]]:
    """(paragraph, bytes read, the next line's number, whether a blank line ended it, its places,
    characters read up to its end, piece, glued). The places are (offset in the paragraph,
    character offset in the file) where each of its lines (or pieces of a long line) starts:
    between two places the paragraph's characters are the file's, one for one (`token_ranges`).
    `char`: the characters of the file before `start`. A paragraph longer than
    MAX_PARAGRAPH_CHARS comes in pieces (piece 0, 1...: one paragraph, `sentence_heading`), cut
    at a space where there is one; `glued`: the piece was cut inside a token (no space within
    the limit), so no whitespace follows its last token."""
    lines: list[str] = []
    places: list[tuple[int, int]] = []
    size = nbytes = piece = 0
    following = line  # the next line's number
    seen = False  # the line being read has shown text (a line longer than the limit comes in pieces)
    runs_on = False  # the piece before ran on into this one without whitespace (a long line's pieces)
    for text, read, number, ends_line in _text_lines(path, start, end, line):
        nbytes += read
        following = number + ends_line
        joins = runs_on and bool(text) and not text[0].isspace() and text[0].isprintable()
        runs_on = not ends_line and bool(text) and not text[-1].isspace() and text[-1].isprintable()
        stripped = _visible(text)
        # where it starts in the file: what comes before it in `text` is spaces and control
        # characters, which its first character is not (inside it, a control character became one space)
        at, char = char + (text.find(stripped[0]) if stripped else 0), char + len(text)
        blank = ends_line and not (stripped or seen)  # nothing but spaces in every piece of the line
        seen = not ends_line and (seen or bool(stripped))
        if blank:
            if lines:
                yield " ".join(lines), nbytes, following, True, tuple(places), char, piece, False
                lines, places, size, nbytes, piece = [], [], 0, 0, 0
            continue
        if stripped and joins and lines:  # the same word goes on: no space between the pieces
            lines[-1] += stripped  # (contiguous in the file too: no place of its own)
            size += len(stripped)
        elif stripped:
            places.append((size, at))  # size: where the line starts in the lines joined by spaces
            lines.append(stripped)
            size += len(stripped) + 1
        while size > MAX_PARAGRAPH_CHARS:
            # A paragraph too long for one Doc (a file without blank lines): cut at a space.
            joined = " ".join(lines)
            cut = joined.rfind(" ", 0, MAX_PARAGRAPH_CHARS)
            glued = cut <= 0 and joined[MAX_PARAGRAPH_CHARS:MAX_PARAGRAPH_CHARS + 1] != " "
            cut = cut if cut > 0 else MAX_PARAGRAPH_CHARS
            yield joined[:cut], nbytes, following, False, tuple(p for p in places if p[0] < cut), char, piece, glued
            piece += 1
            rest = joined[cut:].strip()
            # the rest starts in the last line (the lines before it fit, so the cut is at or
            # after the space before it), at `origin` of the text
            origin = len(joined) - len(rest)
            places = [(0, places[-1][1] + origin - places[-1][0])] if rest else []
            lines, size, nbytes = ([rest], len(rest) + 1, 0) if rest else ([], 0, 0)
    if lines:
        yield " ".join(lines), nbytes, following, False, tuple(places), char, piece, False


def token_ranges(places, spans) -> list[str]:
    """UDPipe's `TokenRange=START:END` MISC item of each (start, end) span of a text that the
    reader gave with `places`: character offsets in the input file (its text without a
    byte-order mark), END exclusive, as Python slices them."""
    offsets = [p for p, _ in places]
    out = []
    for a, b in spans:
        k = bisect.bisect_right(offsets, a) - 1
        j = bisect.bisect_right(offsets, b - 1) - 1  # a token that runs over a joined line break
        out.append(f"TokenRange={places[k][1] + a - offsets[k]}:{places[j][1] + b - offsets[j]}")
    return out


def _sentence_lines(path, start: int, end: int | None, line: int, paragraphs: int = 0,
                    lines: int = 0, char: int = 0) -> Iterator[tuple]:
    """`read_sentence_lines`'s lines as ("line", text, bytes, paragraph, line of the paragraph,
    piece, character offset of the text in the file, glued: the piece was cut inside a run of
    characters without a space, so no whitespace follows its last token), numbered on from `paragraphs` paragraphs
    before, `lines` of them in the last (0: the first line opens a paragraph); and ("cut", byte
    offset, line number, paragraphs before, lines of the last before, characters before) at
    every place `sentence_line_boundaries` gives. `char`: the characters of the file before
    `start`."""
    opens = lines == 0  # the next line opens a paragraph (the first, or one after a blank line)
    nbytes = piece = 0  # piece: of the line being read, given out
    position = start
    pending = ""  # the line read so far and not given out: under twice the limit
    pending_at = char  # where it starts in the file (control characters became one space each)

    def give(raw: str, glued: bool = False) -> tuple:
        nonlocal paragraphs, lines, opens, nbytes
        text = raw.strip()
        paragraphs, lines = (paragraphs + 1, 1) if opens else (paragraphs, lines + (piece == 0))
        item = ("line", text, nbytes, paragraphs, lines, piece, pending_at + raw.find(text[0]), glued)
        opens, nbytes = False, 0
        return item

    for text, read, number, ends_line in _text_lines(path, start, end, line):
        nbytes += read
        position += read
        char += len(text)
        # (a line's break is not printable: tested without it, so most lines skip the regex)
        pending += text if text.rstrip("\r\n").isprintable() else _NONSPACE_CONTROL.sub(" ", text)
        while len(pending) > MAX_PARAGRAPH_CHARS:  # a line too long for one sentence: cut at a space
            cut = max(pending.rfind(" ", 0, MAX_PARAGRAPH_CHARS), pending.rfind("\t", 0, MAX_PARAGRAPH_CHARS))
            glued = cut <= 0 and not pending[MAX_PARAGRAPH_CHARS:MAX_PARAGRAPH_CHARS + 1].isspace()
            cut = cut if cut > 0 else MAX_PARAGRAPH_CHARS
            head = pending[:cut]
            if head.strip():
                yield give(head, glued)
                piece += 1
            pending, pending_at = pending[cut:], pending_at + cut
        if not ends_line:
            continue
        tail = pending.strip()
        if tail:
            yield give(pending)
        pending, pending_at = "", char
        blank, piece = not tail and not piece, 0  # blank: nothing but spaces in every piece
        if blank:
            if opens:  # before the first paragraph, or after a blank line: no new place to cut
                continue
            opens, lines = True, 0  # it ends a paragraph
        yield "cut", position, number + 1, paragraphs, lines, char
    if pending.strip():  # the last line, without its line break
        yield give(pending)


def sentence_heading(paragraph: int, line: tuple[int, int] | None, k: int, piece: int = 0) -> tuple[str, bool]:
    """(`# sent_id`, whether `# newpar` comes before it) of the k-th sentence (from 1) of a
    paragraph of text (`line` None): PARAGRAPH.K, or PARAGRAPH.PIECE.K in a later piece of a
    paragraph past the reader's limit (`piece` from 0, PIECE from 1: the second piece's are
    P.2.K); or of a piece of a line of a paragraph of presegmented text (`line` = (line, piece),
    from 1 and from 0): PARAGRAPH.LINE for a line's first sentence; a line that made more than
    one (its pieces past the reader's limit, or sentences cut for their length) numbers the
    others PARAGRAPH.LINE.PIECE.K, PIECE from 1."""
    if line is None:
        return (f"{paragraph}.{k}", k == 1) if piece == 0 else (f"{paragraph}.{piece + 1}.{k}", False)
    number, piece = line
    if piece == 0 and k == 1:
        return f"{paragraph}.{number}", number == 1
    return f"{paragraph}.{number}.{piece + 1}.{k}", False


def _text_lines(path, start: int, end: int | None, line: int) -> Iterator[tuple[str, int, int, bool]]:
    """(text, bytes read, line number, whether it ends its line) for each line of a UTF-8 text
    file (a path, a URL or standard input), or of its shard [start, end) that begins at line
    `line`. A line longer than MAX_PARAGRAPH_CHARS comes in pieces: never a whole 1 GB line in
    memory. Raises InputError for a binary file (a NUL byte) or invalid UTF-8, with the line."""
    from .corpus import open_input

    decoder = codecs.getincrementaldecoder("utf-8")()
    number = line
    position = start
    with open_input(path) as f:
        if start:
            f.seek(start)
        while end is None or position < end:
            raw = f.readline(MAX_PARAGRAPH_CHARS)
            if not raw:
                break
            if b"\x00" in raw:
                raise InputError(f"{path}:{number}: binary file (NUL byte), not UTF-8 text")
            try:
                text = decoder.decode(raw)  # keeps a character cut by the limit for the next piece
            except UnicodeDecodeError as e:
                raise InputError(f"{path}:{number}: invalid UTF-8 ({e.reason})") from None
            if position == 0 and text.startswith("\ufeff"):
                text = text[1:]  # a byte-order mark is not text
            position += len(raw)
            ends_line = raw.endswith(b"\n")
            yield text, len(raw), number, ends_line
            number += ends_line
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as e:
            raise InputError(f"{path}:{number}: invalid UTF-8 at the end of the file ({e.reason})") from None


# those that are not whitespace (TAB, line breaks, U+001C-1F and U+0085 are: spaCy and str.split
# treat them as such already)
_NONSPACE_CONTROL = re.compile("[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f]")
_TOKEN_SPACE = re.compile("[\u00a0\u2028\u2029]")  # a space inside a token (UDPipe's U+00A0); line breaks too
_SEPARATORS = re.compile("[ \t]+")  # what separates horizontal tokens, as in UDPipe


def _visible(text: str, printable: bool | None = None) -> str:
    """`text` stripped, with its control characters read as spaces: they are not text (an
    escape sequence, a stray U+0001), so no tokenizer puts one in a FORM (never in CoNLL-U), and
    a line of nothing else is a blank line, in raw and in pre-tokenized text. `printable`:
    whether the line without its line break is printable, when the caller has tested it."""
    stripped = text.strip()
    # (false for any control character, tabs too: rare)
    if not (stripped.isprintable() if printable is None else printable):
        stripped = _NONSPACE_CONTROL.sub(" ", stripped).strip()
    return stripped


def comment_text(text: str) -> str:
    """A sentence's text for its `# text` comment: one line, runs of whitespace and control
    characters one space."""
    return " ".join(CONTROL.sub(" ", text).split())


def read_pretokenized(path, layout: str, first: int = 1, newdoc: str | None = None, start: int = 0,
                      end: int | None = None, line: int = 1) -> Iterator[tuple[Sentence, int]]:
    """(sentence, bytes read for it) for each sentence of pre-tokenized text, UDPipe's `--input`
    formats: "horizontal", a sentence per line and its tokens separated by spaces and tabs, a
    blank line before a new paragraph; "vertical", a token per line (its first tab-separated
    field), a blank line after each sentence. Each token is a word (no multiword tokens).
    Sentences are CoNLL-U with `# sent_id` numbered from `first`, `# text` (the tokens joined
    by spaces) and no column but ID and FORM; `newdoc`: the document id of the first one
    (`# newdoc id`; "" for `# newdoc`); horizontal text's paragraphs get `# newpar`. In a
    token, U+00A0 is a space (UDPipe's way to write one), as are the line and paragraph
    separators, and control characters are left out. Memory stays bounded: a sentence longer
    than MAX_PARAGRAPH_CHARS characters is cut at a token into several, and a token longer
    than that into pieces. Blank lines that end the input are not counted in the bytes.
    `start`, `end` and `line` read the shard [start, end) of the file, which begins at line
    `line` (`pretokenized_boundaries` finds such places)."""
    for kind, sentence, read in _pretokenized(path, layout, first, newdoc, start, end, line):
        if kind == "sentence":
            yield sentence, read


def pretokenized_boundaries(path, layout: str) -> Iterator[tuple[int, int, int]]:
    """(byte offset, line number, sentences before) of every place a pre-tokenized text file
    can be cut so that `read_pretokenized` of the two parts, the second numbered on, gives the
    sentences of the whole: where no sentence is open and none of the reader's state carries
    over (horizontal: after a line that ended a sentence; vertical: after a blank line). Reads
    the whole file with the same reader (without making the sentences), so the counts agree."""
    sentences = 0
    for kind, offset, line in _pretokenized(path, layout, build=False):
        if kind == "sentence":
            sentences += 1
        else:
            yield offset, line, sentences


def _pretokenized(path, layout: str, first: int = 1, newdoc: str | None = None, start: int = 0,
                  end: int | None = None, line: int = 1, build: bool = True) -> Iterator[tuple[str, object, int]]:
    """`read_pretokenized`'s sentences as ("sentence", sentence, bytes), and ("cut", byte
    offset, line number) at every place `pretokenized_boundaries` gives. `build=False` counts
    the sentences without making them (None in their place)."""
    if layout not in PRETOKENIZED:
        raise ValueError(f"pre-tokenized layout must be one of {', '.join(PRETOKENIZED)}, got {layout!r}")
    tokens: list[str] = []
    size = nbytes = 0
    number, start_line = first, 1
    # horizontal: the next sentence opens a paragraph (the file's first, or one after a blank
    # line; a shard starts after a sentence's line, or at a blank line, which it reads)
    newpar = layout == "horizontal" and start == 0
    pending = ""  # a line's token so far (a long line comes in pieces)
    after_tab = False  # vertical: the line's tab was seen
    blank = True  # the line so far is blank (a long line comes in pieces)

    def sentence() -> tuple[str, Sentence | None, int]:
        nonlocal tokens, size, nbytes, number, newdoc, newpar
        out = None
        if build:
            lines = [] if newdoc is None else [newdoc_comment(newdoc)]
            lines += ["# newpar\n"] if newpar else []
            lines += [f"# sent_id = {number}\n", f"# text = {' '.join(tokens)}\n"]
            word_lines = list(range(len(lines), len(lines) + len(tokens)))
            lines += [f"{m}\t{form}\t_\t_\t_\t_\t_\t_\t_\t_\n" for m, form in enumerate(tokens, start=1)]
            lines.append("\n")
            out = Sentence.from_columns(tokens, lines=lines, word_lines=word_lines, source=str(path),
                                        first_line=start_line)
        read = nbytes
        tokens, size, nbytes, number, newdoc, newpar = [], 0, 0, number + 1, None, False
        return "sentence", out, read

    def add(words: list[str]) -> Iterator[tuple[str, Sentence | None, int]]:
        nonlocal size
        for word in words:
            if not word.isprintable():  # (false for control characters, U+00A0, U+2028/9)
                word = _TOKEN_SPACE.sub(" ", CONTROL.sub("", word)).strip()
            for cut in range(0, len(word), MAX_PARAGRAPH_CHARS):
                token = word[cut:cut + MAX_PARAGRAPH_CHARS].strip()
                if not token:
                    continue
                if size and size + len(token) > MAX_PARAGRAPH_CHARS:
                    yield sentence()
                tokens.append(token)
                size += len(token) + 1

    position = start
    at_line_start = True  # the next piece read starts a line
    for text, read, number_of_line, ends_line in _text_lines(path, start, end, line):
        nbytes += read
        position += read
        starts_line, at_line_start = at_line_start, ends_line
        if not tokens and not pending:
            start_line = number_of_line
        # (false for control characters, tabs and U+00A0; tested once, for both uses below)
        printable = text.rstrip("\r\n").isprintable()
        blank = blank and not _visible(text, printable)
        if layout == "horizontal":
            if not build and starts_line and ends_line and not tokens and printable:
                # counting only, a line in one piece without tabs, control characters or U+00A0
                # (the usual one): a sentence if it holds more than spaces, never cut for its size
                if blank:
                    newpar = True
                else:
                    yield sentence()
                    yield "cut", position, number_of_line + 1
                blank = True
                continue
            words = _SEPARATORS.split(pending + text)
            # the last token may go on in the line's next piece (a piece is at most
            # MAX_PARAGRAPH_CHARS long, so `pending` stays under twice that)
            pending = words.pop() if not ends_line else ""
            yield from add(words)
            if not ends_line:
                continue
            was_blank, blank = blank, True
            if was_blank:
                newpar = True
            elif tokens:
                yield sentence()
                yield "cut", position, number_of_line + 1
            continue
        if not build and starts_line and ends_line and printable:
            # counting only, a line in one piece without tabs, control characters or U+00A0:
            # its token is the line (shorter than the limit: never cut itself)
            token = text.strip()
            if token:  # add([token]) for a printable token shorter than the limit, inline: 30% of this pass
                if size and size + len(token) > MAX_PARAGRAPH_CHARS:
                    yield sentence()
                tokens.append(token)
                size += len(token) + 1
            else:
                if tokens:
                    yield sentence()
                yield "cut", position, number_of_line + 1
            blank = True
            continue
        if not after_tab:
            field, tab, _ = (text.lstrip() if not pending.strip() else text).partition("\t")
            pending += field
            after_tab = bool(tab)
        if len(pending) >= MAX_PARAGRAPH_CHARS:
            yield from add([pending])
            pending = ""
        if ends_line:
            token, was_blank = pending.strip(), blank
            pending, after_tab, blank = "", False, True
            if was_blank:  # (its token, if any, is only control characters)
                if tokens:
                    yield sentence()
                yield "cut", position, number_of_line + 1
            elif token:
                yield from add([token])
    if pending.strip():
        yield from add(_SEPARATORS.split(pending) if layout == "horizontal" else [pending])
    if tokens:
        yield sentence()


def chunks(job: Job) -> Iterator[tuple[tuple, int]]:
    """(payload for a worker, input bytes it covers) for each chunk of a job's file. A chunk
    ends at about CHUNK_CHARS characters (CHUNK_SENTENCES sentences), or on standard input
    when nothing more has arrived (`stdin_idle`): what came is parsed now, not when more does."""
    batch: list = []
    size = nbytes = 0
    idle = stdin_idle if job.source is STDIN else _never
    if job.pretokenized or job.conllu:
        if job.pretokenized:
            # the document's first sentence opens it (`# newdoc id`): a shard with sentences before
            # it does not (the text path's rule: the paragraph that opens the document)
            newdoc = location_name(job.source) if job.paragraph + 1 == job.newdoc_paragraph else None
            sentences = read_pretokenized(job.source, job.pretokenized, job.paragraph + 1, newdoc, job.start,
                                          job.end, job.line)
        else:
            sentences = ((x, sum(len(line) for line in x.lines))
                         for x in read_conllu(job.source, start=job.start, end=job.end, first_line=job.line, idle=idle))
        for sentence, read in sentences:
            batch.append(sentence)
            size += sum(map(len, sentence.forms)) + sentence.n
            nbytes += read
            if len(batch) >= CHUNK_SENTENCES or size >= CHUNK_CHARS or idle():
                yield ("conllu", batch), nbytes
                batch, size, nbytes = [], 0, 0
        if batch:
            yield ("conllu", batch), nbytes
        return
    # text: (paragraph, places, text) items; presegmented text: (paragraph, line, piece of the
    # line, places, text)
    kind, items = ("lines", _numbered_lines(job)) if job.presegmented else ("text", _numbered_paragraphs(job))
    for item, read in items:
        batch.append(item)
        size += len(item[-1])
        nbytes += read
        if size >= CHUNK_CHARS or idle():
            yield (kind, batch, job.newdoc_paragraph), nbytes
            batch, size, nbytes = [], 0, 0
    if batch:
        yield (kind, batch, job.newdoc_paragraph), nbytes


def _numbered_paragraphs(job: Job) -> Iterator[tuple[tuple, int]]:
    """((paragraph number, piece, glued, places, text), bytes read) of each paragraph (or piece
    of a long one) of a text job (piece, glued and places: `_paragraphs`')."""
    number = job.paragraph
    for text, read, _, _, places, _, piece, glued in _paragraphs(job.source, job.start, job.end, job.line, job.char):
        number += piece == 0
        yield (number, piece, glued, places, text), read


def _numbered_lines(job: Job) -> Iterator[tuple[tuple, int]]:
    """((paragraph number, line of the paragraph, piece of the line, glued, places, text), bytes
    read) of each line (or piece of a long line) of a presegmented text job: lines from 1, pieces
    from 0; glued and places as `_paragraphs`' (one place: the text is one piece of one line of
    the file)."""
    lines = _sentence_lines(job.source, job.start, job.end, job.line, job.paragraph, job.paragraph_lines, job.char)
    for kind, *item in lines:
        if kind == "line":
            text, read, paragraph, line, piece, at, glued = item
            yield (paragraph, line, piece, glued, ((0, at),), text), read


def _never() -> bool:
    return False


def stdin_idle() -> bool:
    """Whether standard input has nothing to read now (a pipe or terminal waiting for its
    writer); False when that cannot be told (not a file descriptor, or no select)."""
    import select

    try:
        return not select.select([sys.stdin.buffer.fileno()], [], [], 0)[0]
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError and a ValueError
        return False


# -- annotating and writing ---------------------------------------------------------
def spacy_pipeline(pipeline: Pipeline, lang: str | None = None, confidence: ConfidenceOptions | None = None,
                   presegmented: bool = False):
    """The spaCy pipeline of a model: the tokenizer of its language, the sentencizer, the
    arborist tagger (when the model has taggers) and parser (with `confidence`, setting the
    probability extension attributes, `token._.head_prob`...). `presegmented`: a sentence per
    line of a text (`arborist_line_sentences` after spaCy's tokenizer)."""
    import spacy

    from .spacy_components import ArboristComponent  # noqa: F401  (registers the factories)

    config = {"probabilities": True, "k_best": confidence.k_best} if confidence is not None else {}
    if pipeline.writer("form") is not None:  # the model's own tokenizer and sentence splitter
        from .spacy_components import ArboristTokenizer

        tokenizer = {"nlp": {"tokenizer": {"@tokenizers": "arborist.Tokenizer.v1", "model": None,
                                           "presegmented": presegmented}}}
        nlp = spacy.blank(lang or pipeline.lang, config=tokenizer)
        nlp.tokenizer.set_model(pipeline)
        assert isinstance(nlp.tokenizer, ArboristTokenizer)
    else:
        nlp = spacy.blank(lang or pipeline.lang)
        nlp.add_pipe("arborist_line_sentences" if presegmented else "sentencizer")
    if pipeline.taggers:
        nlp.add_pipe("arborist_tagger", config=config).set_model(pipeline)
    if pipeline.writer("head") is not None:
        nlp.add_pipe("arborist_parser", config=config).set_model(pipeline)
    return nlp


def doc_conllu(doc, paragraph: int | None = None, newdoc: str | None = None,
               confidence: ConfidenceOptions | None = None, columns: tuple[str, ...] = (),
               line: tuple[int, int] | None = None, source: tuple | None = None, piece: int = 0,
               glued: bool = False) -> str:
    """CoNLL-U of an annotated Doc: one sentence per doc.sents, whitespace tokens left
    out (they only set SpaceAfter), ROOT written as UD's root; with `confidence`, the
    probabilities of `columns` from the token attributes (`token._.head_prob`...). The Doc
    is paragraph `paragraph`, or with `line` = (line, piece) a piece of a line of it
    (presegmented text: `sentence_heading`), or piece `piece` of a long paragraph, `glued` when
    cut inside a token (its last token gets SpaceAfter=No). `source`: (the reader's places, the
    text the Doc was made from), for each token's `TokenRange` in the file (`--ranges`)."""
    from .spacy_components import to_ud_label, ud_feats

    out = []
    has_trees = doc.has_annotation("DEP")  # none without a parser (`--no-parse`, or none in the model)
    ranges = _doc_token_ranges(doc, *source) if source is not None else None

    def follows(i: int) -> bool:  # whitespace after token i (none after the last of a glued piece)
        return space_follows(doc, i) and not (glued and i + 1 == len(doc))

    for k, sent in enumerate(doc.sents, start=1):
        words = [t for t in sent if not t.is_space]
        if not words:
            continue
        ids = {t.i: j for j, t in enumerate(words, start=1)}
        if newdoc is not None and not out:
            out.append(newdoc_comment(newdoc))
        if paragraph is not None:
            sent_id, newpar = sentence_heading(paragraph, line, k, piece)
            out.append(f"# newpar\n# sent_id = {sent_id}\n" if newpar else f"# sent_id = {sent_id}\n")
        out.append(f"# text = {comment_text(surface_text(sent))}\n")
        inside_until = 0  # the last word of the multiword token being written: its words get no SpaceAfter
        for j, t in enumerate(words, start=1):
            mwt = t._.arborist_mwt if t.has_extension("arborist_mwt") else None
            if mwt is not None:  # a multiword token of the model's tokenizer: its surface form first
                last = t.i + mwt[1] - 1
                after = follows(last)
                misc = "_" if after else "SpaceAfter=No"
                misc = merge_misc(misc, ranges[t.i]) if ranges is not None else misc
                out.append(f"{j}-{j + mwt[1] - 1}\t{mwt[0]}\t_\t_\t_\t_\t_\t_\t_\t{misc}\n")
                inside_until = j + mwt[1] - 1
            head = t.head
            while head.is_space and head.head.i != head.i:  # never from our parser; other parsers may
                head = head.head
            head_id = 0 if head.i == t.i else ids.get(head.i, 0)
            inside = j <= inside_until  # a word of a multiword token: its MISC has none of the token's items
            after = inside or follows(t.i)
            misc, dropped = token_misc(t, after), False
            if ranges is not None and not inside:
                misc = merge_misc(misc, ranges[t.i])
            if confidence is not None:
                items, dropped = token_confidence_items(t, columns, confidence, ids)
                misc = merge_misc(misc, "|".join(items)) if items else misc
            out.append("\t".join((
                str(j), t.text, t.lemma_ or "_", t.pos_ or "_", t.tag_ or "_", ud_feats(str(t.morph)),
                "_" if dropped or not has_trees else str(head_id), "_" if dropped or not t.dep_ else to_ud_label(t.dep_),
                "_", misc,
            )) + "\n")
        out.append("\n")
    return "".join(out)


def space_follows(doc, i: int) -> bool:
    """Whether whitespace follows token i of a Doc, or the Doc ends there: a paragraph's last
    token has no `SpaceAfter=No` (as in the UD treebanks, and on the model's own path)."""
    return bool(doc[i].whitespace_) or i + 1 == len(doc) or doc[i + 1].is_space


def surface_tokens(span) -> Iterator[tuple]:
    """(first word, surface form, last word) of each token of a span of a Doc: a multiword token
    of the model's tokenizer once, by its surface form ("della", whose words "di" + "la" are the
    Doc's tokens); any other token, whitespace too, as itself."""
    doc, skip = span.doc, 0
    for t in span:
        if skip:  # a later word of a multiword token
            skip -= 1
            continue
        mwt = t._.arborist_mwt if t.has_extension("arborist_mwt") else None
        if mwt is None:
            yield t, t.text, t
        else:
            skip = mwt[1] - 1
            yield t, mwt[0], doc[t.i + skip]


def surface_text(span) -> str:
    """The text of a span of a Doc as its tokens are written (`surface_tokens`)."""
    return "".join(form + last.whitespace_ for _, form, last in surface_tokens(span))


def _doc_token_ranges(doc, places, text: str) -> dict[int, str]:
    """The `TokenRange` item of each token of a Doc made from `text` (its surface token for a
    multiword token's first word), whitespace tokens left out. Found in the text in order, as
    the Doc of the model's tokenizer has its words, not the text's characters."""
    indices, spans = [], []
    position = 0
    for t, form, _ in surface_tokens(doc[:]):
        if t.is_space:
            continue
        at = text.find(form, position)
        if at < 0 or (at > position and not CONTROL.sub(" ", text[position:at]).isspace()):  # no token holds one
            raise RuntimeError(f"token {form!r} is not where the text goes on ({text[position:position + 40]!r})")
        indices.append(t.i)
        spans.append((at, at + len(form)))
        position = at + len(form)
    return dict(zip(indices, token_ranges(places, spans)))


def newdoc_comment(name: str) -> str:
    """The comment that opens a document: its id is the input's file name; standard input has
    none (UD's `# newdoc` without an id)."""
    return f"# newdoc id = {name}\n" if name else "# newdoc\n"


def token_misc(token, space_after: bool) -> str:
    """A token's MISC: SpaceAfter=No, and the item of a component that writes MISC (`token._.misc`)."""
    misc = "_" if space_after else "SpaceAfter=No"
    item = token._.misc if token.has_extension("misc") else None
    return merge_misc(misc, item) if item else misc


def tokenized_conllu(sentence, parsed, sent_id: str, newpar: bool, newdoc: str | None,
                     ranges: list[str] | None = None, glued: bool = False) -> str:
    """CoNLL-U of one sentence of the model's tokenizer (`arborist.tokenizer.api.Sentence`) with
    its annotation: multiword tokens as `N-M` lines before their words, SpaceAfter=No (and the
    `TokenRange` item of `ranges`, one per token) on the surface token, the predicted columns on
    the words. `glued`: the sentence ends a piece of a paragraph cut inside a token (SpaceAfter=No
    on its last token)."""
    out = []
    if newdoc is not None:
        out.append(newdoc_comment(newdoc))
    if newpar:
        out.append("# newpar\n")
    out.append(f"# sent_id = {sent_id}\n# text = {comment_text(sentence.text)}\n")
    columns = parsed.columns
    n = sum(len(t.word_forms) for t in sentence.tokens)
    missing = ["_"] * n
    lemma, upos, xpos, feats = (columns.get(c, missing) for c in ("lemma", "upos", "xpos", "feats"))
    extra_misc = columns.get("misc")
    heads = [str(int(h)) for h in parsed.heads[1:]] if parsed.heads is not None else missing
    deprels = parsed.deprels[1:] if parsed.deprels is not None else missing
    m = 0
    last = len(sentence.tokens) - 1
    for k, t in enumerate(sentence.tokens):
        misc = "_" if t.space_after and not (glued and k == last) else "SpaceAfter=No"
        if ranges is not None:
            misc = merge_misc(misc, ranges[k])
        words = t.word_forms
        if t.words is not None:
            out.append(f"{m + 1}-{m + len(words)}\t{t.form}\t_\t_\t_\t_\t_\t_\t_\t{misc}\n")
            misc = "_"  # on the multiword token's line, not its words'
        for w in words:
            own = merge_misc(misc, extra_misc[m]) if extra_misc is not None else misc
            out.append(f"{m + 1}\t{w}\t{lemma[m]}\t{upos[m]}\t{xpos[m]}\t{feats[m]}\t{heads[m]}\t{deprels[m]}\t_\t{own}\n")
            m += 1
    out.append("\n")
    return "".join(out)


def token_confidence_items(token, columns: tuple[str, ...], options: ConfidenceOptions, ids: dict
                           ) -> tuple[list[str], bool]:
    """(the MISC items of a token's probabilities, from its extension attributes; whether its
    arc is dropped). `ids`: the CoNLL-U ids of the sentence's tokens (head candidates)."""
    from .spacy_components import to_ud_label

    items, values = [], {}
    for column in columns:
        p = token._.get(f"{column}_prob") if token.has_extension(f"{column}_prob") else None
        if p is not None:
            values[column] = p
            if options.probs:
                items.append(f"{misc_key(column)}={format_prob(p)}")
    if options.probs and "head" in values and "deprel" in values:
        items.append(f"{misc_key(ARC)}={format_prob(values['head'] * values['deprel'])}")
    if options.probs and options.k_best:
        for column in columns:
            if column in NO_MISC_CANDIDATES:
                continue
            cands = token._.get(f"{column}_candidates") if token.has_extension(f"{column}_candidates") else None
            if not cands:
                continue
            shown = []
            for rank, (value, p) in enumerate(cands):
                if column == "head":
                    value = 0 if value == token.i else ids.get(value, 0)
                elif column == "deprel":
                    value = to_ud_label(value)
                if rank == 0 or format_prob(p) != "0":
                    shown.append(f"{value}:{format_prob(p)}")
            items.append(f"{misc_key(column, 'Cands')}={','.join(shown)}")
    low = options.min_prob is not None and "head" in values and values["head"] < options.min_prob
    if low and not options.drop_low:
        items.append(f"{LOW}=Yes")
    return items, low and options.drop_low


def set_confidences(doc, confidences: dict, k_best: int) -> None:
    """Set the probability extension attributes of a Doc made from a CoNLL-U sentence (its
    tokens are the sentence's words)."""
    from .spacy_components import confidence_extensions, to_spacy_value

    confidence_extensions(tuple(confidences))
    arc = confidences.get("head").prob * confidences["deprel"].prob if "head" in confidences and \
        "deprel" in confidences else None
    for m, token in enumerate(doc):
        for column, c in confidences.items():
            token._.set(f"{column}_prob", float(c.prob[m]))
            if k_best:
                cands = []
                for v, p in zip(c.top[m, :k_best].tolist(), c.top_prob[m, :k_best].tolist()):
                    if v < 0:
                        continue
                    value = (m if v == 0 else v - 1) if column == "head" else c.value(v)
                    cands.append((value if column == "head" else to_spacy_value(column, value), float(p)))
                token._.set(f"{column}_candidates", cands)
        if arc is not None:
            token._.set(f"{ARC}_prob", float(arc[m]))


def doc_json(doc, columns: tuple[str, ...], options: ConfidenceOptions | None) -> dict:
    """spaCy's Doc JSON, with the probability attributes under "underscore_token" (--probs)
    and the arcs under --min-prob marked ("low_prob": true) or dropped (head and dep null)."""
    if options is None:
        return doc.to_json()
    from spacy.tokens import Token

    names = [f"{c}_{a}" for c in columns + ((ARC,) if "head" in columns and "deprel" in columns else ())
             for a in ("prob", "candidates")]
    names = [n for n in names if Token.has_extension(n) and any(t._.get(n) is not None for t in doc)]
    data = doc.to_json(underscore=names) if names and options.probs else doc.to_json()
    if options.min_prob is not None and Token.has_extension("head_prob"):
        for token, entry in zip(doc, data.get("tokens", [])):
            p = token._.head_prob
            if p is not None and p < options.min_prob:
                if options.drop_low:
                    entry["head"] = entry["dep"] = None
                else:
                    entry["low_prob"] = True
    return data


def sentence_doc(vocab, sentence, heads, deprels, tags: dict):
    """A Doc of an annotated CoNLL-U sentence (for JSON and HTML output of CoNLL-U input)."""
    from spacy.parts_of_speech import IDS as UNIVERSAL_POS
    from spacy.tokens import Doc

    from .morph.choice import conll_column
    from .spacy_components import DEFAULT_LABEL, ROOT_LABEL, spacy_feats, to_spacy_label

    misc = [sentence.lines[i].rstrip("\r\n").split("\t")[9] for i in sentence.word_lines]
    upos = tags.get("upos", sentence.upos[1:])
    xpos = tags.get("xpos", sentence.xpos[1:])
    lemmas = tags["lemma"] if "lemma" in tags else conll_column(sentence, 2)
    feats = tags["feats"] if "feats" in tags else conll_column(sentence, 5)
    doc_heads = deps = None
    if heads is not None:
        doc_heads = [int(h) - 1 if h > 0 else m for m, h in enumerate(heads[1:])]
        labels = deprels[1:] if deprels is not None else [DEFAULT_LABEL] * sentence.n
        deps = [ROOT_LABEL if h == 0 else to_spacy_label(label) for h, label in zip(heads[1:], labels)]
    return Doc(
        vocab, words=sentence.forms[1:], spaces=["SpaceAfter=No" not in m.split("|") for m in misc],
        # spaCy accepts only universal POS tags; a treebank with others keeps them in CoNLL-U only
        # (spaCy takes "" for a word without one; None fails)
        pos=[t if t != "_" else "" for t in upos] if all(t in UNIVERSAL_POS or t == "_" for t in upos) else None,
        tags=[t if t != "_" else "" for t in xpos], heads=doc_heads, deps=deps,
        lemmas=[t if t != "_" else "" for t in lemmas], morphs=[spacy_feats(t) for t in feats],
    )


def without_trees(pipeline: Pipeline) -> Pipeline:
    """The pipeline without its tree stage (parser, labeler): what `--no-parse` runs."""
    return pipeline.subset(lambda c: c.tagging or "text" in c.reads)


class Annotator:
    """Turns a chunk into output text; one per worker process. `trees=False` leaves the tree
    stage out (`--no-parse`); a model without a parser has none either: HEAD and DEPREL are
    then '_' (CoNLL-U input keeps its own)."""

    def __init__(self, pipeline: Pipeline, fmt: str, lang: str | None = None, gold_tags: bool = False,
                 confidence: ConfidenceOptions | None = None, trees: bool = True, ranges: bool = False):
        if not trees:  # `arborist parse --no-parse`: tokens, tags, lemmas and features only
            pipeline = without_trees(pipeline)
        self.pipeline, self.fmt, self.gold_tags = pipeline, fmt, gold_tags
        self.confidence, self.lang = confidence, lang
        self.ranges = ranges  # TokenRange in the MISC of text's tokens (`--ranges`)
        # the columns with probabilities, in pipeline order
        self.columns = tuple(c.confidence_column for c in pipeline.stage(gold_tags) if c.confidence_column)
        # CoNLL-U input: the MISC items of an earlier run's probabilities of the columns this
        # run predicts again describe the values it replaces: they go (--probs writes new ones)
        self.stale_misc = confidence_keys(column for c in pipeline.stage(gold_tags) for column in c.writes)
        self.nlp = spacy_pipeline(pipeline, lang, confidence)
        self._nlp_presegmented = None  # made at the first presegmented input

    def __call__(self, payload: tuple, name: str) -> tuple[str, int]:
        """(output text, words) of a chunk of the file `name`."""
        from spacy.attrs import IS_SPACE

        kind, items = payload[:2]
        if kind == "conllu":
            return self.conllu(items)
        first = payload[2]  # the paragraph that opens the document
        # (paragraph, (line, piece) or None, places, text): a text chunk's items are paragraphs
        # (or pieces of long ones: `pieces`, (piece, glued) of each), a "lines" chunk's
        # (presegmented text) the lines (or pieces of lines) of paragraphs
        if kind == "text":
            pieces = [(piece, glued) for _, piece, glued, _, _ in items]
            items = [(p, None, places, t) for p, _, _, places, t in items]
        else:
            pieces = [(0, glued) for *_, glued, _, _ in items]
            items = [(p, (k, piece), places, t) for p, k, piece, _, places, t in items]
        if self.fmt == "conllu" and self.confidence is None and self.pipeline.writer("form") is not None:
            return self.tokenized(items, name, first, kind == "lines", pieces)
        nlp = self.nlp
        if kind == "lines":
            if self._nlp_presegmented is None:
                self._nlp_presegmented = spacy_pipeline(self.pipeline, self.lang, self.confidence, presegmented=True)
            nlp = self._nlp_presegmented
        out, words = [], 0
        with self.vocabulary_zone(nlp):
            for (paragraph, line, places, text), (piece, glued), doc in zip(
                    items, pieces, nlp.pipe(text for *_, text in items)):
                words += len(doc) - int(doc.to_array(IS_SPACE).sum())
                opens = paragraph == first and line in (None, (1, 0)) and piece == 0
                out.append(self.render(doc, paragraph, name if opens else None, line,
                                       (places, text) if self.ranges else None, piece, glued))
        return "".join(out), words

    def tokenized(self, items, name: str, first: int = 1, presegmented: bool = False,
                  pieces: list[tuple[int, bool]] | None = None) -> tuple[str, int]:
        """CoNLL-U of paragraphs (or, `presegmented`, of lines) tokenized by the model's own
        tokenizer (its text stage): its tokens, multiword tokens and sentences, annotated by the
        other components. `pieces`: (piece, glued) of each item (`_paragraphs`; by default
        whole paragraphs)."""
        pieces = pieces if pieces is not None else [(0, False)] * len(items)
        documents = self.pipeline.tokenize([text for *_, text in items], presegmented)
        headings = [sentence_heading(paragraph, line, k, piece)
                    for (paragraph, line, *_), (piece, _), (_, xs) in zip(items, pieces, documents)
                    for k in range(1, len(xs) + 1)]
        # each sentence named by its file and sent_id, for messages (a long sentence's warning)
        where = name or "<stdin>"
        sentences = [dataclasses.replace(x, source=f"{where}, sent_id {sent_id}", first_line=0)
                     for x, (sent_id, _) in zip((x for _, xs in documents for x in xs), headings)]
        parsed, heading = iter(self.pipeline.annotate_many(sentences, self.gold_tags)), iter(headings)
        out = []
        for (paragraph, line, places, _), (_, glued), (doc, xs) in zip(items, pieces, documents):
            for k, (tokens, _) in enumerate(zip(doc.sentences, xs), start=1):
                sent_id, newpar = next(heading)
                opens = paragraph == first and newpar
                ranges = token_ranges(places, [(t.start, t.end) for t in tokens.tokens]) if self.ranges else None
                out.append(tokenized_conllu(tokens, next(parsed), sent_id, newpar, name if opens else None, ranges,
                                            glued and k == len(xs)))
        return "".join(out), sum(x.n for x in sentences)

    def vocabulary_zone(self, nlp=None):
        """A context for a chunk's Docs (of `nlp`, by default the text pipeline). spaCy keeps
        every word it sees in its vocabulary: over a 1 GB input memory would grow without bound.
        Once the vocabulary holds VOCAB_LIMIT words (the frequent ones, kept for speed: making a
        word's lexeme takes microseconds), the words new in a chunk leave with its Docs (a
        memory zone)."""
        nlp = nlp or self.nlp
        return nlp.memory_zone() if len(nlp.vocab) >= VOCAB_LIMIT else contextlib.nullcontext()

    def conllu(self, sentences) -> tuple[str, int]:
        out, words = [], 0
        options = self.confidence
        k = options.k_best if options is not None else None
        # (gold tags on sentences without any: the pipeline warns, naming the file they come from)
        annotated = self.pipeline.annotate_many(sentences, self.gold_tags, confidence=k)
        for sentence, parsed in zip(sentences, annotated):
            heads, deprels, tags = parsed.heads, parsed.deprels, parsed.columns
            words += sentence.n
            if self.fmt == "conllu":
                if options is None:
                    out.append(format_sentence(sentence, heads, deprels, tags, stale_misc=self.stale_misc))
                    continue
                low = low_words(parsed.confidences, options.min_prob)
                items = confidence_misc(parsed.confidences, sentence.n, options, low)
                tags = dict(tags)
                if "misc" in tags:
                    items = ["|".join(i for i in pair if i) for pair in zip(tags["misc"], items)]
                tags["misc"] = items
                out.append(format_sentence(sentence, heads, deprels, tags, low if options.drop_low else None,
                                           self.stale_misc))
            else:
                with self.vocabulary_zone():
                    doc = sentence_doc(self.nlp.vocab, sentence, heads, deprels, tags)
                    if options is not None:
                        set_confidences(doc, parsed.confidences, options.k_best)
                    out.append(self.render(doc))
        return "".join(out), words

    def render(self, doc, paragraph: int | None = None, newdoc: str | None = None,
               line: tuple[int, int] | None = None, source: tuple | None = None, piece: int = 0,
               glued: bool = False) -> str:
        if self.fmt == "conllu":
            if self.confidence is None:
                return doc_conllu(doc, paragraph, newdoc, line=line, source=source, piece=piece, glued=glued)
            return doc_conllu(doc, paragraph, newdoc, self.confidence, self.columns, line=line, source=source,
                              piece=piece, glued=glued)
        if self.fmt == "json":
            return json.dumps(doc_json(doc, self.columns, self.confidence), ensure_ascii=False) + "\n"
        from spacy import displacy

        sentences = [s for s in doc.sents if not all(t.is_space for t in s)]
        if not sentences:
            return ""
        return displacy.render(sentences, style="dep", page=False, jupyter=False) + "\n"


_ANNOTATOR: Annotator | None = None  # the worker's (inherited from the parent when forked)

# Parsing allocates millions of short-lived objects (strings, lists, small arrays) that
# reference counting frees; at Python's default threshold (700) the cyclic collector runs
# every few sentences and rescans the young objects, about 5% of a raw-text run's time.
# A batch run raises the threshold and freezes what exists (the loaded model: the
# collector then never scans it again); cycles are still collected.
GC_THRESHOLD = 50_000


@contextlib.contextmanager
def batch_gc():
    """The cyclic collector tuned for a batch run (GC_THRESHOLD), restored afterwards. The
    setting is the process's: a program that froze objects itself keeps them frozen (this
    then freezes nothing), and concurrent runs in threads share one setting. On Python 3.12
    the collector itself moves immortal objects into the frozen generation, so the count is
    not 0 once it has run, and only the threshold changes."""
    saved = gc.get_threshold()
    freezing = gc.get_freeze_count() == 0
    if freezing:
        gc.freeze()
    gc.set_threshold(max(GC_THRESHOLD, saved[0]), *saved[1:])
    try:
        yield
    finally:
        gc.set_threshold(*saved)
        if freezing:
            gc.unfreeze()


def _init_worker(pipeline_path, fmt, lang, gold_tags, confidence=None, trees=True, ranges=False) -> None:
    global _ANNOTATOR
    # Ctrl-C reaches the whole process group: the parent stops the pool (parse_files'
    # `finally`), and a worker's own KeyboardInterrupt would only print a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if _ANNOTATOR is None:  # started by spawn: load the model here
        from .model import load

        _ANNOTATOR = Annotator(load(pipeline_path), fmt, lang, gold_tags, confidence, trees, ranges)
    gc.freeze()  # for the worker's life (see batch_gc)
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])


def _work(payload, name):
    return _ANNOTATOR(payload, name)


def _quiet_worker(target, *args, **kwargs):
    """Run a pool worker's loop; when the parent is gone, exit without a traceback.

    A killed parent (SIGKILL, OOM killer) closes its end of the result pipe: the next
    result a worker sends raises BrokenPipeError (and the pool's attempt to send that
    error back raises it again), which multiprocessing prints as two tracebacks per
    worker. Only the parent reads that pipe, so a broken pipe means it is gone and
    nobody is left to read a result or a traceback: the worker just ends. (A worker
    waiting for a task gets EOFError instead, and the pool already ends quietly.)"""
    try:
        target(*args, **kwargs)
    except (BrokenPipeError, ConnectionResetError, EOFError):
        pass


class WorkerLost(RuntimeError):
    """A worker process of `arborist parse -n N` died during the run (the kernel's
    out-of-memory killer, a signal): the chunk it held is lost, so the run stops."""

    def __init__(self, exitcode: int):
        if exitcode < 0:
            try:
                how = f"killed by {signal.Signals(-exitcode).name}"
            except ValueError:  # a real-time signal has no name
                how = f"killed by signal {-exitcode}"
        else:
            how = f"exit status {exitcode}"
        hint = " (out of memory?)" if exitcode == -signal.SIGKILL else ""
        super().__init__(f"a worker process died during the run, {how}{hint}: the run stopped. Files already "
                         "written to the output directory are complete, and a new run skips them")


class _WorkerPool(multiprocessing.pool.Pool):
    """A Pool whose workers run `_quiet_worker` around the pool's own worker loop, and which
    notices a worker that dies: Pool replaces it but never gives back the chunk it held, so
    the run would wait for that chunk for ever (`check_workers`)."""

    def __init__(self, processes=None, initializer=None, initargs=(), context=None):
        # no maxtasksperchild: a worker that exits has died (`dead_worker`)
        self._created: list = []  # every worker of the pool, replacements too (`Process`)
        super().__init__(processes, initializer, initargs, context=context)

    def dead_worker(self) -> int | None:
        """The exit code of a worker of this pool that has exited, or None. The pool replaces
        a dead worker at once, but every worker it ever made is remembered (`Process`)."""
        for p in self._created:
            if p.exitcode is not None:
                return p.exitcode
        return None

    def check_workers(self) -> None:
        """Raise WorkerLost if a worker has died (`dead_worker`)."""
        code = self.dead_worker()
        if code is not None:
            raise WorkerLost(code)

    def abandon(self) -> None:
        """Stop the pool of a run that ends early (Ctrl-C, `| head`, an error, a dead worker)
        without waiting on its threads: kill the workers, and leave the handler threads
        (daemons) behind. terminate() joins them, and a worker killed while writing a result
        (terminate() kills busy workers) leaves the result handler waiting for ever for the
        rest of that message: a scratch run that killed workers mid-result hung in
        terminate() 4 times of 5."""
        self._terminate.cancel()  # the pool's finalizer would call terminate() at exit
        self._state = multiprocessing.pool.TERMINATE
        self._worker_handler._state = multiprocessing.pool.TERMINATE  # no new workers
        self._change_notifier.put(None)
        self._worker_handler.join()
        for p in self._pool:
            if p.exitcode is None:
                p.kill()
        for p in self._pool:
            p.join()
        # No process but this one holds the pipes' other ends now: closing ours ends the
        # handler threads (a write to the task pipe fails, the result pipe reads EOF), so a
        # long-lived program does not keep them and their descriptors.
        self._inqueue._reader.close()
        self._outqueue._writer.close()

    def Process(self, ctx, *args, **kwds):
        # A method, not Pool's staticmethod: `self.Process` is what the pool makes its workers
        # with, at the start and as replacements, and each is remembered for `dead_worker`.
        if "target" in kwds:
            kwds["target"] = functools.partial(_quiet_worker, kwds["target"])
        process = ctx.Process(*args, **kwds)
        self._created.append(process)
        return process

    @staticmethod
    def _help_stuff_finish(inqueue, task_handler, size):
        # terminate() with tasks in flight (a run stopped early: Ctrl-C, `| head`). Pool's own
        # version takes the task pipe's read lock, reads what is in the pipe at that moment
        # and stops: a task handler that is then writing a chunk larger than the pipe's buffer
        # (a CoNLL-U chunk of CHUNK_SENTENCES sentences is) blocks for ever, the workers cannot
        # read, and terminate() hangs joining it (seen in 6 of 8 runs of `arborist parse ...
        # -n 2 | head`). So read until the task handler has gone: it stops at its next task,
        # the pool being terminated, once its current write completes (its sentinels are
        # read here too).
        inqueue._rlock.acquire()
        while task_handler.is_alive():
            if inqueue._reader.poll(0.01):
                inqueue._reader.recv_bytes()


class _Done:
    """A chunk done in this process (n_process = 1), with the interface of AsyncResult:
    get() returns the result or raises the chunk's exception."""

    def __init__(self, payload, name):
        try:
            self.value, self.error = _work(payload, name), None
        except Exception as e:  # reported for its file by the caller, as a worker's would be
            self.value, self.error = None, e

    def get(self):
        if self.error is not None:
            raise self.error
        return self.value


def _output(job: Job, fmt: str, lang: str):
    return _Output(job, fmt, lang) if job.target is not None else _StandardOutput(job, fmt, lang)


def _html_head(job: Job, lang: str) -> str:
    """The opening of a job's html page, titled with the input's name ("stdin" for standard input)."""
    from html import escape

    return HTML_HEAD.format(lang=escape(lang), title=escape(location_name(job.source) or "stdin"))


class OutputEnd:
    """The end of an output written so far: its last characters and its last line ending, for
    what CoNLL-U output lacks to end with a blank line (`blank_line`)."""

    def __init__(self):
        self.tail, self.eol = "", "\n"

    def add(self, text: str) -> None:
        at = text.rfind("\n")
        if at >= 0:
            self.eol = "\r\n" if (text[at - 1] if at > 0 else self.tail[-1:]) == "\r" else "\n"
        self.tail = (self.tail + text)[-4:]

    def blank_line(self) -> str:
        """What the output lacks to end with a blank line, as every CoNLL-U sentence must (a
        CoNLL-U input without its final one), in its own line ending ("\r\n" after CRLF lines,
        an unterminated last line too)."""
        if not self.tail:
            return ""
        if not self.tail.endswith("\n"):  # an unterminated last line
            return self.eol + self.eol
        return "" if self.tail[:-len(self.eol)].endswith("\n") else self.eol


class _Output:
    """A job's temporary output file, renamed into place when complete."""

    def __init__(self, job: Job, fmt: str, lang: str):
        self.job, self.fmt = job, fmt
        job.target.parent.mkdir(parents=True, exist_ok=True)
        for tmp in job.target.parent.glob(f".{job.target.name}.tmp*"):
            if _stale(tmp):  # a killed run's; never a file another run is writing now
                tmp.unlink(missing_ok=True)
        self.tmp = job.target.with_name(f".{job.target.name}.tmp{os.getpid()}")
        self.file = open(self.tmp, "w", encoding="utf-8", newline="")
        self.end = OutputEnd()
        if fmt == "html":
            self.file.write(_html_head(job, lang))

    def write(self, text: str) -> None:
        self.file.write(text)
        self.end.add(text)

    def commit(self) -> None:
        if self.fmt == "html":
            self.file.write(HTML_TAIL)
        elif self.fmt == "conllu":
            self.file.write(self.end.blank_line())
        try:
            self.file.close()
            os.replace(self.tmp, self.job.target)
        except OSError as e:  # (a directory of the target's name): no temporary file left behind,
            self.tmp.unlink(missing_ok=True)  # and the error names the target
            raise OSError(e.errno, e.strerror, str(self.job.target)) from None

    def discard(self) -> None:
        self.file.close()
        self.tmp.unlink(missing_ok=True)


class _StandardOutput:
    """A job's output on standard output: each chunk written (UTF-8 bytes, as a file's) and
    flushed as it comes, so a reader downstream gets it at once; what was written stays."""

    def __init__(self, job: Job, fmt: str, lang: str):
        if sys.stdout is None:  # started with it closed (`>&-`)
            raise OSError(errno.EBADF, "closed")
        self.fmt, self.stream, self.end = fmt, sys.stdout.buffer, OutputEnd()
        if fmt == "html":
            self.write(_html_head(job, lang))

    def write(self, text: str) -> None:
        self.stream.write(text.encode("utf-8"))
        self.stream.flush()
        self.end.add(text)

    def commit(self) -> None:
        if self.fmt == "html":
            self.write(HTML_TAIL)
        elif self.fmt == "conllu":
            # a CoNLL-U input without its final blank line: the next document must not run
            # into its last sentence
            self.write(self.end.blank_line())

    def discard(self) -> None:
        pass


def parse_files(pipeline: Pipeline, jobs: list[Job], fmt: str = "conllu", *, model_path=None,
                lang: str | None = None, gold_tags: bool = False, n_process: int = 1, overwrite: bool = False,
                progress: bool = True, confidence: ConfidenceOptions | None = None,
                annotator: "Annotator | None" = None, trees: bool = True, ranges: bool = False,
                quiet: bool = False) -> Report:
    """Parse every job's file into its target; see the module docstring. `annotator`: one
    built before (for this pipeline, format and language), reused across calls. `trees=False`:
    no parser or labeler (`--no-parse`). `ranges`: each token of text (not of CoNLL-U or
    pre-tokenized input) gets UDPipe's `TokenRange=START:END` in MISC, its character offsets in
    the input (`--ranges`). `quiet`: no progress and no line per file on standard error (the
    report still has what failed)."""
    from rich.console import Console

    console = Console(stderr=True, quiet=quiet)
    report = Report()
    todo = []
    for job in jobs:
        if job.target is not None and job.target.exists() and not overwrite:
            report.skipped.append(job.source)
            _log(console, f"{job.source}: skipped, {job.target} exists (--overwrite to parse it again)")
            continue
        try:
            job.size = job.size or location_size(job.source)
        except OSError as e:
            report.failed.append((job.source, f"{job.source}: {e.strerror or e}"))
            _log(console, f"error: {job.source}: {e.strerror or e} (skipped)")
            continue
        todo.append(job)
    if not todo:
        return report
    language = lang or pipeline.lang
    global _ANNOTATOR
    _ANNOTATOR = annotator or Annotator(pipeline, fmt, language, gold_tags, confidence, trees, ranges)
    pool = None
    if n_process > 1:
        # Fork where there is fork: the workers share the parent's model pages instead of
        # reading their own copy. The pool starts before the progress bar's thread.
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
        context = multiprocessing.get_context(method)
        pool = _WorkerPool(n_process, _init_worker, (str(model_path), fmt, language, gold_tags, confidence, trees,
                                                     ranges),
                           context=context)
    window = WINDOW * n_process if pool is not None else 0  # in this process: write each chunk when done
    start = time.perf_counter()
    total = None if any(j.source is STDIN for j in todo) else sum(j.size for j in todo)  # None: unknown
    bar = _Progress(console, total, progress)
    finished = False
    try:
        with batch_gc():
            _run(todo, fmt, language, pool, window, report, bar)
        finished = True
    finally:
        bar.close()
        if pool is not None:
            # terminate() once every result is in, so that no worker is writing one, and unless a
            # worker died: an idle one dies holding the task pipe's read lock, which terminate()
            # waits for (abandon() leaves the pool's threads behind: kept for early ends).
            if finished and pool.dead_worker() is None:
                pool.terminate()
                pool.join()
            else:
                pool.abandon()
        _ANNOTATOR = None
    report.seconds = time.perf_counter() - start
    return report


def _run(jobs, fmt, lang, pool, window, report, bar) -> None:
    def items():
        """(job, payload, input bytes) per chunk; then (job, None, 0) at the end of the job,
        after (job, message, 0) when its file could not be read."""
        paragraphs = 0  # of the text inputs before, on standard output
        for job in jobs:
            if job.target is None and not job.conllu:
                # one stream, one numbering: the sentence ids `P.S` stay unique in it
                job = dataclasses.replace(job, paragraph=paragraphs, newdoc_paragraph=paragraphs + 1)
            try:
                for payload, nbytes in chunks(job):
                    if job.target is None and payload[0] in ("text", "lines"):
                        paragraphs = payload[1][-1][0]
                    elif job.target is None and job.pretokenized:  # sentences, numbered as paragraphs are
                        paragraphs += len(payload[1])
                    yield job, payload, nbytes
            except (InputError, CorpusError) as e:
                yield job, str(e), 0
            except OSError as e:
                yield job, f"{job.source}: {e.strerror or e}", 0
            yield job, None, 0

    inflight: deque = deque()
    outputs: dict[Path, _Output] = {}
    failed: set[Path] = set()

    def settle(job, result, nbytes) -> None:
        """Handle the oldest item: a chunk's result, a read error (str) or the end of a job (None)."""
        if job.source in failed:
            if result is None:
                failed.discard(job.source)
            return
        if isinstance(result, str) or result is None:
            output = outputs.pop(job.source, None)
            if result is None and output is None:  # an empty input still gets its (empty) output
                output = _output(job, fmt, lang)
            if isinstance(result, str):
                if output is not None:
                    output.discard()
                report.failed.append((job.source, result))
                failed.add(job.source)
                bar.log(f"error: {result} (skipped)")
            else:
                output.commit()
                report.written.append(job.source)
                bar.log(f"{job.source} -> {job.target or 'standard output'}")
            bar.finish_file(job)
            return
        if pool is not None:
            while not result.ready():  # a worker that dies never answers: stop the run (WorkerLost)
                result.wait(1.0)
                pool.check_workers()
        try:
            text, words = result.get()
        except Exception as e:  # a worker failed on this chunk: report the file, go on with the rest
            output = outputs.pop(job.source, None)
            if output is not None:
                output.discard()
            message = f"{job.source}: {type(e).__name__}: {e}"
            report.failed.append((job.source, message))
            failed.add(job.source)
            bar.log(f"error: {message} (skipped)")
            bar.finish_file(job)
            return
        output = outputs.get(job.source)
        if output is None:
            output = outputs[job.source] = _output(job, fmt, lang)
        output.write(text)
        report.words += words
        bar.advance(job, nbytes, words)

    try:
        for job, payload, nbytes in items():
            if isinstance(payload, tuple):
                name = location_name(job.source)
                result = pool.apply_async(_work, (payload, name)) if pool is not None else _Done(payload, name)
            else:
                result = payload
            inflight.append((job, result, nbytes))
            # Waiting on standard input: write what is done before the read blocks.
            while len(inflight) > (0 if job.source is STDIN and stdin_idle() else window):
                settle(*inflight.popleft())
        while inflight:
            settle(*inflight.popleft())
    finally:
        for output in outputs.values():  # interrupted: no half file under a final name
            output.discard()


class _Progress:
    """A rich progress bar over input bytes, with words/s and the time left."""

    def __init__(self, console, total: int | None, enabled: bool):
        from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

        self.console = console
        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
            TextColumn("{task.fields[speed]} words/s"), TimeRemainingColumn(),
            console=self.console, disable=not enabled, transient=False,
        )
        self.progress.start()
        self.task = self.progress.add_task("parsing", total=None if total is None else max(total, 1), speed="-")
        self.words = 0
        self.done: dict[Path, int] = {}
        self.start = time.perf_counter()

    def advance(self, job: Job, nbytes: int, words: int) -> None:
        self.words += words
        self.done[job.source] = self.done.get(job.source, 0) + nbytes
        elapsed = time.perf_counter() - self.start
        self.progress.update(self.task, advance=nbytes, description=location_name(job.source),
                             speed=f"{self.words / elapsed:,.0f}" if elapsed > 0 else "-")

    def finish_file(self, job: Job) -> None:
        """Count the rest of the file (what was not parsed, or read as characters, not bytes)."""
        rest = job.size - self.done.pop(job.source, 0)
        if rest > 0:
            self.progress.update(self.task, advance=rest)

    def log(self, message: str) -> None:
        _log(self.console, message)

    def close(self) -> None:
        self.progress.stop()


def location_size(source: Path | str | StandardInput) -> int:
    """The size of a file: a path, or a URL (a str) fsspec reaches (`distributed` passes those);
    0 for standard input (unknown)."""
    if source is STDIN:
        return 0
    if isinstance(source, str):
        import fsspec

        fs, path = fsspec.core.url_to_fs(source)
        return int(fs.size(path))
    return source.stat().st_size


def location_name(source: Path | str | StandardInput) -> str:
    """A file's name, of a path or a URL (a str); an input's is its document id in CoNLL-U
    output (`# newdoc id`). Standard input's is empty."""
    return source.rsplit("/", 1)[-1] if isinstance(source, str) else source.name


def _stale(tmp: Path) -> bool:
    """Whether a temporary output's writer (the process id after '.tmp') is gone."""
    pid = tmp.name.rpartition(".tmp")[2]
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def _log(console, message: str) -> None:
    console.print(message, markup=False, highlight=False, soft_wrap=True)
