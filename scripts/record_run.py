"""Record a training run's summary in scripts/results/runs/NAME.json.

`arborist train CONFIG --output RUN_DIR` writes RUN_DIR/training.json (per component:
the best epoch, its score, why training stopped, the per-epoch history, the fitted
temperature, C-annealing rows). RUN_DIR is not in git; this copies that file's
figures, unrounded, with the command that produced the run, so that a README figure
taken from a training run has a record in scripts/results/:

    python scripts/record_run.py RUN_DIR --name NAME --command "arborist train CONFIG --output RUN_DIR ..."

Nothing is computed or typed in: the components are training.json's as they are;
the file adds the command, the run directory and the config of model-best/meta.json
(each component's registry calls) when there is one.
"""
from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path, help="the --output directory of `arborist train`")
    ap.add_argument("--name", required=True, help="writes scripts/results/runs/NAME.json")
    ap.add_argument("--command", required=True, help="the `arborist train` command that produced RUN_DIR")
    ap.add_argument("--results", type=Path, default=REPO / "scripts" / "results" / "runs")
    args = ap.parse_args()

    training = json.loads((args.run_dir / "training.json").read_text(encoding="utf-8"))
    record: dict = {"name": args.name, "command": args.command, "run_dir": str(args.run_dir),
                    "script": "scripts/record_run.py", "machine": platform.processor() or platform.machine()}
    meta_path = args.run_dir / "model-best" / "meta.json"
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        components = meta.get("components", [])
        if isinstance(components, list):
            record["model_best"] = [
                {key: entry.get(key) for key in ("name", "kind", "structure", "trainer") if key in entry}
                for entry in components if isinstance(entry, dict)]
    record["training"] = training
    args.results.mkdir(parents=True, exist_ok=True)
    out = args.results / f"{args.name}.json"
    out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    summary = {name: (entry.get("best_epoch"), entry.get("best"))
               for name, entry in training.get("components", {}).items()}
    print(f"{out}: best (epoch, score) {summary}")


if __name__ == "__main__":
    main()
