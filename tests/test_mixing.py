"""Iterative parameter mixing (`[training] workers`, arborist.learn.mixing): one worker is
today's serial training; K shards equal a brute-force IPM with the averaged weights as the
explicit mean of the running weights over every visit; the local and Ray engines agree;
a resumed mixed run ends at the uninterrupted run's model; EG trains serially."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from trackers import Quiet

from arborist.corpus import read_corpus
from arborist.learn.mixing import ParameterMixing, SerialShards, parallel_trainer
from arborist.learn.perceptron import SWVP, Perceptron
from arborist.parser.tree import DependencyTree
from arborist.train import jackknife, load_checkpoint, load_config, train
from arborist.weights import Weights

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "corpora" / "sample"
BITS = 12


@pytest.fixture(scope="module")
def sentences():
    return read_corpus(SAMPLE / "sample-train.conllu")[:60]


def reference_ipm(structure, examples, shards: int, epochs: int, seed: int, update,
                  weight: float | None = None, rounds: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """IPM by brute force (McDonald et al. 2010, Figure 3, uniform mixture): each epoch the
    seed's permutation dealt into shards order[k::K], each shard one perceptron epoch from
    the mixed weights, the new mixed weights the mean of the shards' weights (with `rounds`
    > 1, the permutation is cut into that many consecutive parts, each dealt and mixed in
    turn). The averaged weights: the explicit mean of the running weights after every visit,
    summed visit by visit. Returns (mixed weights, averaged weights)."""
    rng = np.random.default_rng(seed)
    mixed = np.zeros(1 << BITS)
    running_sum = np.zeros(1 << BITS)
    visits = 0
    for _ in range(epochs):
        order = rng.permutation(len(examples))
        cut = [len(order) * r // rounds for r in range(rounds + 1)]
        for part in (order[cut[r]:cut[r + 1]] for r in range(rounds)):
            ends = []
            for k in range(shards):
                w = Weights(BITS, averaged=False, array=mixed.copy())
                for i in part[k::shards]:
                    update(structure, examples[i], w)
                    running_sum += w.array
                    visits += 1
                ends.append(w.array.copy())
            mixed = np.mean(ends, axis=0) if weight is None else mixed + weight * sum(end - mixed for end in ends)
    return mixed, running_sum / visits


def csp_update(structure, x, w):
    gold = structure.gold(x)
    scores = structure.scores(x, w)
    pred = structure.argmax(x, scores)
    right, positions = structure.hits(x, gold, pred)
    if right < positions:
        structure.add_features(x, structure.indicator(x, gold) - structure.indicator(x, pred), w, 1.0)


def swvp_update(trainer):
    def update(structure, x, w):
        gold = structure.gold(x)
        scores = structure.scores(x, w)
        pred = structure.argmax(x, scores)
        right, positions = structure.hits(x, gold, pred)
        if right < positions:
            coef, _ = trainer.update_coefficients(structure, x, scores, gold, pred)
            structure.add_features(x, coef, w, 1.0)
    return update


def mixed_run(trainer, examples, shards: int, epochs: int, engine=None, rounds: int = 1) -> ParameterMixing:
    structure = DependencyTree(hash_bits=BITS)
    mixing = ParameterMixing(trainer, shards, "local", rounds)
    if engine is not None:
        mixing.engine = engine
    mixing.begin(structure, examples, BITS)
    try:
        for _ in range(epochs):
            mixing.epoch(structure, examples)
    finally:
        mixing.close()
    return mixing


@pytest.mark.parametrize("shards", [2, 3])
def test_mixing_equals_brute_force_ipm_with_the_explicit_mean(sentences, shards):
    mixing = mixed_run(Perceptron(seed=3), sentences, shards, 3)
    mixed, mean = reference_ipm(DependencyTree(hash_bits=BITS), sentences, shards, 3, 3, csp_update)
    assert np.abs(mixed).sum() > 0 and not np.allclose(mixed, mean)  # it learned, and averaging matters
    np.testing.assert_allclose(mixing.trainer.weights.array, mixed, rtol=0, atol=1e-9)
    np.testing.assert_allclose(mixing.prediction_weights().array, mean, rtol=0, atol=1e-9)
    assert mixing.trainer.weights.step == 3 * len(sentences)


@pytest.mark.parametrize("shards,rounds", [(2, 3), (3, 4)])
def test_several_mixes_per_epoch_equal_brute_force_ipm_with_the_explicit_mean(sentences, shards, rounds):
    mixing = mixed_run(Perceptron(seed=3), sentences, shards, 2, rounds=rounds)
    mixed, mean = reference_ipm(DependencyTree(hash_bits=BITS), sentences, shards, 2, 3, csp_update, rounds=rounds)
    once, _ = reference_ipm(DependencyTree(hash_bits=BITS), sentences, shards, 2, 3, csp_update)
    assert not np.allclose(mixed, once)  # mixing more often trains another model
    np.testing.assert_allclose(mixing.trainer.weights.array, mixed, rtol=0, atol=1e-9)
    np.testing.assert_allclose(mixing.prediction_weights().array, mean, rtol=0, atol=1e-9)
    assert mixing.trainer.weights.step == 2 * len(sentences)


def test_summed_changes_keep_the_exact_mean(sentences):
    structure = DependencyTree(hash_bits=BITS)
    mixing = ParameterMixing(Perceptron(seed=3), 2, "local")
    mixing.engine, mixing.mix_weight = SerialShards(), 1.0
    mixing.begin(structure, sentences, BITS)
    for _ in range(3):
        mixing.epoch(structure, sentences)
    mixed, mean = reference_ipm(DependencyTree(hash_bits=BITS), sentences, 2, 3, 3, csp_update, weight=1.0)
    np.testing.assert_allclose(mixing.trainer.weights.array, mixed, rtol=0, atol=1e-9)
    np.testing.assert_allclose(mixing.prediction_weights().array, mean, rtol=0, atol=1e-9)


def test_mixing_swvp_equals_brute_force(sentences):
    mixing = mixed_run(SWVP("single", "wm", seed=1), sentences, 2, 2)
    mixed, mean = reference_ipm(DependencyTree(hash_bits=BITS), sentences, 2, 2, 1,
                                swvp_update(SWVP("single", "wm")))
    np.testing.assert_allclose(mixing.trainer.weights.array, mixed, rtol=0, atol=1e-9)
    np.testing.assert_allclose(mixing.prediction_weights().array, mean, rtol=0, atol=1e-9)


def test_one_shard_is_the_serial_perceptron_bit_for_bit(sentences):
    structure = DependencyTree(hash_bits=BITS)
    serial = Perceptron(seed=5)
    serial.begin(structure, sentences, BITS)
    for _ in range(3):
        serial.epoch(structure, sentences)
    mixing = mixed_run(Perceptron(seed=5), sentences, 1, 3, SerialShards())
    np.testing.assert_array_equal(mixing.trainer.weights.array, serial.weights.array)
    np.testing.assert_array_equal(mixing.trainer.weights.accumulator, serial.weights.accumulator)
    np.testing.assert_array_equal(mixing.prediction_weights().array, serial.prediction_weights().array)


def test_one_shard_follows_a_margin_schedule_as_the_serial_trainer(sentences):
    """A MarginPerceptron's margin schedule advances once per mixed epoch (each shard runs on a
    copy of the trainer): one shard with margin 2 for 2 epochs, then 0, is the serial run."""
    from arborist.learn.perceptron import MarginPerceptron

    structure = DependencyTree(hash_bits=BITS)
    serial = MarginPerceptron(2.0, seed=5, margin_epochs=2)
    serial.begin(structure, sentences, BITS)
    margins = [serial.epoch(structure, sentences)["margin"] for _ in range(4)]
    assert margins == [2.0, 2.0, 0.0, 0.0]
    mixing = mixed_run(MarginPerceptron(2.0, seed=5, margin_epochs=2), sentences, 1, 4, SerialShards())
    assert mixing.trainer.epochs_done == 4
    np.testing.assert_array_equal(mixing.trainer.weights.array, serial.weights.array)
    np.testing.assert_array_equal(mixing.prediction_weights().array, serial.prediction_weights().array)


class _InProcessRay:
    """The few calls RayShards makes, run in this process (no cluster)."""

    def put(self, value):
        return value

    def get(self, values):
        return list(values)

    def kill(self, actor):
        pass

    def remote(self, num_cpus=1):
        def wrap(cls):
            class Handle:
                def __init__(self, *args):
                    self.instance = cls(*args)
                    self.run = type("Method", (), {"remote": lambda _, *a: self.instance.run(*a)})()

            return type("Actor", (), {"remote": staticmethod(lambda *args: Handle(*args))})
        return wrap


def test_ray_actors_follow_the_margin_schedule(sentences):
    """Ray's actors keep the first epoch's copy of the trainer: the driver's epoch count goes
    with each run, so a margin schedule advances there as in one process."""
    from arborist.learn.mixing import RayShards
    from arborist.learn.perceptron import MarginPerceptron

    engine = RayShards.__new__(RayShards)
    engine.workers, engine.ray, engine.actors, engine._key = 2, _InProcessRay(), None, None
    on_ray = mixed_run(MarginPerceptron(2.0, seed=5, margin_epochs=2), sentences, 2, 4, engine)
    serial = mixed_run(MarginPerceptron(2.0, seed=5, margin_epochs=2), sentences, 2, 4, SerialShards())
    np.testing.assert_array_equal(on_ray.trainer.weights.array, serial.trainer.weights.array)
    always = mixed_run(MarginPerceptron(2.0, seed=5), sentences, 2, 4, SerialShards())
    assert not np.array_equal(always.trainer.weights.array, serial.trainer.weights.array)  # the schedule matters


def test_forked_shards_equal_shards_in_one_process(sentences):
    local = mixed_run(Perceptron(seed=2), sentences, 2, 2)
    serial = mixed_run(Perceptron(seed=2), sentences, 2, 2, SerialShards())
    np.testing.assert_array_equal(local.trainer.weights.array, serial.trainer.weights.array)
    np.testing.assert_array_equal(local.trainer.weights.accumulator, serial.trainer.weights.accumulator)


def test_ray_engine_gives_the_local_engine_weights(sentences, tmp_path, ray_engine):
    """engine = "ray" (shards as Ray actors, jackknife folds as Ray tasks) trains what the
    local engine trains: the same mixed and averaged weights, bit for bit."""
    local, _ = train(parser_config(tmp_path, max_epochs=2, workers=2, parameter_mixing=True), tmp_path / "local", Quiet(), use_wandb=False)
    on_ray, _ = train(parser_config(tmp_path, max_epochs=2, workers=2, engine="ray", parameter_mixing=True), tmp_path / "ray", Quiet(),
                      use_wandb=False)
    np.testing.assert_array_equal(local.components["parser"].weights.array,
                                  on_ray.components["parser"].weights.array)
    (_, a), (_, b) = load_checkpoint(tmp_path / "local" / "checkpoint"), load_checkpoint(tmp_path / "ray" / "checkpoint")
    for key in ("weights", "accumulator"):
        np.testing.assert_array_equal(a[key], b[key])
    spec = {"structure": {"@structures": "arborist.LinearChain.v1", "attribute": "upos", "hash_bits": BITS},
            "trainer": {"@trainers": "arborist.Perceptron.v1", "seed": 0}}
    assert (jackknife(spec, sentences, 3, 1, Quiet(), name="upos", workers=2, engine="ray")
            == jackknife(spec, sentences, 3, 1, Quiet(), name="upos"))


def test_nothing_imports_ray_without_the_ray_engine(sentences):
    import subprocess
    import sys

    code = ("import sys; from arborist.learn.mixing import ParameterMixing; import arborist.train; "
            "assert 'ray' not in sys.modules, 'ray imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


# -- the training driver -------------------------------------------------------------

def parser_config(tmp_path, **training):
    overrides = {"paths.train": str(SAMPLE / "sample-train.conllu"), "paths.dev": str(SAMPLE / "sample-dev.conllu"),
                 "training.max_train_sentences": 80, "training.calibrate": False,
                 **{f"training.{k}": v for k, v in training.items()}}
    return load_config(REPO / "configs" / "en_ewt_perceptron.cfg",
                       overrides | {"components.parser.structure.hash_bits": BITS})


def test_mixing_is_asked_for_never_implied(tmp_path):
    """workers = 1, or workers = 2 without parameter_mixing, is today's training; parameter
    mixing over 2 shards trains another model."""
    today, _ = train(parser_config(tmp_path, max_epochs=2), tmp_path / "a", Quiet(), use_wandb=False)
    one, _ = train(parser_config(tmp_path, max_epochs=2, workers=1), tmp_path / "b", Quiet(), use_wandb=False)
    np.testing.assert_array_equal(today.components["parser"].weights.array, one.components["parser"].weights.array)
    two, _ = train(parser_config(tmp_path, max_epochs=2, workers=2), tmp_path / "c", Quiet(), use_wandb=False)
    np.testing.assert_array_equal(today.components["parser"].weights.array, two.components["parser"].weights.array)
    mixed, _ = train(parser_config(tmp_path, max_epochs=2, workers=2, parameter_mixing=True), tmp_path / "d", Quiet(),
                     use_wandb=False)
    assert not np.array_equal(mixed.components["parser"].weights.array, one.components["parser"].weights.array)
    with pytest.raises(ValueError, match="training.parameter_mixing must be true or false"):
        train(parser_config(tmp_path, parameter_mixing="yes"), tmp_path / "e", Quiet(), use_wandb=False)


def test_resumed_mixed_run_ends_at_the_uninterrupted_model(tmp_path):
    mix = {"parameter_mixing": True}
    whole, _ = train(parser_config(tmp_path, max_epochs=3, workers=2, **mix), tmp_path / "whole", Quiet(),
                     use_wandb=False)
    train(parser_config(tmp_path, max_epochs=2, workers=2, **mix), tmp_path / "part", Quiet(), use_wandb=False)
    with pytest.raises(ValueError, match="over 2 shards.*resume with training.workers = 2 and training.parameter_mix"):
        train(parser_config(tmp_path, max_epochs=3, workers=3, **mix), tmp_path / "part", Quiet(), resume=True,
              use_wandb=False)
    resumed, _ = train(parser_config(tmp_path, max_epochs=3, workers=2, **mix), tmp_path / "part", Quiet(),
                       resume=True, use_wandb=False)
    np.testing.assert_array_equal(whole.components["parser"].weights.array,
                                  resumed.components["parser"].weights.array)
    (_, a), (state, b) = load_checkpoint(tmp_path / "whole" / "checkpoint"), load_checkpoint(tmp_path / "part" / "checkpoint")
    assert state["epoch"] == 3 and state["trainer"]["workers"] == 2
    for key in ("weights", "accumulator"):
        np.testing.assert_array_equal(a[key], b[key])


def test_a_mixed_checkpoint_resumes_only_with_its_mixes_per_epoch(tmp_path):
    mix = {"parameter_mixing": True, "workers": 2}
    whole, _ = train(parser_config(tmp_path, max_epochs=2, mixes_per_epoch=3, **mix), tmp_path / "whole", Quiet(),
                     use_wandb=False)
    train(parser_config(tmp_path, max_epochs=1, mixes_per_epoch=3, **mix), tmp_path / "part", Quiet(), use_wandb=False)
    with pytest.raises(ValueError, match="3 mix\\(es\\) per epoch.*resume with training.mixes_per_epoch = 3"):
        train(parser_config(tmp_path, max_epochs=2, **mix), tmp_path / "part", Quiet(), resume=True, use_wandb=False)
    resumed, _ = train(parser_config(tmp_path, max_epochs=2, mixes_per_epoch=3, **mix), tmp_path / "part", Quiet(),
                       resume=True, use_wandb=False)
    np.testing.assert_array_equal(whole.components["parser"].weights.array, resumed.components["parser"].weights.array)
    with pytest.raises(ValueError, match="training.mixes_per_epoch must be a positive integer"):
        train(parser_config(tmp_path, mixes_per_epoch=0, **mix), tmp_path / "x", Quiet(), use_wandb=False)


def test_a_serial_checkpoint_is_not_resumed_by_mixing(tmp_path):
    train(parser_config(tmp_path, max_epochs=1), tmp_path / "run", Quiet(), use_wandb=False)
    with pytest.raises(ValueError, match="resume with training.parameter_mixing = false"):
        train(parser_config(tmp_path, max_epochs=2, workers=2, parameter_mixing=True), tmp_path / "run", Quiet(),
              resume=True, use_wandb=False)


def test_eg_with_workers_trains_serially_and_says_so(tmp_path):
    tracker = Quiet()
    overrides = {"paths.train": str(SAMPLE / "sample-train.conllu"), "paths.dev": str(SAMPLE / "sample-dev.conllu"),
                 "training.max_train_sentences": 30, "training.calibrate": False, "training.max_epochs": 1,
                 "components.parser.structure.hash_bits": BITS}
    path = REPO / "configs" / "en_ewt_eg_crf.cfg"
    one, _ = train(load_config(path, overrides), tmp_path / "one", Quiet(), use_wandb=False)
    two, _ = train(load_config(path, overrides | {"training.workers": 2, "training.parameter_mixing": True}),
                   tmp_path / "two", tracker, use_wandb=False)
    assert any("trains serially" in m for m in tracker.messages), tracker.messages
    np.testing.assert_array_equal(one.components["parser"].weights.array, two.components["parser"].weights.array)


def test_engine_must_be_known(tmp_path):
    with pytest.raises(ValueError, match="training.engine must be one of"):
        train(parser_config(tmp_path, engine="spark"), tmp_path / "x", Quiet(), use_wandb=False)


def test_parallel_trainer_leaves_one_worker_alone():
    trainer = Perceptron()
    assert parallel_trainer(trainer, 1) is trainer
    assert isinstance(parallel_trainer(trainer, 2), ParameterMixing)
