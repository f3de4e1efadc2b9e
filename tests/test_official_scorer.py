"""scripts/official_scorer.py: the official CoNLL 2018 scorer's figures from its counts,
truncated, never above what the scorer prints (it rounds) and never 0.01 or more below."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TOOLS = REPO.parent / "shared" / "tools"
GOLD = REPO / "corpora" / "sample" / "sample-dev.conllu"

pytestmark = pytest.mark.skipif(not (TOOLS / "conll18_ud_eval.py").exists(),
                                reason="the official scorer is in ../shared/tools (not in this repository)")


def test_truncated_figures_against_the_scorer_s_printout(tmp_path):
    sys.path.insert(0, str(REPO / "scripts"))
    import official_scorer

    system = []
    for line in GOLD.read_text(encoding="utf-8").split("\n"):
        columns = line.split("\t")
        if len(columns) == 10 and columns[0].isdigit() and int(columns[0]) % 3 == 0:
            columns[3], columns[7] = "X", "dep"  # wrong tags and labels
        system.append("\t".join(columns))
    (tmp_path / "system.conllu").write_text("\n".join(system), encoding="utf-8")
    printed = subprocess.run([sys.executable, str(TOOLS / "conll18_ud_eval.py"), "-v", str(GOLD),
                              str(tmp_path / "system.conllu")], capture_output=True, text=True, check=True).stdout
    rows = {l.split("|")[0].strip(): [float(x) for x in l.split("|")[1:4]] for l in printed.splitlines()[2:] if "|" in l}
    mine = official_scorer.score(GOLD, tmp_path / "system.conllu")
    assert rows["UPOS"][2] < 90 and set(mine) == set(rows)
    for metric, (precision, recall, f1) in rows.items():
        for ours, theirs in ((mine[metric]["precision"], precision), (mine[metric]["recall"], recall),
                             (mine[metric]["f1"], f1)):
            assert theirs - 0.01 - 1e-9 <= ours <= theirs + 1e-9, (metric, ours, theirs)
        assert mine[metric]["f1"] == official_scorer.truncated(200 * mine[metric]["correct"] /
                                                               (mine[metric]["gold"] + mine[metric]["system"]))
    assert official_scorer.truncated(99.5979) == 99.59 and official_scorer.truncated(88.7) == 88.7
