"""Synthetic tagging data from hidden Markov models: the Section 6 setups of Dror and
Reichart (the SWVP paper, footnote 6).

An HMM has Cy hidden states (tags "y0".."y{Cy-1}") and Cx observations (forms
"x0".."x{Cx-1}"). Every state's transition and emission distributions are random
permutations of one fixed probability vector per setup ("perm(v)"); the first state
is uniform. An item is a sequence of L = 8 (state, observation) pairs, and a
dataset is 10,000 items split 7,000 / 2,000 / 1,000 into train / dev / test.

Setup 3's emission vector as printed, (0.4, 0.2, 0.1, 0.1, 0.1, 0, ...), sums to
0.9; it is normalized to sum to 1 (the only reading under which it is a
distribution). Every vector is normalized the same way, which leaves the others
unchanged.

The items are `Sentence`s with the observations as forms and the states as UPOS, so
a `LinearChain(attribute="upos", templates=HMM_TEMPLATES)` learns them with the
features Section 6 lists for its CRF: the tag (bias template), (x_i, y_i) (form),
(y_{i-1}, y_i) (tag bigram) and (x_i, y_{i-1}, y_i) (the bigram conjoined with the
word). The observation and previous-tag features alone add nothing a linear
model can use beyond these (x_i alone is the same for every labeling; y_{i-1}
alone is a function of the bigram's part).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..sentence import Sentence
from ..tagger.viterbi import chain_argmax, chain_marginals

# (Cx, Cy, transition vector, emission vector) of setups 1, 2, 3 (footnote 6).
SETUPS = {
    1: (5, 3, (0.7, 0.2, 0.1), (0.75, 0.1, 0.05, 0.05, 0.05)),
    2: (5, 3, (0.5, 0.3, 0.2), (0.6, 0.15, 0.1, 0.1, 0.05)),
    3: (20, 7, (0.7, 0.2, 0.1) + (0.0,) * 4, (0.4, 0.2, 0.1, 0.1, 0.1) + (0.0,) * 15),
}
SETUP_NAMES = {1: "simple(++), learnable(+++)", 2: "simple(++), learnable(++)", 3: "simple(+), learnable(+)"}
LENGTH = 8
SPLITS = (7000, 2000, 1000)
HMM_TEMPLATES = ("bias", "form")


@dataclass
class HMM:
    prior: np.ndarray  # (Cy,)
    transition: np.ndarray  # (Cy, Cy): transition[y, y'] = P(y' | y)
    emission: np.ndarray  # (Cy, Cx): emission[y, x] = P(x | y)

    @property
    def n_states(self) -> int:
        return len(self.prior)

    def sample(self, n_items: int, length: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(states, observations), both (n_items, length) int arrays."""
        states = np.empty((n_items, length), dtype=np.int64)
        observations = np.empty((n_items, length), dtype=np.int64)
        cum_t, cum_e = np.cumsum(self.transition, axis=1), np.cumsum(self.emission, axis=1)
        y = rng.choice(self.n_states, size=n_items, p=self.prior)
        for i in range(length):
            states[:, i] = y
            observations[:, i] = _draw(cum_e[y], rng)
            if i + 1 < length:
                y = _draw(cum_t[y], rng)
        return states, observations

    def log_scores(self, observations: np.ndarray) -> np.ndarray:
        """log P(states, observations) as first-order chain part scores: [t, prev, cur],
        prev = K is START (only at t = 0); log 0 is -1e30."""
        K, n = self.n_states, len(observations)
        with np.errstate(divide="ignore"):
            log_prior, log_t, log_e = np.log(self.prior), np.log(self.transition), np.log(self.emission)
        scores = np.full((n, K + 1, K), -1e30)
        scores[0, K] = log_prior + log_e[:, observations[0]]
        scores[1:, :K] = log_t[None] + log_e[:, observations[1:]].T[:, None, :]
        return np.maximum(scores, -1e30)

    def viterbi(self, observations: np.ndarray) -> np.ndarray:
        """The most probable state sequence of one observation sequence under the true model."""
        return chain_argmax(self.log_scores(observations))[0]

    def posterior_decode(self, observations: np.ndarray) -> np.ndarray:
        """Each position's most probable state under the true model (forward-backward): the
        decoder with the highest expected per-position accuracy, the ceiling for tag accuracy."""
        marginals, _ = chain_marginals(self.log_scores(observations))
        return marginals.sum(axis=1).argmax(axis=1)


def _draw(cumulative: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One sample per row of cumulative probabilities."""
    u = rng.random(len(cumulative))[:, None] * cumulative[:, -1:]
    return np.minimum((u >= cumulative).sum(axis=1), cumulative.shape[1] - 1)


def random_hmm(setup: int, rng: np.random.Generator) -> HMM:
    """An HMM of a setup: each state's distributions are random permutations of the setup's vectors."""
    n_obs, n_states, trans, emit = SETUPS[setup]
    trans = np.asarray(trans) / np.sum(trans)
    emit = np.asarray(emit) / np.sum(emit)
    return HMM(prior=np.full(n_states, 1.0 / n_states),
               transition=np.stack([rng.permutation(trans) for _ in range(n_states)]),
               emission=np.stack([rng.permutation(emit) for _ in range(n_states)]))


def to_sentences(states: np.ndarray, observations: np.ndarray, name: str) -> list[Sentence]:
    return [Sentence.from_columns([f"x{o}" for o in obs], upos=[f"y{s}" for s in sts],
                                  source=name, first_line=i + 1)
            for i, (sts, obs) in enumerate(zip(states.tolist(), observations.tolist()))]


def dataset(setup: int, index: int, splits: tuple[int, ...] = SPLITS, length: int = LENGTH):
    """Dataset `index` (0..9 in the paper) of a setup: (hmm, {"train"|"dev"|"test": (states,
    observations)}), arrays of shape (items, length). Seeded by (setup, index)."""
    if setup not in SETUPS:
        raise ValueError(f"setup must be one of {sorted(SETUPS)}, got {setup!r}")
    rng = np.random.default_rng([2016, setup, index])
    hmm = random_hmm(setup, rng)
    states, observations = hmm.sample(sum(splits), length, rng)
    bounds = np.cumsum((0,) + tuple(splits))
    return hmm, {name: (states[a:b], observations[a:b])
                 for name, a, b in zip(("train", "dev", "test"), bounds[:-1], bounds[1:])}


def tag_names(setup: int) -> list[str]:
    return [f"y{s}" for s in range(SETUPS[setup][1])]
