"""Jackknife folds in parallel processes (`[training] workers`) give what one process gives."""
from __future__ import annotations

import sys
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
    overrides = sample_overrides()
    one, report_one = train(load_config(REPO / "configs" / "quickstart.cfg", overrides), tmp_path / "one", Quiet())
    tracker = Events()
    two, report_two = train(load_config(REPO / "configs" / "quickstart.cfg", overrides | {"training.workers": 2}),
                            tmp_path / "two", tracker)
    # The labeler's epochs trained ahead, beside the parser's (`AheadTraining`): the same model.
    ahead = tracker.events.index("training labeler ahead, beside parser (its dev scores wait for parser)")
    assert ahead < tracker.events.index("train parser") < tracker.events.index("train labeler")
    for name, component in one.components.items():
        np.testing.assert_array_equal(component.weights.array, two.components[name].weights.array, err_msg=name)
        # The dev scores of every epoch (dev sentences annotated in two threads) and the
        # temperature (the parser scoring in two threads) are the one-worker ones too.
        a, b = report_one["components"][name], report_two["components"][name]
        assert [{k: v for k, v in e.items() if k.startswith("dev_") and "per_second" not in k} for e in a["history"]] \
            == [{k: v for k, v in e.items() if k.startswith("dev_") and "per_second" not in k} for e in b["history"]]
        assert a.get("calibration") == b.get("calibration")


def test_workers_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="training.workers must be a positive integer"):
        train(load_config(REPO / "configs" / "quickstart.cfg", {"training.workers": 0}), tmp_path / "x", Quiet())


@pytest.mark.parametrize("mixing", [False, True])
def test_ray_engine_trains_every_component_kind_as_locally(tmp_path, mixing, ray_engine):
    # Ray tasks (jackknife folds) receive the component's spec pickled, and Ray actors
    # (parameter-mixing shards) its structure: the morphologizer's and lemmatizer's (form
    # caches with locks) and the taggers' once could not be pickled. Without mixing the
    # model is the one worker's; with it, the local engine's mixed model.
    from test_lemma_morph_components import EXTRA, STACKED

    text = (REPO / "configs" / "quickstart.cfg").read_text().replace(
        "\n[components.parser]\n", STACKED + EXTRA[EXTRA.index("[components.lemma]"):] + "\n[components.parser]\n", 1)
    (tmp_path / "x.cfg").write_text(text)
    overrides = sample_overrides(**{"training.max_train_sentences": 60})
    if mixing:
        overrides |= {"training.workers": 2, "training.parameter_mixing": True}
    local, _ = train(load_config(tmp_path / "x.cfg", overrides), tmp_path / "local", Quiet())
    tracker = Events()
    on_ray, _ = train(load_config(tmp_path / "x.cfg", overrides | {"training.workers": 2, "training.engine": "ray"}),
                      tmp_path / "ray", tracker)
    for name in ("feats_draft", "feats", "lemma"):
        assert any(e.startswith(f"jackknifing {name}: 2 folds as Ray tasks") for e in tracker.events), tracker.events
    assert list(local.components) == ["upos", "xpos", "feats_draft", "feats", "lemma", "parser", "labeler"]
    for name, component in local.components.items():
        np.testing.assert_array_equal(component.weights.array, on_ray.components[name].weights.array, err_msg=name)


class Events(Quiet):
    """Quiet, recording component starts and messages in one sequence."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.events: list[str] = []

    def start_component(self, name, columns):
        self.events.append(f"train {name}")
        super().start_component(name, columns)

    def message(self, text):
        self.events.append(text)
        super().message(text)


def sample_overrides(**extra) -> dict:
    overrides = {"paths.train": str(SAMPLE / "sample-train.conllu"), "paths.dev": str(SAMPLE / "sample-dev.conllu"),
                 "training.max_epochs": 2, "training.jackknife_folds": 2}
    for name in ("upos", "xpos", "parser", "labeler"):
        overrides[f"components.{name}.structure.hash_bits"] = 14
    return overrides | extra


def test_folds_follow_their_component_in_the_background(tmp_path):
    # With two workers the UPOS folds run while the UPOS and XPOS taggers train, not when
    # the parser first asks for them: the cores are shared instead of one of them waiting.
    tracker = Events()
    train(load_config(REPO / "configs" / "quickstart.cfg", sample_overrides(**{"training.workers": 2})),
          tmp_path / "two", tracker)
    events = tracker.events
    upos_folds = next(i for i, e in enumerate(events) if e.startswith("jackknifing upos"))
    xpos_folds = next(i for i, e in enumerate(events) if e.startswith("jackknifing xpos"))
    assert "following its training" in events[upos_folds] and "background" in events[upos_folds]
    assert upos_folds < events.index("train upos") < xpos_folds < events.index("train xpos") < events.index("train parser")
    # One worker keeps today's order: the folds run when the parser needs them.
    tracker = Events()
    train(load_config(REPO / "configs" / "quickstart.cfg", sample_overrides()), tmp_path / "one", tracker)
    first_fold = next(i for i, e in enumerate(tracker.events) if e.startswith("jackknifing upos"))
    assert tracker.events.index("train xpos") < first_fold < tracker.events.index("train parser")


def test_an_interrupted_run_stops_its_background_folds(tmp_path):
    import multiprocessing

    tracker = Events(interrupt_at=("xpos", 1, 5))
    with pytest.raises(KeyboardInterrupt):
        train(load_config(REPO / "configs" / "quickstart.cfg", sample_overrides(**{"training.workers": 2})),
              tmp_path / "run", tracker)
    assert any(e.startswith("jackknifing upos") for e in tracker.events)  # the folds had started
    assert multiprocessing.active_children() == []


def test_epochs_trained_ahead_are_the_epochs_trained_here():
    from arborist.train import AheadTraining, ComponentSpec

    sentences = read_corpus(SAMPLE / "sample-train.conllu")[:60]
    spec = ComponentSpec("upos", SPEC)
    ahead = AheadTraining(spec, sentences, [], 3)
    component, trainer = spec.resolve()
    component.structure.initialize(sentences)
    examples = component.examples(sentences, training=True)
    trainer.begin(component.structure, examples, component.structure.hash_bits)
    try:
        for epoch in (1, 2, 3):
            metrics, arrays, meta = ahead.epoch(epoch)
            here = trainer.epoch(component.structure, examples, None)
            assert metrics["updates"] == here["updates"] and metrics["train_accuracy"] == here["train_accuracy"]
            expected_arrays, expected_meta = trainer.state()
            assert meta == expected_meta and sorted(arrays) == sorted(expected_arrays)
            for key in arrays:
                np.testing.assert_array_equal(arrays[key], expected_arrays[key], err_msg=key)
    finally:
        ahead.close()
    assert not ahead.directory.exists()


def test_a_failing_or_dying_ahead_process_is_a_clear_error(monkeypatch):
    import os

    from arborist.train import AheadTraining, ComponentSpec

    sentences = read_corpus(SAMPLE / "sample-train.conllu")[:20]

    def boom(self):
        raise ValueError("boom")

    monkeypatch.setattr(ComponentSpec, "resolve", boom)  # the forked process inherits it
    ahead = AheadTraining(ComponentSpec("upos", SPEC), sentences, [], 2)
    with pytest.raises(RuntimeError, match="training upos ahead failed: ValueError: boom"):
        ahead.epoch(1)
    ahead.close()
    monkeypatch.setattr(ComponentSpec, "resolve", lambda self: os._exit(3))
    ahead = AheadTraining(ComponentSpec("upos", SPEC), sentences, [], 2)
    with pytest.raises(RuntimeError, match="the process training upos ahead died \\(exit code 3\\) before epoch 1"):
        ahead.epoch(1)
    ahead.close()


def test_a_run_interrupted_while_its_labeler_trains_ahead_resumes_to_the_same_model(tmp_path):
    import multiprocessing

    config = load_config(REPO / "configs" / "quickstart.cfg", sample_overrides(**{"training.workers": 2}))
    whole, _ = train(config, tmp_path / "whole", Quiet())
    # Interrupted after the labeler's last epoch, before that epoch's checkpoint: the resumed
    # run restores the checkpoint of the epoch before (a state trained ahead) and trains the
    # last epoch here.
    with pytest.raises(KeyboardInterrupt):
        train(config, tmp_path / "cut", Quiet(interrupt_on="labeler: temperature"))
    assert multiprocessing.active_children() == []
    resumed, report = train(config, tmp_path / "cut", Quiet(), resume=True)
    for name, component in whole.components.items():
        np.testing.assert_array_equal(component.weights.array, resumed.components[name].weights.array, err_msg=name)


def test_a_failing_or_dying_fold_worker_is_a_clear_error(monkeypatch):
    import os

    import arborist.train as training

    sentences = read_corpus(SAMPLE / "sample-train.conllu")[:20]

    def boom(fold, job, progress=None):
        raise ValueError("boom")

    monkeypatch.setattr(training, "_fold", boom)  # the forked workers inherit it
    with pytest.raises(RuntimeError, match="jackknifing upos failed in a worker process: ValueError: boom"):
        training.jackknife(SPEC, sentences, 2, 1, Quiet(), name="upos", workers=2)
    monkeypatch.setattr(training, "_fold", lambda fold, job, progress=None: os._exit(3))
    with pytest.raises(RuntimeError, match="a jackknife process of upos died \\(exit code 3\\)"):
        training.jackknife(SPEC, sentences, 2, 1, Quiet(), name="upos", workers=2)


@pytest.mark.parametrize("best,epochs", [(3, 3), (1, 3), (2, 4)])
def test_folds_that_follow_a_training_equal_folds_told_the_epochs(best, epochs):
    # The following folds train while the best epoch is unknown, keep each epoch's weights,
    # and end with those of the best epoch (here chosen after `epochs` epochs of training).
    import time as clock

    from arborist.train import Jackknife

    sentences = read_corpus(SAMPLE / "sample-train.conllu")[:90]
    expected = jackknife(SPEC, sentences, 3, best, Quiet(), name="upos")
    following = Jackknife(SPEC, sentences, 3, None, Quiet(), name="upos", workers=2)
    for epoch in range(1, epochs + 1):
        following.allow(epoch)
        clock.sleep(0.3)  # the "training" of epoch `epoch`: folds may train as far
    following.finish(best)
    assert following.result() == expected
    with pytest.raises(ValueError, match="follow a training"):
        Jackknife(SPEC, sentences, 3, None, Quiet(), name="upos", workers=1)


def test_ray_engine_trains_the_same_model(tmp_path, ray_engine):
    # With Ray the folds start as Ray tasks once a tagger's best epoch is known, and are
    # collected when the parser needs them: the model is the one worker's.
    config = REPO / "configs" / "quickstart.cfg"
    one, _ = train(load_config(config, sample_overrides()), tmp_path / "one", Quiet())
    tracker = Events()
    two, _ = train(load_config(config, sample_overrides(**{"training.workers": 2, "training.engine": "ray"})),
                   tmp_path / "two", tracker)
    assert any(e.startswith("jackknifing upos: 2 folds as Ray tasks") for e in tracker.events), tracker.events
    for name, component in one.components.items():
        np.testing.assert_array_equal(component.weights.array, two.components[name].weights.array, err_msg=name)


@pytest.mark.skipif(sys.platform != "linux", reason="Linux's parent-death signal")
def test_a_forked_worker_ends_with_the_training_process():
    """Killed by SIGKILL (or the OOM killer), the training process cannot stop its jackknife
    workers; they waited for it for ever, each with a copy of the weights. A worker forked
    with `die_with_parent` ends when it does."""
    import os
    import signal
    import time

    from arborist.train import die_with_parent

    read, write = os.pipe()
    middle = os.fork()
    if middle == 0:  # the "training process": forks a worker, then waits to be killed
        worker = os.fork()
        if worker == 0:
            die_with_parent(os.getppid())
            time.sleep(60)
            os._exit(0)
        os.write(write, f"{worker}\n".encode())
        time.sleep(60)
        os._exit(0)
    worker = int(os.read(read, 32).decode())
    os.kill(middle, signal.SIGKILL)
    os.waitpid(middle, 0)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(worker, signal.SIGKILL)
        pytest.fail("the worker outlived the training process")
