"""Averaging the weights of models that differ only in their weights (`arborist.model.average`,
`arborist average`)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from arborist.corpus import read_conllu
from arborist.model import ModelError, average, load
from arborist.model import annotate as annotate_sentences

SAMPLE = Path(__file__).resolve().parents[1] / "corpora" / "sample"


@pytest.fixture(scope="module")
def two_models(tiny_model, tmp_path_factory):
    """The tiny model and a copy whose every weight is moved (another 'seed')."""
    other = tmp_path_factory.mktemp("other") / "model"
    pipeline = load(tiny_model)
    rng = np.random.default_rng(7)
    for c in pipeline.components.values():
        w = c.weights.array
        w[:] = 0.5 * w + rng.normal(scale=0.1 * (np.abs(w).max() or 1.0), size=w.shape)
    pipeline.save(other)
    return Path(tiny_model), other


def test_weights_are_the_mean_and_scores_the_members_mean(two_models):
    a, b = two_models
    got = average([a, b])
    first, second = load(a), load(b)
    sentence = next(iter(read_conllu(SAMPLE / "sample-dev.conllu", require_heads=True)))
    for name, c in got.components.items():
        wa, wb = first.components[name].weights.array, second.components[name].weights.array
        assert np.array_equal(c.weights.array, (wa + wb) / 2)
        assert not np.array_equal(wa, wb)
    # A linear model: the average's part scores are the mean of the members' (the ensemble).
    for name in ("parser", "labeler", "upos"):
        s = got.components[name].structure
        x = got.components[name].examples([sentence])[0]
        mean = (s.scores(x, first.components[name].weights) + s.scores(x, second.components[name].weights)) / 2
        np.testing.assert_allclose(s.scores(x, got.components[name].weights), mean, rtol=1e-12, atol=1e-12)


def test_temperatures_are_dropped_and_members_kept(two_models):
    a, b = two_models
    assert load(a).components["parser"].temperature != 1.0
    got = average([a, b])
    for c in got.components.values():
        assert c.temperature == 1.0
        assert len(c.info["averaged"]) == 2 and all("temperature" not in m for m in c.info["averaged"])
    assert got.info["averaged_from"] == [str(a), str(b)]


def test_a_model_averaged_with_itself_is_itself(two_models, tmp_path):
    # Three copies: summing then dividing would round (3w is not always exact); a component
    # the models share unchanged is kept as it is.
    a, _ = two_models
    got = average([a, a, a])
    sentences = list(read_conllu(SAMPLE / "sample-dev.conllu", require_heads=True))
    for name, c in got.components.items():
        assert np.array_equal(c.weights.array, load(a).components[name].weights.array)
    got.save(tmp_path / "avg")
    ours = annotate_sentences(list(load(tmp_path / "avg").components.values()), sentences)
    theirs = annotate_sentences(list(load(a).components.values()), sentences)
    for p, q in zip(ours, theirs):
        assert np.array_equal(p.heads, q.heads) and p.deprels == q.deprels


def test_one_model_is_an_error(two_models):
    with pytest.raises(ValueError, match="at least two models"):
        average([two_models[0]])


def _copy(model: Path, to: Path) -> Path:
    shutil.copytree(model, to)
    return to


def test_different_structures_are_an_error_naming_meta(two_models, tmp_path):
    a, _ = two_models
    other = _copy(a, tmp_path / "other")
    meta = json.loads((other / "meta.json").read_text())
    entry = next(e for e in meta["components"] if e["name"] == "upos")
    entry["structure"]["tags"] = list(reversed(entry["structure"]["tags"]))
    (other / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ModelError, match=r"other/meta.json: its components .* differ"):
        average([a, other])


def test_a_different_vocabulary_is_an_error_naming_the_file(two_models, tmp_path):
    a, _ = two_models
    other = _copy(a, tmp_path / "other")
    vocabulary = np.load(other / "vocabulary.npy")
    np.save(other / "vocabulary.npy", np.unique(np.append(vocabulary, np.uint64(12345))))
    with pytest.raises(ModelError, match=r"other/vocabulary.npy: differs from"):
        average([a, other])


def test_an_extra_file_is_an_error_naming_it(two_models, tmp_path):
    a, _ = two_models
    other = _copy(a, tmp_path / "other")
    (other / "upos.extra.json").write_text("{}")
    with pytest.raises(ModelError, match=r"upos.extra.json: missing"):
        average([other, a])


def test_average_command_calibrates_on_dev(two_models, tmp_path):
    a, b = two_models
    result = subprocess.run([sys.executable, "-m", "arborist.cli", "average", str(a), str(b), "-o",
                             str(tmp_path / "avg"), "--dev", str(SAMPLE / "sample-dev.conllu")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "parser: temperature" in result.stderr and "the average of 2 models" in result.stderr
    got = load(tmp_path / "avg")
    assert all(c.temperature != 1.0 for c in got.components.values() if c.confidence_column)
    np.testing.assert_array_equal(got.components["parser"].weights.array,
                                  average([a, b]).components["parser"].weights.array)


def test_average_command_reports_a_mismatch(two_models, tmp_path):
    a, _ = two_models
    other = _copy(a, tmp_path / "other")
    (other / "vocabulary.npy").write_bytes(b"")
    result = subprocess.run([sys.executable, "-m", "arborist.cli", "average", str(a), str(other), "-o",
                             str(tmp_path / "avg")], capture_output=True, text=True)
    assert result.returncode == 1
    assert "vocabulary.npy: differs" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "avg").exists()
