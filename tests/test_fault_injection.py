"""A training run killed (SIGKILL) at every directory swap of model-best and of the
checkpoint, then resumed, ends with every component and the weights of an uninterrupted
run (issue 28, item 1); the output location and the data are checked before training
(items 7 and 8)."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arborist.train import load_config, train

SAMPLE = Path(__file__).resolve().parents[1] / "corpora" / "sample"
CONFIG = """
[components]

[components.upos]

[components.upos.structure]
@structures = "arborist.LinearChain.v1"
attribute = "upos"
hash_bits = 12

[components.upos.trainer]
@trainers = "arborist.Perceptron.v1"
seed = 0

[components.parser]

[components.parser.structure]
@structures = "arborist.DependencyTree.v1"
hash_bits = 12

[components.parser.trainer]
@trainers = "arborist.Perceptron.v1"
seed = 0

[training]
train_path = "{train}"
dev_path = "{dev}"
max_epochs = 2
max_train_sentences = 60
jackknife_folds = 2

[tracking]
wandb = false
"""
KILLED_RUN = """
import os, signal, sys
from pathlib import Path
calls = [0]
real = os.replace
def replace(a, b):
    calls[0] += 1
    if calls[0] == int(sys.argv[3]):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(a, b)
os.replace = replace
from arborist.train import load_config, train
train(load_config(sys.argv[1]), Path(sys.argv[2]), use_wandb=False)
"""


def weights(model: Path) -> dict[str, str]:
    return {p.name: hashlib.md5(p.read_bytes()).hexdigest() for p in sorted(model.glob("*.npy"))}


# Both components trained with seeds = 2 (`Training.train_members`): the runs' sum and the
# current run's best live in the checkpoint, and model-best holds the mean of the runs so far.
SEEDS = """
[components.upos.training]
seeds = 2

[components.parser.training]
seeds = 2
"""


@pytest.fixture(scope="module", params=["one-run", "seeds"])
def reference(tmp_path_factory, request):
    root = tmp_path_factory.mktemp("faults")
    config = root / "tiny.cfg"
    config.write_text(CONFIG.format(train=SAMPLE / "sample-train.conllu", dev=SAMPLE / "sample-dev.conllu")
                      + (SEEDS if request.param == "seeds" else ""))
    calls = [0]
    real = os.replace

    def counting(a, b):
        calls[0] += 1
        return real(a, b)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "replace", counting)
        train(load_config(config), root / "straight", use_wandb=False)
    return root, config, calls[0], weights(root / "straight" / "model-best")


def test_every_kill_point_resumes_to_the_uninterrupted_weights(reference):
    root, config, n_calls, expected = reference
    assert set(expected) == {"upos.npy", "parser.npy", "vocabulary.npy"} and n_calls >= 8
    for k in range(1, n_calls + 1):
        out = root / f"killed{k}"
        done = subprocess.run([sys.executable, "-c", KILLED_RUN, str(config), str(out), str(k)],
                              capture_output=True, text=True, timeout=300, env=dict(os.environ, WANDB_MODE="disabled"))
        assert done.returncode == -9, (k, done.stderr[-2000:])
        resume = (out / "checkpoint" / "state.json").is_file() or any(out.glob(".checkpoint.old*"))
        train(load_config(config), out, resume=resume, use_wandb=False)
        assert weights(out / "model-best") == expected, k
        hidden = sorted(p.name for p in out.iterdir() if p.name.startswith("."))
        assert hidden == [], (k, hidden)


def test_output_location_is_checked_before_training(tmp_path):
    config = tmp_path / "tiny.cfg"
    config.write_text(CONFIG.format(train=SAMPLE / "sample-train.conllu", dev=SAMPLE / "sample-dev.conllu"))
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(ValueError, match="a-file: the output directory is a file"):
        train(load_config(config), tmp_path / "a-file", use_wandb=False)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "model-best").write_text("x")
    with pytest.raises(ValueError, match="model-best: its model-best is a file"):
        train(load_config(config), tmp_path / "run", use_wandb=False)
    assert (tmp_path / "run" / "model-best").read_text() == "x"  # nothing renamed aside


def test_resume_refuses_changed_data(tmp_path):
    data = tmp_path / "train.conllu"
    data.write_bytes((SAMPLE / "sample-train.conllu").read_bytes())
    config = tmp_path / "tiny.cfg"
    config.write_text(CONFIG.format(train=data, dev=SAMPLE / "sample-dev.conllu").replace("max_epochs = 2",
                                                                                          "max_epochs = 1"))
    train(load_config(config), tmp_path / "run", use_wandb=False)
    blocks = data.read_text(encoding="utf-8").split("\n\n")
    data.write_text("\n\n".join(blocks[:40]) + "\n\n", encoding="utf-8")  # same path, fewer sentences
    with pytest.raises(ValueError, match="the data changed since the checkpoint was written \\(train_path\\)"):
        train(load_config(config, {"training.max_epochs": 2}), tmp_path / "run", resume=True, use_wandb=False)
