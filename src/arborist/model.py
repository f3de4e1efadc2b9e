"""Models on disk and in memory: a pipeline of components in one directory with meta.json
and .npy arrays, no pickle.

    meta.json         format, version, and per component its name, its kind, its
                      structure's registry call ({"@structures": name, arguments},
                      what was learned, such as a tag or label set, included), its
                      trainer's registry call and what training recorded
    <name>.npy        each component's weights (float64, 2^hash_bits), and any other
                      files its kind saves
    vocabulary.npy    sorted 64-bit hashes of the training forms (for accuracy on
                      words unseen in training)

Loading resolves each structure's call through `arborist.registry`, and each kind's
class loads its files. Saving is atomic: the model is written to a temporary sibling
directory and renamed into place, so an interrupted save never leaves a half-written
model (and never destroys the previous one). Formats 1 (a lone parser with
weights.npy) and 2 still load (`arborist.legacy` converts their meta.json).

Nothing here knows a component kind: a pipeline runs its components in order, each
on what the ones before it wrote (`arborist.component`).
"""
from __future__ import annotations

import errno
import functools
import json
import operator
import os
import re
import shutil
import tempfile
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from .component import Component, Confidence, ModelError
from .sentence import FORM, MISSING_HASH, UPOS, Sentence, SentenceBatch

FORMAT = "arborist-model"
FORMAT_VERSION = 3
VOCABULARY = "vocabulary.npy"
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
RESERVED = {"vocabulary", "meta", "weights"}  # names of the model's other files
DEFAULT_LANG = "en"
# UD's file names: "it_partut-ud-train.conllu" is language "it" (its ISO 639 code, which is
# spaCy's where spaCy has the language).
UD_FILE_NAME = re.compile(r"^([a-z]{2,3})_[a-z0-9]+-ud-[a-z]+\.conllu$")


@functools.lru_cache(maxsize=None)
def spacy_language_error(code: str) -> str | None:
    """Why spaCy cannot make a blank pipeline of language `code` (it has no such language, or
    the language needs a library that is not installed: Japanese's SudachiPy...), or None."""
    import spacy

    try:
        spacy.blank(code)
    except Exception as e:  # ImportError, mostly; whatever the language's own setup raises
        return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return None


def spacy_has_language(code: str) -> bool:
    return spacy_language_error(code) is None


def language_code(path) -> str | None:
    """spaCy's code of the language of a UD treebank file, from its name
    ("it_partut-ud-train.conllu": "it"; "xx", spaCy's multi-language class, for a language
    spaCy lacks or cannot make here), or None for a file not named as UD names them."""
    match = UD_FILE_NAME.match(Path(str(path)).name)
    if match is None:
        return None
    return match.group(1) if spacy_has_language(match.group(1)) else "xx"

__all__ = ["BEST_MODEL", "Component", "Confidence", "ModelError", "Parsed", "Pipeline", "load", "write_directory"]


@dataclass
class Parsed:
    """One sentence as a pipeline annotated it. It unpacks as the triple
    (sentence, heads, deprels), so `tagged, heads, deprels = pipeline.annotate(x)`.

    sentence   the input with the predicted token columns (tags...) in place
    heads      the predicted heads (int32, n+1, heads[0] = -1), None without a component
               writing HEAD
    deprels    the predicted DEPREL strings (n+1, '' for the root), None without one
    values     {component name: its prediction}
    columns    {column: one string per word} of the predicted token columns (UPOS, XPOS,
               LEMMA, FEATS, MISC...), for CoNLL-U output
    confidences  {column: Confidence over the sentence's words} ("head", "deprel", "upos"...)
               when probabilities were asked for (`confidence=k`), else empty"""

    sentence: Sentence
    heads: np.ndarray | None = None
    deprels: list[str] | None = None
    values: dict = field(default_factory=dict)
    columns: dict = field(default_factory=dict)
    confidences: dict = field(default_factory=dict)

    def _triple(self) -> tuple:
        return self.sentence, self.heads, self.deprels

    def __iter__(self):
        return iter(self._triple())

    def __getitem__(self, index):
        return self._triple()[index]

    def __len__(self) -> int:
        return 3


class UntaggedInputWarning(UserWarning):
    """Gold tags asked for (`gold_tags`, `--gold-tags`) on sentences without any."""


_NOT_A_SENTENCE = ("annotate takes arborist Sentences (from read_conllu, Sentence.from_columns or "
                   "Pipeline.tokenize), got {}")


def _checked(sentences, confidence) -> list[Sentence]:
    """The sentences as a list, checked, with the `confidence` setting: a str or a list of
    words was an AttributeError deep inside, confidence=-1 numpy's "negative dimensions"."""
    if isinstance(sentences, (str, Sentence)):
        raise TypeError("annotate_many takes a list of Sentences, got one " + type(sentences).__name__)
    sentences = list(sentences)
    bad = [s for s in sentences if not isinstance(s, Sentence)]
    if bad:
        raise TypeError(_NOT_A_SENTENCE.format(type(bad[0]).__name__))
    if confidence is not None and _integer(confidence, 0) is None:
        raise ValueError(f"confidence is the number of best values per word, an int >= 0 (or None), got {confidence!r}")
    return sentences


def _integer(value, least: int) -> int | None:
    """`value` as an int (numpy's integers too) if it is one and at least `least`, else None."""
    if isinstance(value, bool):
        return None
    try:
        value = operator.index(value)
    except TypeError:
        return None
    return value if value >= least else None


def annotate(components: list[Component], sentences: list[Sentence], confidence: int | None = None
             ) -> list[Parsed]:
    """Run the components in order on the sentences, as one batch: each component's batch
    kernel reads what the components before it wrote into the batch. `confidence=k` (k >= 0)
    also gives each sentence its `confidences`, with each word's k most probable values."""
    batch = SentenceBatch.from_sentences(sentences)
    probabilities: dict[str, Confidence] = {}
    predicted = annotate_batch(components, batch, confidence, probabilities)
    out = []
    for i, sentence in enumerate(sentences):
        parsed = Parsed(sentence)
        a, b = int(batch.starts[i]) + 1, int(batch.starts[i + 1])
        for column, c in probabilities.items():
            parsed.confidences[column] = Confidence(c.prob[a:b], c.top[a:b], c.top_prob[a:b], c.names)
        fields = None
        for component in components:
            if component.name not in predicted:
                continue
            value = component.value(batch, predicted[component.name], i)
            parsed.values[component.name] = value
            if component.tagging:
                # What `component.apply` would do to the sentence: its rows are in the batch
                fields = (fields or {}) | component.sentence_fields(value)
                parsed.columns.update(component.column_values(value))
            if "head" in component.writes:
                parsed.heads = value
            if "deprel" in component.writes:
                parsed.deprels = value
        if fields is not None:
            parsed.sentence = replace(sentence, attrs=batch.attrs[:, a - 1:b].copy(), **fields)
        out.append(parsed)
    return out


def annotate_batch(components: list[Component], batch: SentenceBatch, confidence: int | None = None,
                   found: dict | None = None) -> dict[str, np.ndarray]:
    """{component name: its prediction} for the batch; each stage runs in one region
    without the GIL where its structure has a batch kernel, so threads sharing a pipeline
    run in parallel. With `confidence=k`, each component that gives probabilities predicts
    with them instead (`Component.annotate_confident`), and `found` receives {column:
    Confidence} over the batch's columns."""
    predicted = {}
    for component in components:
        if confidence is None:
            result = component.annotate(batch)
        else:
            result, conf = component.annotate_confident(batch, confidence)
            if found is not None:
                found.update(conf)
        if result is not None:
            predicted[component.name] = result
    return predicted


class Pipeline:
    """Components in order, each reading what the ones before it predicted (the taggers'
    tags, the parser's tree...).

    `annotate` runs them on a sentence; `gold_tags=True` runs only the tree stage (the
    components that write no token column) on the input's own tags, lemmas and
    features, and `tag_only=True` only the tagging stage. A component that reads HEAD
    with no component writing it labels the input's own tree."""

    def __init__(self, components: dict[str, Component] | None = None, vocabulary: np.ndarray | None = None,
                 info: dict | None = None):
        self.components: dict[str, Component] = {}
        for name, component in (components or {}).items():
            self.add(name, component)
        self.vocabulary = np.unique(np.asarray(vocabulary if vocabulary is not None else [], dtype=np.uint64))
        self.info = dict(info or {})

    def add(self, name: str, component: Component) -> None:
        """Add (or replace) a component; two components never write the same column."""
        if not NAME.match(name) or name in RESERVED:
            raise ValueError(f"component name {name!r} must be letters, digits, '_' or '-', "
                             f"and not one of {', '.join(sorted(RESERVED))}")
        for other_name, other in self.components.items():
            shared = [c for c in component.writes if c in other.writes]
            if other_name != name and shared:
                raise ValueError(f"two {component.kind}s for {shared[0].upper()} ({other_name!r} and {name!r}): "
                                 f"a pipeline has at most one {component.kind} per column")
        component.name = name
        self.components[name] = component
        ordered = list(self.components.values())
        for i, c in enumerate(ordered):
            c.link(ordered[:i])

    def writer(self, column: str) -> Component | None:
        """The component that predicts `column` ("upos", "head"...), if any."""
        return next((c for c in self.components.values() if column in c.writes), None)

    def stage(self, gold_tags: bool = False, tag_only: bool = False) -> list[Component]:
        """The components that run: all; the tree stage only (`gold_tags`); or the tagging stage."""
        # the text stage (a tokenizer, which reads raw text) runs before: `tokenize`
        components = [c for c in self.components.values() if "text" not in c.reads]
        if tag_only:
            return [c for c in components if c.tagging]
        if gold_tags:
            return [c for c in components if not c.tagging]
        return components

    @property
    def taggers(self) -> list[Component]:
        """The components of the tagging stage (they write token columns only)."""
        return self.stage(tag_only=True)

    def annotate_batch(self, batch: SentenceBatch, gold_tags: bool = False, tag_only: bool = False
                       ) -> dict[str, np.ndarray]:
        """Each component's prediction for the batch ({name: array}, in its kind's layout);
        the batch's rows are updated with what the components wrote."""
        return annotate_batch(self.stage(gold_tags, tag_only), batch)

    def annotate_confident(self, batch: SentenceBatch, k: int = 0, gold_tags: bool = False, tag_only: bool = False
                           ) -> tuple[dict[str, np.ndarray], dict[str, Confidence]]:
        """`annotate_batch` with probabilities: ({name: prediction}, {column: Confidence}), the
        probability of each word's predicted head, label, tag..., and its k most probable."""
        found: dict[str, Confidence] = {}
        predicted = annotate_batch(self.stage(gold_tags, tag_only), batch, k, found)
        return predicted, found

    def annotate_many(self, sentences: list[Sentence], gold_tags: bool = False, tag_only: bool = False,
                      confidence: int | None = None) -> list[Parsed]:
        """`annotate` of each sentence, computed as one batch (`confidence=k`: with each
        word's probabilities and k best values, see `Parsed.confidences`)."""
        sentences = _checked(sentences, confidence)
        components = self.stage(gold_tags, tag_only)
        if gold_tags and sentences and any("upos" in c.reads for c in components) and all(
                (s.attrs[UPOS, 1:] == MISSING_HASH).all() for s in sentences):
            warnings.warn(f"{sentences[0].source}: gold tags asked for (gold_tags, --gold-tags), and the sentences "
                          "have no UPOS (every one '_'): the parser reads no tags (leave that out to predict them)",
                          UntaggedInputWarning, stacklevel=2)
        # A component that reads HEAD with none writing it labels the input's tree: sentences
        # without one are annotated by the others only.
        needs_tree = [c for c in components if "head" in c.reads] if not any(
            "head" in c.writes for c in components) else []
        if needs_tree and not all(s.has_heads for s in sentences):
            with_tree = [s.has_heads for s in sentences]
            rest = [c for c in components if c not in needs_tree]
            treed = iter(annotate(components, [s for s, t in zip(sentences, with_tree) if t], confidence))
            untreed = iter(annotate(rest, [s for s, t in zip(sentences, with_tree) if not t], confidence))
            return [next(treed) if t else next(untreed) for t in with_tree]
        return annotate(components, sentences, confidence)

    def annotate(self, sentence: Sentence, gold_tags: bool = False, confidence: int | None = None) -> Parsed:
        """(the sentence with predicted tags, predicted heads or None without a parser,
        DEPREL strings (n+1, '' for the root) or None without a labeler), with every
        component's prediction in `.values` and the token columns in `.columns`."""
        if not isinstance(sentence, Sentence):
            raise TypeError(_NOT_A_SENTENCE.format(type(sentence).__name__))
        return self.annotate_many([sentence], gold_tags, confidence=confidence)[0]

    def parse(self, sentences: Iterable[Sentence], gold_tags: bool = False, batch_size: int = 64,
              confidence: int | None = None):
        """`annotate` of each sentence, `batch_size` sentences at a time."""
        if _integer(batch_size, 1) is None:
            raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")  # (0 read all into one batch)
        batch_size = operator.index(batch_size)
        batch = []
        for sentence in sentences:
            batch.append(sentence)
            if len(batch) == batch_size:
                yield from self.annotate_many(batch, gold_tags, confidence=confidence)
                batch = []
        if batch:
            yield from self.annotate_many(batch, gold_tags, confidence=confidence)

    def tokenize(self, texts: list[str], presegmented: bool = False) -> list[tuple[object, list[Sentence]]]:
        """(document, its sentences as `Sentence`s of words) of each raw text, by the pipeline's
        text stage (the component that writes FORM); a multiword token's words are words of
        the sentence. `presegmented`: each line of a text is one sentence (tokenized, not split).
        None when the pipeline has no text stage."""
        from .tokenizer.api import check_texts

        check_texts(texts)  # (here too: a pipeline without a text stage returns None)
        tokenizer = self.writer("form")
        if tokenizer is None:
            return None
        docs = list(tokenizer.tokenize(texts, presegmented=presegmented))
        sentences = iter(Sentence.from_forms([[w for t in s.tokens for w in t.word_forms]
                                              for doc in docs for s in doc.sentences]))
        return [(doc, [next(sentences) for _ in doc.sentences]) for doc in docs]

    def tag(self, sentence: Sentence) -> Sentence:
        """The sentence with the tagging stage's predictions (nothing else runs)."""
        return self.annotate_many([sentence], tag_only=True)[0].sentence if self.taggers else sentence

    def unseen(self, sentence: Sentence) -> np.ndarray:
        """Boolean per word: its form never occurs in the training data."""
        forms = sentence.attrs[FORM, 1:]
        at = np.searchsorted(self.vocabulary, forms)
        found = at < len(self.vocabulary)
        found[found] = self.vocabulary[at[found]] == forms[found]
        return ~found

    def score(self, gold: list[Sentence], parsed: list[Parsed], components: list[Component]) -> dict:
        """The scores of each of `components` on the annotated sentences, merged in pipeline
        order (a later component's score of the same name wins: the parser's UAS over its
        pruner's)."""
        scores: dict = {}
        for component in components:
            scores.update(component.score(gold, parsed, self.unseen))
        return scores

    @property
    def lang(self) -> str:
        """The language of the training data (spaCy's code: "en"): spaCy's tokenizer for raw
        text when the model has none, and the Language of spaCy pipelines. The training
        config's `[nlp] lang`, as in a spaCy config (`arborist train` sets it), else that of
        its training file's UD name (models trained before it did), else "en"."""
        config = _training_config(self.info, "meta.json")
        lang = (config.get("nlp") or {}).get("lang")
        if isinstance(lang, str) and lang:
            return lang
        return language_code((config.get("training") or {}).get("train_path") or "") or DEFAULT_LANG

    def subset(self, keep: Callable[[Component], bool]) -> "Pipeline":
        """The pipeline of the components `keep` selects (sharing them and the vocabulary)."""
        out = Pipeline(vocabulary=self.vocabulary, info=self.info)
        out.components = {n: c for n, c in self.components.items() if keep(c)}
        return out

    def meta(self) -> dict:
        from . import __version__

        return {"format": FORMAT, "format_version": FORMAT_VERSION, "arborist_version": __version__,
                "components": [c.registry_call() for c in self.components.values()], "info": self.info}

    def save(self, path: str | os.PathLike, extra: dict[str, str] | None = None) -> Path:
        """Write the model to directory `path` (atomically), with `extra` files beside its own
        ({name: text}: a spaCy component's settings)."""
        def write(tmp: Path) -> None:
            (tmp / "meta.json").write_text(json.dumps(self.meta(), indent=2) + "\n", encoding="utf-8")
            for component in self.components.values():
                component.save(tmp)
            np.save(tmp / VOCABULARY, self.vocabulary, allow_pickle=False)
            for name, text in (extra or {}).items():
                (tmp / name).write_text(text, encoding="utf-8")

        return write_directory(path, write)


def write_directory(path: str | os.PathLike, write) -> Path:
    """Atomically replace directory `path` by what write(tmp_dir) puts in a fresh one.

    On any failure the previous directory stays (or is put back) as it was. A process
    killed between moving the previous directory aside and renaming the new one into
    place leaves `.NAME.old<pid>`: the next write, and `recover_directory`, put it back."""
    path = Path(path)
    if path.is_symlink() or path.exists() and not path.is_dir():
        # (moved aside and removed, a file or a link would be lost, and not by rmtree)
        raise NotADirectoryError(errno.ENOTDIR, "exists and is not a directory", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    recover_directory(path)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp{os.getpid()}-", dir=path.parent))
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


def recover_directory(path: str | os.PathLike) -> None:
    """Undo what a process killed inside `write_directory` left beside `path`: put the
    previous directory back when `path` is missing, and remove the temporary and old
    directories of writers that are gone (never those of a live one)."""
    path = Path(path)
    if not path.parent.is_dir():
        return
    leftovers = []
    for kind in ("old", "tmp"):
        for candidate in path.parent.glob(f".{path.name}.{kind}*"):
            pid = candidate.name[len(f".{path.name}.{kind}"):].partition("-")[0]
            if pid.isdigit() and candidate.is_dir() and not _alive(int(pid)):
                leftovers.append((kind, candidate))
    olds = sorted((c for kind, c in leftovers if kind == "old"), key=lambda c: c.stat().st_mtime)
    if not path.exists() and olds:
        os.replace(olds.pop(), path)  # complete by construction: it was the directory in place
    for _, candidate in leftovers:
        if candidate.exists():
            shutil.rmtree(candidate, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # this process is not inside a write of its own while it recovers
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


BEST_MODEL = "model-best"  # inside a training output directory, as `spacy train` names it


def read_json(path: Path, what: str, error: type = ModelError):
    """The JSON of a file arborist wrote; anything else is an `error` naming the file."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise error(f"{path}: unreadable {what} ({type(e).__name__}: {e})") from None


def _training_config(info: dict, where):
    """The training config a model's info keeps (empty without one); one that is not a config
    is a ModelError naming `where`, its meta.json."""
    from confection import Config

    text = info.get("config") or ""
    try:
        return Config().from_str(text if isinstance(text, str) else None, interpolate=False)
    except Exception as e:  # confection's ConfigValidationError, configparser's errors, a TypeError
        raise ModelError(f"{where}: info.config is not the training config ({type(e).__name__})") from None


def read_meta(path: Path) -> tuple[Path, dict, list[dict]]:
    """(the model directory, meta.json, its component entries in format 3); a training
    output directory stands for its model-best."""
    from .legacy import convert_meta

    if not (path / "meta.json").exists() and (path / BEST_MODEL / "meta.json").is_file():
        path = path / BEST_MODEL  # a training output directory: its best model
    meta_path = path / "meta.json"
    if not meta_path.is_file():
        # A write killed midway leaves the previous model as `.NAME.old<pid>`. It is named here,
        # never moved: a reader cannot tell a killed writer from a live one it cannot see (in
        # another PID namespace); writers and `train --resume` put it back.
        aside = [(old, path) for old in sorted(path.parent.glob(f".{path.name}.old*"))]
        if path.is_dir():
            aside += [(old, path / BEST_MODEL) for old in sorted(path.glob(f".{BEST_MODEL}.old*"))]
        hint = (f"; a write killed midway left the previous model in {aside[-1][0]} (move it back to "
                f"{aside[-1][1]})" if aside else "")
        if path.is_file():
            hint = f"; a model is a directory{f' (this file is in {path.parent})' if path.name == 'meta.json' else ''}"
        raise ModelError(f"{path}: not an arborist model (no meta.json){hint}")
    meta = read_json(meta_path, "meta.json")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ModelError(f"{meta_path}: not an arborist model (no 'format': '{FORMAT}' entry)")
    if not isinstance(meta.get("info", {}), (dict, type(None))):
        raise ModelError(f"{meta_path}: 'info' must be an object")
    _training_config(meta.get("info") or {}, meta_path)  # (`Pipeline.lang` reads it)
    version = meta.get("format_version")
    if version in (1, 2):
        entries = convert_meta(meta)
    elif version == FORMAT_VERSION:
        entries = meta.get("components")
    else:
        raise ModelError(
            f"{meta_path}: model format version {version}, this arborist reads versions 1 to {FORMAT_VERSION}; "
            f"retrain the model or use the arborist version that wrote it ({meta.get('arborist_version')})")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ModelError(f"{meta_path}: 'components' must be a list of objects")
    return path, meta, entries


def load(path: str | os.PathLike, tagging: bool | None = None, mmap: bool = False) -> Pipeline:
    """Load a model directory (or a training output directory's model-best); the format
    and its version are checked before anything else. `tagging`: read only the components
    of the tagging stage (True) or of the tree stage (False) (the spaCy tagger does not
    need the parser's weights). `mmap`: map the weight arrays copy-on-write (processes of
    one machine share their pages)."""
    from .registry import component_kind, make_structure

    path, meta, entries = read_meta(Path(path))
    meta_path = path / "meta.json"
    pipeline = Pipeline(info=meta.get("info"))
    for entry in entries:
        name, kind = entry.get("name"), entry.get("kind")
        try:
            cls = component_kind(kind) if isinstance(kind, str) else None
        except Exception:  # catalogue's RegistryError
            cls = None
        if cls is None:
            raise ModelError(f"{meta_path}: unknown model kind {kind!r}")
        if not isinstance(name, str) or not NAME.match(name) or name in RESERVED:
            raise ModelError(f"{meta_path}: invalid component name {name!r}")
        if name in pipeline.components:
            raise ModelError(f"{meta_path}: two components named {name!r}")
        call = entry.get("structure")
        try:
            if not isinstance(call, dict) or not isinstance(call.get("@structures"), str):
                raise ValueError("expected a registry call {\"@structures\": name, ...}")
            if cls.structures and call["@structures"] not in cls.structures:
                raise ValueError(f"a {kind} does not predict with {call['@structures']}")
            structure = make_structure(call)
        except Exception as e:  # confection's validation and the structures' own checks
            raise ModelError(f"{meta_path}: invalid 'structure' entry of {name} ({type(e).__name__}: {e})") from None
        if tagging is not None and cls(structure).tagging != tagging:
            continue
        component = cls.load(path, name, structure, entry.get("info"), entry.get("weights_file"), mmap)
        component.trainer_call = entry.get("trainer")
        try:
            pipeline.add(name, component)
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


def average(paths: Iterable[str | os.PathLike]) -> Pipeline:
    """The model whose weights are the mean of the models' weights, component by component.

    For models trained with one config on one treebank that differ in their seed (or epochs):
    a linear model's scores are linear in its weights, so the average scores every part as
    the mean of the models' scores, an ensemble that parses at the cost of one model.
    The models must differ in nothing but their weights (the same components, structures,
    learned state and vocabulary, file for file); anything else is a ModelError naming the
    file. The temperatures fitted for the single models do not hold for their average:
    they are dropped (fit them with `arborist calibrate`); each component's `info` keeps
    the members' under "averaged"."""
    paths = list(paths)
    if len(paths) < 2:
        raise ValueError(f"averaging needs at least two models, got {len(paths)}")
    first, _, entries = read_meta(Path(paths[0]))
    layout = [(e.get("name"), e.get("kind"), e.get("structure")) for e in entries]
    weight_files = {e.get("weights_file") or f"{e.get('name')}.npy" for e in entries}
    directories = [first]
    for p in paths[1:]:
        path, _, other = read_meta(Path(p))
        if [(e.get("name"), e.get("kind"), e.get("structure")) for e in other] != layout:
            raise ModelError(f"{path / 'meta.json'}: its components (names, kinds or structures) differ from "
                             f"{first / 'meta.json'}'s; only models that differ in their weights can be averaged")
        _same_files(first, path, skip={"meta.json"} | weight_files)
        directories.append(path)
    pipeline = load(first)
    others = [load(path, mmap=True) for path in directories[1:]]
    for name, component in pipeline.components.items():
        arrays = [other.components[name].weights.array for other in others]
        members = [component.info] + [other.components[name].info for other in others]
        component.info = {"averaged": [{k: v for k, v in info.items() if k != "temperature"} for info in members]}
        if all(np.array_equal(component.weights.array, x) for x in arrays):
            continue  # shared unchanged (a pruner trained once): kept bit for bit, not summed and divided
        for x in arrays:
            component.weights.array[:] += x
        component.weights.array[:] /= len(directories)
    pipeline.info = {**(pipeline.info or {}), "averaged_from": [str(d) for d in directories]}
    return pipeline


def _same_files(first: Path, other: Path, skip: set[str]) -> None:
    """ModelError unless the two model directories hold the same files with the same bytes,
    apart from the top-level files in `skip`."""
    import filecmp

    def listing(root: Path) -> set[str]:
        return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()} - skip

    ours, theirs = listing(first), listing(other)
    for name in sorted(ours ^ theirs):
        where = other if name in ours else first
        raise ModelError(f"{where / name}: missing, while the other model has it; only models that differ in "
                         "their weights can be averaged")
    for name in sorted(ours):
        if not filecmp.cmp(first / name, other / name, shallow=False):
            raise ModelError(f"{other / name}: differs from {first / name}; only models that differ in their "
                             "weights can be averaged")
