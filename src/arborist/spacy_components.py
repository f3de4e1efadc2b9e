"""spaCy pipeline components: the factories `arborist_tagger` and `arborist_parser`.

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("arborist_tagger", config={"model": "models/en_ewt_pipeline"})
    nlp.add_pipe("arborist_parser", config={"model": "models/en_ewt_pipeline"})

The factories are registered with `Language.factory` when this module is imported,
which spaCy does through the `spacy_factories` entry point (pyproject.toml), so
`add_pipe` and `spacy.load` find them without an import.

Both components read one arborist model (`arborist.model`): the tagger runs its
taggers and sets `token.pos_` (UPOS) and `token.tag_` (XPOS); the parser runs its
parser and labeler on the tags already in the Doc and sets `token.head` and
`token.dep_`, so `doc.has_annotation("DEP")` holds and `doc.sents` follows the trees.
When the Doc has sentence boundaries (a sentencizer ran), each sentence is tagged
and parsed on its own; otherwise the whole Doc is one sentence. Whitespace tokens
are not words to the models: they get spaCy's `_SP`/`SPACE` tags and hang from the
word before them (after them at the start of a sentence) with the label `dep`, as in
spaCy's own pipelines. A UD root is labelled `ROOT`, spaCy's name for it (spaCy's
CoNLL-U converter maps it the same way).

The model path in the config is read when the component is first used (or by
`nlp.initialize()`), not when it is built: a pipeline saved with `nlp.to_disk`
carries its own copy of the model (`to_disk` writes the model directory inside
the pipeline's), and `spacy.load` restores it with `from_disk` without ever
reading the original path, which need not exist any more.
"""
from __future__ import annotations

import copy
import copyreg
import json
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

import numpy as np
import srsly
from spacy.attrs import DEP, HEAD, IS_SPACE, LEMMA, LOWER, MORPH, ORTH, POS, TAG
from spacy.language import Language
from spacy.morphology import Morphology
from spacy.parts_of_speech import IDS as UNIVERSAL_POS
from spacy.pipeline import Pipe
from spacy.scorer import Scorer
from spacy.tokens import Doc, Token
from spacy.training import Example, validate_examples
from spacy.util import minibatch, registry as spacy_registry

from .model import ModelError, Pipeline, load
from .sentence import (ATTR_NAMES, FEATS, FORM, MAX_SENTENCE_LENGTH, PREFIX, PREFIX_LENGTH, ROOT, UPOS, XPOS,
                       SentenceBatch)
from .sentence import LEMMA as LEMMA_ROW, LOWER as LOWER_ROW
from .strings import hash_string

SPACE_TAG, SPACE_POS = "_SP", "SPACE"  # spaCy's tags of whitespace tokens
ROOT_LABEL = "ROOT"  # spaCy's label of a sentence's root; UD writes "root"
DEFAULT_LABEL = "dep"  # whitespace tokens, and every arc of a parser without a labeler
SETTINGS_FILE = "spacy_component.json"  # beside the model files: the parser component's settings
# The Doc attributes of the token columns (a column without one goes to a token
# extension of its name: `token._.misc`), and the token attributes spaCy's scorer reads.
DOC_ATTRS = {"upos": POS, "xpos": TAG, "lemma": LEMMA, "feats": MORPH}
TOKEN_ATTRS = {"upos": "pos", "xpos": "tag", "lemma": "lemma", "feats": "morph"}
SPACE_VALUES = {"upos": SPACE_POS, "xpos": SPACE_TAG}  # what whitespace tokens get
# where CoNLL-U's "_" is no value, not a tag or lemma "_": spaCy's "" (as `sentence_doc` makes
# the Doc of CoNLL-U input), written "_" again in CoNLL-U
NO_VALUE_COLUMNS = ("xpos", "lemma")


def confidence_extensions(columns) -> None:
    """The token extension attributes of the probabilities of `columns`: `token._.head_prob`,
    `token._.head_candidates` ([(head token index, probability)], best first; a root's head
    is itself, as in spaCy), `token._.deprel_prob`, `token._.deprel_candidates` ([(label,
    probability)]), `token._.arc_prob` (head and label), `token._.upos_prob`..."""
    names = [f"{c}_{a}" for c in columns for a in ("prob", "candidates")]
    if "head" in columns:
        names.append("arc_prob")
    for name in names:
        if not Token.has_extension(name):
            Token.set_extension(name, default=None)


def to_spacy_label(deprel: str) -> str:
    return ROOT_LABEL if deprel == "root" else deprel


def to_spacy_value(column: str, value: str) -> str:
    """A value of a column as spaCy writes it: a DEPREL as its label, a FEATS bundle as
    `str(token.morph)` gives it (`spacy_feats`), an XPOS or lemma "_" as "" (no value)."""
    if column in NO_VALUE_COLUMNS and value == "_":
        return ""
    if column == "deprel":
        return to_spacy_label(value)
    return spacy_feats(value) if column == "feats" else value


def spacy_feats(bundle: str) -> str:
    """A UD FEATS bundle in spaCy's order of the features ("Number=Sing|NumType=Card" ->
    "NumType=Card|Number=Sing"; spaCy sorts them case-sensitively, UD does not), "" for none
    and for a bundle spaCy cannot read (a feature without "=", as a treebank's "Typo"; the
    CoNLL-U output keeps it), computed without the StringStore."""
    if bundle in ("_", ""):
        return ""
    try:
        return Morphology.dict_to_feats(Morphology.feats_to_dict(bundle))
    except ValueError:
        return ""


def morph_keys(vocab, ids: np.ndarray, names) -> np.ndarray:
    """The MORPH keys of FEATS bundles given as string ids of their CoNLL-U strings. spaCy
    keys an analysis by its own order of the features, so a bundle's string id is not its
    key: given it, `Doc.from_array` leaves the token without features. `morphology.add`
    keeps the analysis's string for good (not only for a memory zone)."""
    keys = {int(hash_string(name)): vocab.morphology.add(spacy_feats(name)) for name in names}
    unique, inverse = np.unique(ids, return_inverse=True)
    return np.array([keys[int(u)] for u in unique.tolist()], dtype=np.uint64)[inverse]


def ud_feats(morph: str) -> str:
    """spaCy's bundle string in UD's order (features sorted case-insensitively), "_" for none."""
    return "|".join(sorted(morph.split("|"), key=lambda f: f.split("=", 1)[0].lower())) if morph else "_"


def ud_feats_ids(keys: np.ndarray, strings) -> np.ndarray:
    """The FEATS row of Doc MORPH keys: the string id of each analysis in UD's order, as
    training saw it (a key is the id of spaCy's order, "NumType=Card|Number=Sing")."""
    unique, inverse = np.unique(keys, return_inverse=True)
    ud = [key if key == MISSING_ID else hash_string(ud_feats(strings[key])) for key in unique.tolist()]
    return np.array(ud, dtype=np.uint64)[inverse]


def to_ud_label(dep: str) -> str:
    return "root" if dep == ROOT_LABEL else dep


def sentence_bounds(doc: Doc) -> list[tuple[int, int]]:
    """(start, end) of each sentence: the Doc's own boundaries, or the whole Doc."""
    if len(doc) == 0:
        return []
    if doc.has_annotation("SENT_START"):
        return [(s.start, s.end) for s in doc.sents]
    return [(0, len(doc))]


# Doc.to_array columns -> Sentence.attrs rows. spaCy's string ids are arborist's
# (`arborist.strings`), so a Doc's ORTH, LOWER, LEMMA, POS, TAG and MORPH columns are the
# Sentence rows as they are, but for 0 (spaCy: no value; arborist: the string "_") and
# PREFIX (arborist: the first 5 characters of the lowercase form), looked up per LOWER id.
DOC_COLUMNS = ((FORM, ORTH), (LOWER_ROW, LOWER), (LEMMA_ROW, LEMMA), (UPOS, POS), (XPOS, TAG), (FEATS, MORPH))
MISSING_ID = hash_string("_")
ROOT_ID = hash_string(ROOT)
PREFIX_CACHE_LIMIT = 1 << 20


class DocBatch:
    """The sentences of many Docs as one `SentenceBatch`: each sentence's non-whitespace
    tokens, and where each batch word came from."""

    def __init__(self, docs: list[Doc], prefixes: dict):
        self.offsets = np.concatenate([[0], np.cumsum([len(doc) for doc in docs])]).astype(np.int64)  # doc -> first token
        columns = [c for _, c in DOC_COLUMNS] + [IS_SPACE]
        arrays = [doc.to_array(columns).reshape(len(doc), len(columns)) for doc in docs]
        table = np.concatenate(arrays) if arrays else np.zeros((0, len(columns)), dtype=np.uint64)
        self.space = table[:, -1].astype(bool)
        self.space_orth = table[self.space, 0]  # the whitespace tokens' text: their lemma
        # Sentences: (doc index, start, end) in doc token indices, and their words as global tokens.
        self.sentences: list[tuple[int, int, int]] = []
        sentence_words: list[np.ndarray] = []
        for d, doc in enumerate(docs):
            offset = int(self.offsets[d])
            for start, end in sentence_bounds(doc):
                self.sentences.append((d, start, end))
                words = np.flatnonzero(~self.space[offset + start:offset + end]) + (offset + start)
                if len(words):  # a sentence of whitespace alone is not in the batch
                    sentence_words.append(words)
        self.word_tokens = np.concatenate(sentence_words) if sentence_words else np.zeros(0, dtype=np.int64)
        lengths = np.array([len(w) + 1 for w in sentence_words], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        strings = docs[0].vocab.strings if docs else None
        self.batch = SentenceBatch(np.full((len(ATTR_NAMES), int(starts[-1])), ROOT_ID, dtype=np.uint64), starts,
                                   strings.__getitem__ if strings is not None else {}.__getitem__)
        attrs, words = self.batch.attrs, self.batch.words
        # column_token: the global token of each batch column, -1 at roots.
        self.column_token = np.full(len(words), -1, dtype=np.int64)
        self.column_token[words] = self.word_tokens
        values = table[self.word_tokens]
        for k, (row, _) in enumerate(DOC_COLUMNS):
            column = values[:, k]
            if row not in (FORM, LOWER_ROW):
                column = np.where(column == 0, MISSING_ID, column)
            if row == FEATS and len(column):
                column = ud_feats_ids(column, strings)
            attrs[row, words] = column
        lower = attrs[LOWER_ROW, words].tolist()
        for key in dict.fromkeys(lower):
            if key not in prefixes:
                if len(prefixes) >= PREFIX_CACHE_LIMIT:
                    prefixes.clear()
                prefixes[key] = hash_string(strings[key][:PREFIX_LENGTH])
        attrs[PREFIX, words] = np.array([prefixes[key] for key in lower], dtype=np.uint64)

    def per_doc(self, token_values: np.ndarray) -> list[np.ndarray]:
        """Split a per-token array over all docs into one array per doc."""
        return [token_values[a:b] for a, b in zip(self.offsets[:-1], self.offsets[1:])]


def model_to_bytes(pipeline: Pipeline, extra: dict[str, str] | None = None) -> bytes:
    """The files of a saved model (`Pipeline.save`, with its `extra` files), {path relative to
    the model directory: bytes}, as msgpack (a lemmatizer's or morphologizer's learned state
    is a subdirectory)."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = pipeline.save(Path(tmp) / "model", extra)
        return srsly.msgpack_dumps({p.relative_to(directory).as_posix(): p.read_bytes()
                                    for p in sorted(directory.rglob("*")) if p.is_file()})


def model_from_bytes(bytes_data: bytes, owner, who: str):
    """`owner.from_disk` of the model files `model_to_bytes` wrote; a path that is absolute or
    leaves the model directory is refused."""
    files = srsly.msgpack_loads(bytes_data)
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in files.items():
            relative = Path(name)
            if relative.is_absolute() or ".." in relative.parts or not relative.parts:
                raise ModelError(f"{who} invalid file name {name!r} in the serialized model")
            (Path(tmp) / relative).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / relative).write_bytes(data)
        return owner.from_disk(tmp)


class PicklesItsModel:
    """Pickling, for spaCy's `nlp.pipe(n_process=N)`, which pickles the pipeline for the
    processes it starts when they are spawned (the start method of macOS, and of Linux from
    Python 3.14). A loaded model travels as its files (`model_to_bytes`), as spaCy's own
    components carry their weights: not as the directory it was read from, which may have
    changed or gone since. The copy has its own lock and empty caches."""

    def __reduce__(self):
        # spaCy's Pipe is a Cython class whose own __reduce__ would pickle the instance dict
        # as it is (the model and the lock included), not __getstate__'s.
        return copyreg.__newobj__, (type(self),), self.__getstate__()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        if "_lock" in state:
            state["_lock"] = None
        if "_prefixes" in state:
            state["_prefixes"] = {}
        model = state.pop("_model", None)
        if model is not None:
            state["_model_files"] = model_to_bytes(model)
        return state

    def __setstate__(self, state: dict) -> None:
        files = state.pop("_model_files", None)
        self.__dict__.update(state, _model=None)
        if "_lock" in state:
            self._lock = threading.RLock()
        if files is not None:
            self.from_bytes(files)


class ArboristComponent(PicklesItsModel, Pipe):
    """What the tagger and parser share: the model (loaded on first use) and its serialization.
    Each runs one stage of the arborist pipeline: the tagger the components that write
    token columns only (tags, lemmas, features...), the parser the others (the tree)."""

    tagging: bool = True

    def __init__(self, nlp: Language, name: str, model: Optional[str], scorer: Optional[Callable],
                 probabilities: bool = False, k_best: int = 3):
        self.vocab = nlp.vocab
        self.name = name
        self.model_path = model
        self.scorer = scorer
        if k_best < 0:
            raise ValueError(f"[{name}] k_best must be at least 0, got {k_best}")
        self.probabilities, self.k_best = bool(probabilities), int(k_best)
        self._model: Pipeline | None = None
        self._lock = threading.RLock()  # threads sharing the component load the model once
        self._prefixes: dict[int, int] = {}  # LOWER id -> PREFIX id (see DocBatch)

    # -- the model -------------------------------------------------------------
    @property
    def arborist(self) -> Pipeline:
        """The arborist pipeline (only this component's parts of the model)."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    if not self.model_path:
                        raise ValueError(f"[{self.name}] no model: give the component a model path "
                                         f"(config={{'model': PATH}}) or load a pipeline saved with it")
                    self.set_model(load(self.model_path, self.tagging))
        return self._model

    def set_model(self, pipeline: Pipeline) -> None:
        """Use this component's stage of an already loaded arborist pipeline. The stage is made
        whole before it is published: a thread sees the component's model or none."""
        with self._lock:
            self._model = self.stage_of(pipeline)

    def stage_of(self, pipeline: Pipeline) -> Pipeline:
        """This component's stage of an arborist pipeline, checked."""
        subset = pipeline.subset(lambda c: c.tagging == self.tagging)
        self.check(subset)
        if self.probabilities:
            confidence_extensions(tuple(c.confidence_column for c in subset.components.values()
                                        if c.confidence_column))
        return subset

    def set_confidences(self, docs: list[Doc], batch: "DocBatch", found: dict) -> None:
        """With `probabilities`: each word's `token._.<column>_prob` and, with k_best,
        `token._.<column>_candidates`, and `token._.arc_prob` (head times label), from
        {column: Confidence} over the batch's columns."""
        if not found:
            return
        columns = np.flatnonzero(batch.column_token >= 0)
        tokens = batch.column_token[columns]
        sentence_root = np.repeat(batch.batch.starts[:-1], np.diff(batch.batch.starts))[columns]
        n_tokens = len(batch.space)
        values: dict[str, list] = {}
        for column, c in found.items():
            prob = [None] * n_tokens
            for t, p in zip(tokens.tolist(), c.prob[columns].tolist()):
                prob[t] = p
            values[f"{column}_prob"] = prob
            if self.k_best:
                cands = [None] * n_tokens
                top, top_prob = c.top[columns], c.top_prob[columns]
                for j, t in enumerate(tokens.tolist()):
                    row = []
                    for v, p in zip(top[j].tolist(), top_prob[j].tolist()):
                        if v < 0:
                            continue
                        if column == "head":  # a local head -> its token; the root -> the token itself
                            v = t if v == 0 else int(batch.column_token[sentence_root[j] + v])
                        else:
                            v = to_spacy_value(column, c.value(v))
                        row.append((v, p))
                    cands[t] = row
                values[f"{column}_candidates"] = cands
        if "head_prob" in values and "deprel_prob" in values:
            values["arc_prob"] = [h * d if h is not None else None
                                  for h, d in zip(values["head_prob"], values["deprel_prob"])]
        heads = values.pop("head_candidates", None)
        for doc, offset in zip(docs, batch.offsets[:-1].tolist()):
            for token in doc:
                for name, per_token in values.items():
                    token._.set(name, per_token[offset + token.i])
                if heads is not None:  # global token indices -> the Doc's
                    row = heads[offset + token.i]
                    token._.set("head_candidates", None if row is None else [(v - offset, p) for v, p in row])

    def check(self, pipeline: Pipeline) -> None:
        if not pipeline.components:
            raise ModelError(f"[{self.name}] the model has no {'tagging' if self.tagging else 'tree'} component")

    def initialize(self, get_examples: Optional[Callable[[], Iterable[Example]]] = None, *,
                   nlp: Optional[Language] = None) -> None:
        """Read the model now (a wrong path fails here rather than on the first text).
        There is nothing to train: the model is trained with `arborist train`."""
        self.arborist

    # -- annotating -------------------------------------------------------------
    def __call__(self, doc: Doc) -> Doc:
        self.annotate([doc])
        return doc

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128) -> Iterator[Doc]:
        """Annotate `batch_size` Docs at a time: each stage of a batch (tagging, parsing,
        labeling) is one region without the GIL, so threads sharing the pipeline scale."""
        error_handler = self.get_error_handler()
        for docs in minibatch(stream, size=batch_size):
            try:
                self.annotate(docs)
            except Exception as e:
                error_handler(self.name, self, docs, e)
            yield from docs

    def annotate(self, docs: list[Doc]) -> None:
        """Annotate the Docs (the non-empty ones) as one `DocBatch`."""
        self.arborist  # a component without a model fails here, even on empty Docs
        docs = [doc for doc in docs if len(doc)]
        if docs:
            self.set_annotations(docs, DocBatch(docs, self._prefixes))

    def set_annotations(self, docs: list[Doc], batch: DocBatch) -> None:
        raise NotImplementedError

    # -- serialization: the bytes and the directory hold the arborist model files -------
    def to_disk(self, path, *, exclude=tuple()) -> None:
        self.arborist.save(path)

    def from_disk(self, path, *, exclude=tuple()) -> "ArboristComponent":
        self.set_model(load(path, self.tagging))
        return self

    def to_bytes(self, *, exclude=tuple()) -> bytes:
        return model_to_bytes(self.arborist)

    def from_bytes(self, bytes_data: bytes, *, exclude=tuple()) -> "ArboristComponent":
        return model_from_bytes(bytes_data, self, f"[{self.name}]")


class ArboristTagger(ArboristComponent):
    """The model's tagging stage: UPOS into token.pos_, XPOS into token.tag_, LEMMA into
    token.lemma_, FEATS into token.morph, any other column into `token._.<column>`."""

    tagging = True

    def check(self, pipeline: Pipeline) -> None:
        super().check(pipeline)
        upos = pipeline.writer("upos")
        if upos is not None:
            unknown = [t for t in upos.classes if t not in UNIVERSAL_POS]
            if unknown:
                raise ModelError(f"[{self.name}] UPOS tags spaCy does not know: {', '.join(unknown)}")
        for component in pipeline.components.values():
            for column in () if component.intermediate else component.writes:
                if column not in DOC_ATTRS and not Token.has_extension(column):
                    Token.set_extension(column, default=None)

    @property
    def labels(self) -> tuple[str, ...]:
        # spaCy reads the labels for nlp.meta, also while spacy.load builds the component, before
        # from_disk gives it the model: never load from the config's path for them.
        if self._model is None:
            return ()
        return tuple(sorted({t for c in self.arborist.components.values() for t in c.classes}))

    @property
    def attributes(self) -> tuple[str, ...]:
        """The token attributes this component sets that spaCy's scorer reads ("pos", "tag")."""
        return tuple(TOKEN_ATTRS[c] for component in self.arborist.components.values()
                     for c in component.writes if c in TOKEN_ATTRS and c not in self.valueless)

    @property
    def valueless(self) -> frozenset[str]:
        """The columns whose every value is CoNLL-U's "no value", "_": the XPOS of a treebank
        without XPOS (hu_szeged), which the tagger leaves unset (`token.tag_` "",
        `Doc.has_annotation("TAG")` false, no `tag_acc`) rather than set to the string "_"."""
        return frozenset(c for component in self.arborist.components.values() for c in component.writes
                         if c in NO_VALUE_COLUMNS and component.classes and set(component.classes) <= {"_"})

    def score(self, examples: Iterable[Example], **kwargs) -> dict:
        examples = list(examples)
        validate_examples(examples, "ArboristTagger.score")
        kwargs.pop("labels", None)  # Pipe.score's convention; the tag set is not a scorer setting here
        return self.scorer(examples, attributes=self.attributes, **kwargs)

    def set_annotations(self, docs: list[Doc], batch: DocBatch) -> None:
        model = self.arborist
        strings = docs[0].vocab.strings
        if self.probabilities:
            predicted, found = model.annotate_confident(batch.batch, self.k_best)
            self.set_confidences(docs, batch, found)
        else:
            predicted = model.annotate_batch(batch.batch)
        attrs, extensions = [], {}
        valueless = self.valueless
        for component in model.components.values():
            if component.name not in predicted:
                continue
            for column, (ids, names) in component.column_ids(batch.batch, predicted[component.name]).items():
                if column in valueless:
                    continue
                if column in NO_VALUE_COLUMNS:  # "_" is no tag: spaCy's 0
                    ids = np.where(ids == MISSING_ID, 0, ids)
                if column == "feats":
                    ids = morph_keys(docs[0].vocab, ids, names)  # (the morphology keeps its strings)
                else:
                    for name in names:  # the values are string ids: the strings must be known
                        strings.add(name)
                if column in DOC_ATTRS:
                    attrs.append((column, ids))
                else:
                    extensions[column] = ids
        if attrs:
            columns = [DOC_ATTRS[c] for c, _ in attrs]
            values = np.concatenate([doc.to_array(columns).reshape(len(doc), -1) for doc in docs])
            for j, (column, ids) in enumerate(attrs):
                if column in SPACE_VALUES:
                    values[batch.space, j] = strings.add(SPACE_VALUES[column])
                elif column == "lemma":  # whitespace is its own lemma, as spaCy's lemmatizers make it
                    values[batch.space, j] = batch.space_orth
                elif column == "feats":  # no features: the empty analysis, as words without any get
                    values[batch.space, j] = docs[0].vocab.morphology.add("")
                values[batch.word_tokens, j] = ids
            for doc, doc_values in zip(docs, batch.per_doc(values)):
                doc.from_array(columns, doc_values)
        for column, ids in extensions.items():
            tokens = np.full(len(batch.space), 0, dtype=np.uint64)
            tokens[batch.word_tokens] = ids
            for doc, doc_ids in zip(docs, batch.per_doc(tokens)):
                for token, key in zip(doc, doc_ids.tolist()):
                    setattr(token._, column, strings[key] if key else None)


class UntaggedDocWarning(UserWarning):
    """The parser was given a Doc without tags."""


class ArboristParser(ArboristComponent):
    """The model's tree stage: token.head (from the component writing HEAD) and token.dep_
    (from the one writing DEPREL, when the model has one)."""

    tagging = False

    def __init__(self, nlp, name, model, scorer, max_sentence_length: int = MAX_SENTENCE_LENGTH,
                 probabilities: bool = False, k_best: int = 3):
        super().__init__(nlp, name, model, scorer, probabilities, k_best)
        self.max_sentence_length = max_sentence_length

    @property
    def max_sentence_length(self) -> int:
        """A longer sentence is parsed in pieces of this many words whose roots hang from the
        first piece's, so it stays one sentence with one tree, as `arborist parse` gives it
        (`Parser.predict_batch`)."""
        return self._max_sentence_length

    @max_sentence_length.setter
    def max_sentence_length(self, value: int) -> None:
        if value < 1:
            raise ValueError(f"[{self.name}] max_sentence_length must be at least 1, got {value}")
        with self._lock:
            self._max_sentence_length = int(value)
            if self._model is not None:
                self._model.writer("head").max_sentence_length = self._max_sentence_length

    def stage_of(self, pipeline: Pipeline) -> Pipeline:
        """As the tagger's, with its own copy of the parser component (the weights shared),
        which takes this component's `max_sentence_length`."""
        subset = super().stage_of(pipeline)
        parser = subset.writer("head")
        subset.components[parser.name] = own = copy.copy(parser)
        own.max_sentence_length = self._max_sentence_length
        return subset

    # The setting travels with the model files, as spaCy's own components keep theirs
    # (`nlp.config` holds the factory's value, not one set later).
    def settings(self) -> dict[str, str]:
        return {SETTINGS_FILE: json.dumps({"max_sentence_length": self.max_sentence_length}) + "\n"}

    def to_disk(self, path, *, exclude=tuple()) -> None:
        self.arborist.save(path, self.settings())

    def from_disk(self, path, *, exclude=tuple()) -> "ArboristParser":
        settings = Path(path) / SETTINGS_FILE
        if settings.exists():
            try:
                self.max_sentence_length = int(json.loads(settings.read_text(encoding="utf-8"))["max_sentence_length"])
            except (ValueError, KeyError, TypeError) as e:
                raise ModelError(f"{settings}: not the parser component's settings ({e})") from None
        return super().from_disk(path)

    def to_bytes(self, *, exclude=tuple()) -> bytes:
        return model_to_bytes(self.arborist, self.settings())

    def check(self, pipeline: Pipeline) -> None:
        if pipeline.writer("head") is None:
            raise ModelError(f"[{self.name}] the model has no parser")

    @property
    def labels(self) -> tuple[str, ...]:
        if self._model is None:  # see ArboristTagger.labels
            return ()
        labeler = self.arborist.writer("deprel")
        return tuple(sorted(to_spacy_label(l) for l in labeler.classes)) if labeler is not None else ()

    def set_annotations(self, docs: list[Doc], batch: DocBatch) -> None:
        model = self.arborist
        strings = docs[0].vocab.strings
        if not all(doc.has_annotation("POS") for doc in docs):
            warnings.warn(f"[{self.name}] a Doc without POS tags: the parser reads the tags the Doc has "
                          "(put arborist_tagger, or another tagger, before it); without them its trees are poor",
                          UntaggedDocWarning, stacklevel=2)
        if self.probabilities:
            predicted, found = model.annotate_confident(batch.batch, self.k_best, gold_tags=True)
            self.set_confidences(docs, batch, found)
        else:
            predicted = model.annotate_batch(batch.batch, gold_tags=True)
        parser, labeler = model.writer("head"), model.writer("deprel")
        root, default = strings.add(ROOT_LABEL), strings.add(DEFAULT_LABEL)
        n_tokens = len(batch.space)
        heads = np.arange(n_tokens)  # global token indices; a token that is its own head is a root
        labels = np.full(n_tokens, default, dtype=np.uint64)
        # Batch columns -> tokens: a word's head column is its sentence's root column plus its head.
        columns = np.flatnonzero(batch.column_token >= 0)
        local = predicted[parser.name][columns]
        sentence_root = np.repeat(batch.batch.starts[:-1], np.diff(batch.batch.starts))[columns]
        tokens = batch.column_token[columns]
        heads[tokens] = np.where(local > 0, batch.column_token[sentence_root + local], tokens)
        if labeler is not None:
            label_ids = np.array([strings.add(to_spacy_label(l)) for l in labeler.classes], dtype=np.uint64)
            labels[tokens] = label_ids[predicted[labeler.name][columns]]
        labels[tokens[local == 0]] = root
        # Whitespace hangs from the word before it, or after it at the start of the sentence;
        # a sentence of whitespace only hangs from its first token.
        for d, start, end in batch.sentences:
            offset = int(batch.offsets[d])
            space = batch.space[offset + start:offset + end]
            if not space.any():
                continue
            words = np.flatnonzero(~space) + offset + start
            if not len(words):
                heads[offset + start:offset + end] = offset + start
                labels[offset + start] = root
                continue
            previous = None
            for i in range(offset + start, offset + end):
                if not batch.space[i]:
                    previous = i
                else:
                    heads[i] = previous if previous is not None else words[0]
        for doc, offset, doc_heads, doc_labels in zip(docs, batch.offsets, batch.per_doc(heads), batch.per_doc(labels)):
            values = np.empty((len(doc), 2), dtype=np.uint64)
            # HEAD is relative
            values[:, 0] = (doc_heads - offset - np.arange(len(doc))).astype(np.int64).astype(np.uint64)
            values[:, 1] = doc_labels
            doc.from_array([HEAD, DEP], values)


# -- the tokenizer ------------------------------------------------------------------
MWT_EXTENSION = "arborist_mwt"  # on a multiword token's first word: (surface form, number of words)


def register_mwt_extension() -> None:
    if not Token.has_extension(MWT_EXTENSION):
        Token.set_extension(MWT_EXTENSION, default=None)


class ArboristTokenizer(PicklesItsModel):
    """spaCy's tokenizer from the model's text stage (the component that writes FORM): its
    sentences set the Doc's sentence starts, and the words of a multiword token ("don't":
    "do", "n't") are the Doc's tokens, the first of them carrying the surface token in
    `token._.arborist_mwt` for CoNLL-U output. Serialized like the components. With
    `presegmented`, each line of a text is one sentence (tokenized, never split: UDPipe's
    `--tokenizer presegmented`)."""

    def __init__(self, vocab, model: Optional[str] = None, presegmented: bool = False):
        self.vocab = vocab
        self.model_path = model
        self.presegmented = bool(presegmented)
        self._model: Pipeline | None = None
        register_mwt_extension()

    @property
    def arborist(self) -> Pipeline:
        if self._model is None:
            if not self.model_path:
                raise ValueError("[tokenizer] no model: give it a model path or load a pipeline saved with it")
            self.set_model(load(self.model_path))
        return self._model

    def set_model(self, pipeline: Pipeline) -> None:
        subset = pipeline.subset(lambda c: "text" in c.reads)
        if subset.writer("form") is None:
            raise ModelError("[tokenizer] the model has no tokenizer component")
        register_mwt_extension()  # again: a tokenizer unpickled in a new process skipped __init__
        self._model = subset

    def __call__(self, text: str) -> Doc:
        return self.pipe_docs([text])[0]

    def pipe(self, texts: Iterable[str], batch_size: int = 1000) -> Iterator[Doc]:
        for batch in minibatch(texts, size=batch_size):
            yield from self.pipe_docs(batch)

    def pipe_docs(self, texts: list[str]) -> list[Doc]:
        """Docs whose text is the input's, as spaCy's tokenizers keep it (`doc.text == text`,
        so `token.idx` indexes the input): whitespace beyond a word's one trailing space is a
        whitespace token, as spaCy's own tokenizer makes it, and belongs to the sentence before
        it. Two things differ from the input: a control character (which is in no token) is a
        space, and a multiword token whose words do not spell it ("della": "di" + "la") is its
        words, so the offsets after it are shifted (`Tokenizer.tokenize` has exact ones)."""
        out = []
        texts = list(texts)
        for text, document in zip(texts, self.arborist.writer("form").tokenize(texts, presegmented=self.presegmented)):
            words, spaces, starts, mwt = [], [], [], []
            position = 0

            def gap(end: int) -> None:
                """The text from `position` to `end`, outside every token."""
                between = text[position:end]
                if not between.isspace():  # empty, or with control characters
                    between = "".join(c if c.isspace() else " " for c in between)
                if between[:1] == " " and words and not spaces[-1]:
                    spaces[-1], between = True, between[1:]
                if between:
                    words.append(between)
                    spaces.append(False)
                    starts.append(len(words) == 1)  # the Doc's first token starts a sentence; others do not
                    mwt.append(None)

            for sentence in document.sentences:
                for i, token in enumerate(sentence.tokens):
                    if token.start == position + 1 and words and text[position] == " ":
                        spaces[-1] = True  # the common gap: one space
                    elif token.start != position:
                        gap(token.start)
                    forms = token.word_forms
                    for j, word in enumerate(forms):
                        words.append(word)
                        spaces.append(False)
                        starts.append(i == 0 and j == 0)
                        mwt.append((token.form, len(forms)) if token.words is not None and j == 0 else None)
                    position = token.end
            gap(len(text))
            if len(words) > 1 and not spaces[0] and words[0].isspace():
                starts[1] = False  # whitespace before the first word is in its sentence
            doc = Doc(self.vocab, words=words, spaces=spaces, sent_starts=starts or None)
            for k, value in enumerate(mwt):
                if value is not None:
                    doc[k]._.set(MWT_EXTENSION, value)
            out.append(doc)
        return out

    def to_disk(self, path, *, exclude=tuple()) -> None:
        self.arborist.save(path)

    def from_disk(self, path, *, exclude=tuple()) -> "ArboristTokenizer":
        self.set_model(load(path))
        return self

    def to_bytes(self, *, exclude=tuple()) -> bytes:
        return model_to_bytes(self.arborist)

    def from_bytes(self, bytes_data: bytes, *, exclude=tuple()) -> "ArboristTokenizer":
        return model_from_bytes(bytes_data, self, "[tokenizer]")


@Language.component("arborist_line_sentences", assigns=["token.is_sent_start"])
def line_sentences(doc: Doc) -> Doc:
    """Sentences by lines, for text with a sentence per line (presegmented text) tokenized by
    spaCy's tokenizer: a sentence starts at the first word after each whitespace token that
    holds a line break, and nowhere else. (spaCy's sentencizer with `punct_chars = ["\\n"]`
    would not start one at a line that begins with punctuation, nor after "\\r\\n" or
    "\\n  ", which spaCy's tokenizer makes one token.)"""
    starts = True  # the next word starts a sentence
    for token in doc:
        if token.is_space:
            token.is_sent_start = token.i == 0
            starts = starts or "\n" in token.text
        else:
            token.is_sent_start = starts
            starts = False
    return doc


@spacy_registry.tokenizers("arborist.Tokenizer.v1")
def make_arborist_tokenizer(model: Optional[str] = None, presegmented: bool = False) -> Callable:
    """The model's tokenizer as spaCy's (`[nlp.tokenizer] @tokenizers = "arborist.Tokenizer.v1"`;
    `presegmented = true`: a sentence per line)."""
    return lambda nlp: ArboristTokenizer(nlp.vocab, model, presegmented)


# -- scorers ------------------------------------------------------------------------
def morph_key(token: Token, attribute: str) -> int:
    return getattr(token, attribute).key


def tagger_score(examples: Iterable[Example], attributes: Iterable[str] = ("pos", "tag"), **kwargs) -> dict:
    """pos_acc, tag_acc, lemma_acc and morph_acc (spaCy's `Scorer.score_token_attr`) of the
    attributes the tagger sets, and morph_per_feat, as spaCy's tagger, lemmatizer and
    morphologizer score them (the analysis compared by its key, as `morphologizer_score` does)."""
    examples = list(examples)
    scores: dict = {}
    for attribute in attributes:
        if attribute == "morph":
            scores.update(Scorer.score_token_attr(examples, attribute, getter=morph_key, **kwargs))
            scores.update(Scorer.score_token_attr_per_feat(examples, attribute, getter=morph_key, **kwargs))
        else:
            scores.update(Scorer.score_token_attr(examples, attribute, **kwargs))
    return scores


@spacy_registry.scorers("arborist.tagger_scorer.v1")
def make_tagger_scorer() -> Callable:
    return tagger_score


# -- factories ----------------------------------------------------------------------
@Language.factory(
    "arborist_tagger",
    assigns=["token.tag", "token.pos", "token.lemma", "token.morph"],
    default_config={"model": None, "probabilities": False, "k_best": 3,
                    "scorer": {"@scorers": "arborist.tagger_scorer.v1"}},
    default_score_weights={"pos_acc": 0.25, "tag_acc": 0.25, "lemma_acc": 0.25, "morph_acc": 0.25,
                           "morph_per_feat": None},
)
def make_tagger(nlp: Language, name: str, model: Optional[str], probabilities: bool, k_best: int,
                scorer: Optional[Callable]) -> ArboristTagger:
    """The model's taggers: UPOS into token.pos_, XPOS into token.tag_ (with `probabilities`,
    also `token._.upos_prob`, `token._.upos_candidates`...)."""
    return ArboristTagger(nlp, name, model, scorer, probabilities, k_best)


@Language.factory(
    "arborist_parser",
    assigns=["token.head", "token.dep", "token.is_sent_start", "doc.sents"],
    requires=["token.pos"],
    default_config={"model": None, "max_sentence_length": MAX_SENTENCE_LENGTH, "probabilities": False,
                    "k_best": 3, "scorer": {"@scorers": "spacy.parser_scorer.v1"}},
    default_score_weights={"dep_uas": 0.5, "dep_las": 0.5, "dep_las_per_type": None, "sents_p": None,
                           "sents_r": None, "sents_f": 0.0},
)
def make_parser(nlp: Language, name: str, model: Optional[str], max_sentence_length: int, probabilities: bool,
                k_best: int, scorer: Optional[Callable]) -> ArboristParser:
    """The model's parser (and labeler) on the tags in the Doc: token.head and token.dep_ (with
    `probabilities`, also `token._.head_prob`, `token._.deprel_prob`, `token._.arc_prob`,
    `token._.head_candidates`, `token._.deprel_candidates`: see `confidence_extensions`)."""
    return ArboristParser(nlp, name, model, scorer, max_sentence_length, probabilities, k_best)
