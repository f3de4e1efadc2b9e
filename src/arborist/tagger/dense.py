"""DenseChain: a first-order tag chain over real-valued input vectors (seeds/003 §7.1).

An example is a `DenseSequence`: inputs x (n, d) and gold tags (n,). The features
are the paper's: a real-valued state feature x_tj [y_t = k] per input dimension j
and tag k, and a binary transition feature [y_{t-1} = p, y_t = c] per tag pair
(none into the first tag). The weight vector is dense and unhashed:

    slot j K + k          state weight of input j and tag k      (d K slots)
    slot d K + p K + c    transition weight p -> c               (K K slots)

padded to a power of two so that the trainers' `Weights` holds it. Parts, labels,
costs and decoding are those of a first-order `LinearChain` ([t, prev, cur],
prev = K is START), whose operations this class inherits; only scoring and
feature addition differ.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .chain import LinearChain


@dataclass
class DenseSequence:
    inputs: np.ndarray  # (n, d) float64
    tags: np.ndarray  # (n,) int32
    gold_cost: np.ndarray | None = field(default=None, repr=False)  # part_cost(x, tags), memoized


class DenseChain(LinearChain):
    name = "dense_chain"

    def __init__(self, n_inputs: int, n_tags: int):
        # LinearChain.__init__ builds hashed string features; a dense chain needs only
        # the tag set and the first-order part layout.
        self.attribute, self.order, self.templates, self._valid = "tags", 1, (), {}
        self.tags = tuple(str(k) for k in range(n_tags))
        self.n_inputs = int(n_inputs)
        self.n_weights = self.n_inputs * n_tags + n_tags * n_tags
        self._hash_bits = max(1, (self.n_weights - 1).bit_length())
        self.features = self  # LinearChain checks that features exist
        self._slots = np.arange(self.n_weights, dtype=np.uint64)

    def split(self, array: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(state weights (d, K), transition weights (K, K)) of a weight array."""
        d, K = self.n_inputs, self.n_tags
        return array[: d * K].reshape(d, K), array[d * K: d * K + K * K].reshape(K, K)

    def scores(self, x: DenseSequence, w) -> np.ndarray:
        state, transition = self.split(w.array)
        emission = x.inputs @ state  # (n, K)
        n, K = emission.shape
        out = np.zeros((n, K + 1, K))
        out[0, K] = emission[0]
        out[1:, :K] = transition[None] + emission[1:, None, :]
        return out

    def add_features(self, x: DenseSequence, coef: np.ndarray, w, scale: float = 1.0) -> None:
        K = self.n_tags
        coef = np.where(self.valid_parts(len(coef)), coef, 0.0)
        state = x.inputs.T @ coef.sum(axis=1)  # sum_t x_t (coefficient of tag k at t)
        transition = coef[1:, :K].sum(axis=0)
        w.add_sparse(self._slots, np.concatenate([state.ravel(), transition.ravel()]), scale)

    def part_cost(self, x: DenseSequence, gold: np.ndarray) -> np.ndarray:
        # EG asks for the gold label's costs at every visit; on these tiny chains
        # building them is a third of a visit.
        if gold is not x.tags:
            return super().part_cost(x, gold)
        if x.gold_cost is None:
            x.gold_cost = super().part_cost(x, gold)
            x.gold_cost.flags.writeable = False
        return x.gold_cost

    def gold(self, x: DenseSequence) -> np.ndarray:
        return np.asarray(x.tags, dtype=np.int32)


def batch_nll(chain: DenseChain, inputs: np.ndarray, tags: np.ndarray, w: np.ndarray) -> tuple[float, np.ndarray]:
    """sum_i -log p(y_i | x_i; w) and its gradient over the first `chain.n_weights` slots, for
    sequences of one length at once (inputs (N, n, d), tags (N, n)): the CRF primal's data
    term by a forward-backward vectorized over the batch. The generic path
    (`baselines.CRFPrimal`, one structure call per example) computes the same (a test)."""
    state, transition = chain.split(w)
    N, n, _ = inputs.shape
    K = chain.n_tags
    emission = inputs @ state  # (N, n, K)
    log_alpha = np.empty((N, n, K))
    log_alpha[:, 0] = emission[:, 0]
    for t in range(1, n):
        log_alpha[:, t] = emission[:, t] + np.logaddexp.reduce(log_alpha[:, t - 1, :, None] + transition[None], axis=1)
    log_beta = np.zeros((N, n, K))
    for t in range(n - 2, -1, -1):
        log_beta[:, t] = np.logaddexp.reduce(transition[None] + (emission[:, t + 1] + log_beta[:, t + 1])[:, None, :],
                                             axis=2)
    logz = np.logaddexp.reduce(log_alpha[:, -1], axis=1)  # (N,)
    unary = np.exp(log_alpha + log_beta - logz[:, None, None])  # (N, n, K)
    pair = np.exp(log_alpha[:, :-1, :, None] + transition[None, None] + (emission[:, 1:] + log_beta[:, 1:])[:, :, None, :]
                  - logz[:, None, None, None])  # (N, n-1, K, K)
    rows = np.arange(N)[:, None]
    gold_score = emission[rows, np.arange(n)[None], tags].sum() + transition[tags[:, :-1], tags[:, 1:]].sum()
    onehot = np.zeros((N, n, K))
    onehot[rows, np.arange(n)[None], tags] = 1.0
    grad_state = np.einsum("tnd,tnk->dk", inputs, unary - onehot)
    grad_transition = pair.sum(axis=(0, 1))
    np.add.at(grad_transition, (tags[:, :-1].ravel(), tags[:, 1:].ravel()), -1.0)
    return float(logz.sum() - gold_score), np.concatenate([grad_state.ravel(), grad_transition.ravel()])
