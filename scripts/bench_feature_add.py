"""Speed of the parser's feature updates (`ArcFeatures.add` into averaged `Weights`).

A perceptron update adds the features of the gold tree and subtracts those of a wrong
one. This times exactly that over the first 1,000 en_ewt dev sentences (gold heads
+1, random heads -1) into a fresh averaged 2**24 vector, 3 passes, and prints the
median words/s and a checksum of the weights (equal checksums: the same updates).
To compare two builds, run it under each in turn, e.g. PYTHONPATH=/path/to/other/tree.

    python scripts/bench_feature_add.py LABEL
"""
import sys
import time
from pathlib import Path

import numpy as np

from arborist.corpus import read_conllu
from arborist.parser.features import ArcFeatures
from arborist.weights import Weights

DEV = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "ud" / "en_ewt" / "en_ewt-ud-dev.conllu"
sents = list(read_conllu(str(DEV)))[:1000]
f = ArcFeatures(bits=24)
w = Weights(24, True)
coefs = []
rng = np.random.default_rng(0)
for x in sents:
    c = np.zeros((x.n + 1, x.n + 1))
    c[np.asarray(x.heads[1:]), np.arange(1, x.n + 1)] += 1.0
    wrong = rng.integers(0, x.n + 1, x.n)
    c[wrong, np.arange(1, x.n + 1)] -= 1.0
    coefs.append(c)
words = sum(x.n for x in sents)
v = []
for r in range(3):
    t = time.perf_counter()
    for x, c in zip(sents, coefs):
        f.add(x, c, w, 1.0)
        w.step += 1
    v.append(words / (time.perf_counter() - t))
print(sys.argv[1] if len(sys.argv) > 1 else 'this build', round(np.median(v)), 'words/s of perceptron-style adds', [round(a) for a in v], round(float(np.abs(w.array).sum()), 3))
