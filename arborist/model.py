"""Models on disk: a directory with meta.json and .npy arrays, no pickle.

Saving is atomic: the model is written to a temporary sibling directory and
renamed into place, so an interrupted save never leaves a half-written model
(and never destroys the previous one).
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

from .learn.weights import Weights
from .parser.tree import DependencyTree
from .sentence import Sentence

FORMAT = "arborist-model"
FORMAT_VERSION = 1


class ModelError(ValueError):
    pass


class Parser:
    """A trained dependency parser: a structure (feature configuration) and its weights."""

    kind = "parser"

    def __init__(self, structure: DependencyTree, weights: np.ndarray, info: dict | None = None):
        self.structure = structure
        self.weights = Weights(structure.hash_bits, False, np.ascontiguousarray(weights, dtype=np.float64))
        self.info = dict(info or {})

    def predict(self, sentence: Sentence) -> np.ndarray:
        """Predicted heads (int32, n+1; heads[0] = -1)."""
        s = self.structure
        return s.argmax(sentence, s.scores(sentence, self.weights))

    def parse(self, sentences: Iterable[Sentence]) -> Iterator[tuple[Sentence, np.ndarray]]:
        for sentence in sentences:
            yield sentence, self.predict(sentence)

    def meta(self) -> dict:
        from . import __version__

        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "kind": self.kind,
            "arborist_version": __version__,
            "structure": self.structure.config(),
            "labels": {"deprel": []},
            "info": self.info,
        }

    def save(self, path: str | os.PathLike) -> Path:
        def write(tmp: Path) -> None:
            (tmp / "meta.json").write_text(json.dumps(self.meta(), indent=2) + "\n", encoding="utf-8")
            np.save(tmp / "weights.npy", self.weights.array, allow_pickle=False)

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


def load(path: str | os.PathLike) -> Parser:
    """Load a model directory (or a training output directory's model-best); the format
    and its version are checked before anything else."""
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
    if version != FORMAT_VERSION:
        raise ModelError(
            f"{meta_path}: model format version {version}, this arborist reads version {FORMAT_VERSION}; "
            f"retrain the model or use the arborist version that wrote it ({meta.get('arborist_version')})"
        )
    if meta.get("kind") != Parser.kind:
        raise ModelError(f"{meta_path}: unknown model kind {meta.get('kind')!r}")
    try:
        structure = DependencyTree.from_config(meta["structure"])
    except (KeyError, TypeError, ValueError) as e:
        raise ModelError(f"{meta_path}: invalid 'structure' entry ({type(e).__name__}: {e})") from None
    try:
        weights = np.load(path / "weights.npy", allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ModelError(f"{path / 'weights.npy'}: cannot read weights ({e})") from None
    if weights.dtype != np.float64 or weights.shape != (1 << structure.hash_bits,):
        raise ModelError(
            f"{path / 'weights.npy'}: {weights.dtype} {weights.shape} does not match hash_bits {structure.hash_bits} "
            f"(expected float64 ({1 << structure.hash_bits},))"
        )
    return Parser(structure, weights, meta.get("info"))
