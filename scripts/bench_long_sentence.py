"""One sentence of N words (a chain) through `arborist evaluate` and `arborist parse`:
wall time and peak memory of each command (issue 28, item 3). Writes JSON.

    python scripts/bench_long_sentence.py MODEL [--words 10000]
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHILD = "import resource, subprocess, sys; subprocess.run(sys.argv[1:]); " \
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"


def measure(command: list[str]) -> dict:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, *command], capture_output=True, text=True)
    return {"command": " ".join(command[2:]), "wall_s": round(time.perf_counter() - start, 2),
            "peak_rss_mb": round(int(done.stdout.split()[-1]) / 1024, 1), "stderr_tail": done.stderr[-400:]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--words", type=int, default=10_000)
    ap.add_argument("--output", default=str(HERE / "results" / "long_sentence.json"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        gold = Path(tmp) / "long.conllu"
        lines = [f"{m}\tw{m % 97}\tw{m % 97}\tNOUN\tNN\t_\t{m - 1}\t{'root' if m == 1 else 'dep'}\t_\t_"
                 for m in range(1, args.words + 1)]
        gold.write_text("# sent_id = long\n" + "\n".join(lines) + "\n\n", encoding="utf-8")
        cli = [sys.executable, "-m", "arborist.cli"]
        result = {"words": args.words, "model": args.model,
                  "evaluate": measure(cli + ["evaluate", args.model, str(gold), "--json"]),
                  "parse": measure(cli + ["parse", args.model, str(gold), "--output-dir", str(Path(tmp) / "out"),
                                          "--no-progress"])}
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
