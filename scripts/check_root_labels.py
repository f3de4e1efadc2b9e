"""UD's tree constraint on the labeler's output (issue 28, item 2): on the raw text of
treebanks' dev sets, count words labelled `root` whose HEAD is not 0, words attached to
the root with another label, and sentences without exactly one root. Writes JSON.

    python scripts/check_root_labels.py --model en_ewt MODEL --model el_gdt MODEL2 ...
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPORA = HERE.parent.parent / "shared" / "corpora" / "ud"
TOOLS = HERE.parent.parent / "shared" / "tools"


def violations(conllu: Path) -> dict:
    words = root_elsewhere = head0_other = sentences = not_one_root = roots = 0
    for line in conllu.read_text(encoding="utf-8").splitlines() + [""]:
        if not line or line.startswith("#"):
            continue
        columns = line.split("\t")
        if "-" in columns[0] or "." in columns[0]:
            continue
        if columns[0] == "1":  # a new sentence: settle the previous one
            sentences += 1
            not_one_root += sentences > 1 and roots != 1
            roots = 0
        words += 1
        head0 = columns[6] == "0"
        roots += head0
        root_elsewhere += columns[7] == "root" and not head0
        head0_other += head0 and columns[7] != "root"
    not_one_root += sentences > 0 and roots != 1
    return {"sentences": sentences, "words": words, "root_label_on_a_non_root_arc": root_elsewhere,
            "root_arc_with_another_label": head0_other, "sentences_without_exactly_one_root": not_one_root}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", nargs=2, action="append", metavar=("TREEBANK", "MODEL"), required=True)
    ap.add_argument("--output", default=str(HERE / "results" / "root_labels.json"))
    args = ap.parse_args()
    result = {}
    for treebank, model in args.model:
        with tempfile.TemporaryDirectory() as tmp:
            text = Path(tmp) / f"{treebank}-dev.txt"
            subprocess.run([sys.executable, str(TOOLS / "ud_raw_text.py"),
                            str(CORPORA / treebank / f"{treebank}-ud-dev.conllu"), str(text)], check=True,
                           capture_output=True)
            subprocess.run([sys.executable, "-m", "arborist.cli", "parse", model, str(text), "--output-dir", tmp,
                            "--no-progress"], check=True, capture_output=True)
            result[treebank] = {"model": model, **violations(Path(tmp) / f"{treebank}-dev.conllu")}
        print(treebank, result[treebank], flush=True)
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
