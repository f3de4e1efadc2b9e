"""CoNLL-U <-> Sentence.

Reading streams a file sentence by sentence. Fields are parsed by the `conllu`
package; this module adds what it does not do: line numbers in every error,
validation of the tree, and byte-exact writing (only HEAD and DEPREL of
predicted sentences change; every other byte is written as it was read).

What is invalid follows the UD validator's level-1 (format) rules and, where heads
are given, its tree rules: ten columns, none empty; no control characters; no
leading, trailing or doubled whitespace, and whitespace only in FORM, LEMMA and
MISC; words numbered 1..n; a multiword token range (3-4) spans two or more words,
stands just before its first word, ends within the sentence and overlaps no other;
an empty node i.k follows word i (and i.k-1); one root, no cycle. A byte-order mark
at the start of the file is accepted (and written back).
"""
from __future__ import annotations

import codecs
import contextlib
import errno
import os
import re
import sys
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import conllu.parser
from .sentence import Sentence

N_COLUMNS = 10
HEAD_COL, DEPREL_COL = 6, 7
TAG_COLS = {"lemma": 2, "upos": 3, "xpos": 4, "feats": 5}  # predicted token columns: CoNLL-U column index
MISC_COL = 9
COLUMN_NAMES = ("ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL", "DEPS", "MISC")
SPACED_COLS = (1, 2, 9)  # FORM, LEMMA, MISC: UD allows single spaces inside these (e.g. "New York")
BOM = "\ufeff"
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_DOUBLE_SPACE = re.compile(r"\s\s")


class CorpusError(ValueError):
    """Malformed input; the message starts with 'file:line:'."""

    def __init__(self, path, line: int, message: str):
        self.path, self.line = str(path), line
        super().__init__(f"{path}:{line}: {message}")


class StandardInput:
    """The process's standard input as an input location (`-` on the command line). Its
    name in messages is `<stdin>`; it has no file name (`name` is empty), so no document id."""

    name = ""

    def __str__(self) -> str:
        return "<stdin>"

    __repr__ = __str__


STDIN = StandardInput()


def open_input(path: str | os.PathLike | StandardInput):
    """A binary file object for a local path, a URL that fsspec reaches (s3://, gs://,
    hdfs://, http://, file://...; the filesystem's own package must be installed), or
    standard input (`STDIN`; left open when the caller's `with` ends)."""
    if path is STDIN:
        if sys.stdin is None:  # started with it closed (`<&-`)
            raise OSError(errno.EBADF, "standard input is closed")
        return contextlib.nullcontext(sys.stdin.buffer)
    if isinstance(path, str) and "://" in path:
        import fsspec

        return fsspec.open(path, "rb").open()
    return open(path, "rb")


def read_conllu(path: str | os.PathLike, require_heads: bool = False, *, start: int = 0, end: int | None = None,
                first_line: int = 1, idle: Callable[[], bool] | None = None) -> Iterator[Sentence]:
    """Yield the sentences of a CoNLL-U file (a path or a URL) one at a time.

    With `require_heads`, every word must have an integer HEAD (training and
    gold data); otherwise HEAD may be '_' for all words of a sentence (input to
    be parsed). `start`, `end` and `first_line` read one shard of the file: the
    bytes [start, end), which begin at a sentence's first line, line `first_line`
    (`conllu_boundaries` finds such places).

    A sentence is its lines up to and including the blank lines after it, so it is
    yielded when the next one starts. `idle` (standard input: `batch.stdin_idle`) says
    whether nothing more is waiting: then a sentence is yielded at its first blank line,
    without waiting for the next (a writer that waits for the parse of what it wrote
    would wait for ever); blank lines that come after it lead the next sentence, and
    those that end the input are dropped.
    """
    block: list[str] = []
    first, has_content, after_blank = first_line, False, False
    with open_input(path) as f:
        if start:
            f.seek(start)
        for number, raw in enumerate(_lines_until(f, start, end), start=first_line):
            # A byte-order mark opening the file is not content (it stays in the line,
            # so the file is written back as it was; _parse_block skips it).
            content = raw[len(codecs.BOM_UTF8):] if number == 1 and raw.startswith(codecs.BOM_UTF8) else raw
            blank = content.strip() == b""
            if not blank and after_blank:
                # A sentence is its lines up to and including the blank lines after it.
                yield _parse_block(block, path, first, require_heads)
                block, first, has_content, after_blank = [], number, False, False
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise CorpusError(path, number, f"invalid UTF-8 ({e.reason} at byte {e.start})") from None
            block.append(line)
            has_content = has_content or not blank
            after_blank = has_content and blank
            if after_blank and idle is not None and idle():
                yield _parse_block(block, path, first, require_heads)
                block, first, has_content, after_blank = [], number + 1, False, False
    if has_content:
        yield _parse_block(block, path, first, require_heads)


def _lines_until(f, position: int, end: int | None) -> Iterator[bytes]:
    """The lines of a binary file from `position` up to byte `end` (a line start), or all."""
    for raw in f:
        if end is not None and position >= end:
            return
        position += len(raw)
        yield raw


def conllu_boundaries(path: str | os.PathLike) -> Iterator[tuple[int, int]]:
    """(byte offset, line number) of every place a CoNLL-U file can be cut between two
    sentences: the first line of each sentence after the first, as `read_conllu`
    divides them (a sentence is its lines up to and including the blank lines after it)."""
    position, has_content, after_blank = 0, False, False
    with open_input(path) as f:
        for number, raw in enumerate(f, start=1):
            content = raw[len(codecs.BOM_UTF8):] if number == 1 and raw.startswith(codecs.BOM_UTF8) else raw
            blank = content.strip() == b""
            if not blank and after_blank:
                yield position, number
                has_content = False
            has_content = has_content or not blank
            after_blank = has_content and blank
            position += len(raw)


def read_corpus(path, require_heads: bool = True) -> list[Sentence]:
    return list(read_conllu(path, require_heads=require_heads))


def _parse_block(lines: list[str], path, first: int, require_heads: bool) -> Sentence:
    forms, lemmas, upos, xpos, feats, heads, deprels, word_lines = [], [], [], [], [], [], [], []
    head_lines: list[int] = []
    ranges: list[tuple[int, int, int]] = []  # (start, end, line) of each multiword token
    covered = 0  # the last word of the latest multiword token
    empty_nodes = 0  # empty nodes since the last word
    for offset, line in enumerate(lines):
        text = line.rstrip("\r\n")
        number = first + offset
        if number == 1 and text.startswith(BOM):
            text = text[1:]  # the file's byte-order mark (kept in `lines`)
        if not text.strip() or text.startswith("#"):
            continue
        columns = text.split("\t")
        if len(columns) != N_COLUMNS:
            _check_bom(text, path, number)
            raise CorpusError(path, number, f"expected {N_COLUMNS} tab-separated columns, found {len(columns)}")
        if _needs_check(text):
            _check_columns(text, columns, path, number)
        try:
            token = conllu.parser.parse_line(text, conllu.parser.DEFAULT_FIELDS)
        except conllu.parser.ParseException as e:
            _check_bom(text, path, number)
            raise CorpusError(path, number, str(e)) from None
        token_id = token["id"]
        if not isinstance(token_id, int):
            # A multiword token (3-4) or an empty node (5.1): kept in `lines`, not a word.
            if token_id is None:
                raise CorpusError(path, number, f"invalid ID {columns[0]!r}")
            start, kind, end = token_id
            if kind == "-":
                if end <= start:
                    raise CorpusError(path, number, f"multiword token {columns[0]} does not span two or more words")
                if start <= covered:
                    previous = ranges[-1]
                    raise CorpusError(path, number, f"multiword token {columns[0]} overlaps "
                                                    f"{previous[0]}-{previous[1]} (line {previous[2]})")
                if start != len(forms) + 1:
                    raise CorpusError(path, number, f"multiword token {columns[0]} is not just before its first "
                                                    f"word (the next word is {len(forms) + 1})")
                ranges.append((start, end, number))
                covered = end
            else:
                expected = f"{len(forms)}.{empty_nodes + 1}"
                if start != len(forms) or end != empty_nodes + 1:
                    raise CorpusError(path, number, f"empty node {columns[0]} out of place (expected {expected} "
                                                    f"here: empty node i.k follows word i)")
                empty_nodes += 1
            continue
        if token_id != len(forms) + 1:
            raise CorpusError(path, number, f"word ID {token_id} out of sequence (expected {len(forms) + 1})")
        empty_nodes = 0
        head = columns[HEAD_COL]
        if head == "_":
            heads.append(-1)
        else:
            try:
                heads.append(int(head))
            except ValueError:
                raise CorpusError(path, number, f"HEAD {head!r} is not an integer") from None
            if heads[-1] < 0:
                raise CorpusError(path, number, f"HEAD {heads[-1]} out of range (a head is 0..n)")
        forms.append(columns[1])
        lemmas.append(columns[2])
        upos.append(columns[3])
        xpos.append(columns[4])
        feats.append(columns[5])
        deprels.append(columns[DEPREL_COL])
        word_lines.append(offset)
        head_lines.append(number)
    if not forms:  # (named by its first line that is not blank: a comment)
        at = next((first + k for k, line in enumerate(lines) if line.lstrip(BOM).strip()), first)
        raise CorpusError(path, at, "empty sentence: no word lines")
    n = len(forms)
    for start, end, number in ranges:
        if end > n:
            raise CorpusError(path, number, f"multiword token {start}-{end} goes past the sentence's last word ({n})")
    known = [h >= 0 for h in heads]
    if any(known) and not all(known) or (require_heads and not all(known)):
        missing = known.index(False)
        raise CorpusError(path, head_lines[missing], "HEAD is '_' (every word of a sentence needs a head)")
    if all(known):
        _check_tree(heads, head_lines, path, first)
    return Sentence.from_columns(
        forms, lemmas, upos, xpos, feats, heads if all(known) else None, deprels,
        lines=list(lines), word_lines=word_lines, source=str(path), first_line=first,
    )


def _check_bom(text: str, path, number: int) -> None:
    """A line that failed to parse because a byte-order mark opens it (not the file's
    first line: files concatenated) gets an error that says so."""
    if text.startswith(BOM):
        raise CorpusError(path, number, "byte-order mark (U+FEFF) inside the file (were files concatenated?)")


def _needs_check(text: str) -> bool:
    """Whether a token line may break a rule of _check_columns: an empty column, or a
    character that is whitespace but TAB, a control character or DEL. Almost no line
    does, so this is the only check most lines get (0.7 us a line, against 1.0 for a
    regex search of the same characters). str.isprintable is false for every control
    and every whitespace character but the ASCII space (tests/test_malformed_conllu.py
    checks it over all of Unicode); it is also false for characters that are fine
    (a soft hyphen), which _check_columns then accepts."""
    return (" " in text or "\t\t" in text or text[0] == "\t" or text[-1] == "\t"
            or not text.replace("\t", "x").isprintable())


def _check_columns(text: str, columns: list[str], path, number: int) -> None:
    """UD's rules for the characters of a token line (the lines _needs_check picks)."""
    if "" in columns:
        name = COLUMN_NAMES[columns.index("")]
        raise CorpusError(path, number, f"empty {name} column (UD writes '_' for no value)")
    control = _CONTROL.search(text)
    if control:
        name = COLUMN_NAMES[text.count("\t", 0, control.start())]
        raise CorpusError(path, number, f"control character U+{ord(control.group()):04X} in the {name} column")
    for i, value in enumerate(columns):
        if value[0].isspace() or value[-1].isspace():
            raise CorpusError(path, number, f"leading or trailing whitespace in the {COLUMN_NAMES[i]} column {value!r}")
        if i in SPACED_COLS:
            if _DOUBLE_SPACE.search(value):
                raise CorpusError(path, number, f"two whitespace characters in a row in the {COLUMN_NAMES[i]} column "
                                                f"{value!r}")
        elif any(c.isspace() for c in value):
            raise CorpusError(path, number, f"whitespace in the {COLUMN_NAMES[i]} column {value!r} (UD allows it only "
                                            f"in FORM, LEMMA and MISC)")


def _check_tree(heads: Sequence[int], head_lines: Sequence[int], path, first: int) -> None:
    n = len(heads)
    for m, h in enumerate(heads, start=1):
        if not 0 <= h <= n:
            raise CorpusError(path, head_lines[m - 1], f"HEAD {h} out of range 0..{n}")
        if h == m:
            raise CorpusError(path, head_lines[m - 1], f"word {m} is its own head")
    if 0 not in heads:
        raise CorpusError(path, first, "no root: no word has HEAD 0")
    if heads.count(0) > 1:
        # UD's tree rule: one word attaches to the root. Checked only where heads are
        # given (input to parse may have HEAD '_' throughout).
        root = heads.index(0) + 1
        second = heads.index(0, root) + 1
        raise CorpusError(path, head_lines[second - 1],
                          f"second root: words {root} and {second} both have HEAD 0 (a tree has one root)")
    # Every word must reach the root; the first one that does not lies on a cycle.
    state = [0] * (n + 1)  # 0 unseen, 1 on current path, 2 reaches root
    state[0] = 2
    for start in range(1, n + 1):
        path_nodes = []
        node = start
        while state[node] == 0:
            state[node] = 1
            path_nodes.append(node)
            node = heads[node - 1]
        if state[node] == 1:
            cycle = path_nodes[path_nodes.index(node):]
            raise CorpusError(
                path, head_lines[node - 1], f"cycle in heads through words {' -> '.join(map(str, cycle + [node]))}"
            )
        for p in path_nodes:
            state[p] = 2


def format_sentence(sentence: Sentence, heads=None, deprels=None, tags: dict | None = None,
                    unattached=None, stale_misc: frozenset = frozenset()) -> str:
    """The sentence's lines as read, with HEAD, DEPREL and token columns replaced where given
    (tags: {"upos": [...], "lemma": [...], ...}, one value per word, without the root; a
    "misc" value is a Key=Value item, or several joined by '|', merged into the word's MISC,
    replacing its own items of the same keys). `unattached`: the words (1-based) whose HEAD
    and DEPREL are written '_' (arcs left out, `arborist parse --min-prob --drop-low`).
    `stale_misc`: MISC keys whose items are removed from every word (an earlier run's
    probabilities of the columns replaced, `confidence.confidence_keys`)."""
    unattached = set(unattached) if unattached is not None else set()
    if heads is None and deprels is None and not tags and not unattached and not stale_misc:
        return "".join(sentence.lines)
    tags = dict(tags or {})
    misc = tags.pop("misc", None)
    tag_columns = [(TAG_COLS[a], values) for a, values in tags.items()]
    lines = list(sentence.lines)
    for m, offset in enumerate(sentence.word_lines, start=1):
        line = lines[offset]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        columns = body.split("\t")
        if heads is not None:
            columns[HEAD_COL] = str(int(heads[m]))
        if deprels is not None:
            columns[DEPREL_COL] = deprels[m]
        for col, values in tag_columns:
            columns[col] = values[m - 1]
        if stale_misc and "=" in columns[MISC_COL]:
            columns[MISC_COL] = "|".join(i for i in columns[MISC_COL].split("|")
                                         if i.split("=", 1)[0] not in stale_misc) or "_"
        if misc is not None:
            columns[MISC_COL] = merge_misc(columns[MISC_COL], misc[m - 1])
        if m in unattached:
            columns[HEAD_COL] = columns[DEPREL_COL] = "_"
        lines[offset] = "\t".join(columns) + ending
    return "".join(lines)


def merge_misc(field: str, item: str) -> str:
    """A MISC field with `item` (Key=Value) in place of any item of the same key; an item of
    several Key=Value joined by '|' is merged one by one."""
    if "|" in item:
        for part in item.split("|"):
            field = merge_misc(field, part)
        return field
    key = item.split("=", 1)[0]
    items = [i for i in field.split("|") if i and i != "_" and i.split("=", 1)[0] != key]
    if item and item != "_":
        items.append(item)
    return "|".join(items) or "_"


def write_conllu(path: str | os.PathLike, items: Iterable[Sentence | tuple]) -> None:
    """Write sentences atomically; an item is a Sentence or (Sentence, heads[, deprels[, tags]])."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            for item in items:
                if isinstance(item, Sentence):
                    f.write(format_sentence(item))
                else:
                    f.write(format_sentence(*item))
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()

