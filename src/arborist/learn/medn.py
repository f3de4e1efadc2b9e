"""Maximum entropy discrimination Markov networks (seeds/003): Gaussian and Laplace MaxEnDNet.

Gaussian MaxEnDNet (prior N(0, I)) is the M3N (Theorem 3): its dual is the M3N
dual and its posterior mean the M3N weights. The Laplace prior
prod_k sqrt(lambda)/2 exp(-sqrt(lambda) |w_k|) gives a dual (Theorem 5) that EG
cannot solve directly; Algorithm 1 (§5) writes the prior as a scale mixture of
Gaussians N(w_k | 0, tau_k) with exponential tau_k and alternates

  step 1: with q(tau) fixed, p(w) = N(mu, Sigma), Sigma = diag(1 / <1/tau_k>),
          and the dual variables solve the M3N dual with 1/2 eta^T Sigma eta in
          place of 1/2 ||eta||^2 (eq. 9); mu = Sigma eta;
  step 2: with p(w) fixed, <1/tau_k> = sqrt(lambda / <w_k^2>) (eq. 11), i.e.
          Sigma_kk <- sqrt(<w_k^2> / lambda) with <w_k^2> = Sigma_kk + mu_k^2,

from Sigma = I. Step 1 is EG-M3N (`arborist.learn.eg`) with Sigma as a diagonal
metric (`EG.set_scale`), warm-started from the previous outer iteration's dual
state. In EG's units (w = S w(alpha) / C, primal sum_i hinge_i + C/2 w.S^-1 w)
C is the inverse of the paper's C and lambda keeps its meaning. Prediction uses
the posterior mean mu (Corollary 7: it shrinks weights of small eta towards zero,
none exactly to zero), and every epoch reports how many of its entries are
effectively zero.

One epoch is one EG epoch; an outer iteration is `inner_epochs` epochs, and the
variance update runs at the start of the epoch that begins the next one, so the
weights evaluated after every epoch are the posterior mean of the current step 1.
"""
from __future__ import annotations

import time

import numpy as np

from ..structure import Structure
from .eg import EG

PRIORS = ("laplace", "gaussian")


def variance_update(sigma: np.ndarray, mean: np.ndarray, lam: float) -> np.ndarray:
    """Step 2 (eq. 11): Sigma_kk = 1 / <1/tau_k>_q = sqrt(<w_k^2>_p / lambda), where
    <w_k^2>_p = Sigma_kk + <w_k>_p^2 under the step-1 posterior N(mean, diag(sigma))."""
    return np.sqrt((sigma + mean * mean) / lam)


def sparsity(weights: np.ndarray, tolerance: float = 1e-4) -> dict:
    """How many weights are effectively zero: |w_k| <= tolerance * max |w|. Hashed
    weight vectors have slots no feature reaches; `used_weights` counts the exactly
    non-zero entries, so the shares are given of all slots and of the used ones."""
    magnitude = np.abs(weights)
    largest = float(magnitude.max(initial=0.0))
    used = int(np.count_nonzero(magnitude))
    nonzero = int(np.count_nonzero(magnitude > tolerance * largest)) if largest > 0 else 0
    return {"nonzero_weights": nonzero, "used_weights": used,
            "nonzero_share": nonzero / weights.size, "nonzero_share_of_used": nonzero / max(used, 1)}


class MaxEnDNet(EG):
    """Variational Laplace MaxEnDNet (Algorithm 1), or the Gaussian one (= EG-M3N)."""

    name = "medn"
    columns = ("train_accuracy", "primal", "relative_gap", "outer_iteration", "nonzero_share_of_used",
               "mean_eta", "epoch_seconds")

    def __init__(
        self,
        prior: str = "laplace",
        lam: float = 1.0,
        C: float = 1.0,
        inner_epochs: int = 3,
        outer_iterations: int = 0,
        initial_variance: float = 1.0,
        zero_tolerance: float = 1e-4,
        schedule: str = "random",
        eta: float | None = None,
        eta_search_fraction: float = 0.1,
        eta_search_share: float = 0.95,
        eta_growth: float = 1.05,
        max_halvings: int = 20,
        objectives_every: int = 1,
        seed: int = 0,
    ):
        """`outer_iterations` = T of Algorithm 1 (training stops after T x inner_epochs
        epochs; 0: no limit but max_epochs). `initial_variance`: Sigma^1 = initial_variance x I
        (Algorithm 1: 1). Where the weights are far below 1 (C >> 1), <w_k^2> = Sigma_kk +
        mu_k^2 is all Sigma and the first update shrinks every weight alike; running C = 1
        with Sigma^1 = I / C_M3N instead makes the first outer iteration EG-M3N at C_M3N
        (the dual depends on Sigma / C only) and puts Sigma on the scale of mu^2. It is
        Algorithm 1 on inputs scaled by sqrt(initial_variance) with lambda x initial_variance."""
        if prior not in PRIORS:
            raise ValueError(f"MaxEnDNet prior must be one of {PRIORS}, got {prior!r}")
        if not lam > 0 or not initial_variance > 0:
            raise ValueError(f"lam and initial_variance must be positive, got {lam}, {initial_variance}")
        if int(inner_epochs) < 1 or int(outer_iterations) < 0:
            raise ValueError(f"inner_epochs must be >= 1 and outer_iterations >= 0, got {inner_epochs}, "
                             f"{outer_iterations}")
        super().__init__("m3n", C, schedule, eta, eta_search_fraction, eta_search_share, eta_growth,
                         max_halvings, objectives_every, anneal=False, seed=seed)
        self.prior = prior
        self.lam = float(lam)
        self.inner_epochs = int(inner_epochs)
        self.outer_iterations = int(outer_iterations)
        self.initial_variance = float(initial_variance)
        self.zero_tolerance = float(zero_tolerance)
        self.outer_table: list[dict] = []

    def begin(self, structure: Structure, examples: list, hash_bits: int) -> None:
        # Sigma^1 = I (times initial_variance), held as an explicit metric so that the
        # Gaussian prior runs the same scaled code as the Laplace one (and with Sigma = I
        # must still equal plain EG-M3N).
        self.scale = np.full(1 << hash_bits, self.initial_variance)
        super().begin(structure, examples, hash_bits)

    @property
    def outer_iteration(self) -> int:
        """The outer iteration (1-based) the last finished epoch belongs to."""
        return (max(self.epochs_done, 1) - 1) // self.inner_epochs + 1

    def epoch(self, structure: Structure, examples: list, tracker=None) -> dict:
        update_seconds = 0.0
        if self.prior == "laplace" and self.epochs_done and self.epochs_done % self.inner_epochs == 0:
            start = time.perf_counter()
            mean = self.prediction_weights().array
            self.set_scale(structure, examples, variance_update(self.scale, mean, self.lam))
            update_seconds = time.perf_counter() - start
        metrics = super().epoch(structure, examples, tracker)
        metrics["outer_iteration"] = self.outer_iteration
        metrics["variance_update_seconds"] = update_seconds
        metrics.update(sparsity(self.prediction_weights().array, self.zero_tolerance))
        metrics["mean_variance_of_used"] = float(self.scale[self.weights.array != 0].mean()) \
            if self.weights.array.any() else 1.0
        return metrics

    def tables(self) -> dict[str, list[dict]]:
        return {**super().tables(), "outer": self.outer_table}

    def finish_epoch(self, metrics: dict) -> bool:
        """At the end of an outer iteration, one row of the outer-iteration table (sparsity,
        objectives, dev scores); stop after T outer iterations."""
        if self.epochs_done % self.inner_epochs:
            return False
        keep = ("nonzero_weights", "nonzero_share", "nonzero_share_of_used", "used_weights", "primal",
                "relative_gap", "train_accuracy", "mean_variance_of_used")
        self.outer_table.append({"outer_iteration": self.outer_iteration, "epochs": self.epochs_done,
                                 **{k: metrics[k] for k in keep if k in metrics},
                                 **{k: v for k, v in metrics.items() if k.startswith("dev_")}})
        return bool(self.outer_iterations) and self.outer_iteration >= self.outer_iterations

    def state(self) -> tuple[dict, dict]:
        arrays, meta = super().state()
        arrays["scale"] = self.scale
        meta.update(prior=self.prior, lam=self.lam, inner_epochs=self.inner_epochs, outer_table=self.outer_table)
        return arrays, meta

    def restore(self, structure: Structure, examples: list, arrays: dict, meta: dict) -> None:
        if meta.get("trainer") == self.name and (meta.get("prior"), meta.get("lam")) != (self.prior, self.lam):
            raise ValueError(f"checkpoint is for the {meta.get('prior')} prior with lam = {meta.get('lam')}, "
                             f"not {self.prior} with lam = {self.lam}")
        self.scale = np.array(arrays["scale"], dtype=np.float64)
        super().restore(structure, examples, arrays, meta)
        self.outer_table = list(meta["outer_table"])
