"""Jackknife folds in parallel processes (`[training] workers`) give what one process gives."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from trackers import Quiet

from arborist.corpus import read_corpus
from arborist.train import jackknife, load_config, train

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "corpora" / "sample"
SPEC = {"structure": {"@structures": "arborist.LinearChain.v1", "attribute": "upos", "hash_bits": 14},
        "trainer": {"@trainers": "arborist.Perceptron.v1", "seed": 0}}


def test_parallel_folds_equal_serial_folds():
    sentences = read_corpus(SAMPLE / "sample-train.conllu")[:90]
    serial = jackknife(SPEC, sentences, 3, 2, Quiet(), name="upos")
    parallel = jackknife(SPEC, sentences, 3, 2, Quiet(), name="upos", workers=2)
    assert parallel == serial and all(p is not None for p in parallel)
    assert any(tags != x.upos[1:] for tags, x in zip(serial, sentences))  # predictions, not the gold tags


def test_a_run_with_two_workers_trains_the_same_model(tmp_path):
    overrides = {"paths.train": str(SAMPLE / "sample-train.conllu"), "paths.dev": str(SAMPLE / "sample-dev.conllu"),
                 "training.max_epochs": 2, "training.jackknife_folds": 2}
    for name in ("upos", "xpos", "parser", "labeler"):
        overrides[f"components.{name}.structure.hash_bits"] = 14
    one, _ = train(load_config(REPO / "configs" / "quickstart.cfg", overrides), tmp_path / "one", Quiet())
    two, _ = train(load_config(REPO / "configs" / "quickstart.cfg", overrides | {"training.workers": 2}),
                   tmp_path / "two", Quiet())
    for name, component in one.components.items():
        np.testing.assert_array_equal(component.weights.array, two.components[name].weights.array, err_msg=name)


def test_workers_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="training.workers must be a positive integer"):
        train(load_config(REPO / "configs" / "quickstart.cfg", {"training.workers": 0}), tmp_path / "x", Quiet())
