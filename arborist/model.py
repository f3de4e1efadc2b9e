"""Models on disk: a pipeline of components (taggers, a pruner, a parser, a labeler) in one
directory with meta.json and .npy arrays, no pickle.

    meta.json         format, version, and per component its name, kind, structure
                      configuration (a tagger's tag set, a labeler's DEPREL label set)
                      and training info
    <name>.npy        each component's weights (float64, 2^hash_bits)
    vocabulary.npy    sorted 64-bit hashes of the training forms (for accuracy on
                      words unseen in training)

Saving is atomic: the model is written to a temporary sibling directory and
renamed into place, so an interrupted save never leaves a half-written model
(and never destroys the previous one). Format version 1 (a lone parser with
weights.npy) still loads.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

from .weights import Weights
from .parser.labels import ArcLabels
from .parser.second_order import ArcPruner
from .parser.tree import DependencyTree
from .sentence import FORM, UPOS, XPOS, ROOT, Sentence, SentenceBatch
from .strings import hash_strings
from .tagger.chain import LinearChain

FORMAT = "arborist-model"
FORMAT_VERSION = 2
VOCABULARY = "vocabulary.npy"
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
RESERVED = {"vocabulary", "meta", "weights"}  # names of the model's other files
DEFAULT_LANG = "en"


class ModelError(ValueError):
    pass


class Component:
    """A structure (feature configuration, tag set) and its weights."""

    kind = ""

    def __init__(self, structure, weights: np.ndarray, info: dict | None = None):
        self.structure = structure
        self.weights = Weights(structure.hash_bits, False, np.ascontiguousarray(weights, dtype=np.float64))
        self.info = dict(info or {})

    def predict(self, sentence: Sentence):
        s = self.structure
        return s.argmax(sentence, s.scores(sentence, self.weights))

    def predict_batch(self, batch: SentenceBatch) -> np.ndarray:
        """`predict` of every sentence of the batch, concatenated: by the structure's batch
        kernel (one region without the GIL) when it has one, else sentence by sentence."""
        many = getattr(self.structure, "predict_batch", None)
        result = many(batch, self.weights) if many is not None else None
        if result is None:
            parts = [self.predict(batch.sentence(i)) for i in range(batch.n_sentences)]
            result = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
        return result


class Tagger(Component):
    """Predicts one tag column (UPOS or XPOS) with a linear chain."""

    kind = "tagger"

    @property
    def attribute(self) -> str:
        return self.structure.attribute

    def tags(self, sentence: Sentence) -> list[str]:
        """The predicted tag of every word (without the root)."""
        return self.structure.tag_names(self.predict(sentence))

    def tag(self, sentence: Sentence) -> Sentence:
        """The sentence with this tagger's column replaced by its predictions."""
        return with_tags(sentence, self.attribute, self.tags(sentence))


class Parser(Component):
    """A dependency parser: predicts heads (int32, n+1; heads[0] = -1)."""

    kind = "parser"

    def parse(self, sentences: Iterable[Sentence]) -> Iterator[tuple[Sentence, np.ndarray]]:
        for sentence in sentences:
            yield sentence, self.predict(sentence)


class Labeler(Component):
    """Labels the arcs of a tree with DEPREL strings (the second stage of a labeled parser)."""

    kind = "labeler"

    @property
    def label_set(self) -> tuple[str, ...]:
        return self.structure.labels

    def labels(self, sentence: Sentence, heads) -> list[str]:
        """The DEPREL of every arc of the tree `heads` (n+1; '' for the root)."""
        tree = replace(sentence, heads=np.asarray(heads, dtype=np.int32))
        return self.structure.label_names(self.predict(tree))


class Pruner(Component):
    """A first-order model whose arc marginals decide which arcs a second-order parser
    may use; it predicts no output of its own in a pipeline."""

    kind = "pruner"

    def allowed(self, sentence: Sentence) -> np.ndarray:
        """(n+1, n+1) bool: the arcs kept for this sentence."""
        return self.structure.allowed(sentence, self.weights)


KINDS = {"tagger": (Tagger, LinearChain), "pruner": (Pruner, ArcPruner), "parser": (Parser, DependencyTree),
         "labeler": (Labeler, ArcLabels)}
STRUCTURE_KINDS = {LinearChain.name: "tagger", ArcPruner.name: "pruner", DependencyTree.name: "parser",
                   ArcLabels.name: "labeler"}


def kind_of(structure) -> str:
    """The kind of component ("tagger", "parser") that predicts with this structure."""
    kind = STRUCTURE_KINDS.get(getattr(structure, "name", None))
    if kind is None:
        raise ValueError(f"no component predicts with a {type(structure).__name__} structure")
    return kind


def component_for(structure, weights: np.ndarray, info: dict | None = None) -> Component:
    """The component that predicts with this structure and these weights."""
    return KINDS[kind_of(structure)][0](structure, weights, info)


def with_tags(sentence: Sentence, attribute: str, tags: list[str]) -> Sentence:
    """A copy of the sentence whose UPOS or XPOS column (strings and hashes) is `tags`."""
    if len(tags) != sentence.n:
        raise ValueError(f"{len(tags)} tags for a sentence of {sentence.n} words")
    column = [ROOT] + list(tags)
    attrs = sentence.attrs.copy()
    attrs[UPOS if attribute == "upos" else XPOS] = hash_strings(column)
    return replace(sentence, attrs=attrs, **{attribute: column})


@dataclass
class Annotation:
    """What `Pipeline.annotate_batch` predicts, in the batch's layout."""

    tags: dict  # {attribute: int32 tag indices, one per word}; empty with gold tags
    heads: np.ndarray | None  # int32 per column, sentence-local, -1 at roots; None without a parser
    labels: np.ndarray | None  # int32 label indices per column, -1 at roots; None without a labeler


class Pipeline:
    """Taggers, then (optionally) a parser that reads their predicted tags, then
    (optionally) a labeler that labels the parser's arcs.

    `annotate` runs the taggers in order, each on the output of the one before,
    the parser on the result and the labeler on the parser's tree; `gold_tags=True`
    skips the taggers and parses with the input's own tag columns. A labeler without
    a parser labels the input's own (gold) tree."""

    def __init__(self, components: dict[str, Component] | None = None, vocabulary: np.ndarray | None = None,
                 info: dict | None = None):
        self.components: dict[str, Component] = {}
        for name, component in (components or {}).items():
            self.add(name, component)
        self.vocabulary = np.unique(np.asarray(vocabulary if vocabulary is not None else [], dtype=np.uint64))
        self.info = dict(info or {})

    def add(self, name: str, component: Component) -> None:
        if not NAME.match(name) or name in RESERVED:
            raise ValueError(f"component name {name!r} must be letters, digits, '_' or '-', "
                             f"and not one of {', '.join(sorted(RESERVED))}")
        if isinstance(component, Tagger) and any(
                isinstance(c, Tagger) and c.attribute == component.attribute and n != name
                for n, c in self.components.items()):
            raise ValueError(f"two taggers for {component.attribute.upper()}")
        if isinstance(component, Parser) and self.parser is not None and name not in self.components:
            raise ValueError("a pipeline has at most one parser")
        if isinstance(component, Labeler) and self.labeler is not None and name not in self.components:
            raise ValueError("a pipeline has at most one labeler")
        if isinstance(component, Pruner) and self.pruner is not None and name not in self.components:
            raise ValueError("a pipeline has at most one pruner")
        self.components[name] = component
        parser, pruner = self.parser, self.pruner
        if parser is not None and parser.structure.order == 2 and pruner is not None:
            parser.structure.use_pruner(pruner)

    @property
    def taggers(self) -> list[Tagger]:
        return [c for c in self.components.values() if isinstance(c, Tagger)]

    @property
    def parser(self) -> Parser | None:
        return next((c for c in self.components.values() if isinstance(c, Parser)), None)

    @property
    def pruner(self) -> Pruner | None:
        return next((c for c in self.components.values() if isinstance(c, Pruner)), None)

    @property
    def labeler(self) -> Labeler | None:
        return next((c for c in self.components.values() if isinstance(c, Labeler)), None)

    def tag(self, sentence: Sentence) -> Sentence:
        """The sentence with the taggers' predicted tags (the parser and labeler do not run)."""
        return self.annotate_many([sentence], tag_only=True)[0][0] if self.taggers else sentence

    def annotate_batch(self, batch: SentenceBatch, gold_tags: bool = False, tag_only: bool = False) -> Annotation:
        """Tag, parse and label every sentence of the batch, each stage in one region
        without the GIL (threads sharing the pipeline run in parallel). The taggers write
        their predictions into the batch's UPOS/XPOS rows, which the parser and labeler read;
        `gold_tags=True` skips them, `tag_only=True` runs only them. A labeler without a parser
        labels the batch's own heads."""
        tags = {}
        if not gold_tags:
            words = batch.words
            for tagger in self.taggers:
                ids = tagger.predict_batch(batch)
                tags[tagger.attribute] = ids
                batch.attrs[UPOS if tagger.attribute == "upos" else XPOS, words] = tagger.structure.tag_hashes[ids]
        heads = labels = None
        if tag_only:
            return Annotation(tags, heads, labels)
        if self.parser is not None:
            heads = self.parser.predict_batch(batch)
        if self.labeler is not None:
            labels = self.labeler.predict_batch(replace(batch, heads=batch.heads if heads is None else heads))
        return Annotation(tags, heads, labels)

    def annotate_many(self, sentences: list[Sentence], gold_tags: bool = False, tag_only: bool = False
                      ) -> list[tuple[Sentence, np.ndarray | None, list[str] | None]]:
        """`annotate` of each sentence, computed as one batch (`annotate_batch`)."""
        sentences = list(sentences)
        labeler = None if tag_only else self.labeler
        if labeler is not None and self.parser is None and not all(s.has_heads for s in sentences):
            # Only sentences with a tree can be labeled: label those, tag the rest.
            with_tree = [s.has_heads for s in sentences]
            labeled = iter(self.annotate_many([s for s, t in zip(sentences, with_tree) if t], gold_tags))
            rest = iter(Pipeline({n: c for n, c in self.components.items() if c is not labeler}, self.vocabulary,
                                 self.info).annotate_many([s for s, t in zip(sentences, with_tree) if not t], gold_tags))
            return [next(labeled) if t else next(rest) for t in with_tree]
        batch = SentenceBatch.from_sentences(sentences)
        result = self.annotate_batch(batch, gold_tags, tag_only)
        out = []
        words = batch.word_starts
        for i, sentence in enumerate(sentences):
            a, b = int(batch.starts[i]), int(batch.starts[i + 1])
            if result.tags:
                columns = {attribute: [ROOT] + [self.tagger(attribute).structure.tags[k]
                                                for k in ids[words[i]:words[i + 1]].tolist()]
                           for attribute, ids in result.tags.items()}
                sentence = replace(sentence, attrs=batch.attrs[:, a:b], **columns)
            heads = result.heads[a:b] if result.heads is not None else None
            deprels = None
            if result.labels is not None:
                deprels = labeler.structure.label_names(result.labels[a:b])
            out.append((sentence, heads, deprels))
        return out

    def annotate(self, sentence: Sentence, gold_tags: bool = False
                 ) -> tuple[Sentence, np.ndarray | None, list[str] | None]:
        """(the sentence with predicted tags, predicted heads or None without a parser,
        DEPREL strings (n+1, '' for the root) or None without a labeler)."""
        return self.annotate_many([sentence], gold_tags)[0]

    def parse(self, sentences: Iterable[Sentence], gold_tags: bool = False, batch_size: int = 64):
        """`annotate` of each sentence, `batch_size` sentences at a time."""
        batch = []
        for sentence in sentences:
            batch.append(sentence)
            if len(batch) == batch_size:
                yield from self.annotate_many(batch, gold_tags)
                batch = []
        if batch:
            yield from self.annotate_many(batch, gold_tags)

    def tagger(self, attribute: str) -> Tagger:
        """The tagger that predicts `attribute` ("upos", "xpos")."""
        return next(t for t in self.taggers if t.attribute == attribute)

    def predicted_tags(self, tagged: Sentence) -> dict[str, list[str]]:
        """{attribute: the words' tags} of the columns this pipeline's taggers predict,
        read from a sentence `annotate` returned."""
        return {t.attribute: getattr(tagged, t.attribute)[1:] for t in self.taggers}

    def unseen(self, sentence: Sentence) -> np.ndarray:
        """Boolean per word: its form never occurs in the training data."""
        forms = sentence.attrs[FORM, 1:]
        at = np.searchsorted(self.vocabulary, forms)
        found = at < len(self.vocabulary)
        found[found] = self.vocabulary[at[found]] == forms[found]
        return ~found

    @property
    def lang(self) -> str:
        """The language of the training data (spaCy's code: "en"), for tokenizing raw text: the
        training config's `[nlp] lang`, as in a spaCy config, or "en" when it has none."""
        from confection import Config

        config = Config().from_str(self.info.get("config") or "", interpolate=False)
        lang = config.get("nlp", {}).get("lang")
        return lang if isinstance(lang, str) and lang else DEFAULT_LANG

    def meta(self) -> dict:
        from . import __version__

        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "arborist_version": __version__,
            "components": [
                {"name": name, "kind": c.kind, "structure": c.structure.config(), "info": c.info}
                for name, c in self.components.items()
            ],
            "info": self.info,
        }

    def save(self, path: str | os.PathLike) -> Path:
        def write(tmp: Path) -> None:
            (tmp / "meta.json").write_text(json.dumps(self.meta(), indent=2) + "\n", encoding="utf-8")
            for name, component in self.components.items():
                np.save(tmp / f"{name}.npy", component.weights.array, allow_pickle=False)
            np.save(tmp / VOCABULARY, self.vocabulary, allow_pickle=False)

        return write_directory(path, write)


def write_directory(path: str | os.PathLike, write) -> Path:
    """Atomically replace directory `path` by what write(tmp_dir) puts in a fresh one.

    On any failure the previous directory stays (or is put back) as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        # mkdtemp makes a private (0700) directory; a model is as readable as any directory.
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)
        write(tmp)
        old = None
        if path.exists():
            old = path.with_name(f".{path.name}.old{os.getpid()}")
            os.replace(path, old)
        try:
            os.replace(tmp, path)
        except BaseException:
            if old is not None:
                os.replace(old, path)  # put the previous directory back
            raise
        if old is not None:
            shutil.rmtree(old)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return path


BEST_MODEL = "model-best"  # inside a training output directory, as `spacy train` names it


def load(path: str | os.PathLike, kinds: Iterable[str] | None = None) -> Pipeline:
    """Load a model directory (or a training output directory's model-best); the format
    and its version are checked before anything else. `kinds` ("tagger", "parser",
    "labeler"): read only the components of these kinds (the spaCy tagger does not need
    the parser's weights)."""
    path = Path(path)
    if not (path / "meta.json").exists() and (path / BEST_MODEL / "meta.json").is_file():
        path = path / BEST_MODEL  # a training output directory: its best model
    meta_path = path / "meta.json"
    if not meta_path.is_file():
        raise ModelError(f"{path}: not an arborist model (no meta.json)")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ModelError(f"{meta_path}: unreadable meta.json ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ModelError(f"{meta_path}: not an arborist model (no 'format': '{FORMAT}' entry)")
    version = meta.get("format_version")
    if version == 1:  # a lone parser
        entries = [{"name": "parser", "kind": meta.get("kind"), "structure": meta.get("structure"),
                    "info": meta.get("info")}]
    elif version == FORMAT_VERSION:
        entries = meta.get("components")
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise ModelError(f"{meta_path}: 'components' must be a list of objects")
    else:
        raise ModelError(
            f"{meta_path}: model format version {version}, this arborist reads versions 1 and {FORMAT_VERSION}; "
            f"retrain the model or use the arborist version that wrote it ({meta.get('arborist_version')})"
        )
    pipeline = Pipeline(info=meta.get("info"))
    for entry in entries:
        name, kind = entry.get("name"), entry.get("kind")
        if kind not in KINDS:
            raise ModelError(f"{meta_path}: unknown model kind {kind!r}")
        if kinds is not None and kind not in kinds:
            continue
        if not isinstance(name, str) or not NAME.match(name) or name in RESERVED:
            raise ModelError(f"{meta_path}: invalid component name {name!r}")
        if name in pipeline.components:
            raise ModelError(f"{meta_path}: two components named {name!r}")
        component_class, structure_class = KINDS[kind]
        try:
            structure = structure_class.from_config(entry["structure"])
        except (KeyError, TypeError, ValueError) as e:
            raise ModelError(f"{meta_path}: invalid 'structure' entry of {name} ({type(e).__name__}: {e})") from None
        weights_path = path / ("weights.npy" if version == 1 else f"{name}.npy")
        try:
            weights = np.load(weights_path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise ModelError(f"{weights_path}: cannot read weights ({e})") from None
        if weights.dtype != np.float64 or weights.shape != (1 << structure.hash_bits,):
            raise ModelError(
                f"{weights_path}: {weights.dtype} {weights.shape} does not match hash_bits {structure.hash_bits} "
                f"(expected float64 ({1 << structure.hash_bits},))"
            )
        try:
            pipeline.add(name, component_class(structure, weights, entry.get("info")))
        except ValueError as e:
            raise ModelError(f"{meta_path}: {e}") from None
    if (path / VOCABULARY).is_file():
        try:
            vocabulary = np.load(path / VOCABULARY, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise ModelError(f"{path / VOCABULARY}: cannot read the vocabulary ({e})") from None
        if vocabulary.dtype != np.uint64 or vocabulary.ndim != 1 or not (vocabulary[1:] > vocabulary[:-1]).all():
            raise ModelError(f"{path / VOCABULARY}: expected a sorted 1-d uint64 array without repeats, "
                             f"got {vocabulary.dtype} {vocabulary.shape}")
        pipeline.vocabulary = vocabulary
    return pipeline
