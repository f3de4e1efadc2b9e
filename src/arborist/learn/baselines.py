"""The CRF primal and the optimizers EG is compared with in §7: L-BFGS and SGD.

    P(w) = sum_i [log Z(x_i; w) - w . phi(x_i, y_i)] + (C/2) ||w||^2
    grad = sum_i [sum_r mu_ir phi(x_i, r) - phi(x_i, y_i)] + C w

Gradients come from the structure's marginals, so these run on any structure.
Computation is counted as §7 counts it: an effective iteration is n example
visits; every function evaluation of L-BFGS (line search included) visits all
n examples, and an SGD step visits one.
"""

import time
from typing import Callable

import numpy as np
from scipy.optimize import minimize

from ..structure import Structure
from ..weights import Weights
from . import Trainer


class CRFPrimal:
    """P(w) and its gradient over a training set, one pass per evaluation."""

    def __init__(self, structure: Structure, examples: list, C: float, hash_bits: int):
        self.structure, self.examples, self.C, self.bits = structure, examples, float(C), hash_bits
        self.evaluations = 0

    def loss(self, x, w: Weights, scale: float = 1.0, gradient: Weights | None = None, step: float = 1.0) -> float:
        """-log p(y | x; scale * w); with `gradient`, also adds step * d/dw of it there."""
        s = self.structure
        gold = s.gold(x)
        scores = s.scores(x, w) * scale
        g = s.indicator(x, gold)
        mu, logz = s.marginals(x, scores)
        if gradient is not None:
            s.add_features(x, mu - g, gradient, step)
        return float(logz - (scores * g).sum())

    def value(self, w_array: np.ndarray) -> float:
        w = Weights(self.bits, False, w_array)
        return sum(self.loss(x, w) for x in self.examples) + 0.5 * self.C * float(w_array @ w_array)

    def value_and_gradient(self, w_array: np.ndarray) -> tuple[float, np.ndarray]:
        self.evaluations += 1
        w = Weights(self.bits, False, np.ascontiguousarray(w_array, dtype=np.float64))
        grad = Weights(self.bits)
        total = sum(self.loss(x, w, gradient=grad) for x in self.examples)
        total += 0.5 * self.C * float(w.array @ w.array)
        return total, grad.array + self.C * w.array


def lbfgs(structure: Structure, examples: list, C: float, hash_bits: int, max_evaluations: int = 100,
          memory: int = 10, callback: Callable[[dict], None] | None = None) -> np.ndarray:
    """Minimize the CRF primal with scipy's L-BFGS-B from w = 0.

    After each L-BFGS iteration, callback gets {effective_iterations (= function
    evaluations so far), primal, seconds}."""
    objective = CRFPrimal(structure, examples, C, hash_bits)
    start = time.perf_counter()

    def record(intermediate_result):
        if callback is not None:
            callback({"effective_iterations": float(objective.evaluations), "primal": float(intermediate_result.fun),
                      "seconds": time.perf_counter() - start})

    result = minimize(objective.value_and_gradient, np.zeros(1 << hash_bits), jac=True, method="L-BFGS-B",
                      callback=record, options={"maxfun": max_evaluations, "maxiter": max_evaluations,
                                                "maxcor": memory, "ftol": 0.0, "gtol": 0.0})
    return result.x


def penalized_lbfgs(loss_and_gradient: Callable[[np.ndarray], tuple[float, np.ndarray]], dimension: int, C: float,
                    penalty: str = "l2", max_iterations: int = 500, tolerance: float = 1e-7) -> np.ndarray:
    """argmin_w loss(w) + (C/2) ||w||^2 (penalty "l2") or loss(w) + C ||w||_1 ("l1"), from w = 0,
    with scipy's L-BFGS-B, for a smooth loss given with its gradient.

    L1 is not differentiable at 0; without OWL-QN it is solved exactly as the smooth
    bound-constrained problem over w = p - m, p, m >= 0, with C sum(p + m) (at the
    optimum p_k m_k = 0, so sum(p + m) = ||w||_1). Weights end exactly at zero on the
    bound, which is what makes L1 sparse."""
    if penalty not in ("l1", "l2"):
        raise ValueError(f"penalty must be 'l1' or 'l2', got {penalty!r}")
    options = {"maxiter": max_iterations, "maxfun": 2 * max_iterations, "ftol": tolerance, "gtol": 1e-6}
    if penalty == "l2":
        def objective(w):
            value, grad = loss_and_gradient(w)
            return value + 0.5 * C * float(w @ w), grad + C * w

        return minimize(objective, np.zeros(dimension), jac=True, method="L-BFGS-B", options=options).x

    def split_objective(pm):
        p, m = pm[:dimension], pm[dimension:]
        value, grad = loss_and_gradient(p - m)
        return value + C * float(pm.sum()), np.concatenate([grad + C, C - grad])

    result = minimize(split_objective, np.zeros(2 * dimension), jac=True, method="L-BFGS-B",
                      bounds=[(0.0, None)] * (2 * dimension), options=options)
    return result.x[:dimension] - result.x[dimension:]


class SGD(Trainer):
    """Stochastic gradient descent on the CRF primal (§7.1.3), as a trainer.

    Each step picks i uniformly at random and moves along the gradient of
    -log p(y_i | x_i; w) + (C / 2n) ||w||^2 with rate eta0 / (1 + k/n). The
    weights are kept as w = a * v so the shrinking by the regularizer costs O(1)."""

    name = "sgd"
    columns = ("train_accuracy", "primal", "effective_iterations", "epoch_seconds")

    def __init__(self, C: float = 1.0, eta0: float = 0.01, seed: int = 0):
        if not C > 0 or not eta0 > 0:
            raise ValueError(f"C and eta0 must be positive, got C={C}, eta0={eta0}")
        self.C, self.eta0 = float(C), float(eta0)
        self.rng = np.random.default_rng(seed)

    def begin(self, structure: Structure, examples: list, hash_bits: int) -> None:
        self.v = Weights(hash_bits)
        self.a = 1.0
        self.steps = 0
        self.objective = CRFPrimal(structure, examples, self.C, hash_bits)

    def epoch(self, structure: Structure, examples: list, tracker=None) -> dict:
        n = len(examples)
        start = time.perf_counter()
        for i in self.rng.integers(n, size=n):
            eta = self.eta0 / (1.0 + self.steps / n)
            shrink = 1.0 - eta * self.C / n
            if shrink <= 0:
                raise ValueError(f"SGD rate {eta} is too large for C = {self.C} and n = {n}: "
                                 f"the regularizer step would flip w")
            # w' = shrink * w - eta * grad(w): the gradient at the old scale a, the step
            # into v at the new one (w' = a' v').
            self.objective.loss(examples[i], self.v, self.a, gradient=self.v, step=-eta / (self.a * shrink))
            self.a *= shrink
            self.steps += 1
            if self.a < 1e-9:  # fold the scale back into v before it underflows
                self.v.array[:] *= self.a
                self.a = 1.0
            if tracker is not None:
                tracker.advance(1)
        seconds = time.perf_counter() - start
        w = self.prediction_weights()
        primal = sum(self.objective.loss(x, w) for x in examples) + 0.5 * self.C * float(w.array @ w.array)
        return {"primal": primal, "effective_iterations": self.steps / n, "epoch_seconds": seconds,
                "examples_per_second": n / max(seconds, 1e-9)}

    def finish_epoch(self, metrics: dict) -> bool:
        return False

    def prediction_weights(self) -> Weights:
        return Weights(self.v.bits, False, self.v.array * self.a)

    def state(self) -> tuple[dict, dict]:
        return {"weights": self.v.array}, {"trainer": self.name, "a": self.a, "steps": self.steps,
                                           "rng": self.rng.bit_generator.state}

    def restore(self, structure: Structure, examples: list, arrays: dict, meta: dict) -> None:
        if meta.get("trainer") != self.name:
            raise ValueError(f"checkpoint is for trainer {meta.get('trainer')!r}, not {self.name!r}")
        bits = int(arrays["weights"].size).bit_length() - 1
        self.begin(structure, examples, bits)
        self.v.array[:] = arrays["weights"]
        self.a, self.steps = meta["a"], meta["steps"]
        self.rng.bit_generator.state = meta["rng"]
