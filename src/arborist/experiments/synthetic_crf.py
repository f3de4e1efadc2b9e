"""Synthetic sequences from random linear-chain CRFs: seeds/003 §7.1.1 (i.i.d. input features).

A model is a first-order CRF over L = 8 binary labels with d = 100 real-valued
input features per position, of which the first `relevant` (10, 30 or 50) have
non-zero state weights; the other inputs are noise the learner should ignore. Its
features are those of `DenseChain`: x_tj [y_t = k] and the 2 x 2 transitions.
A data set is 1,000 samples: the inputs are i.i.d. N(0, 1) and the labels come
from a Gibbs sampler on p(y | x) run for 5,000 sweeps, as the paper does (on an
8-label chain it has long mixed, so the labels are exact draws for every purpose).

The paper does not give the distribution of the true weights; here the state
weights of relevant inputs and the transition weights are N(0, 1).
"""
from __future__ import annotations

import numpy as np

from ..tagger.dense import DenseChain, DenseSequence

N_INPUTS = 100
LENGTH = 8
N_TAGS = 2
SAMPLES = 1000
GIBBS_SWEEPS = 5000
RELEVANT = (10, 30, 50)


def random_crf(relevant: int, rng: np.random.Generator, n_inputs: int = N_INPUTS) -> np.ndarray:
    """A true weight array in `DenseChain(n_inputs, 2)`'s layout: N(0, 1) state weights on the
    first `relevant` inputs (zero on the rest), N(0, 1) transitions."""
    chain = DenseChain(n_inputs, N_TAGS)
    w = np.zeros(chain.n_weights)
    state, transition = chain.split(w)
    state[:relevant] = rng.standard_normal((relevant, N_TAGS))
    transition[:] = rng.standard_normal((N_TAGS, N_TAGS))
    return w


def gibbs_labels(chain: DenseChain, w: np.ndarray, inputs: np.ndarray, sweeps: int,
                 rng: np.random.Generator) -> np.ndarray:
    """Labels (N, L) drawn by `sweeps` Gibbs sweeps (positions left to right) on p(y | x; w),
    every sample at once, from uniformly random labels. Binary labels only."""
    state, transition = chain.split(w)
    emission = inputs @ state  # (N, L, 2)
    N, L, _ = emission.shape
    y = rng.integers(2, size=(N, L))
    unary = emission[:, :, 1] - emission[:, :, 0]  # log-odds of label 1 from the inputs
    into = transition[:, 1] - transition[:, 0]  # from the previous label p: T[p, 1] - T[p, 0]
    out = transition[1, :] - transition[0, :]  # to the next label c: T[1, c] - T[0, c]
    for _ in range(sweeps):
        u = rng.random((N, L))
        for t in range(L):
            logit = unary[:, t].copy()
            if t > 0:
                logit += into[y[:, t - 1]]
            if t + 1 < L:
                logit += out[y[:, t + 1]]
            with np.errstate(over="ignore"):  # exp(-logit) = inf: the label is 0
                y[:, t] = u[:, t] * (1.0 + np.exp(-logit)) < 1.0  # u < sigmoid(logit)
    return y


def dataset(relevant: int, index: int, samples: int = SAMPLES, sweeps: int = GIBBS_SWEEPS):
    """Data set `index` (0..9) of a number of relevant features: (true weights, inputs
    (samples, L, d), labels (samples, L)). Seeded by (relevant, index)."""
    if relevant > N_INPUTS:
        raise ValueError(f"at most {N_INPUTS} relevant features, got {relevant}")
    rng = np.random.default_rng([2009, relevant, index])
    chain = DenseChain(N_INPUTS, N_TAGS)
    w = random_crf(relevant, rng)
    inputs = rng.standard_normal((samples, LENGTH, N_INPUTS))
    return w, inputs, gibbs_labels(chain, w, inputs, sweeps, rng)


def sequences(inputs: np.ndarray, labels: np.ndarray) -> list[DenseSequence]:
    return [DenseSequence(x, y.astype(np.int32)) for x, y in zip(inputs, labels)]
