"""The raw-text signal of a CoNLL-U file: paragraphs of sentences of surface tokens.

`arborist.corpus` keeps words and their annotation; a tokenizer needs what the words
were cut from: each sentence's `# text`, its surface tokens (a multiword token's `N-M`
line, not its words), SpaceAfter=No, and the paragraph marks `# newpar` / `# newdoc`.
This reader keeps exactly that, and every error names file:line.

Paragraphs: a paragraph starts at `# newpar` or `# newdoc` (and at the start of the
file). A treebank without either mark is one paragraph, as `ud_raw_text.py` makes its
raw text (the CoNLL 2018 shared task convention): the tokenizer then has to find every
sentence boundary itself, which is what the training examples (`char_examples`) show it.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field


@dataclass(slots=True)
class GoldToken:
    form: str                     # the surface token (a multiword token's FORM)
    space_after: bool
    words: tuple[str, ...] | None  # the words of a multiword token, else None
    upos: str | None = None        # the UPOS of a one-word token ("_" or None: not annotated)


@dataclass(slots=True)
class GoldSentence:
    text: str                 # `# text`, or the tokens joined by SpaceAfter when absent
    tokens: list[GoldToken]
    source: str
    line: int                 # the line of the sentence's first comment or token
    sent_id: str | None = None
    has_text: bool = True


@dataclass(slots=True)
class GoldParagraph:
    sentences: list[GoldSentence] = field(default_factory=list)
    new_doc: bool = False


def _space_after(misc: str) -> bool:
    if misc == "_":
        return True
    return "SpaceAfter=No" not in misc.split("|")


def read_sentences(path) -> Iterator[tuple[GoldSentence, bool, bool]]:
    """(sentence, starts a new paragraph, starts a new document) for every sentence of the file."""
    with open(path, encoding="utf-8") as f:
        yield from read_lines(f, str(path))


def gold_paragraphs(sentences) -> list[GoldParagraph]:
    """The paragraphs of sentences read by `arborist.corpus` (each keeps its CoNLL-U lines,
    comments included): what a tokenizer component trains and is scored on."""
    paragraphs: list[GoldParagraph] = []
    current = None
    for sentence in sentences:
        for gold, newpar, newdoc in read_lines(sentence.lines, sentence.source, sentence.first_line):
            if current is None or newpar:
                current = GoldParagraph(new_doc=newdoc or current is None)
                paragraphs.append(current)
            current.sentences.append(gold)
    return paragraphs


def read_lines(f, source: str, first_number: int = 1) -> Iterator[tuple[GoldSentence, bool, bool]]:
    """`read_sentences` of an iterable of lines; `first_number` is the first line's number."""
    comments: dict[str, str] = {}
    newpar = newdoc = False
    tokens: list[GoldToken] = []
    first = 0
    mwt_end = 0            # last word id of the multiword token being read
    mwt: GoldToken | None = None
    for number, raw in enumerate(f, first_number):
        line = raw.rstrip("\n").rstrip("\r")
        if not line.strip():
            if tokens:
                yield _sentence(tokens, comments, source, first), newpar, newdoc
            tokens, comments, newpar, newdoc, first, mwt, mwt_end = [], {}, False, False, 0, None, 0
            continue
        if not first:
            first = number
        if line.startswith("#"):
            body = line[1:].strip()
            if body.startswith("newpar"):
                newpar = True
            elif body.startswith("newdoc"):
                newdoc = newpar = True
            elif "=" in body:
                key, value = body.split("=", 1)
                # `# text = ...` keeps its spaces except the one after "=".
                value = value.removeprefix(" ")
                comments.setdefault(key.strip(), value)
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise ValueError(f"{source}:{number}: expected 10 tab-separated columns, got {len(cols)}")
        wid, form, misc = cols[0], cols[1], cols[9]
        if "." in wid:
            continue  # an empty node: no surface text
        if "-" in wid:
            try:
                lo, hi = (int(v) for v in wid.split("-"))
            except ValueError:
                raise ValueError(f"{source}:{number}: bad multiword token id {wid!r}") from None
            if hi < lo:
                raise ValueError(f"{source}:{number}: multiword token range {wid} ends before it starts")
            mwt = GoldToken(form, _space_after(misc), ())
            mwt_end = hi
            tokens.append(mwt)
            continue
        try:
            number_id = int(wid)
        except ValueError:
            raise ValueError(f"{source}:{number}: bad word id {wid!r}") from None
        if mwt is not None and number_id <= mwt_end:
            mwt.words = mwt.words + (form,)
            if number_id == mwt_end:
                mwt = None
            continue
        tokens.append(GoldToken(form, _space_after(misc), None, cols[3]))
    if tokens:
        yield _sentence(tokens, comments, source, first), newpar, newdoc


def _sentence(tokens, comments, source, first) -> GoldSentence:
    text = comments.get("text")
    has_text = text is not None
    if text is None:
        text = "".join(t.form + (" " if t.space_after else "") for t in tokens).rstrip()
    return GoldSentence(text, tokens, source, first, comments.get("sent_id"), has_text)


def read_paragraphs(paths) -> list[GoldParagraph]:
    """The paragraphs of one or more CoNLL-U files (see the module docstring)."""
    if isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__"):
        paths = [paths]
    paragraphs: list[GoldParagraph] = []
    for path in paths:
        current = None
        for sentence, newpar, newdoc in read_sentences(path):
            if current is None or newpar:
                current = GoldParagraph(new_doc=newdoc or current is None)
                paragraphs.append(current)
            current.sentences.append(sentence)
    return paragraphs


def align(sentence: GoldSentence) -> list[tuple[int, int]]:
    """(start, end) character offsets in sentence.text of every token, through FORM and
    whitespace between tokens. Raises ValueError naming file:line when a FORM is not
    where the text says it is."""
    text, spans, pos = sentence.text, [], 0
    for k, token in enumerate(sentence.tokens):
        while pos < len(text) and text[pos].isspace():
            pos += 1
        form = token.form
        if text.startswith(form, pos):
            spans.append((pos, pos + len(form)))
            pos += len(form)
            continue
        # A FORM with spaces the text lacks (or the reverse): match ignoring whitespace.
        squeezed = "".join(form.split())
        end, matched = pos, 0
        while end < len(text) and matched < len(squeezed):
            if not text[end].isspace():
                if text[end] != squeezed[matched]:
                    break
                matched += 1
            end += 1
        if squeezed and matched == len(squeezed):
            spans.append((pos, end))
            pos = end
            continue
        raise ValueError(f"{sentence.source}:{sentence.line}: token {k + 1} {form!r} is not at character {pos} "
                         f"of the sentence text {text[max(0, pos - 10):pos + 20]!r}")
    if text[pos:].strip():
        raise ValueError(f"{sentence.source}:{sentence.line}: the sentence text goes on after its last token: "
                         f"{text[pos:pos + 30]!r}")
    return spans


def paragraph_texts(paragraphs: Iterable[GoldParagraph]) -> list[str]:
    """Each paragraph's text as `ud_raw_text.py` writes it: its sentences' texts joined by a space."""
    return [" ".join(s.text for s in p.sentences) for p in paragraphs]
