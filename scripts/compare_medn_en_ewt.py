"""LapMEDN against EG-M3N on en_ewt: dev UAS and sparsity of the weights, from two
`arborist train` output directories (their training.json and model-best).

    arborist train configs/en_ewt_medn.cfg --output runs/medn_lap
    arborist train configs/en_ewt_eg_m3n.cfg --output runs/eg_m3n_c1000 --set components.parser.trainer.C=1000.0 \\
        --set components.parser.trainer.anneal=false --set training.max_epochs=9 \\
        --set components.parser.structure.projective=true
    python scripts/compare_medn_en_ewt.py runs/medn_lap runs/eg_m3n_c1000

Sparsity is counted the same way for both (`arborist.learn.medn.sparsity`): a weight is
effectively zero when |w| <= tolerance x max |w|, at several tolerances; "used" weights
are the exactly non-zero slots of the 2**24 hashed vector.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import arborist
from arborist.learn.medn import sparsity

RESULTS = Path(__file__).resolve().parent / "results"
TOLERANCES = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2)


def summary(run: Path) -> dict:
    report = json.loads((run / "training.json").read_text())
    parser = report["components"]["parser"]
    weights = arborist.load(run).writer("head").weights.array
    return {
        "run": str(run),
        "best_epoch": parser["best_epoch"],
        "best_dev_uas": parser["best"],
        "dev_uas_per_epoch": [row.get("dev_uas") for row in parser["history"]],
        "relative_gap_per_epoch": [row.get("relative_gap") for row in parser["history"]],
        "outer_iterations": parser.get("outer", []),
        "best_model_sparsity": {str(t): sparsity(weights, t) for t in TOLERANCES},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("medn", type=Path)
    parser.add_argument("m3n", type=Path)
    parser.add_argument("--output", type=Path, default=RESULTS / "medn_en_ewt.json")
    args = parser.parse_args()
    out = {"LapMEDN": summary(args.medn), "EG-M3N": summary(args.m3n)}
    args.output.write_text(json.dumps(out, indent=1) + "\n")
    for name, row in out.items():
        print(f"{name}: best dev UAS {row['best_dev_uas']:.2f} (epoch {row['best_epoch']}), per epoch "
              + ", ".join(f"{u:.2f}" for u in row["dev_uas_per_epoch"]))
        for t, s in row["best_model_sparsity"].items():
            print(f"  tolerance {t}: {s['nonzero_weights']} non-zero of {s['used_weights']} used "
                  f"({100 * s['nonzero_share_of_used']:.2f}% of used, {100 * s['nonzero_share']:.3f}% of all slots)")


if __name__ == "__main__":
    main()
