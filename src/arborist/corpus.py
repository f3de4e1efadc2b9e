"""CoNLL-U <-> Sentence.

Reading streams a file sentence by sentence. Fields are parsed by the `conllu`
package; this module adds what it does not do: line numbers in every error,
validation of the tree, and byte-exact writing (only HEAD and DEPREL of
predicted sentences change; every other byte is written as it was read).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import conllu.parser
from .sentence import Sentence

N_COLUMNS = 10
HEAD_COL, DEPREL_COL = 6, 7
TAG_COLS = {"lemma": 2, "upos": 3, "xpos": 4, "feats": 5}  # predicted token columns: CoNLL-U column index
MISC_COL = 9


class CorpusError(ValueError):
    """Malformed input; the message starts with 'file:line:'."""

    def __init__(self, path, line: int, message: str):
        self.path, self.line = str(path), line
        super().__init__(f"{path}:{line}: {message}")


def read_conllu(path: str | os.PathLike, require_heads: bool = False) -> Iterator[Sentence]:
    """Yield the sentences of a CoNLL-U file one at a time.

    With `require_heads`, every word must have an integer HEAD (training and
    gold data); otherwise HEAD may be '_' for all words of a sentence (input to
    be parsed).
    """
    block: list[str] = []
    first, has_content, after_blank = 1, False, False
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            blank = raw.strip() == b""
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
    if has_content:
        yield _parse_block(block, path, first, require_heads)


def read_corpus(path, require_heads: bool = True) -> list[Sentence]:
    return list(read_conllu(path, require_heads=require_heads))


def _parse_block(lines: list[str], path, first: int, require_heads: bool) -> Sentence:
    forms, lemmas, upos, xpos, feats, heads, deprels, word_lines = [], [], [], [], [], [], [], []
    head_lines: list[int] = []
    for offset, line in enumerate(lines):
        text = line.rstrip("\r\n")
        number = first + offset
        if not text.strip() or text.startswith("#"):
            continue
        columns = text.split("\t")
        if len(columns) != N_COLUMNS:
            raise CorpusError(path, number, f"expected {N_COLUMNS} tab-separated columns, found {len(columns)}")
        try:
            token = conllu.parser.parse_line(text, conllu.parser.DEFAULT_FIELDS)
        except conllu.parser.ParseException as e:
            raise CorpusError(path, number, str(e)) from None
        token_id = token["id"]
        if not isinstance(token_id, int):
            if token_id is None:
                raise CorpusError(path, number, f"invalid ID {columns[0]!r}")
            continue  # multiword token (3-4) or empty node (5.1): kept in `lines`, not a word
        if token_id != len(forms) + 1:
            raise CorpusError(path, number, f"word ID {token_id} out of sequence (expected {len(forms) + 1})")
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
    if not forms:
        raise CorpusError(path, first, "empty sentence: no word lines")
    n = len(forms)
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


def _check_tree(heads: Sequence[int], head_lines: Sequence[int], path, first: int) -> None:
    n = len(heads)
    for m, h in enumerate(heads, start=1):
        if not 0 <= h <= n:
            raise CorpusError(path, head_lines[m - 1], f"HEAD {h} out of range 0..{n}")
        if h == m:
            raise CorpusError(path, head_lines[m - 1], f"word {m} is its own head")
    if 0 not in heads:
        raise CorpusError(path, first, "no root: no word has HEAD 0")
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
                    unattached=None) -> str:
    """The sentence's lines as read, with HEAD, DEPREL and token columns replaced where given
    (tags: {"upos": [...], "lemma": [...], ...}, one value per word, without the root; a
    "misc" value is a Key=Value item, or several joined by '|', merged into the word's MISC,
    replacing its own items of the same keys). `unattached`: the words (1-based) whose HEAD
    and DEPREL are written '_' (arcs left out, `arborist parse --min-prob --drop-low`)."""
    unattached = set(unattached) if unattached is not None else set()
    if heads is None and deprels is None and not tags and not unattached:
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

