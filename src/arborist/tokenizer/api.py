"""The tokenizer the component calls: raw texts -> documents of paragraphs, sentences, tokens, words.

    tok = Tokenizer.train(["en_ewt-ud-train.conllu"])      # or train_tokenizer(...)
    docs = tok.tokenize(["Raw text. Another sentence.\\n\\nA new paragraph."])
    write_conllu(docs, "out.conllu")
    tok.save("dir"); Tokenizer.load("dir")

A text's paragraphs are separated by blank lines (what `ud_raw_text.py` writes). Each
paragraph is tagged by the character chain (`CharacterChain.tag_texts`: bounded windows,
one GIL-free kernel call per group), its tags decoded into tokens and sentences
(`decode_tags`), and every token looked up by the multiword expander.

Saved state (no pickle): `weights.npy` (the averaged weights, float64 2**hash_bits),
`vocab.npy` (the known-token hash table of the features) and `tokenizer.json` (the chain's config, the expander's lexicon and suffix rules, settings).
"""
from __future__ import annotations

import gc
import json
import os
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .chain import (
    BOTH_E,
    BOTH_F,
    DESIGNS,
    B,
    CharacterChain,
    CharExample,
    E,
    F,
    I,
    O,
    S,
    known_tokens,
    make_example,
)
from .chars import CONTROL, OTHER, _tables, code_points
from .corpus import GoldParagraph, align, read_paragraphs
from .features import decode_spans
from .mwt import MultiwordExpander

FORMAT = "arborist-tokenizer/1"
MISSING = object()
PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n\s*")  # a blank line (maybe with spaces) ends a paragraph


@dataclass(slots=True)
class Token:
    form: str
    start: int               # character offsets in the document text
    end: int
    space_after: bool        # whitespace follows the token (or the paragraph ends)
    words: tuple[str, ...] | None = None  # the words of a multiword token, else None

    @property
    def word_forms(self) -> tuple[str, ...]:
        return self.words if self.words is not None else (self.form,)


@dataclass(slots=True)
class Sentence:
    # the document text from the first token's start to the last token's end, with each line
    # break and the whitespace around it one space (`joined_lines`: as `arborist parse` reads it)
    text: str
    start: int
    end: int
    tokens: list[Token]

    @property
    def words(self) -> list[str]:
        return [w for t in self.tokens for w in t.word_forms]


@dataclass(slots=True)
class Paragraph:
    start: int
    end: int
    sentences: list[Sentence] = field(default_factory=list)


@dataclass(slots=True)
class Document:
    text: str
    paragraphs: list[Paragraph] = field(default_factory=list)

    @property
    def sentences(self) -> list[Sentence]:
        return [s for p in self.paragraphs for s in p.sentences]


def check_texts(texts) -> None:
    """A list of texts, not one text: a str was tokenized character by character, each a text."""
    if isinstance(texts, str):
        raise TypeError("tokenize takes a list of texts, not a str (its characters were tokenized as texts): "
                        "give [text]")


def split_paragraphs(text: str) -> list[tuple[int, int]]:
    """(start, end) of the non-blank paragraphs of text (separated by blank lines), trimmed of
    surrounding whitespace."""
    spans, pos = [], 0
    for m in PARAGRAPH_BREAK.finditer(text):
        spans.append((pos, m.start()))
        pos = m.end()
    spans.append((pos, len(text)))
    return _trimmed(text, spans)


def split_lines(text: str, a: int, b: int) -> list[tuple[int, int]]:
    """(start, end) of the non-blank lines of text[a:b] (separated by "\\n"), trimmed of
    surrounding whitespace."""
    spans = []
    for piece in text[a:b].split("\n"):
        spans.append((a, a + len(piece)))
        a += len(piece) + 1
    return _trimmed(text, spans)


def _trimmed(text: str, spans) -> list[tuple[int, int]]:
    """The spans of text without their surrounding whitespace (and byte-order marks: a text read
    from a file with one, which `arborist parse` drops, gave the word U+FEFF), the blank ones
    left out."""
    out = []
    for a, b in spans:
        piece = text[a:b]
        stripped = piece.strip()
        if stripped[:1] == "\ufeff" or stripped[-1:] == "\ufeff":
            stripped = _EDGES.sub("", stripped)
        if stripped:
            lead = piece.find(stripped)  # (it starts with a character the edges do not hold)
            out.append((a + lead, a + lead + len(stripped)))
    return out


_EDGES = re.compile(r"^[\s\ufeff]+|[\s\ufeff]+$")
# A line break inside a paragraph, with the whitespace around it: `arborist parse` reads a
# paragraph's lines stripped and joined by one space, and the chain tags what it reads.
LINE_BREAK = re.compile(r"\s*\n\s*")


def joined_lines(text: str) -> tuple[str, np.ndarray | None]:
    """The text with each line break and the whitespace around it one space, as `arborist parse`
    joins a paragraph's lines, and the offset in `text` of each of its characters and of its
    end (None: no line break, the text itself). Without it, a line ending in a space split the
    sentence there in `Pipeline.tokenize` and spaCy (a review: wrapped en_ewt text, 61
    sentences against the command's 38)."""
    if "\n" not in text:
        return text, None
    pieces, where, at = [], [], 0
    for m in LINE_BREAK.finditer(text):
        pieces += [text[at:m.start()], " "]
        where += [np.arange(at, m.start() + 1)]  # the kept characters, and the run's first as the space
        at = m.end()
    pieces.append(text[at:])
    where += [np.arange(at, len(text) + 1)]
    return "".join(pieces), np.concatenate(where).astype(np.int32 if len(text) < 2**31 else np.int64)


# Each design's tags with their sentence boundaries taken out (`tokenize(presegmented=True)`):
# a sentence tag becomes the token tag it also is, S and F a token's first character, E a later
# one (`chain.DESIGNS`).
_TOKEN_TAG = {"S": "B", "E": "I", "F": "B"}
NO_SENTENCE = {design: np.array([tags.index(_TOKEN_TAG.get(t, t)) for t in tags], dtype=np.int8)
               for design, tags in DESIGNS.items()}


def char_classes(cps: np.ndarray) -> np.ndarray:
    """uint8 class (`chars`) of each code point; characters above the BMP are OTHER."""
    _, cls_table, _ = _tables()
    big = cps >= len(cls_table)
    cls = cls_table[np.where(big, 0, cps)]
    cls[big] = OTHER
    return cls


def decode_tags(cps: np.ndarray, tags: np.ndarray, max_sentence_tokens: int = 0, design: int = 0):
    """Token (start, end) arrays, the sentence-start flag and space-after flag of each token,
    from the character tags of one text (`features.decode_spans`)."""
    cps = np.ascontiguousarray(cps, dtype=np.uint32)
    starts = np.array([0, len(cps)], dtype=np.int64)
    ts, te, sent, after, _ = decode_spans(cps, char_classes(cps), np.ascontiguousarray(tags, dtype=np.int8),
                                          starts, max_sentence_tokens, design)
    return ts, te, sent, after


class Tokenizer:
    def __init__(self, chain: CharacterChain, weights: np.ndarray, expander: MultiwordExpander,
                 max_sentence_tokens: int = 1000, info: dict | None = None):
        weights = np.ascontiguousarray(weights, dtype=np.float64)
        if weights.shape != (1 << chain.hash_bits,):
            raise ValueError(f"weights have shape {weights.shape}, the chain expects ({1 << chain.hash_bits},)")
        self.chain = chain
        self.weights = weights
        self.expander = expander
        self.max_sentence_tokens = int(max_sentence_tokens)
        self.info = dict(info or {})

    # -- training -------------------------------------------------------------
    @classmethod
    def train(cls, paths, **options) -> Tokenizer:
        return train_tokenizer(paths, **options)

    # -- prediction -------------------------------------------------------------
    def tag_paragraphs(self, paragraphs: Sequence[str]) -> list[np.ndarray]:
        return self.chain.tag_texts(paragraphs, self.weights)

    def tokenize(self, texts: Iterable[str], batch_chars: int = 1 << 22, presegmented: bool = False) -> list[Document]:
        """One Document per text. Paragraphs of many texts are tagged together in groups of
        about `batch_chars` characters (so memory stays bounded however many texts come).

        `presegmented`: the sentences are given, one per line (UDPipe's `--tokenizer
        presegmented`): each non-blank line of a paragraph is tokenized on its own and is one
        sentence, cut only past `max_sentence_tokens` tokens (a line of nothing but control
        characters has no token, so no sentence)."""
        check_texts(texts)
        docs = []
        pending: list[tuple[Document, int, int, tuple[int, int] | None]] = []
        size = 0
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"tokenize takes str texts, got {type(text).__name__}")
            doc = Document(text)
            docs.append(doc)
            for a, b in split_paragraphs(text):
                # (text span, the paragraph it opens or None): a paragraph, or its lines
                units = [(a, b, (a, b))] if not presegmented else [
                    (s, e, (a, b) if k == 0 else None) for k, (s, e) in enumerate(split_lines(text, a, b))]
                for s, e, opens in units:
                    pending.append((doc, s, e, opens))
                    size += e - s
                    if size >= batch_chars:
                        self._tokenize_paragraphs(pending, presegmented)
                        pending, size = [], 0
        if pending:
            self._tokenize_paragraphs(pending, presegmented)
        return docs

    def _tokenize_paragraphs(self, pending, presegmented: bool = False) -> None:
        # Tokens, sentences and paragraphs hold no reference cycles: the cyclic collector
        # would only rescan the growing heap of new objects (tens of thousands a call), so
        # it is paused while they are made.
        enabled = gc.isenabled()
        gc.disable()
        try:
            self._tokenize_paragraphs_gc_off(pending, presegmented)
        finally:
            if enabled:
                gc.enable()

    def _tokenize_paragraphs_gc_off(self, pending, presegmented: bool) -> None:
        texts, maps = [], []
        for doc, a, b, _ in pending:
            text, where = joined_lines(doc.text[a:b])
            texts.append(text)
            maps.append(where)
        tags, starts = self.chain.tag_concat(texts, self.weights)
        if presegmented:  # each text is a sentence: its tags' token boundaries, none of their sentence ones
            tags = NO_SENTENCE[self.chain.design][tags]
        joined = "".join(texts)
        cps = code_points(joined)
        ts, te, sent, after, first = decode_spans(cps, char_classes(cps), tags, starts, self.max_sentence_tokens,
                                                  self.chain.design_id)
        # Batch offsets -> document offsets: each paragraph's tokens shift by its start in
        # its document minus its start in the batch. Everything per token is built by
        # comprehensions over whole arrays (the per-token Python cost bounds the speed).
        counts = np.diff(first)
        shifts = np.array([a for _, a, _, _ in pending], dtype=np.int64) - starts[:-1]
        shift = np.repeat(shifts, counts)
        ts_l, te_l = ts.tolist(), te.tolist()
        forms = [joined[a:b] for a, b in zip(ts_l, te_l)]
        cached = self.expander.cache_lookup()  # the expander's answers so far: a dict lookup per token
        words = [cached(f, MISSING) for f in forms]
        expand = self.expander.expand
        for k in [k for k, w in enumerate(words) if w is MISSING]:
            words[k] = expand(forms[k])
        ambiguous = self.expander.ambiguous_forms()
        if ambiguous:  # seen tokens written both ways: their neighbours in the sentence decide
            sent_l = sent.tolist()
            n = len(forms)
            in_context = self.expander.expand_in_context
            for k in [k for k, f in enumerate(forms) if f in ambiguous]:
                previous = "<s>" if sent_l[k] else forms[k - 1]
                following = "</s>" if k + 1 == n or sent_l[k + 1] else forms[k + 1]
                words[k] = in_context(forms[k], previous, following)
        token_starts, token_ends = ts + shift, te + shift
        for p, where in enumerate(maps):  # a paragraph read with its lines joined: offsets in its text
            if where is not None:
                k0, k1, a = first[p], first[p + 1], np.int64(pending[p][1])  # (int64 sums: where is int32)
                token_starts[k0:k1] = a + where[ts[k0:k1] - starts[p]]
                token_ends[k0:k1] = a + where[te[k0:k1] - starts[p] - 1] + 1
        token_starts, token_ends = token_starts.tolist(), token_ends.tolist()
        tokens = list(map(Token, forms, token_starts, token_ends, after.tolist(), words))
        sentence_starts = np.flatnonzero(sent).tolist()
        first_l = first.tolist()
        s = 0  # index into sentence_starts
        for p, (doc, a, b, opens) in enumerate(pending):
            if opens is not None:
                doc.paragraphs.append(Paragraph(*opens))
            paragraph = doc.paragraphs[-1]  # a later line of a presegmented paragraph adds to it
            k1 = first_l[p + 1]
            while s < len(sentence_starts) and sentence_starts[s] < k1:
                s0 = sentence_starts[s]
                s1 = sentence_starts[s + 1] if s + 1 < len(sentence_starts) and sentence_starts[s + 1] < k1 else k1
                paragraph.sentences.append(Sentence(joined[ts_l[s0]:te_l[s1 - 1]], token_starts[s0],
                                                    token_ends[s1 - 1], tokens[s0:s1]))
                s += 1

    # -- state ----------------------------------------------------------------
    def to_json(self) -> dict:
        return {"format": FORMAT, "chain": self.chain.config(), "expander": self.expander.to_json(),
                "max_sentence_tokens": self.max_sentence_tokens, "info": self.info}

    def save(self, directory) -> None:
        os.makedirs(directory, exist_ok=True)
        np.save(os.path.join(directory, "weights.npy"), self.weights, allow_pickle=False)
        np.save(os.path.join(directory, "vocab.npy"), self.chain.vocab_table, allow_pickle=False)
        with open(os.path.join(directory, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(self.to_json(), f, ensure_ascii=False)

    @classmethod
    def load(cls, directory) -> Tokenizer:
        path = os.path.join(directory, "tokenizer.json")
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if data.get("format") != FORMAT:
            raise ValueError(f"{path}: not a tokenizer of format {FORMAT} (format {data.get('format')!r})")
        weights = np.load(os.path.join(directory, "weights.npy"), allow_pickle=False)
        vocab = np.load(os.path.join(directory, "vocab.npy"), allow_pickle=False)
        return cls(CharacterChain.from_config(data["chain"], vocab), weights,
                   MultiwordExpander.from_json(data["expander"]), data["max_sentence_tokens"], data.get("info"))


# -- training examples ------------------------------------------------------------

JOINS = ("space", "spaceafter")


def _window_example(window, join: str, design: str = "start") -> CharExample:
    """The example of consecutive (sentence, token spans) of a paragraph: their texts joined
    (see `paragraph_examples`), O/B/I/S from the spans."""
    texts, tags = [], []
    previous = None
    for sentence, spans in window:
        if texts and (join == "space" or previous.tokens[-1].space_after):
            texts.append(" ")
            tags.append(np.array([O], dtype=np.int32))
        previous = sentence
        texts.append(sentence.text)
        y = np.full(len(sentence.text), O, dtype=np.int32)
        for k, (a, b) in enumerate(spans):
            y[a] = S if k == 0 and design != "end" else B
            y[a + 1:b] = I
        if design == "end":
            a, b = spans[-1]
            y[b - 1] = F if b - a == 1 else E
        elif design == "both":
            a, b = spans[-1]
            if b - a > 1:
                y[b - 1] = BOTH_E
            elif len(spans) > 1:
                y[a] = BOTH_F
            # a sentence of one one-character token keeps its S
        tags.append(y)
    first = window[0][0]
    return make_example("".join(texts), np.concatenate(tags), first.source, first.line)


def paragraph_examples(paragraphs: Sequence[GoldParagraph], window_sentences: int = 3, strict: bool = False,
                       problems: list | None = None, join: str = "space", design: str = "start") -> list[CharExample]:
    """Training examples: windows of `window_sentences` consecutive sentences of a paragraph,
    each window starting with the previous one's last sentence (so every sentence boundary
    is seen in context), their texts joined by a space (as `ud_raw_text.py` joins them), each character tagged
    O/B/I/S from the tokens' alignment to the text. A sentence whose tokens do not align with
    its text raises (strict) or is left out, ending the window (its message is appended to
    `problems`). join="spaceafter" joins a sentence to the next without a space when its last
    token has SpaceAfter=No (the text as written; 77 of 10,082 boundaries of en_ewt's training
    paragraphs, none in the other four treebanks) instead of always with one (the raw text
    `ud_raw_text.py` gives at test time). design: the tag set of `CharacterChain` ("start":
    S on a sentence's first character; "end": E/F on its last)."""
    if join not in JOINS:
        raise ValueError(f"join must be one of {JOINS}, got {join!r}")
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {tuple(DESIGNS)}, got {design!r}")
    examples: list[CharExample] = []
    for paragraph in paragraphs:
        window: list = []
        carried = False  # the window holds only the last sentence of the previous window
        for sentence in paragraph.sentences:
            try:
                spans = align(sentence)
            except ValueError as error:
                if strict:
                    raise
                if problems is not None:
                    problems.append(str(error))
                if len(window) > 1 or (window and not carried):
                    examples.append(_window_example(window, join, design))
                window = []  # the text around a left-out sentence is not contiguous
                continue
            if not spans:
                continue
            window.append((sentence, spans))
            carried = False
            if len(window) >= window_sentences:
                examples.append(_window_example(window, join, design))
                # The next window starts with this one's last sentence: every boundary between
                # two sentences of a paragraph is then inside some window, with its left
                # context (a window's first sentence follows START and no previous chunk).
                window = window[-1:]
                carried = True
        if len(window) > 1 or (window and not carried):
            examples.append(_window_example(window, join, design))
    return examples


def train_tokenizer(paths, epochs: int = 40, hash_bits: int = 20, window_sentences: int = 3,
                    templates: Sequence[str] | None = None, seed: int = 0, strict: bool = False,
                    mwt_min_types: int = 3, mwt_min_share: float = 0.6, max_sentence_tokens: int = 1000,
                    known_min_count: int = 0, margin: float = 100.0, join: str = "space", design: str = "start",
                    mwt_context: bool = True, mwt_context_min_count: int = 2, mwt_context_min_share: float = 0.7,
                    mwt_context_pair_min_count: int = 1, margin_epochs: int | None = None, final_margin: float = 0.0,
                    trainer=None, log=None, mwt_classifier: bool = True, mwt_classifier_runs: int = 4,
                    mwt_classifier_margin: float = 30.0) -> Tokenizer:
    """Train the character chain (averaged perceptron unless `trainer` is given: any trainer
    of `arborist.learn` with begin/epoch/prediction_weights) and the multiword expander on
    CoNLL-U file(s). known_min_count > 0 builds the known-token table of the kpre/ksuf/klong
    values (tokens seen that often), for templates that use them (not the default ones)."""
    from ..learn.perceptron import Perceptron
    from ..learn.perceptron import MarginPerceptron

    start = time.perf_counter()
    paragraphs = read_paragraphs(paths)
    problems: list[str] = []
    examples = paragraph_examples(paragraphs, window_sentences, strict, problems, join, design)
    if not examples:
        raise ValueError(f"{paths}: no sentence of the training data aligns with its text")
    chain = CharacterChain(hash_bits, templates, known_tokens(
        (t.form for p in paragraphs for s in p.sentences for t in s.tokens), known_min_count)
        if known_min_count else None, design)
    if trainer is None:
        if margin or margin_epochs is not None:
            trainer = MarginPerceptron(margin, seed=seed, margin_epochs=margin_epochs, final_margin=final_margin)
        else:
            trainer = Perceptron(seed=seed)
    trainer.begin(chain, examples, hash_bits)
    history = []
    for epoch in range(epochs):
        metrics = trainer.epoch(chain, examples)
        history.append({k: v for k, v in metrics.items() if isinstance(v, (int, float))})
        if log is not None:
            log(f"epoch {epoch + 1}: {history[-1]}")
    weights = trainer.prediction_weights().array
    expander = MultiwordExpander(mwt_min_types, mwt_min_share, mwt_classifier, classifier_runs=mwt_classifier_runs,
                                 classifier_margin=mwt_classifier_margin).fit_sentences(
        ([(t.form, t.words or None, t.upos) for t in s.tokens] for p in paragraphs for s in p.sentences), mwt_context,
        mwt_context_min_count, mwt_context_min_share, mwt_context_pair_min_count)
    info = {"train": [str(p) for p in (paths if isinstance(paths, (list, tuple)) else [paths])],
            "epochs": epochs, "window_sentences": window_sentences, "examples": len(examples),
            "trainer": trainer.settings(), "join": join,
            "unaligned_sentences": len(problems), "unaligned_examples": problems[:10],
            "train_seconds": time.perf_counter() - start, "history": history}
    return Tokenizer(chain, weights, expander, max_sentence_tokens, info)


# -- CoNLL-U output -----------------------------------------------------------------



def conllu_lines(docs: Sequence[Document], doc_prefix: str = "doc") -> Iterable[str]:
    """CoNLL-U lines of tokenized documents: `# newdoc` / `# newpar` / `# sent_id` / `# text`,
    multiword tokens as `N-M` lines before their words, SpaceAfter=No in MISC, and a trivially
    valid tree (the first word is the root, every other word depends on it) so that the
    official scorer accepts the file before a parser fills HEAD and DEPREL."""
    counter = 0
    for d, doc in enumerate(docs):
        first_in_doc = True
        for paragraph in doc.paragraphs:
            first_in_par = True
            for sentence in paragraph.sentences:
                counter += 1
                if first_in_doc:
                    yield f"# newdoc id = {doc_prefix}{d + 1}"
                    first_in_doc = False
                if first_in_par:
                    yield "# newpar"
                    first_in_par = False
                yield f"# sent_id = {counter}"
                yield "# text = " + CONTROL.sub(" ", sentence.text)
                word = 0
                for token in sentence.tokens:
                    misc = "_" if token.space_after else "SpaceAfter=No"
                    form = CONTROL.sub(" ", token.form)
                    words = token.word_forms
                    if token.words is not None:
                        yield f"{word + 1}-{word + len(words)}\t{form}\t_\t_\t_\t_\t_\t_\t_\t{misc}"
                        misc = "_"
                    for w in words:
                        word += 1
                        head, rel = ("0", "root") if word == 1 else ("1", "dep")
                        yield f"{word}\t{CONTROL.sub(' ', w)}\t_\t_\t_\t_\t{head}\t{rel}\t_\t{misc}"
                yield ""


def write_conllu(docs: Sequence[Document], path) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for line in conllu_lines(docs):
            f.write(line)
            f.write("\n")
