"""Test-session settings: W&B is disabled unless a test turns it on (no run directories or
background processes from every `arborist train` a test runs)."""
import os

os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("WANDB_SILENT", "true")


import pytest  # noqa: E402


@pytest.fixture
def ray_engine():
    """Ray for a test whose training starts it (`training.engine = "ray"`), shut down after
    it, so that a later test (tests/test_distributed.py) can start its own."""
    ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install \"arborist[ray]\"")
    started = not ray.is_initialized()
    yield
    if started and ray.is_initialized():
        ray.shutdown()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A small model trained on the sample treebank: UPOS and XPOS taggers, a parser and a
    labeler (configs/quickstart.cfg, 2 epochs, small weight vectors), for the tests of the
    spaCy components and batch parsing."""
    from pathlib import Path

    from trackers import Quiet

    from arborist.train import load_config, train

    repo = Path(__file__).resolve().parents[1]
    sample = repo / "corpora" / "sample"
    overrides = {"paths.train": str(sample / "sample-train.conllu"), "paths.dev": str(sample / "sample-dev.conllu"),
                 "training.max_epochs": 2, "training.jackknife_folds": 2}
    for name in ("upos", "xpos", "parser", "labeler"):
        overrides[f"components.{name}.structure.hash_bits"] = 14
    out = tmp_path_factory.mktemp("tiny") / "run"
    train(load_config(repo / "configs" / "quickstart.cfg", overrides), out, Quiet())
    return out / "model-best"
