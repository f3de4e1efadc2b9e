"""The training driver with every trainer: checkpoints, resume, C-annealing reports."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from confection import Config

from arborist.model import load
from arborist.train import annealing_markdown, load_checkpoint, train
from trackers import Quiet

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "corpora" / "sample"

TRAINERS = {
    "perceptron": '''
[components.parser.trainer]
@trainers = "arborist.Perceptron.v1"
seed = 3
''',
    "eg": '''
[components.parser.trainer]
@trainers = "arborist.EG.v1"
objective = "m3n"
C = 5.0
seed = 3
''',
    "medn": '''
[components.parser.trainer]
@trainers = "arborist.MaxEnDNet.v1"
lam = 4.0
C = 5.0
inner_epochs = 2
seed = 3
''',
}


def config(trainer: str, max_epochs: int, extra: str = "") -> Config:
    text = f'''
[components]

[components.parser]

[components.parser.structure]
@structures = "arborist.DependencyTree.v1"
hash_bits = 16

{TRAINERS[trainer]}
{extra}

[training]
train_path = "{SAMPLE / 'sample-train.conllu'}"
dev_path = "{SAMPLE / 'sample-dev.conllu'}"
max_epochs = {max_epochs}
max_train_sentences = 40
'''
    return Config().from_str(text)


def parser_override(text: str) -> Config:
    """A config to merge into `config(...)`: `text` holds [components.parser.*] sections."""
    return Config().from_str("[components]\n\n[components.parser]\n\n" + text)


def assert_same_final_state(straight: Path, resumed: Path) -> None:
    """Every checkpoint array (weights, averaging, dual and random state) and the best
    model's parser weights of two runs are bit-identical."""
    a = load_checkpoint(straight / "checkpoint")[1]
    b = load_checkpoint(resumed / "checkpoint")[1]
    assert sorted(a) == sorted(b)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    assert np.array_equal(load(straight).writer("head").weights.array, load(resumed).writer("head").weights.array)


@pytest.mark.parametrize("trainer", ["perceptron", "eg", "medn"])
def test_interrupted_then_resumed_run_equals_uninterrupted(trainer, tmp_path):
    cfg = config(trainer, 4)
    _, straight = train(cfg, tmp_path / "straight", Quiet())
    with pytest.raises(KeyboardInterrupt):
        train(cfg, tmp_path / "resumed", Quiet(interrupt_at=("parser", 3, 17)))
    state, _ = load_checkpoint(tmp_path / "resumed" / "checkpoint")
    assert (state["component"], state["epoch"]) == ("parser", 2)  # the interrupted epoch is lost, nothing before it
    _, resumed = train(cfg, tmp_path / "resumed", Quiet(), resume=True)
    assert_same_final_state(tmp_path / "straight", tmp_path / "resumed")
    history = lambda report: report["components"]["parser"]["history"]
    assert [h["epoch"] for h in history(resumed)] == [1, 2, 3, 4]
    assert [h["dev_uas"] for h in history(straight)] == [h["dev_uas"] for h in history(resumed)]
    assert straight["components"]["parser"]["best_epoch"] == resumed["components"]["parser"]["best_epoch"]


def test_resume_refuses_a_different_config(tmp_path):
    train(config("perceptron", 1), tmp_path / "run", Quiet())
    # the message names what differs (it said only "a different config")
    with pytest.raises(ValueError, match=r"different config \(components.parser.structure.hash_bits: 16 then 15\)"):
        other = config("perceptron", 1).merge(parser_override("[components.parser.structure]\nhash_bits = 15"))
        train(other, tmp_path / "run", Quiet(), resume=True)
    _, report = train(config("perceptron", 2), tmp_path / "run", Quiet(), resume=True)  # longer is fine
    assert [h["epoch"] for h in report["components"]["parser"]["history"]] == [1, 2]
    with pytest.raises(ValueError, match="no checkpoint"):
        train(config("perceptron", 2), tmp_path / "elsewhere", Quiet(), resume=True)


def test_eg_training_reports_objectives_and_annealing(tmp_path):
    cfg = config("eg", 40).merge(parser_override('''
[components.parser.trainer]
objective = "crf"
C = 20.0
anneal = true
anneal_factor = 0.5
anneal_tolerance = 0.01
C_min = 4.0
'''))
    _, report = train(cfg, tmp_path / "run", Quiet())
    summary = report["components"]["parser"]
    for row in summary["history"]:
        assert row["primal"] >= row["dual"] - 1e-9 * abs(row["primal"])
        assert {"effective_iterations", "mean_eta", "halvings", "duality_gap", "dev_uas"} <= set(row)
    table = summary["annealing"]
    assert [row["C"] for row in table] == [20.0, 10.0, 5.0]
    assert all(row["relative_gap"] <= 0.01 and row["dev_uas"] is not None for row in table)
    written = json.loads((tmp_path / "run" / "training.json").read_text())
    assert written["components"]["parser"]["annealing"] == table
    # the set-up's searches (charged as effective iterations) are in the record
    setup = written["components"]["parser"]["setup"]
    assert setup["eta_search_visits"] > 0 and setup["eta_ini"] > 0 and setup["seconds"] >= 0
    assert written == json.loads(json.dumps(report))
    markdown = annealing_markdown(table)
    assert markdown.splitlines()[0] == "| C | Iterations | Total Iterations | Dev UAS |"
    assert len(markdown.splitlines()) == 2 + len(table)


def test_maxendnet_logs_sparsity_per_outer_iteration(tmp_path):
    tracker = Quiet()
    _, report = train(config("medn", 4), tmp_path / "run", tracker)
    summary = report["components"]["parser"]
    assert all({"nonzero_weights", "nonzero_share", "outer_iteration"} <= set(row) for row in summary["history"])
    assert [row["outer_iteration"] for row in summary["outer"]] == [1, 2]
    rows = [row for row in tracker.logged if "outer/nonzero_share" in row]
    assert [row["outer/outer_iteration"] for row in rows] == [1, 2]
    assert all(row["outer/dev_uas"] > 0 for row in rows)


def test_every_trainer_offers_the_trainer_interface():
    from arborist.learn import Trainer
    from arborist.learn.baselines import SGD
    from arborist.learn.eg import EG
    from arborist.learn.perceptron import Perceptron

    from arborist.learn.medn import MaxEnDNet

    for trainer in (Perceptron(), EG(), SGD(), MaxEnDNet()):
        assert isinstance(trainer, Trainer), type(trainer).__name__


@pytest.mark.parametrize("projective", ["true", "false", None])
def test_projective_choice_is_trained_saved_and_used(projective, tmp_path):
    from arborist.parser.tree import AUTO_NONPROJECTIVE_SHARE, is_projective, nonprojective_share
    from arborist.corpus import read_corpus

    extra = "" if projective is None else f"projective = {projective}\n"
    cfg = config("perceptron", 2).merge(parser_override(f"[components.parser.structure]\n{extra}"))
    tracker = Quiet()
    train(cfg, tmp_path / "run", tracker)
    train_set = read_corpus(SAMPLE / "sample-train.conllu")[:40]
    if projective is None:  # "auto": decided by the training trees
        want = nonprojective_share(train_set) < AUTO_NONPROJECTIVE_SHARE
    else:
        want = projective == "true"
    parser = load(tmp_path / "run").components["parser"]
    assert parser.structure.projective is want
    assert any(f"parser: {'projective' if want else 'non-projective'} trees" in m for m in tracker.messages)
    dev = read_corpus(SAMPLE / "sample-dev.conllu")
    parsed = [parser.structure.argmax(x, parser.structure.scores(x, parser.weights)) for x in dev]
    if want:
        assert all(is_projective(h) for h in parsed)


KILLED_RUN = '''
import os, signal, sys
sys.path.insert(0, {tests!r})
from confection import Config
from arborist.train import train
from trackers import Quiet

class Killer(Quiet):
    """SIGKILL (no cleanup, no finally blocks) at sentence 17 of the parser's epoch 3."""
    def advance(self, n=1, **kwargs):
        super().advance(n, **kwargs)
        if (self.component, self.epoch, self.seen) == ("parser", 3, 17):
            os.kill(os.getpid(), signal.SIGKILL)

train(Config().from_str({config!r}), {output!r}, Killer())
'''


@pytest.mark.parametrize("trainer", ["perceptron", "eg"])
def test_killed_process_then_resumed_run_equals_uninterrupted(trainer, tmp_path):
    """A training process killed with SIGKILL in the middle of an epoch, then resumed with
    --resume, ends with the same weights as a run that was never interrupted."""
    import signal
    import subprocess
    import sys

    cfg = config(trainer, 4)
    _, straight = train(cfg, tmp_path / "straight", Quiet())
    script = KILLED_RUN.format(tests=str(Path(__file__).parent), config=cfg.to_str(),
                               output=str(tmp_path / "killed"))
    # cwd: not the repository, whose source tree would shadow the installed (built) package
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert done.returncode == -signal.SIGKILL, done.stderr
    state, _ = load_checkpoint(tmp_path / "killed" / "checkpoint")
    assert (state["component"], state["epoch"]) == ("parser", 2)
    _, resumed = train(cfg, tmp_path / "killed", Quiet(), resume=True)
    assert_same_final_state(tmp_path / "straight", tmp_path / "killed")


def test_keep_last_keeps_the_last_epoch_whatever_dev_says(tmp_path):
    """keep = "last": model-best is the last epoch (the tokenizer's setting), where "best"
    keeps the best on dev; its weights are the last epoch's."""
    best = train(config("perceptron", 9), tmp_path / "best", Quiet())[1]["components"]["parser"]
    assert best["best_epoch"] == 6  # on this sample dev ties from epoch 6 to 9: the first is kept
    last = train(config("perceptron", 9, "[components.parser.training]\nkeep = \"last\"\n"), tmp_path / "last",
                 Quiet())[1]["components"]["parser"]
    assert last["best_epoch"] == 9 and last["best"] == last["history"][-1]["dev_uas"]
    scores = [[h["dev_uas"] for h in run["history"]] for run in (best, last)]
    assert scores[0] == scores[1]  # the same training, another epoch kept
    assert not np.array_equal(load(tmp_path / "best").components["parser"].weights.array,
                              load(tmp_path / "last").components["parser"].weights.array)


@pytest.mark.parametrize("extra, where", [('[components.parser.training]\nkeep = "first"\n', "components.parser"),
                                          ("", "training.keep")])
def test_keep_must_be_best_or_last(extra, where, tmp_path):
    cfg = config("perceptron", 1, extra)
    if not extra:
        cfg["training"]["keep"] = "latest"
    with pytest.raises(ValueError, match=f"{where}.*keep must be one of 'best', 'last'|{where} must be one of"):
        train(cfg, tmp_path / "run", Quiet())


def ud_named_config(tmp_path: Path, name: str, extra: str = "") -> Config:
    """The perceptron config, its training file copied under `name` (a UD file name or not)."""
    train_file = tmp_path / name
    train_file.write_text((SAMPLE / "sample-train.conllu").read_text(encoding="utf-8"), encoding="utf-8")
    base = config("perceptron", 1, extra)
    return base.merge(Config().from_str(f'[training]\ntrain_path = "{train_file}"'))


@pytest.mark.parametrize("name, lang", [("it_sample-ud-train.conllu", "it"), ("hu_x-ud-train.conllu", "hu"),
                                        ("qaa_sample-ud-train.conllu", "xx"), ("sample-train.conllu", "en")])
def test_a_model_knows_its_language_from_the_ud_file_name(name, lang, tmp_path):
    """A config without [nlp] lang takes the training file's UD language ("qaa", a code for
    local use, is no language spaCy has: its multi-language class), and the model keeps it
    in its config; a file not named as UD names them leaves the default."""
    tracker = Quiet()
    pipeline, _ = train(ud_named_config(tmp_path, name), tmp_path / "run", tracker)
    for model in (pipeline, load(tmp_path / "run")):
        assert model.lang == lang
    stored = Config().from_str(load(tmp_path / "run").info["config"], interpolate=False)
    assert stored.get("nlp", {}).get("lang") == (None if name == "sample-train.conllu" else lang)
    assert any(m.startswith(f"language: {lang} ") and name in m for m in tracker.messages) == (lang != "en")


def test_a_configured_language_wins_and_an_unknown_one_is_refused_before_training(tmp_path):
    pipeline, _ = train(ud_named_config(tmp_path, "it_sample-ud-train.conllu", '[nlp]\nlang = "de"'), None, Quiet())
    assert pipeline.lang == "de"
    with pytest.raises(ValueError, match=r"\[nlp\] lang = 'zz'"):
        train(ud_named_config(tmp_path, "it_sample-ud-train.conllu", '[nlp]\nlang = "zz"'), tmp_path / "zz", Quiet())
    assert not (tmp_path / "zz").exists()


def test_models_trained_without_a_language_take_their_training_files(tmp_path):
    """Models saved before `arborist train` wrote [nlp] lang: the language of their training
    file's UD name; a resumed run may set another language (it changes no weights)."""
    from arborist.model import Pipeline

    assert Pipeline(info={"config": '[training]\ntrain_path = "/data/el_gdt-ud-train.conllu"\n'}).lang == "el"
    assert Pipeline(info={"config": '[training]\ntrain_path = "/data/train.conllu"\n'}).lang == "en"
    assert Pipeline(info={}).lang == "en"
    train(config("perceptron", 1), tmp_path / "run", Quiet())
    _, report = train(config("perceptron", 2, '[nlp]\nlang = "de"'), tmp_path / "run", Quiet(), resume=True)
    assert load(tmp_path / "run").lang == "de"


@pytest.mark.parametrize("setting, message", [
    ("[components.parser.trainer]\nlearning_rate = 0.1", r"\[components.parser.trainer\]: learning_rate: unexpected"),
    ("[components.parser.trainer]\nseed = \"abc\"", r"\[components.parser.trainer\]: seed: .*'abc'"),
    ("[components.parser.structure]\nhash_bits = 50", r"hash_bits must be between 1 and 32"),
    ("[components.parser.structure]\nnope = 1", r"\[components.parser.structure\]: nope: unexpected")])
def test_a_bad_component_setting_fails_before_any_training(setting, message, tmp_path):
    """A later component's bad trainer or structure setting was found only when its turn
    came, after the components before it had trained, and `--resume` of the corrected config
    refused their checkpoint: now it fails before anything is trained or written."""
    tracker = Quiet()
    with pytest.raises(ValueError, match=message):
        train(config("perceptron", 1).merge(parser_override(setting)), tmp_path / "run", tracker)
    assert tracker.components == [] and not (tmp_path / "run").exists()


def test_a_language_spacy_cannot_make_here_is_xx_or_refused(tmp_path):
    """Japanese needs SudachiPy: a model named ja took "ja" and then crashed every raw-text
    parse and `package`. Inferred, it is now spaCy's multi-language class with the reason;
    configured, it is refused before training."""
    import importlib.util

    if importlib.util.find_spec("sudachipy") is not None:
        pytest.skip("SudachiPy is installed: spaCy can make Japanese here")
    tracker = Quiet()
    pipeline, _ = train(ud_named_config(tmp_path, "ja_sample-ud-train.conllu"), None, tracker)
    assert pipeline.lang == "xx" and any("SudachiPy" in m and m.startswith("language: xx") for m in tracker.messages)
    with pytest.raises(ValueError, match=r"\[nlp\] lang = 'ja': spaCy cannot make it \(Japanese support requires"):
        train(ud_named_config(tmp_path, "sample-train.conllu", '[nlp]\nlang = "ja"'), None, Quiet())


def test_every_config_takes_the_language_from_the_command_line():
    """`--set nlp.lang=de` with a config without [nlp] (confection refused the override)."""
    from arborist.train import load_config

    quickstart = Path(__file__).resolve().parents[1] / "configs" / "quickstart.cfg"
    assert "[nlp]" not in quickstart.read_text()
    assert load_config(quickstart, {"nlp.lang": "de"})["nlp"]["lang"] == "de"
    assert load_config(quickstart)["nlp"]["lang"] is None


@pytest.mark.parametrize("extra, message", [
    ("[training]\npatience = \"abc\"", "training.patience must be 0 \\(none\\) or a positive integer, got 'abc'"),
    ("[training]\npatience = -3", "training.patience must be"),
    ("[training]\nmax_train_sentences = -50", "training.max_train_sentences must be 0 \\(all\\)"),
    ("[training]\ncalibrate = \"maybe\"", "training.calibrate must be true or false"),
    ("[training]\nmax_epochs = true", "training.max_epochs must be a positive integer, got True"),
    ("[components.parser.training]\nmax_epochs = 0", r"\[components.parser.training\] max_epochs must be"),
    ("[components.parser.training]\nmax_epochs = \"abc\"", r"\[components.parser.training\] max_epochs must be")])
def test_training_settings_are_checked_before_any_training(extra, message, tmp_path):
    """Each was taken as it came: a negative max_train_sentences dropped the last sentences, a
    component's max_epochs = 0 left it out of the model, "abc" gave a traceback after the
    components before it had trained."""
    tracker = Quiet()
    with pytest.raises(ValueError, match=message):
        override = parser_override(extra) if extra.startswith("[components") else Config().from_str(extra)
        train(config("perceptron", 1).merge(override), tmp_path / "run", tracker)
    assert tracker.components == []


def test_patience_null_is_no_early_stopping(tmp_path):
    """As before the checks: null is a valid patience (none), as 0."""
    _, report = train(config("perceptron", 2).merge(Config().from_str("[training]\npatience = null")), None, Quiet())
    assert [h["epoch"] for h in report["components"]["parser"]["history"]] == [1, 2]


def test_an_empty_dev_file_is_refused(tmp_path):
    """It trained as without a dev set and reported dev scores of 0."""
    (tmp_path / "empty.conllu").write_text("")
    with pytest.raises(ValueError, match="empty.conllu: no sentences in the dev file"):
        train(config("perceptron", 1).merge(Config().from_str(f'[training]\ndev_path = "{tmp_path / "empty.conllu"}"')),
              tmp_path / "run", Quiet())


def test_resuming_with_no_epoch_left_still_calibrates(tmp_path):
    """A run resumed with max_epochs at its checkpoint's epoch trains nothing more; its
    component was left without a temperature (the last epoch's calibration never ran)."""
    _, straight = train(config("perceptron", 2), tmp_path / "straight", Quiet())
    with pytest.raises(KeyboardInterrupt):
        train(config("perceptron", 4), tmp_path / "resumed", Quiet(interrupt_at=("parser", 3, 17)))
    _, resumed = train(config("perceptron", 2), tmp_path / "resumed", Quiet(), resume=True)
    temperature = lambda run: load(run).components["parser"].temperature
    assert temperature(tmp_path / "straight") is not None
    assert temperature(tmp_path / "resumed") == pytest.approx(temperature(tmp_path / "straight"))
    assert resumed["components"]["parser"]["calibration"] == pytest.approx(straight["components"]["parser"]["calibration"])


def test_a_damaged_checkpoint_is_refused_with_its_file_named(tmp_path):
    """The jackknifed predictions a checkpoint keeps, and its report: a damaged file gave a
    traceback, or an error naming no file ("This file contains pickled data" for garbage)."""
    import json as _json

    from arborist.train import JACKKNIFE, load_config

    repo = Path(__file__).resolve().parents[1]
    overrides = {"paths.train": str(SAMPLE / "sample-train.conllu"), "paths.dev": str(SAMPLE / "sample-dev.conllu"),
                 "training.max_epochs": 2, "training.jackknife_folds": 2, "training.max_train_sentences": 40}
    cfg = load_config(repo / "configs" / "quickstart.cfg", overrides)
    with pytest.raises(KeyboardInterrupt):
        train(cfg, tmp_path / "run", Quiet(interrupt_at=("parser", 2, 5)))
    checkpoint = tmp_path / "run" / "checkpoint"
    assert (checkpoint / JACKKNIFE).is_file()
    good = (checkpoint / JACKKNIFE).read_bytes()
    with np.load(checkpoint / JACKKNIFE) as data:
        arrays = {k: data[k] for k in data.files}
    short = {**arrays, "upos_lengths": arrays["upos_lengths"][:5]}
    for damage in (lambda: (checkpoint / JACKKNIFE).write_bytes(b"garbage" * 10),
                   lambda: np.savez(checkpoint / JACKKNIFE, **short)):
        damage()
        with pytest.raises(ValueError, match=f"{checkpoint / JACKKNIFE}: cannot read the checkpoint's jackknifed"):
            train(cfg, tmp_path / "run", Quiet(), resume=True)
        (checkpoint / JACKKNIFE).write_bytes(good)
    state = _json.loads((checkpoint / "state.json").read_text())
    (checkpoint / "state.json").write_text(_json.dumps({**state, "report": {"components": 5}}))
    with pytest.raises(ValueError, match=f"{checkpoint / 'state.json'}: not a checkpoint state"):
        train(cfg, tmp_path / "run", Quiet(), resume=True)


def test_a_missing_or_empty_training_file_is_named(tmp_path):
    """A missing file named its path only ("[Errno 2] ..."), not the setting nor where a
    relative path is read from; an empty one said "no UPOS tags in the training sentences"."""
    missing = config("perceptron", 1).merge(Config().from_str('[training]\ntrain_path = "no/such.conllu"'))
    with pytest.raises(ValueError, match=r"training.train_path no/such.conllu: no such file \(a relative path is read"):
        train(missing, None, Quiet())
    (tmp_path / "empty.conllu").write_text("\n")
    empty = config("perceptron", 1).merge(Config().from_str(f'[training]\ntrain_path = "{tmp_path / "empty.conllu"}"'))
    with pytest.raises(ValueError, match="empty.conllu: no sentences in the training file"):
        train(empty, None, Quiet())
