"""The official CoNLL 2018 scorer, `../shared/tools/conll18_ud_eval.py`, loaded as it is (never
copied) and read through its counts: each metric's precision, recall and F1 computed from the
correct, gold and system totals it reports, in percent, truncated to two decimals. The
scorer's own printout rounds them (99.595 shows as 99.60); the figures here are never rounded
up. Shared by the benchmarks that score raw text (`bench_tokenizer.py`, `bench_raw_text.py`)."""
from __future__ import annotations

import importlib.util
import math
import os
from functools import lru_cache
from pathlib import Path

TOOLS = Path(os.environ.get("ARBORIST_TOOLS", Path(__file__).resolve().parents[2] / "shared" / "tools"))


@lru_cache(maxsize=1)
def scorer():
    """The scorer module (`conll18_ud_eval`) from TOOLS."""
    path = TOOLS / "conll18_ud_eval.py"
    spec = importlib.util.spec_from_file_location("conll18_ud_eval", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def truncated(value: float) -> float:
    """A percentage truncated to two decimals."""
    return math.floor(value * 100 + 1e-9) / 100


def score(gold: str | os.PathLike, system: str | os.PathLike) -> dict:
    """{metric: {"precision", "recall", "f1" (truncated percentages), "correct", "gold",
    "system"}} for every metric the scorer reports (Tokens, Sentences, Words, UPOS, ..., BLEX)."""
    module = scorer()
    results = module.evaluate(module.load_conllu_file(str(gold)), module.load_conllu_file(str(system)))
    out = {}
    for name, s in results.items():
        correct, gold_total, system_total = s.correct, s.gold_total, s.system_total
        out[name] = {
            "precision": truncated(100 * correct / system_total) if system_total else 0.0,
            "recall": truncated(100 * correct / gold_total) if gold_total else 0.0,
            "f1": truncated(200 * correct / (system_total + gold_total)) if system_total + gold_total else 0.0,
            "correct": correct, "gold": gold_total, "system": system_total,
        }
    return out
