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

import tempfile
import threading
from pathlib import Path
from typing import Callable, Iterable, Optional

import numpy as np
import srsly
from spacy.attrs import DEP, HEAD, IS_SPACE, POS, TAG
from spacy.language import Language
from spacy.parts_of_speech import IDS as UNIVERSAL_POS
from spacy.pipeline import Pipe
from spacy.scorer import Scorer
from spacy.tokens import Doc
from spacy.training import Example, validate_examples
from spacy.util import registry as spacy_registry

from .model import KINDS, ModelError, Pipeline, load
from .sentence import Sentence

SPACE_TAG, SPACE_POS = "_SP", "SPACE"  # spaCy's tags of whitespace tokens
ROOT_LABEL = "ROOT"  # spaCy's label of a sentence's root; UD writes "root"
DEFAULT_LABEL = "dep"  # whitespace tokens, and every arc of a parser without a labeler
# A longer sentence (a sentencizer that found no punctuation in a page of text) is
# parsed in pieces: parsing time grows with the cube of the length, memory with its square.
MAX_SENTENCE_LENGTH = 256
TAGGER_KINDS = ("tagger",)
PARSER_KINDS = tuple(k for k in KINDS if k not in TAGGER_KINDS)  # the parser and whatever serves it


def to_spacy_label(deprel: str) -> str:
    return ROOT_LABEL if deprel == "root" else deprel


def to_ud_label(dep: str) -> str:
    return "root" if dep == ROOT_LABEL else dep


def sentence_bounds(doc: Doc) -> list[tuple[int, int]]:
    """(start, end) of each sentence: the Doc's own boundaries, or the whole Doc."""
    if len(doc) == 0:
        return []
    if doc.has_annotation("SENT_START"):
        return [(s.start, s.end) for s in doc.sents]
    return [(0, len(doc))]


def doc_sentence(doc: Doc, indices: list[int]) -> Sentence:
    """The words doc[i] for i in `indices` as a Sentence, with the Doc's lemmas, tags and
    morphology ('_' where the Doc has none), as a CoNLL-U file would give them."""
    tokens = [doc[i] for i in indices]
    return Sentence.from_columns(
        [t.text for t in tokens],
        [t.lemma_ or "_" for t in tokens],
        [t.pos_ or "_" for t in tokens],
        [t.tag_ or "_" for t in tokens],
        [str(t.morph) or "_" for t in tokens],
    )


class ArboristComponent(Pipe):
    """What the tagger and parser share: the model (loaded on first use) and its serialization."""

    kinds: tuple[str, ...] = ()

    def __init__(self, nlp: Language, name: str, model: Optional[str], scorer: Optional[Callable]):
        self.vocab = nlp.vocab
        self.name = name
        self.model_path = model
        self.scorer = scorer
        self._model: Pipeline | None = None
        self._lock = threading.Lock()  # threads sharing the component load the model once

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
                    self.set_model(load(self.model_path, self.kinds))
        return self._model

    def set_model(self, pipeline: Pipeline) -> None:
        """Use these components of an already loaded arborist pipeline."""
        subset = Pipeline({n: c for n, c in pipeline.components.items() if c.kind in self.kinds},
                          pipeline.vocabulary, pipeline.info)
        self.check(subset)
        self._model = subset

    def check(self, pipeline: Pipeline) -> None:
        if not pipeline.components:
            raise ModelError(f"[{self.name}] the model has no {' or '.join(self.kinds)} component")

    def initialize(self, get_examples: Optional[Callable[[], Iterable[Example]]] = None, *,
                   nlp: Optional[Language] = None) -> None:
        """Read the model now (a wrong path fails here rather than on the first text).
        There is nothing to train: the model is trained with `arborist train`."""
        self.arborist

    # -- serialization: the bytes and the directory hold the arborist model files -------
    def to_disk(self, path, *, exclude=tuple()) -> None:
        self.arborist.save(path)

    def from_disk(self, path, *, exclude=tuple()) -> "ArboristComponent":
        self.set_model(load(path, self.kinds))
        return self

    def to_bytes(self, *, exclude=tuple()) -> bytes:
        with tempfile.TemporaryDirectory() as tmp:
            directory = self.arborist.save(Path(tmp) / "model")
            return srsly.msgpack_dumps({p.name: p.read_bytes() for p in sorted(directory.iterdir())})

    def from_bytes(self, bytes_data: bytes, *, exclude=tuple()) -> "ArboristComponent":
        files = srsly.msgpack_loads(bytes_data)
        with tempfile.TemporaryDirectory() as tmp:
            for name, data in files.items():
                if Path(name).name != name:  # file names only, never a path out of tmp
                    raise ModelError(f"[{self.name}] invalid file name {name!r} in the serialized model")
                (Path(tmp) / name).write_bytes(data)
            return self.from_disk(tmp)


class ArboristTagger(ArboristComponent):
    """Sets token.pos_ (the model's UPOS tagger) and token.tag_ (its XPOS tagger)."""

    kinds = TAGGER_KINDS

    def check(self, pipeline: Pipeline) -> None:
        super().check(pipeline)
        for tagger in pipeline.taggers:
            if tagger.attribute == "upos":
                unknown = [t for t in tagger.structure.tags if t not in UNIVERSAL_POS]
                if unknown:
                    raise ModelError(f"[{self.name}] UPOS tags spaCy does not know: {', '.join(unknown)}")

    @property
    def labels(self) -> tuple[str, ...]:
        # spaCy reads the labels for nlp.meta, also while spacy.load builds the component, before
        # from_disk gives it the model: never load from the config's path for them.
        if self._model is None:
            return ()
        return tuple(sorted({t for tagger in self.arborist.taggers for t in tagger.structure.tags}))

    @property
    def attributes(self) -> tuple[str, ...]:
        """The token attributes this component sets ("pos", "tag")."""
        return tuple("pos" if t.attribute == "upos" else "tag" for t in self.arborist.taggers)

    def score(self, examples: Iterable[Example], **kwargs) -> dict:
        examples = list(examples)
        validate_examples(examples, "ArboristTagger.score")
        kwargs.pop("labels", None)  # Pipe.score's convention; the tag set is not a scorer setting here
        return self.scorer(examples, attributes=self.attributes, **kwargs)

    def __call__(self, doc: Doc) -> Doc:
        model = self.arborist
        if len(doc) == 0:
            return doc
        strings = doc.vocab.strings
        columns = {"upos": (POS, strings.add(SPACE_POS)), "xpos": (TAG, strings.add(SPACE_TAG))}
        attributes = [t.attribute for t in model.taggers]
        values = doc.to_array([columns[a][0] for a in attributes])
        if values.ndim == 1:
            values = values[:, None]
        space = doc.to_array(IS_SPACE).astype(bool)
        for j, attribute in enumerate(attributes):
            values[space, j] = columns[attribute][1]
        for start, end in sentence_bounds(doc):
            words = [i for i in range(start, end) if not space[i]]
            if not words:
                continue
            tagged = model.tag(doc_sentence(doc, words))
            for j, attribute in enumerate(attributes):
                values[words, j] = [strings.add(t) for t in getattr(tagged, attribute)[1:]]
        doc.from_array([columns[a][0] for a in attributes], values)
        return doc


class ArboristParser(ArboristComponent):
    """Sets token.head and token.dep_ (the model's parser and, when it has one, labeler)."""

    kinds = PARSER_KINDS

    def __init__(self, nlp, name, model, scorer, max_sentence_length: int = MAX_SENTENCE_LENGTH):
        super().__init__(nlp, name, model, scorer)
        if max_sentence_length < 1:
            raise ValueError(f"[{name}] max_sentence_length must be at least 1, got {max_sentence_length}")
        self.max_sentence_length = max_sentence_length

    def check(self, pipeline: Pipeline) -> None:
        if pipeline.parser is None:
            raise ModelError(f"[{self.name}] the model has no parser")

    @property
    def labels(self) -> tuple[str, ...]:
        if self._model is None:  # see ArboristTagger.labels
            return ()
        labeler = self.arborist.labeler
        return tuple(sorted(to_spacy_label(l) for l in labeler.label_set)) if labeler is not None else ()

    def __call__(self, doc: Doc) -> Doc:
        model = self.arborist
        if len(doc) == 0:
            return doc
        n = len(doc)
        heads = np.arange(n)  # absolute indices; a token that is its own head is a root
        labels = [DEFAULT_LABEL] * n
        space = doc.to_array(IS_SPACE).astype(bool)
        for start, end in sentence_bounds(doc):
            words = [i for i in range(start, end) if not space[i]]
            if not words:  # only whitespace: the first token is the root of the others
                heads[start:end] = start
                labels[start] = ROOT_LABEL
                continue
            for k in range(0, len(words), self.max_sentence_length):
                piece = words[k:k + self.max_sentence_length]
                _, tree, deprels = model.annotate(doc_sentence(doc, piece), gold_tags=True)
                for m, i in enumerate(piece, start=1):
                    h = int(tree[m])
                    heads[i] = piece[h - 1] if h > 0 else i
                    labels[i] = ROOT_LABEL if h == 0 else to_spacy_label(deprels[m]) if deprels else DEFAULT_LABEL
            # Whitespace hangs from the word before it, or after it at the start of the sentence.
            previous = None
            for i in range(start, end):
                if not space[i]:
                    previous = i
                else:
                    heads[i] = previous if previous is not None else words[0]
        strings = doc.vocab.strings
        values = np.empty((n, 2), dtype=np.uint64)
        values[:, 0] = (heads - np.arange(n)).astype(np.int64).astype(np.uint64)  # HEAD is relative
        values[:, 1] = [strings.add(label) for label in labels]
        doc.from_array([HEAD, DEP], values)
        return doc


# -- scorers ------------------------------------------------------------------------
def tagger_score(examples: Iterable[Example], attributes: Iterable[str] = ("pos", "tag"), **kwargs) -> dict:
    """pos_acc and tag_acc (spaCy's `Scorer.score_token_attr`) of the attributes a tagger sets."""
    examples = list(examples)
    scores: dict = {}
    for attribute in attributes:
        scores.update(Scorer.score_token_attr(examples, attribute, **kwargs))
    return scores


@spacy_registry.scorers("arborist.tagger_scorer.v1")
def make_tagger_scorer() -> Callable:
    return tagger_score


# -- factories ----------------------------------------------------------------------
@Language.factory(
    "arborist_tagger",
    assigns=["token.tag", "token.pos"],
    default_config={"model": None, "scorer": {"@scorers": "arborist.tagger_scorer.v1"}},
    default_score_weights={"pos_acc": 0.5, "tag_acc": 0.5},
)
def make_tagger(nlp: Language, name: str, model: Optional[str], scorer: Optional[Callable]) -> ArboristTagger:
    """The model's taggers: UPOS into token.pos_, XPOS into token.tag_."""
    return ArboristTagger(nlp, name, model, scorer)


@Language.factory(
    "arborist_parser",
    assigns=["token.head", "token.dep", "token.is_sent_start", "doc.sents"],
    default_config={"model": None, "max_sentence_length": MAX_SENTENCE_LENGTH,
                    "scorer": {"@scorers": "spacy.parser_scorer.v1"}},
    default_score_weights={"dep_uas": 0.5, "dep_las": 0.5, "dep_las_per_type": None, "sents_p": None,
                           "sents_r": None, "sents_f": 0.0},
)
def make_parser(nlp: Language, name: str, model: Optional[str], max_sentence_length: int,
                scorer: Optional[Callable]) -> ArboristParser:
    """The model's parser (and labeler) on the tags in the Doc: token.head and token.dep_."""
    return ArboristParser(nlp, name, model, scorer, max_sentence_length)
