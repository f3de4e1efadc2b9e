"""Batch parsing on a local Ray cluster (2 CPUs): the same bytes as `arborist parse`, a
killed worker changes nothing, resume and unreadable inputs as in the one-process path."""
from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install \"arborist[ray]\"")

from arborist.batch import parse_files, plan  # noqa: E402
from arborist.distributed import parse as parse_on_ray  # noqa: E402
from arborist.model import load  # noqa: E402

DEV = Path(__file__).resolve().parents[1] / "corpora" / "sample" / "sample-dev.conllu"
TEXT = ("The cat sat on the mat. It was warm!\n\nA second paragraph, with a comma; and more words.\n"
        "It goes on over two lines.\n\n\n\"Quotes\" (and brackets) - dashes... 3.5 kg, 40% off.\n")


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def inputs(directory: Path, copies: int = 2) -> Path:
    directory.mkdir()
    (directory / "sub").mkdir()
    for k in range(copies):
        (directory / f"text{k}.txt").write_text(TEXT * (k + 1), encoding="utf-8")
        (directory / "sub" / f"gold{k}.conllu").write_bytes(DEV.read_bytes())
    return directory


def outputs(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def one_process(model, source: Path, target: Path, fmt: str = "conllu") -> tuple[dict[str, bytes], int]:
    """The outputs of `arborist parse` in this process, and the words it counted."""
    target.mkdir()
    report = parse_files(load(model), plan([source], target, fmt), fmt, model_path=model, progress=False)
    return outputs(target), report.words


@pytest.mark.parametrize("fmt", ["conllu", "json"])
def test_ray_writes_the_bytes_of_the_one_process_path(cluster, tiny_model, tmp_path, fmt):
    source = inputs(tmp_path / "in")
    expected, words = one_process(tiny_model, source, tmp_path / "local", fmt)
    report = parse_on_ray([source], tiny_model, tmp_path / "ray", fmt, workers=2)
    assert report.exit_code == 0 and len(report.written) == 4 and not report.failed
    assert outputs(tmp_path / "ray") == expected
    assert report.words == words > 0
    again = parse_on_ray([source], tiny_model, tmp_path / "ray", fmt, workers=2)  # resume: nothing left to do
    assert len(again.skipped) == 4 and not again.written


def test_unreadable_inputs_are_reported_and_the_rest_parsed(cluster, tiny_model, tmp_path):
    source = inputs(tmp_path / "in", copies=1)
    (source / "binary.txt").write_bytes(b"abc\x00def\n")
    (source / "bad.conllu").write_text("1\tonly\tthree\n\n", encoding="utf-8")
    report = parse_on_ray([source], tiny_model, tmp_path / "ray", workers=2)
    assert report.exit_code == 2
    failed = {p.name: message for p, message in report.failed}
    assert set(failed) == {"binary.txt", "bad.conllu"}
    assert "binary.txt:1" in failed["binary.txt"] and "bad.conllu:1" in failed["bad.conllu"]
    assert sorted(p.name for p in report.written) == ["gold0.conllu", "text0.txt"]
    assert not any(p.name.startswith(".") for p in (tmp_path / "ray").rglob("*"))  # no temporary files left


def test_a_killed_worker_changes_nothing(cluster, tiny_model, tmp_path):
    """SIGKILL one parsing actor mid-run: Ray restarts it and parses its file again; every
    output is complete and identical to the one-process path's."""
    import psutil

    source = tmp_path / "in"
    source.mkdir()
    for k in range(6):
        (source / f"gold{k}.conllu").write_bytes(DEV.read_bytes() * 12)
    expected, _ = one_process(tiny_model, source, tmp_path / "local")
    killed = []

    def kill_a_worker():
        deadline = time.time() + 60
        while time.time() < deadline and not killed:
            for process in psutil.process_iter(["pid", "cmdline"]):
                if "FileParser" in " ".join(process.info["cmdline"] or []):
                    time.sleep(0.3)  # mid-file
                    try:
                        os.kill(process.info["pid"], signal.SIGKILL)
                    except ProcessLookupError:
                        break  # it ended in the meantime (a busy machine): look for another
                    killed.append(process.info["pid"])
                    return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_a_worker)
    killer.start()
    report = parse_on_ray([source], tiny_model, tmp_path / "ray", workers=2)
    killer.join()
    assert killed, "no worker was found to kill"
    assert report.exit_code == 0 and len(report.written) == 6
    assert outputs(tmp_path / "ray") == expected


def test_huge_inputs_are_parsed_in_shards_that_concatenate_to_the_one_process_output(cluster, tiny_model, tmp_path):
    """A text file and a CoNLL-U file above the shard size come out as NAME.shards/ plus a
    manifest; the shards in manifest order are the bytes of the one-process output, sentence
    ids continuing across shards; a rerun skips the input, and a lost shard alone is redone."""
    import json

    source = tmp_path / "in"
    source.mkdir()
    (source / "big.txt").write_text(TEXT * 60, encoding="utf-8")
    (source / "gold.conllu").write_bytes(DEV.read_bytes() * 3)
    (source / "small.txt").write_text(TEXT, encoding="utf-8")
    expected, words = one_process(tiny_model, source, tmp_path / "local")
    target = tmp_path / "ray"
    report = parse_on_ray([source], tiny_model, target, workers=2, shard_bytes=4096)
    assert report.exit_code == 0 and len(report.written) == 3 and report.words == words

    def joined(stem: str) -> bytes:
        manifest = json.loads((target / f"{stem}.manifest.json").read_text())
        assert manifest["format"] == "arborist-shards/1" and len(manifest["shards"]) > 2
        return b"".join((target / s["path"]).read_bytes() for s in manifest["shards"])

    assert joined("big") == expected["big.conllu"]
    assert joined("gold") == expected["gold.conllu"]
    assert (target / "small.conllu").read_bytes() == expected["small.conllu"]
    assert not (target / "big.conllu").exists()
    again = parse_on_ray([source], tiny_model, target, workers=2, shard_bytes=4096)
    assert len(again.skipped) == 3 and not again.written
    (target / "big.manifest.json").unlink()
    lost = sorted((target / "big.shards").iterdir())[1]
    lost.unlink()
    other = sorted((target / "big.shards").iterdir())[0]
    stamp = other.stat().st_mtime_ns
    redo = parse_on_ray([source], tiny_model, target, workers=2, shard_bytes=4096)
    assert redo.exit_code == 0 and len(redo.skipped) == 2
    assert joined("big") == expected["big.conllu"] and other.stat().st_mtime_ns == stamp
    # a run resumed with another shard size cuts elsewhere: the shards of the first cutting are
    # not mixed in (all are parsed again), and those no longer in the plan are removed
    shards = target / "big.shards"
    for size in (3000, 6000):
        old_plan = json.loads((shards / "plan.json").read_text())
        (target / "big.manifest.json").unlink()
        (shards / "00001.conllu").unlink()
        resized = parse_on_ray([source], tiny_model, target, workers=2, shard_bytes=size)
        assert resized.exit_code == 0 and len(resized.written) == 1
        plan = json.loads((shards / "plan.json").read_text())
        assert [s["start"] for s in plan["shards"]] != [s["start"] for s in old_plan["shards"]]
        names = [s["path"].rsplit("/", 1)[-1] for s in plan["shards"]]
        assert sorted(p.name for p in shards.iterdir()) == sorted(names + ["plan.json"])
        assert b"".join((shards / name).read_bytes() for name in names) == expected["big.conllu"]
        manifest = json.loads((target / "big.manifest.json").read_text())
        assert plan["shards"] == [{k: v for k, v in s.items() if k != "words"} for s in manifest["shards"]]


def test_inputs_and_outputs_by_url(cluster, tiny_model, tmp_path):
    """Inputs and the output directory given as fsspec URLs (file:// here; s3:// and gs://
    go through the same calls) give the bytes of the one-process path."""
    source = inputs(tmp_path / "in", copies=1)
    expected, _ = one_process(tiny_model, source, tmp_path / "local")
    report = parse_on_ray([f"file://{source}"], tiny_model, f"file://{tmp_path / 'ray'}", workers=2,
                          share_weights=True)  # the memory-mapped weights give the same bytes
    assert report.exit_code == 0 and len(report.written) == 2
    assert outputs(tmp_path / "ray") == expected
    again = parse_on_ray([f"file://{source}"], tiny_model, f"file://{tmp_path / 'ray'}", workers=2)
    assert len(again.skipped) == 2


def test_pretokenized_inputs_in_shards_give_the_one_process_output(cluster, tiny_model, tmp_path):
    """`-i horizontal` (and vertical, and presegmented text) on Ray: a huge pre-tokenized input
    is cut at blank lines (horizontal and presegmented text: after any line, here a file of
    sentences without blank lines), its shards concatenate to the one-process output (the
    document id once, sentence ids numbered on); a small one is parsed whole."""
    import json

    for layout in ("horizontal", "vertical", "presegmented"):
        source = tmp_path / f"in_{layout}"
        source.mkdir()
        lines = "The cat sat on the mat .\nIt was warm !\n\nA second paragraph , with a comma .\n"
        if layout == "presegmented":  # a line of two sentences stays one; no blank lines: cut after any line
            lines = lines.replace("It was warm !", "It was warm . It was late !").replace("\n\n", "\n")
        (source / "big.txt").write_text(lines * 80, encoding="utf-8")
        (source / "small.txt").write_text(lines, encoding="utf-8")
        local = tmp_path / f"local_{layout}"
        local.mkdir()
        report = parse_files(load(tiny_model), plan([source], local, "conllu", layout), "conllu", model_path=tiny_model,
                             progress=False)
        expected = outputs(local)
        target = tmp_path / f"ray_{layout}"
        report = parse_on_ray([source], tiny_model, target, workers=2, shard_bytes=2048, input_format=layout)
        assert report.exit_code == 0 and len(report.written) == 2, report.failed
        manifest = json.loads((target / "big.manifest.json").read_text())
        assert len(manifest["shards"]) > 2
        assert b"".join((target / s["path"]).read_bytes() for s in manifest["shards"]) == expected["big.conllu"]
        assert expected["big.conllu"].count(b"# newdoc") == 1
        if layout == "presegmented":  # a sentence per line
            assert expected["big.conllu"].count(b"# text") == 240
        assert (target / "small.conllu").read_bytes() == expected["small.conllu"]


def test_no_parse_on_ray_gives_the_one_process_output(cluster, tiny_model, tmp_path):
    """`--engine ray --no-parse`: the actors leave the tree stage out as one process does."""
    source = inputs(tmp_path / "in", copies=1)
    local = tmp_path / "local"
    local.mkdir()
    parse_files(load(tiny_model), plan([source], local, "conllu"), "conllu", model_path=tiny_model, progress=False,
                trees=False)
    expected = outputs(local)
    report = parse_on_ray([source], tiny_model, tmp_path / "ray", workers=2, trees=False)
    assert report.exit_code == 0 and len(report.written) == 2
    assert outputs(tmp_path / "ray") == expected
    assert "\t_\t_\t_\t" in expected["text0.conllu"].decode("utf-8")  # HEAD, DEPREL, DEPS: '_'


def test_token_ranges_of_shards_index_the_whole_input(cluster, tiny_model, tmp_path):
    """`--ranges` on Ray: a huge text (and presegmented text) input's shards go on counting
    characters from where they start in the file, so their concatenation is the one-process
    output, each TokenRange the FORM's place in the whole file."""
    import json

    from test_batch_parse import ranged_tokens, without_ranges

    text = "\ufeff" + ("Über  café\tnaïve.\r\nIt was\x01 warm!\n\n\n" + TEXT) * 40
    for layout in ("text", "presegmented"):
        source = tmp_path / f"in_{layout}"
        source.mkdir()
        (source / "big.txt").write_bytes(text.encode("utf-8"))
        local = tmp_path / f"local_{layout}"
        local.mkdir()
        parse_files(load(tiny_model), plan([source], local, "conllu", layout), "conllu", model_path=tiny_model,
                    progress=False, ranges=True)
        expected = outputs(local)["big.conllu"]
        tokens = ranged_tokens(expected.decode("utf-8"))
        assert [text[1:][a:b] for _, _, a, b in tokens] == [form for _, form, _, _ in tokens]
        target = tmp_path / f"ray_{layout}"
        report = parse_on_ray([source], tiny_model, target, workers=2, shard_bytes=2048, input_format=layout,
                              ranges=True)
        assert report.exit_code == 0 and len(report.written) == 1, report.failed
        manifest = json.loads((target / "big.manifest.json").read_text())
        assert len(manifest["shards"]) > 2 and manifest["shards"][1]["chars_before"] > 0
        assert b"".join((target / s["path"]).read_bytes() for s in manifest["shards"]) == expected
    # an interrupted run resumed without --ranges: the plan's settings differ, so no shard parsed
    # with ranges is kept beside those parsed without
    (target / "big.manifest.json").unlink()
    (target / "big.shards" / "00001.conllu").unlink()
    report = parse_on_ray([source], tiny_model, target, workers=2, shard_bytes=2048, input_format="presegmented")
    assert report.exit_code == 0 and len(report.written) == 1, report.failed
    manifest = json.loads((target / "big.manifest.json").read_text())
    assert manifest["settings"]["ranges"] is False
    joined = b"".join((target / s["path"]).read_bytes() for s in manifest["shards"])
    assert b"TokenRange" not in joined and joined.decode("utf-8") == without_ranges(expected.decode("utf-8"))


def test_a_model_changed_in_place_parses_every_shard_again(cluster, tiny_model, tmp_path):
    """Ray's plan records the model's files (sizes and times): an interrupted run resumed after
    the model was retrained in place parses every shard again, where it would have kept the
    shards of the old model beside those of the new one."""
    import json
    import shutil

    model = tmp_path / "model"
    shutil.copytree(tiny_model, model)
    source = tmp_path / "in"
    source.mkdir()
    (source / "big.txt").write_text(TEXT * 40, encoding="utf-8")
    target = tmp_path / "ray"
    assert parse_on_ray([source], model, target, workers=2, shard_bytes=2048).exit_code == 0
    shards = sorted((target / "big.shards").glob("*.conllu"))
    assert len(shards) > 2
    stamps = [p.stat().st_mtime_ns for p in shards]
    (target / "big.manifest.json").unlink()
    shards[-1].unlink()  # an interrupted run
    os.utime(model / "meta.json", ns=(time.time_ns(), time.time_ns() + 10**9))  # "retrained"
    report = parse_on_ray([source], model, target, workers=2, shard_bytes=2048)
    assert report.exit_code == 0 and len(report.written) == 1
    assert all(p.stat().st_mtime_ns != stamp for p, stamp in zip(shards[:-1], stamps))  # parsed again
    manifest = json.loads((target / "big.manifest.json").read_text())
    assert ["meta.json", (model / "meta.json").stat().st_size, (model / "meta.json").stat().st_mtime_ns] in \
        manifest["settings"]["model_files"]


# -- from a review of the Ray path as a user (session 26) --------------------------------------
def test_relative_paths_are_the_drivers(cluster, tiny_model, tmp_path, monkeypatch):
    """On a cluster an actor runs in another working directory: relative inputs failed there
    ("No such file") and relative outputs were written there. Ray here started in another
    directory than the one the driver now runs in, as a cluster's actors do."""
    source = inputs(tmp_path / "in", copies=1)
    expected, _ = one_process(tiny_model, source, tmp_path / "local")
    monkeypatch.chdir(tmp_path)
    report = parse_on_ray(["in"], tiny_model, "out", workers=2)
    assert report.exit_code == 0 and len(report.written) == 2, report.failed
    assert outputs(tmp_path / "out") == expected


def test_gold_tags_of_text_are_refused_as_in_the_one_process_path(cluster, tiny_model, tmp_path):
    source = inputs(tmp_path / "in", copies=1)
    with pytest.raises(ValueError, match="--gold-tags keeps the tags of CoNLL-U input"):
        parse_on_ray([source], tiny_model, tmp_path / "out", workers=2, gold_tags=True)
    assert not (tmp_path / "out").exists()


def test_two_formats_and_another_cutting_of_one_input(cluster, tiny_model, tmp_path):
    """A sharded input's manifest was NAME.manifest.json in every format, so its JSON output was
    never written ("already parsed"); --overwrite with another shard size left the other
    form's output beside the new one (the document twice)."""
    import json

    source = tmp_path / "in"
    source.mkdir()
    (source / "big.txt").write_text(TEXT * 40, encoding="utf-8")
    expected, _ = one_process(tiny_model, source, tmp_path / "local", "json")
    target = tmp_path / "ray"
    assert parse_on_ray([source], tiny_model, target, workers=2, shard_bytes=2048).exit_code == 0
    report = parse_on_ray([source], tiny_model, target, "json", workers=2, shard_bytes=2048)
    assert report.exit_code == 0 and len(report.written) == 1 and not report.skipped
    manifest = json.loads((target / "big.jsonl.manifest.json").read_text())
    assert b"".join((target / s["path"]).read_bytes() for s in manifest["shards"]) == expected["big.jsonl"]
    assert (target / "big.manifest.json").exists() and (target / "big.shards" / "00000.conllu").exists()
    # the whole file now, with --overwrite: the shards go, once the whole output is written
    assert parse_on_ray([source], tiny_model, target, workers=2, shard_bytes=0, overwrite=True).exit_code == 0
    assert (target / "big.conllu").exists()
    assert not (target / "big.manifest.json").exists() and not (target / "big.shards").exists()
    # and back: the whole output goes
    assert parse_on_ray([source], tiny_model, target, workers=2, shard_bytes=2048, overwrite=True).exit_code == 0
    assert not (target / "big.conllu").exists() and (target / "big.manifest.json").exists()
    # html is a page per input: never cut
    report = parse_on_ray([source], tiny_model, target, "html", workers=2, shard_bytes=2048)
    assert report.exit_code == 0 and (target / "big.html").exists() and not (target / "big.html.shards").exists()


def test_failures_on_either_side_are_a_file_each_in_input_order(cluster, tiny_model, tmp_path):
    """A missing input failed the whole run (the one-process path reports it and goes on); an
    output that cannot be written ended the run with Ray's traceback; a failed sharded input
    left its plan; a failure found before Ray was listed before the actors' whatever the order."""
    source = tmp_path / "in"
    source.mkdir()
    (source / "a_binary.txt").write_bytes(b"abc\x00def\n")
    (source / "b_ok.txt").write_text(TEXT, encoding="utf-8")
    (source / "c" / "sub").mkdir(parents=True)
    (source / "c" / "sub" / "blocked.txt").write_text(TEXT, encoding="utf-8")
    (source / "d_big.txt").write_text(TEXT * 40 + "x\x00y\n", encoding="utf-8")
    target = tmp_path / "ray"
    target.mkdir()
    (target / "sub").write_text("")  # a file where the output directory of c/sub/blocked.txt would be
    given = [source / "a_binary.txt", tmp_path / "missing.txt", source / "b_ok.txt", source / "c",
             source / "d_big.txt"]
    report = parse_on_ray(given, tiny_model, target, workers=2, shard_bytes=2048)
    assert report.exit_code == 2
    assert [p.name for p, _ in report.failed] == ["a_binary.txt", "missing.txt", "blocked.txt", "d_big.txt"]
    assert "No such file" in report.failed[1][1] and "sub/blocked.conllu" in report.failed[2][1]
    assert [p.name for p in report.written] == ["b_ok.txt"]
    assert not (target / "d_big.shards").exists() and not (target / "d_big.manifest.json").exists()
    with pytest.raises(OSError):  # an output directory that is a file: before Ray is asked anything
        parse_on_ray([source / "b_ok.txt"], tiny_model, source / "b_ok.txt", workers=2)


def test_without_an_address_ray_is_found_as_ray_init_finds_it(cluster):
    """Another process's `connect(None, 3)`: with RAY_ADDRESS naming this cluster it joins it (a
    cluster that exists refused num_cpus); without, it starts a Ray of its own with 3 CPUs and
    does not join this one, which is another program's (address "auto" joined any Ray running
    here: a review of the session's diff)."""
    import json
    import subprocess
    import sys

    script = ("import json, ray\nfrom arborist.distributed import connect\nconnect(None, 3)\n"
              "print(json.dumps([ray.get_runtime_context().gcs_address, ray.cluster_resources().get('CPU')]))\n"
              "ray.shutdown()\n")
    ours = ray.get_runtime_context().gcs_address
    found = []
    for env in ({**os.environ, "RAY_ADDRESS": ours}, {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}):
        run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-2000:]
        found.append(json.loads(run.stdout.strip().splitlines()[-1]))
    assert found[0][0] == ours
    assert found[1][0] != ours and found[1][1] == 3


def test_one_input_given_as_a_str_is_refused(tmp_path, monkeypatch):
    """Its characters were the inputs: "." parsed the working directory, "/" walked the root."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TypeError, match="not one"):
        parse_on_ray("a.", "model", "out")
    assert not (tmp_path / "out").exists()
