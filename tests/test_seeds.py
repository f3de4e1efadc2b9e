"""A component trained with `seeds = N` ([components.NAME.training]): N runs, run k with the
trainer's seed plus k, each kept at its best epoch on dev, averaged into one model
(`Training.train_members`): the same weights as N separate trainings averaged by
`arborist average`, jackknife folds averaged the same way, and a resumed run that ends
where an uninterrupted one does."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from confection import Config

import arborist.train as train_module
from arborist.model import annotate, average, load
from arborist.train import ComponentSpec, load_checkpoint, train
from trackers import Quiet

SAMPLE = Path(__file__).resolve().parents[1] / "corpora" / "sample"
TRAIN, DEV = SAMPLE / "sample-train.conllu", SAMPLE / "sample-dev.conllu"


def tagger(seeds: int | None, seed: int = 4, max_epochs: int = 3) -> str:
    training = (f"\n[components.upos.training]\nseeds = {json.dumps(seeds)}\nmax_epochs = {max_epochs}\n"
                if seeds is not None else "")
    return f'''
[components.upos]

[components.upos.structure]
@structures = "arborist.LinearChain.v1"
attribute = "upos"
hash_bits = 12

[components.upos.trainer]
@trainers = "arborist.Perceptron.v1"
seed = {seed}
{training}'''


def parser(seeds: int | None, seed: int = 7) -> str:
    training = f"\n[components.parser.training]\nseeds = {seeds}\n" if seeds else ""
    return f'''
[components.parser]

[components.parser.structure]
@structures = "arborist.DependencyTree.v1"
hash_bits = 13

[components.parser.trainer]
@trainers = "arborist.Perceptron.v1"
seed = {seed}
{training}'''


def config(*components: str, folds: int = 0, max_epochs: int = 3, extra: str = "") -> Config:
    return Config().from_str("[components]\n" + "".join(components) + f'''
[training]
train_path = "{TRAIN}"
dev_path = "{DEV}"
max_epochs = {max_epochs}
max_train_sentences = 40
jackknife_folds = {folds}
{extra}''')


def arrays(model: Path) -> dict[str, np.ndarray]:
    return {name: c.weights.array for name, c in load(model).components.items()}


@pytest.mark.parametrize("make", [tagger, parser], ids=["tagger", "parser"])
def test_seeds_are_the_average_of_separate_runs(make, tmp_path):
    name = "upos" if make is tagger else "parser"
    _, report = train(config(make(3)), tmp_path / "seeded", Quiet())
    separate = []
    for k in range(3):
        base = 4 if make is tagger else 7
        _, single = train(config(make(None, seed=base + k)), tmp_path / f"run{k}", Quiet())
        separate.append(single["components"][name])
    expected = average([tmp_path / f"run{k}" / "model-best" for k in range(3)])
    got = load(tmp_path / "seeded" / "model-best")
    # The same runs summed in the same order: bit for bit what `arborist average` makes.
    np.testing.assert_array_equal(got.components[name].weights.array, expected.components[name].weights.array)
    entry = report["components"][name]
    assert [m["seed"] for m in entry["members"]] == [base, base + 1, base + 2]
    assert [m["best_epoch"] for m in entry["members"]] == [s["best_epoch"] for s in separate]
    assert [m["history"] for m in entry["members"]] != [entry["members"][0]["history"]] * 3  # the runs differ
    for m, s in zip(entry["members"], separate):
        assert [row[entry["key"]] for row in m["history"]] == [row[entry["key"]] for row in s["history"]]
    assert entry["best_epoch"] == [s["best_epoch"] for s in separate] and entry["stopped"] == "seeds"
    # The reported score is the average model's own dev score, and the model says what it is.
    component = got.components[name]
    scores = component.score(train_module.read_corpus(DEV, require_heads=True),
                             annotate([component], component.examples(
                                 train_module.read_corpus(DEV, require_heads=True))), got.unseen)
    assert entry["best"] == pytest.approx(scores[entry["key"][len("dev_"):]], abs=1e-9)
    assert component.info["seeds"] == 3 and component.info["best_epoch"] == entry["best_epoch"]
    # The mean is calibrated as one model is (its own temperature, fitted on dev).
    assert entry["calibration"]["temperature"] == component.temperature != 1.0
    assert component.trainer_call["seed"] == base  # the configured trainer, not the last run's
    assert entry["members"][-1]["average"][entry["key"]] == entry["best"]
    assert json.loads((tmp_path / "seeded" / "training.json").read_text()) == json.loads(json.dumps(report))


def test_jackknife_folds_of_a_seeded_tagger_average_as_many_runs(tmp_path, monkeypatch):
    captured = {}
    original = train_module._train_component

    def wrapper(name, component, trainer, train_x, dev_x, *args, **kwargs):
        captured[name] = list(train_x)
        return original(name, component, trainer, train_x, dev_x, *args, **kwargs)

    monkeypatch.setattr(train_module, "_train_component", wrapper)
    cfg = config(tagger(2, max_epochs=2), parser(None), folds=2, max_epochs=2)
    _, report = train(cfg, tmp_path / "run", Quiet())
    epochs = report["components"]["upos"]["best_epoch"]
    assert isinstance(epochs, list) and len(epochs) == 2
    # The expected folds, by hand: fold f's tagger is the mean of two runs (seeds 4 and 5) on
    # the other fold, each trained for its own run's best epoch count.
    spec = ComponentSpec("upos", dict(cfg["components"]["upos"]))
    sentences = train_module.read_corpus(TRAIN, require_heads=True)[:40]
    expected: list = [None] * len(sentences)
    for fold in range(2):
        rest = [x for i, x in enumerate(sentences) if i % 2 != fold]
        weights = []
        for k, e in enumerate(epochs):
            component, trainer, examples = train_module._begun(spec.member(k), rest, [])
            for _ in range(e):
                trainer.epoch(component.structure, examples, None)
            weights.append(np.array(trainer.prediction_weights().array))
        mean = train_module._with_array(component, (weights[0] + weights[1]) / 2)
        single = train_module._with_array(component, weights[0])
        for i, parsed in zip(range(fold, len(sentences), 2), annotate([mean], sentences[fold::2])):
            expected[i] = parsed.values["upos"]
        if fold == 0:
            one_run = [p.values["upos"] for p in annotate([single], sentences[fold::2])]
    got = [x.upos[1:] for x in captured["parser"]]
    assert got == [list(tags) for tags in expected]
    assert one_run != got[0::2]  # one run's tags differ: the check can tell a mean from a run


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    out = tmp_path_factory.mktemp("straight") / "run"
    _, report = train(config(tagger(3), parser(2), folds=2), out, Quiet())
    return out, report


def comparable(report: dict) -> dict:
    report = json.loads(json.dumps(report))
    for entry in report["components"].values():
        for member in [entry] + entry.get("members", []):
            member.get("setup", {}).pop("seconds", None)
        for rows in [entry["history"]] + [m["history"] for m in entry.get("members", [])]:
            for row in rows:
                for key in [k for k in row if k.endswith("seconds") or k.endswith("per_second")]:
                    del row[key]
    return report


@pytest.mark.parametrize("interrupt", [
    {"interrupt_at": ("upos.seed5", 2, 5)},  # inside the second run's second epoch
    {"interrupt_on": "upos: run 3 of 3"},  # between two runs: the second one's sum is still to add
    {"interrupt_at": ("parser.seed8", 1, 3)},  # the second parser run: the taggers' jackknife is kept
], ids=["in-a-run", "between-runs", "second-component"])
def test_a_resumed_seeded_run_ends_with_the_uninterrupted_weights(straight, tmp_path, interrupt):
    out, report = straight
    cfg = config(tagger(3), parser(2), folds=2)
    run = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        train(cfg, run, Quiet(**interrupt))
    state, saved = load_checkpoint(run / "checkpoint")
    assert "member" in state and train_module.MEMBER_BEST in saved
    assert (train_module.MEMBER_SUM in saved) == (state["member"] > 0)
    _, resumed = train(cfg, run, Quiet(), resume=True)
    expected, got = arrays(out / "model-best"), arrays(run / "model-best")
    assert list(got) == list(expected)
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
    assert comparable(resumed) == comparable(report)


def test_model_best_holds_the_mean_of_the_runs_so_far(tmp_path):
    run = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        train(config(tagger(3)), run, Quiet(interrupt_on="upos: run 3 of 3"))
    model = load(run / "model-best").components["upos"]
    _, report = train(config(tagger(None, seed=4)), tmp_path / "a", Quiet())
    train(config(tagger(None, seed=5)), tmp_path / "b", Quiet())
    two = average([tmp_path / "a" / "model-best", tmp_path / "b" / "model-best"])
    np.testing.assert_array_equal(model.weights.array, two.components["upos"].weights.array)
    assert model.info["seeds"] == 2


@pytest.mark.parametrize("value", [0, -1, 1.5, "2", True])
def test_seeds_must_be_a_positive_integer(tmp_path, value):
    tracker = Quiet()
    with pytest.raises(ValueError, match=r"\[components.upos.training\] seeds must be a positive integer"):
        train(config(tagger(value)), tmp_path / "run", tracker)
    with pytest.raises(ValueError, match="training.seeds must be a positive integer"):
        train(config(tagger(None), extra=f"seeds = {json.dumps(value)}"), tmp_path / "run2", tracker)
    assert tracker.components == []  # refused before any training


def test_a_resumed_run_keeps_its_number_of_seeds(tmp_path):
    run = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        train(config(tagger(3)), run, Quiet(interrupt_on="upos: run 2 of 3"))
    with pytest.raises(ValueError, match="different config"):
        train(config(tagger(4)), run, Quiet(), resume=True)


def test_the_runs_seeds_count_up_from_the_configured_one():
    spec = ComponentSpec("upos", dict(config(tagger(None))["components"]["upos"]))
    assert [spec.member(k).section["trainer"]["seed"] for k in range(3)] == [4, 5, 6]
    assert spec.section["trainer"]["seed"] == 4  # the spec itself is unchanged
    unset = {**spec.section, "trainer": {k: v for k, v in spec.section["trainer"].items() if k != "seed"}}
    assert ComponentSpec("upos", unset).member(2).section["trainer"]["seed"] == 2  # the trainer's default, 0
    bad = {**spec.section, "trainer": {**spec.section["trainer"], "seed": "x"}}
    with pytest.raises(ValueError, match=r"\[components.upos.trainer\]: seed: .*'x' is not"):
        ComponentSpec("upos", bad)  # (a bad trainer setting fails before any training)
    same_order = {**spec.section, "trainer": {**spec.section["trainer"], "shuffle": False}}
    with pytest.raises(ValueError, match="shuffle = false trains the same run"):
        ComponentSpec("upos", same_order).member(1)
    misspelt = {**spec.section, "trainer": {**spec.section["trainer"], "@trainers": "arborist.Perceptorn.v1"}}
    with pytest.raises(ValueError, match=r"\[components.upos.trainer\]: .*'arborist.Perceptorn.v1'"):
        ComponentSpec("upos", misspelt)


def test_two_workers_train_the_same_seeded_pipeline(straight, tmp_path):
    """The folds of a seeded tagger run in forked workers (after its runs: they do not
    follow a training), and the parser's runs score dev in two threads: same model."""
    out, report = straight
    _, got = train(config(tagger(3), parser(2), folds=2, extra="workers = 2"), tmp_path / "run", Quiet())
    expected, weights = arrays(out / "model-best"), arrays(tmp_path / "run" / "model-best")
    for name in expected:
        np.testing.assert_array_equal(weights[name], expected[name], err_msg=name)
    assert comparable(got) == comparable(report)


def test_without_a_dev_set_each_run_keeps_its_last_epoch(tmp_path):
    cfg = config(tagger(2, max_epochs=2))
    cfg["training"]["dev_path"] = None
    _, report = train(cfg, tmp_path / "run", Quiet())
    entry = report["components"]["upos"]
    assert entry["best_epoch"] == [2, 2] and entry["best"] is None
    singles = []
    for k in range(2):
        single = config(tagger(None, seed=4 + k), max_epochs=2)
        single["training"]["dev_path"] = None
        train(single, tmp_path / f"run{k}", Quiet())
        singles.append(tmp_path / f"run{k}" / "model-best")
    np.testing.assert_array_equal(arrays(tmp_path / "run" / "model-best")["upos"],
                                  average(singles).components["upos"].weights.array)


def test_a_seeded_component_whose_trainer_seed_is_not_an_integer_fails_before_training(tmp_path):
    tracker = Quiet()
    with pytest.raises(ValueError, match=r"\[components.parser.trainer\]: seed: at root: None is not"):
        train(config(tagger(None), parser(2, seed="null")), tmp_path / "run", tracker)
    assert tracker.components == []
