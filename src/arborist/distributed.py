"""Batch parsing on a Ray cluster (`arborist parse --engine ray`, or `parse` below).

Ray Data spreads the input files over a pool of actors (`map_batches` with a callable
class): each actor loads the model once, its weight arrays memory-mapped copy-on-write
so that the actors of one node share their pages, and parses whole files with the
same code as the one-process path (`batch.parse_files` on one job), so every output
has the same bytes as `arborist parse` writes. Each output is written to a temporary
file beside its target and renamed into place when complete: a killed worker or
driver leaves no partial output under the final name, Ray retries the killed
worker's file on a restarted actor, and a rerun skips the outputs that exist
(resume). Files that cannot be read are reported as `arborist parse` reports them.

Without an address, Ray starts on this machine (`ray.init(num_cpus=workers)`); with
one (`ray://head:10001`, or "auto" on a cluster node), it joins that cluster, and
inputs and outputs must then be on a filesystem every node sees.

Ray is an optional extra: `pip install "arborist[ray]"`.
"""
from __future__ import annotations

import os
from pathlib import Path

from .batch import Job, Report, parse_files, plan

ACTOR_RESTARTS = 3  # a worker killed mid-file is restarted and its file parsed again, up to this often


class FileParser:
    """One Ray Data actor: the model, loaded once; parses the files of each batch of rows."""

    def __init__(self, model: str, fmt: str, lang: str | None, gold_tags: bool):
        from .model import load

        from .batch import Annotator

        self.model, self.fmt, self.lang, self.gold_tags = model, fmt, lang, gold_tags
        self.pipeline = load(model, mmap=True)
        # built once per actor: its spaCy pipeline is the costly part of a small file's parse
        self.annotator = Annotator(self.pipeline, fmt, lang or self.pipeline.lang, gold_tags)

    def __call__(self, batch: dict) -> dict:
        out = {"source": [], "written": [], "message": [], "words": []}
        for source, target, conllu in zip(batch["source"], batch["target"], batch["conllu"]):
            job = Job(Path(source), Path(target), bool(conllu))
            report = parse_files(self.pipeline, [job], self.fmt, model_path=self.model, lang=self.lang,
                                 gold_tags=self.gold_tags, overwrite=True, progress=False, annotator=self.annotator)
            out["source"].append(str(source))
            out["written"].append(bool(report.written))
            out["message"].append(report.failed[0][1] if report.failed else "")
            out["words"].append(report.words)
        return out


def parse(inputs: list[str | os.PathLike], model: str | os.PathLike, output_dir: str | os.PathLike,
          fmt: str = "conllu", *, workers: int | None = None, address: str | None = None,
          lang: str | None = None, gold_tags: bool = False, overwrite: bool = False) -> Report:
    """Parse files and directories of text and CoNLL-U on Ray; returns the same report as
    `batch.parse_files`. `workers`: the actors (default: the cluster's CPUs)."""
    import time

    import ray

    jobs = plan([Path(p) for p in inputs], Path(output_dir), fmt)
    report = Report()
    todo = []
    for job in jobs:
        if job.target.exists() and not overwrite:
            report.skipped.append(job.source)
        else:
            todo.append(job)
    if not todo:
        return report
    start = time.perf_counter()
    if not ray.is_initialized():
        ray.init(address=address, num_cpus=workers if address is None else None, include_dashboard=False,
                 log_to_driver=False, configure_logging=False)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    workers = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    rows = [{"source": str(j.source), "target": str(j.target), "conllu": j.conllu} for j in todo]
    results = ray.data.from_items(rows, override_num_blocks=len(rows)).map_batches(
        FileParser, fn_constructor_kwargs={"model": str(Path(model).resolve()), "fmt": fmt, "lang": lang,
                                           "gold_tags": gold_tags},
        batch_size=1, concurrency=workers, num_cpus=1,
        ray_remote_args_fn=lambda: {"max_restarts": ACTOR_RESTARTS, "max_task_retries": ACTOR_RESTARTS}).take_all()
    by_source = {row["source"]: row for row in results}
    for job in todo:  # in input order, as the one-process path reports them
        row = by_source[str(job.source)]
        if row["written"]:
            report.written.append(job.source)
            report.words += int(row["words"])
        else:
            report.failed.append((job.source, row["message"]))
    report.seconds = time.perf_counter() - start
    return report
