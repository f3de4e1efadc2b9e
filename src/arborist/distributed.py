"""Batch parsing on a Ray cluster (`arborist parse --engine ray`, or `parse` below).

Ray Data spreads the input files over a pool of actors (`map_batches` with a callable
class): each actor loads the model once (`share_weights`: its weight arrays memory-mapped,
so that the actors of one node share their pages; by default a private copy, which is
faster: numpy backs large arrays with transparent huge pages, a file mapping gets 4 KB
pages, and the hashed weight lookups then miss the TLB: 22% fewer words/s measured with
the en_ewt pipeline), and parses whole files with the
same code as the one-process path (`batch.parse_files` on one job), so every output
has the same bytes as `arborist parse` writes. Each output is written to a temporary
file beside its target and renamed into place when complete: a killed worker or
driver leaves no partial output under the final name, Ray retries the killed
worker's file on a restarted actor, and a rerun skips the outputs that exist
(resume). Files that cannot be read are reported as `arborist parse` reports them.

Inputs and the output directory are local paths or URLs of any filesystem fsspec
reaches (s3://, gs://, abfs://, hdfs://, file://; the filesystem's package must be
installed on every node). A remote input is read in place (ranged reads); a remote
output is written under a temporary name and moved into place when complete.

Huge inputs are cut into shards of about `shard_bytes` at paragraph (text), sentence
(CoNLL-U) or line-end (pre-tokenized text: after a sentence's line, or a blank line;
presegmented text: after any line) boundaries, found by reading the file once with the same reader,
so the shards are spread over the actors. A sharded input A.txt gives
A.shards/00000.conllu, 00001... and, once every shard is written, A.manifest.json,
which lists them in order; the shards concatenated in that order are byte for byte
the output `arborist parse` writes for A.txt (the paragraph numbers of sentence ids, and
the sentence numbers of pre-tokenized text, continue across shards; the manifest's
`paragraphs_before` counts sentences for the latter, and for presegmented text
`paragraph_lines_before` the lines of the paragraph a shard starts inside; for text,
`chars_before` the characters before a shard, where its TokenRange offsets go on). A rerun skips
an input whose manifest exists, and the shards that exist when they were cut where this run
cuts and parsed with its settings (A.shards/plan.json, written before any shard is parsed);
otherwise it parses them all again (`keep_shards`).

Without an address, as `ray.init()`: it joins the cluster RAY_ADDRESS names or the one `ray
start` left on this machine, and else starts Ray on this machine with `workers` CPUs; with one
(`ray://head:10001`, which needs `ray[client]`, in the extra; or "auto" on a cluster node), it
joins that cluster. On a cluster, local inputs and outputs must be on a filesystem every node
sees; their paths go to the actors made absolute (an actor runs in another directory).

Ray is an optional extra: `pip install "arborist[ray]"`.
"""
from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import uuid
from pathlib import Path

from .batch import (FORMATS, INPUT_FORMATS, Job, Report, input_kind, location_name, location_size,
                    paragraph_boundaries, parse_files, plan, pretokenized_boundaries, sentence_line_boundaries,
                    text_job_error)
from .corpus import conllu_boundaries

SHARD_BYTES = 256 * 2 ** 20  # inputs larger than this are cut into shards of about this size
MANIFEST_FORMAT = "arborist-shards/1"


def is_url(location) -> bool:
    return isinstance(location, str) and "://" in location


def _fs(url: str):
    import fsspec

    return fsspec.core.url_to_fs(url)


def _join(directory, *parts: str):
    if is_url(directory):
        return "/".join([str(directory).rstrip("/"), *(p for p in parts if p and p != ".")])
    return Path(directory).joinpath(*parts)


def _exists(location) -> bool:
    if is_url(location):
        fs, path = _fs(location)
        return fs.exists(path)
    return Path(location).exists()


def plan_any(inputs: list, output_dir, fmt: str, input_format: str = "auto") -> list[Job]:
    """`batch.plan` for local paths and URLs alike: one job per input file (a directory
    contributes its files, recursively, sorted, hidden ones left out), its output below
    `output_dir` at its path relative to the directory given; `input_format` as `plan`'s."""
    if input_format not in INPUT_FORMATS:
        raise ValueError(f"unknown input format {input_format!r}: one of {', '.join(INPUT_FORMATS)}")
    jobs = []
    for given in inputs:
        if not is_url(given):
            local = plan([Path(given)], Path("/") if is_url(output_dir) else Path(output_dir), fmt, input_format)
            if is_url(output_dir):
                local = [dataclasses.replace(j, target=_join(output_dir, *j.target.relative_to("/").parts))
                         for j in local]
            jobs += local
            continue
        fs, root = _fs(given)
        if fs.isdir(root):
            root = root.rstrip("/")
            files = sorted(p for p in fs.find(root)
                           if not any(part.startswith(".") for part in p[len(root) + 1:].split("/")))
            pairs = [(p, p[len(root) + 1:].rsplit("/", 1)[0] if "/" in p[len(root) + 1:] else "") for p in files]
        else:
            pairs = [(root, "")]
        for path, relative in pairs:
            name = path.rsplit("/", 1)[-1]
            stem, suffix = os.path.splitext(name)
            jobs.append(Job(fs.unstrip_protocol(path), _join(output_dir, *relative.split("/"), stem + FORMATS[fmt]),
                            **input_kind(suffix, input_format)))
    targets = [str(j.target) for j in jobs]
    if len(set(targets)) != len(targets):
        raise ValueError("two inputs would write the same output: "
                         + ", ".join(sorted({t for t in targets if targets.count(t) > 1})))
    return jobs


# -- shards -----------------------------------------------------------------------
def shard_paths(target) -> tuple[object, object]:
    """(the directory of a sharded input's outputs, its manifest): A.shards and A.manifest.json
    for A.conllu; for the other formats the output's whole name, A.jsonl.shards and
    A.jsonl.manifest.json, so that one input's outputs in two formats never share them."""
    stem, suffix = os.path.splitext(location_name(target))
    base = stem if suffix == FORMATS["conllu"] else stem + suffix
    parent = str(target).rsplit("/", 1)[0] if is_url(target) else Path(target).parent
    return _join(parent, f"{base}.shards"), _join(parent, f"{base}.manifest.json")


def remove_sharded(target) -> None:
    """Remove a sharded output: its manifest, the shards its plan lists, the plan, and the
    shards' directory when that is left empty (a local one)."""
    directory, manifest = shard_paths(target)
    location = _join(directory, "plan.json")
    for shard_output in _planned_shards(directory, _read_plan(location)):
        _remove(shard_output)
    _remove(location)
    _remove(manifest)
    if not is_url(directory):
        try:
            Path(directory).rmdir()
        except OSError:  # not empty (files of the user's), or absent
            pass


def shard(job: Job, shard_bytes: int | None) -> list[Job]:
    """The job itself, or its shards when its input is larger than `shard_bytes`: about
    that many bytes each, cut where `read_paragraphs`/`read_conllu` can start reading."""
    job.size = location_size(job.source)
    if not shard_bytes or job.size <= shard_bytes:
        return [job]
    cuts, nxt = [], shard_bytes
    # (byte offset, line number, paragraphs before, lines of the last of them before, characters
    # before: text only, where the shard's TokenRange offsets start)
    if job.conllu:
        boundaries = ((offset, line, 0, 0, 0) for offset, line in conllu_boundaries(job.source))
    elif job.pretokenized:
        boundaries = ((*b, 0, 0) for b in pretokenized_boundaries(job.source, job.pretokenized))
    elif job.presegmented:
        boundaries = sentence_line_boundaries(job.source)
    else:
        boundaries = ((offset, line, paragraphs, 0, chars)
                      for offset, line, paragraphs, chars in paragraph_boundaries(job.source))
    for boundary in boundaries:
        if nxt <= boundary[0] < job.size:
            cuts.append(boundary)
            nxt = boundary[0] + shard_bytes
    if not cuts:
        return [job]
    directory, _ = shard_paths(job.target)
    suffix = os.path.splitext(location_name(job.target))[1]
    starts = [(0, 1, 0, 0, 0)] + cuts
    ends = [c[0] for c in cuts] + [None]
    return [dataclasses.replace(job, target=_join(directory, f"{k:05d}{suffix}"), start=start, end=end, line=line,
                                paragraph=paragraphs, paragraph_lines=lines, char=chars,
                                size=(end if end is not None else job.size) - start)
            for k, ((start, line, paragraphs, lines, chars), end) in enumerate(zip(starts, ends))]


def shard_plan(original: Job, shards: list[Job], settings: dict | None = None) -> dict:
    """Where a sharded input was cut, and the settings its shards are parsed with (those that
    change a shard's output: the model and its files, how the input is read, --gold-tags,
    --lang, --no-parse, --ranges): the manifest without the words."""
    directory, _ = shard_paths(original.target)
    return {"format": MANIFEST_FORMAT, "source": str(original.source), "source_bytes": original.size,
            "settings": settings or {},
            "shards": [{"path": f"{location_name(directory)}/{location_name(s.target)}", "start": s.start,
                        "end": s.end if s.end is not None else original.size, "first_line": s.line,
                        "paragraphs_before": s.paragraph, "paragraph_lines_before": s.paragraph_lines,
                        "chars_before": s.char}
                       for s in shards]}


def write_manifest(original: Job, shards: list[Job], words: dict[int, int], settings: dict | None = None) -> None:
    """The manifest of a sharded input, written atomically once all its shards exist."""
    _, manifest = shard_paths(original.target)
    document = shard_plan(original, shards, settings)
    for k, entry in enumerate(document["shards"]):
        entry["words"] = words.get(k)
    _write_text(manifest, json.dumps(document, indent=1, ensure_ascii=False) + "\n")


def keep_shards(original: Job, shards: list[Job], overwrite: bool = False, settings: dict | None = None) -> bool:
    """Whether the shard outputs a earlier run left can be kept: they were cut where `shards`
    are and parsed with these `settings` (the plan, NAME.shards/plan.json, written before any
    shard is parsed, is this one). Otherwise (another shard size, a changed input, other
    settings, a run from before plans, or `overwrite`) they are removed, those the old plan
    lists too, and this plan written: every shard is parsed again, so that the shards
    concatenated are never a mix of two cuttings or of two settings."""
    directory, _ = shard_paths(original.target)
    location = _join(directory, "plan.json")
    plan = shard_plan(original, shards, settings)
    old = _read_plan(location)
    if old == plan and not overwrite:
        return True
    stale = {str(s.target): s.target for s in shards}
    stale.update((str(target), target) for target in _planned_shards(directory, old))
    for target in stale.values():
        _remove(target)
    _write_text(location, json.dumps(plan, indent=1, ensure_ascii=False) + "\n")
    return False


def _read_plan(location) -> dict | None:
    """A shard plan (`shard_plan`) an earlier run wrote, or None (none, or not readable)."""
    try:
        return json.loads(_read_text(location)) if _exists(location) else None
    except (OSError, ValueError):
        return None


def _planned_shards(directory, plan: dict | None) -> list:
    """The shard outputs a plan lists, in `directory` (none for a plan that is not one)."""
    if not isinstance(plan, dict) or not isinstance(plan.get("shards"), list):
        return []
    names = {str(entry.get("path", "")).rsplit("/", 1)[-1] for entry in plan["shards"] if isinstance(entry, dict)}
    return [_join(directory, name) for name in sorted(names) if name]


def _read_text(location) -> str:
    if is_url(location):
        fs, path = _fs(location)
        return fs.cat_file(path).decode("utf-8")
    return Path(location).read_text(encoding="utf-8")


def _write_text(location, text: str) -> None:
    if is_url(location):
        fs, path = _fs(location)
        tmp = f"{path.rsplit('/', 1)[0]}/.{path.rsplit('/', 1)[-1]}.tmp-{uuid.uuid4().hex}"
        fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        fs.pipe_file(tmp, text.encode("utf-8"))
        fs.mv(tmp, path)
        return
    location = Path(location)
    location.parent.mkdir(parents=True, exist_ok=True)
    tmp = location.with_name(f".{location.name}.tmp{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, location)


def _remove(location) -> None:
    if is_url(location):
        fs, path = _fs(location)
        if fs.exists(path):
            fs.rm(path)
    else:
        Path(location).unlink(missing_ok=True)


# -- the actors ---------------------------------------------------------------------
class FileParser:
    """One Ray Data actor: the model, loaded once; parses the files (or shards) of each batch of rows."""

    def __init__(self, model: str, fmt: str, lang: str | None, gold_tags: bool, share_weights: bool = False,
                 trees: bool = True, ranges: bool = False):
        from .model import load

        from .batch import Annotator

        self.model, self.fmt, self.lang, self.gold_tags = model, fmt, lang, gold_tags
        self.pipeline = load(model, mmap=share_weights)
        # built once per actor: its spaCy pipeline is the costly part of a small file's parse
        self.annotator = Annotator(self.pipeline, fmt, lang or self.pipeline.lang, gold_tags, trees=trees,
                                   ranges=ranges)

    def __call__(self, batch: dict) -> dict:
        out = {"key": [], "written": [], "message": [], "words": []}
        for k in range(len(batch["key"])):
            source, target = batch["source"][k], batch["target"][k]
            job = Job(source if is_url(source) else Path(source), target if is_url(target) else Path(target),
                      bool(batch["conllu"][k]), size=int(batch["size"][k]), start=int(batch["start"][k]),
                      end=int(batch["end"][k]) if batch["end"][k] >= 0 else None, line=int(batch["line"][k]),
                      paragraph=int(batch["paragraph"][k]), pretokenized=str(batch["pretokenized"][k]) or None,
                      presegmented=bool(batch["presegmented"][k]), paragraph_lines=int(batch["paragraph_lines"][k]),
                      char=int(batch["char"][k]))
            report = self.parse_to_url(job) if is_url(target) else self.parse(job)
            out["key"].append(batch["key"][k])
            out["written"].append(bool(report.written))
            out["message"].append(report.failed[0][1] if report.failed else "")
            out["words"].append(report.words)
        return out

    def parse(self, job: Job) -> Report:
        try:
            return parse_files(self.pipeline, [job], self.fmt, model_path=self.model, lang=self.lang,
                               gold_tags=self.gold_tags, overwrite=True, progress=False, annotator=self.annotator,
                               quiet=True)
        except OSError as e:  # the output side (a full disk, no permission): this file fails, not the run
            return _failed(job, e)

    def parse_to_url(self, job: Job) -> Report:
        """Parse into a local temporary file, then upload it under a temporary name and move
        it into place: the target appears complete or not at all."""
        fs, path = _fs(job.target)
        with tempfile.TemporaryDirectory(prefix="arborist-") as scratch:
            local = Path(scratch) / location_name(job.target)
            report = self.parse(dataclasses.replace(job, target=local))
            if report.written:
                parent, name = path.rsplit("/", 1)
                tmp = f"{parent}/.{name}.tmp-{uuid.uuid4().hex}"
                try:
                    fs.makedirs(parent, exist_ok=True)
                    fs.put_file(str(local), tmp)
                    fs.mv(tmp, path)
                except OSError as e:
                    return _failed(job, e)
        return report


def _failed(job: Job, error: OSError) -> Report:
    """The report of a file whose output could not be written."""
    report = Report()
    report.failed.append((job.source, f"{job.target}: {error.strerror or error}"))
    return report


def parse(inputs: list[str | os.PathLike], model: str | os.PathLike, output_dir: str | os.PathLike,
          fmt: str = "conllu", *, workers: int | None = None, address: str | None = None,
          lang: str | None = None, gold_tags: bool = False, overwrite: bool = False,
          shard_bytes: int | None = SHARD_BYTES, share_weights: bool = False, input_format: str = "auto",
          trees: bool = True, ranges: bool = False) -> Report:
    """Parse files and directories of text and CoNLL-U (local paths or URLs) on Ray into
    `output_dir` (a path or a URL); returns the same report as `batch.parse_files`.
    `workers`: the actors (default: the cluster's CPUs). `shard_bytes`: inputs larger
    than this are parsed in shards (None or 0: never). `share_weights`: the actors of a
    node memory-map the weights and share their pages (less memory, slower lookups; see
    the module docstring); by default each holds a copy. `input_format`: as `arborist parse
    --input-format` (`batch.INPUT_FORMATS`). `trees=False`: no parser or labeler (`--no-parse`).
    `ranges`: TokenRange in the MISC of text's tokens, offsets in the whole input (`--ranges`)."""
    import time

    import ray

    if isinstance(inputs, (str, os.PathLike)):  # its characters were inputs: "." the working directory
        raise TypeError(f"inputs is a list of paths or URLs, not one: give [{str(inputs)!r}]")
    inputs = [p if is_url(p) else Path(p) for p in inputs]
    output_dir = output_dir if is_url(output_dir) else Path(output_dir)
    if fmt == "html":  # a page per input: shards would be pages of their own
        shard_bytes = None
    report = Report()
    # what a shard's output depends on besides its bytes (`keep_shards`): the model (its files'
    # sizes and times too, so that one retrained in place between two runs counts as another)
    model_dir = Path(model).resolve()
    settings = {"model": str(model_dir), "model_files": sorted(
                    [p.name, p.stat().st_size, p.stat().st_mtime_ns] for p in model_dir.iterdir() if p.is_file()),
                "input_format": input_format, "gold_tags": gold_tags, "lang": lang, "trees": trees, "ranges": ranges}
    jobs = plan_any(inputs, output_dir, fmt, input_format)
    if gold_tags and text_job_error(jobs):
        raise ValueError(text_job_error(jobs))
    if not is_url(output_dir):
        output_dir.mkdir(parents=True, exist_ok=True)  # a file of that name fails here, before Ray starts
    todo: list[_Input] = []
    for job in jobs:
        sharded, whole = _exists(shard_paths(job.target)[1]), _exists(job.target)
        if (sharded or whole) and not overwrite:
            report.skipped.append(job.source)
            continue
        entry = _Input(job, sharded=sharded, whole=whole)
        todo.append(entry)
        try:
            entry.parts = shard(job, shard_bytes)
        except OSError as e:
            entry.failure = f"{job.source}: {e.strerror or e}"
            continue
        except ValueError as e:  # a read error while finding the shards' boundaries
            entry.failure = str(e)
            continue
        try:
            kept = len(entry.parts) > 1 and keep_shards(job, entry.parts, overwrite, settings)
        except OSError as e:
            entry.failure = f"{shard_paths(job.target)[0]}: {e.strerror or e}"
            continue
        entry.pending = {k for k, p in enumerate(entry.parts) if not kept or not _exists(p.target)}
    if not todo:
        return report
    start = time.perf_counter()
    if not ray.is_initialized():
        connect(address, workers)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    workers = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    # local paths absolute: an actor on a cluster runs in another working directory
    where = lambda location: str(location) if is_url(location) else str(Path(location).absolute())
    rows = [{"key": f"{i}/{k}", "source": where(p.source), "target": where(p.target), "conllu": p.conllu,
             "size": p.size, "start": p.start, "end": -1 if p.end is None else p.end, "line": p.line,
             "paragraph": p.paragraph, "pretokenized": p.pretokenized or "", "presegmented": p.presegmented,
             "paragraph_lines": p.paragraph_lines, "char": p.char}
            for i, entry in enumerate(todo) for k, p in enumerate(entry.parts) if k in entry.pending]
    by_key = {}
    if rows:
        results = ray.data.from_items(rows, override_num_blocks=len(rows)).map_batches(
            FileParser, fn_constructor_kwargs={"model": settings["model"], "fmt": fmt, "lang": lang,
                                               "gold_tags": gold_tags, "share_weights": share_weights,
                                               "trees": trees, "ranges": ranges},
            # Ray Data restarts a dead actor and retries its file (its defaults: no limit)
            batch_size=1, compute=ray.data.ActorPoolStrategy(size=min(workers, len(rows))), num_cpus=1).take_all()
        by_key = {row["key"]: row for row in results}
    for i, entry in enumerate(todo):  # in input order, as the one-process path reports them
        job, parts = entry.job, entry.parts
        rows_of = [by_key.get(f"{i}/{k}") for k in range(len(parts))]
        failure = entry.failure or next((row["message"] for row in rows_of if row is not None and not row["written"]),
                                        None)
        if failure is not None:
            report.failed.append((job.source, failure))
            if len(parts) > 1:  # no output for a failed input, as in the one-process path
                try:
                    remove_sharded(job.target)
                except OSError:  # (the failure may be this very directory)
                    pass
            continue
        report.written.append(job.source)
        report.words += sum(int(row["words"]) for row in rows_of if row is not None)
        if len(parts) > 1:
            write_manifest(job, parts, {k: int(row["words"]) for k, row in enumerate(rows_of) if row is not None},
                           settings)
            if entry.whole:  # --overwrite, cut now and not before: the earlier whole output goes
                _remove(job.target)
        elif entry.sharded:  # and the other way round, the earlier shards
            remove_sharded(job.target)
    report.seconds = time.perf_counter() - start
    return report


def connect(address: str | None, workers: int | None) -> None:
    """Join the cluster at `address`; without one, as `ray.init()` does: the cluster RAY_ADDRESS
    names or the one `ray start` left on this machine, else a Ray of its own here with
    `workers` CPUs (so that more workers than cores still run). A cluster that exists refuses
    num_cpus ("When connecting to an existing cluster, num_cpus ... must not be provided"):
    then it is joined as it is. A cluster that cannot be reached raises ConnectionError, as
    `ray.init()` does. (Not "auto", which joins any Ray running here, another program's too.)"""
    import ray

    options = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if address is not None:
        ray.init(address=address, **options)
        return
    try:
        ray.init(num_cpus=workers, **options)
    except ValueError as e:
        if "existing cluster" not in str(e):
            raise
        ray.init(**options)


@dataclasses.dataclass
class _Input:
    """An input of `parse`: its shards (or itself) and those to parse, or why it failed before
    Ray; whether its output existed, sharded or whole (replaced with --overwrite)."""
    job: Job
    sharded: bool = False
    whole: bool = False
    parts: list = dataclasses.field(default_factory=list)
    pending: set = dataclasses.field(default_factory=set)
    failure: str | None = None
