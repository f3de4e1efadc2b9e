"""Exponentiated-gradient training on the CRF and M3N duals (seeds/001, seeds/000).

Both duals minimize a convex Q(alpha) over one distribution alpha_i per example:

    Q_LL(alpha) = sum_i sum_y alpha_iy log alpha_iy + ||w(alpha)||^2 / (2C)     (CRF)
    Q_MM(alpha) = -sum_i sum_y alpha_iy e_iy     + ||w(alpha)||^2 / (2C)     (M3N)
    w(alpha)    = sum_i [phi(x_i, y_i) - sum_r mu_ir phi(x_i, r)]

alpha_i is never materialized: it is the Gibbs distribution sigma(theta_i) of a
vector theta_i over the structure's parts (§4), whose marginals mu_i and log Z
come from the structure's inside-outside. Lemma 1's updates, with s_ir =
w(alpha) . phi(x_i, r) / C:

    CRF: theta_i <- theta_i - eta (theta_i - s_i)
    M3N: theta_i <- theta_i + eta (e_i + s_i)

and the sum over labels in Q reduces to parts:
    sum_y alpha_y log alpha_y = sum_r mu_r theta_r - log Z(theta)    (CRF)
    sum_y alpha_y e_y        = sum_r mu_r e_r                        (M3N)

w(alpha) lives in a `Weights` (unscaled; the model predicts with w(alpha)/C) and
changes only by the visited example's contribution, sum_r (mu_old - mu_new)_r
phi_r. `Weights` sums the change of ||w||^2 as it adds, which gives the exact
change of Q for one example without a pass over the data (§7), so the adaptive
rate (halve eta_i until Q improves, then multiply it by 1.05, or by eta_fast_growth
when the first rate tried was accepted) costs one feature pass per rate tried.

Reported objectives follow the paper: primal P(w(alpha)/C), dual -Q(alpha)
(a lower bound on the primal minimum), gap = P + Q >= 0.

The best point on w(alpha)'s ray (`primal_scale_search`, issue 26). Any w bounds the
primal minimum from above, so P(t w(alpha)/C) + Q >= 0 is a certified gap for every
t > 0. For M3N the hinge makes P(w(alpha)/C) lag far behind the dual: near the optimum
w(alpha) is too short (its margins are slightly violated everywhere), and one scalar
fixes most of that. With the option, `objectives` minimizes the primal over t (P is
convex along the ray; scipy's bounded Brent search over log t, one decoding pass per
value, on scores computed once), reports the minimum as the primal and t as primal_scale, and the
model predicts with t w(alpha)/C, the point the primal was certified at (an epoch
without objectives, `objectives_every` > 1, predicts with w(alpha)/C). This model's
arg-maxes are those of w(alpha)/C; its probabilities are sharper or flatter by t (the
confidence temperature absorbs that), and a mean of several such models weighs each by its t.

The best point of a plane (`primal_average`, which implies the scale search). Near the M3N
optimum the last w(alpha) is noisy (each visit moves it), and a mean of the last epochs' w(alpha)
sits closer to w*. On an en_ewt checkpoint at C = 100 (epoch 29, gap sampling), the best primal
over the cone of the last three epochs' w(alpha) weighed them 0.49, 0.32, 0.17 from the newest
back, and certified 1.69% where w(alpha) with a mean weighing epoch k by k (as Lacoste-Julien et
al. 2013 average Frank-Wolfe iterates) certified 1.84%, giving that mean a weight of 0.09. So
the mean is exponential, a_k = (a_{k-1} + w_k) / 2, and from the second epoch on `objectives`
minimizes P((u w(alpha) + v a) / C) over u, v >= 0 (1/16 <= u + v <= 16), which is convex in
(u, v): each value comes with a subgradient (the two score arrays' products with the
loss-augmented tree, or the marginals, minus the gold tree), so Kelley's cutting planes with
the quadratic kept exact find the minimum and bound it from below. The search stops once the
bound is within plane_tolerance of the primal or within plane_gap_share (2%) of the gap
(en_ewt, second order, C = 100: a median of 7 decoding passes per search; on its first 2,000
sentences 7, against 16 with the tolerance alone; at most plane_evaluations). The model predicts
with that point, whose trees are no longer those of w(alpha)/C (train_accuracy is then
measured at it); the mean restarts when C anneals, and it is kept in the checkpoint.

Gap sampling (`gap_sampling` = m, issue 26). The certified gap at w(alpha)/C is a sum over the
examples, P + Q = sum_i [loss_i + term_i + (g_i - mu_i).s_i] (as ||w(alpha)||^2 / C =
sum_i (g_i - mu_i).s_i), each term >= 0: example i's Frank-Wolfe gap for M3N, KL(alpha_i ||
Gibbs(s_i)) for the CRF. `objectives` keeps these terms, and the next epoch draws its n visits
with probability m gap_i / sum gap + (1 - m) / n (Osokin et al. 2016 sample block Frank-Wolfe's
blocks by their gaps). The gaps are those of the last objectives (stale for a while when
`objectives_every` > 1; dropped when C anneals). Long sentences hold more of the gap, so an
epoch then costs more time: `part_weighted_iterations` counts the visits weighed by their
examples' parts, and train.py's train_words_per_second, which counts the corpus's words once
per epoch, understates the words actually visited. `gap_sampling_per_part` draws by gap_i /
parts_i instead, the gap per unit of a visit's feature pass (its inside-outside grows faster,
with the cube of the words).

Warm start (`warm_start`, issue 26). Any theta is a valid dual point, so the dual may
start from the Gibbs distributions of a trained model's scores instead of theta = 0
(uniform alpha_i, whose w(alpha) / C is huge at small C). With w0 the model's weights,

    theta_i = a * e_i + b * w0 . phi(x_i, r)

(for the CRF a = 0 unless `warm_start_margin` is given). At the CRF optimum theta_i =
w* . phi(x_i, r) exactly (alpha_i = Gibbs(w* . phi) and w* = w(alpha)/C), so b rescales w0
towards w*; at the M3N optimum alpha_i sits on the cost-augmented argmaxes of e_i + w* . phi,
which a large a and b approach. b (`warm_start_scale`) and, for M3N, a (`warm_start_margin`)
are searched when not given: the values
on grids of powers of two (a also 0) that minimize Q, by coordinate descent from a = 0 until
neither moves, on a fixed random subset of m examples, with C
replaced by C m / n (the subset's terms sum like m/n of the full sum and its w(alpha)
like m/n of the full one, so C m / n keeps w(alpha)/C and Q per example at their
full-data sizes). eta_ini is then searched from the warm point, on the same terms.
The margin may be given without a model (w0 = 0): theta_i = a e_i, for either objective. A
negative a starts alpha_i near the gold tree (exactly on it as a -> -inf, where w(alpha) = 0
and the dual is 0: for M3N the start of SMO-style and Frank-Wolfe solvers, for the CRF a start
whose w(alpha) / C is 0 instead of theta = 0's huge one), with no model to train first. With a
model the CRF's margin is 0 unless given (it is not searched: at the CRF optimum theta_i has no
e_i term).

An optional diagonal metric S (`set_scale`; Laplace MaxEnDNet, seeds/003 eq. 9)
replaces ||w(alpha)||^2 by w(alpha).S w(alpha) and the primal's ||w||^2 by
w.S^-1 w. The `Weights` then holds S w(alpha) (see `Weights`), so scores, the
exact dQ and the prediction w = S w(alpha) / C come out of the same code.
"""

import math
import time

import numpy as np

from ..structure import Structure
from ..weights import Weights
from . import Trainer

OBJECTIVES = ("crf", "m3n")
SCHEDULES = ("random", "cyclic", "batch")
ETA_CANDIDATES = tuple(2.0 ** k for k in range(2, -13, -1))  # 4 ... 1/4096
# primal_average's mean of the epochs' w(alpha): each epoch back weighs half as much (module
# docstring; 0.8 was tried on 2,000 en_ewt sentences, second order, C = 100: no smaller gap)
AVERAGE_DECAY = 0.5


class EG(Trainer):
    """Online (randomized or cyclic) and batch EG for the CRF ("crf") or M3N ("m3n") dual."""

    name = "eg"
    columns = ("train_accuracy", "primal", "dual", "relative_gap", "C",
               "effective_iterations", "mean_eta", "epoch_seconds")

    def __init__(
        self,
        objective: str = "crf",
        C: float = 1.0,
        schedule: str = "random",
        eta: float | None = None,
        eta_search_fraction: float = 0.1,
        eta_search_share: float = 0.95,
        eta_growth: float = 1.05,
        max_halvings: int = 20,
        objectives_every: int = 1,
        anneal: bool = False,
        anneal_factor: float = 0.7,
        anneal_tolerance: float = 1e-3,
        C_min: float = 0.0,
        seed: int = 0,
        # issue 26, after the earlier parameters so that positional calls keep their meaning
        eta_fast_growth: float | None = None,
        stop_gap: float = 0.0,
        warm_start: str | None = None,
        warm_start_scale: float | None = None,
        warm_start_margin: float | None = None,
        warm_start_fraction: float = 0.1,
        primal_scale_search: bool = False,
        primal_average: bool = False,
        gap_sampling: float = 0.0,
        gap_sampling_per_part: bool = False,
    ):
        if objective not in OBJECTIVES:
            raise ValueError(f"EG objective must be one of {OBJECTIVES}, got {objective!r}")
        if schedule not in SCHEDULES:
            raise ValueError(f"EG schedule must be one of {SCHEDULES}, got {schedule!r}")
        if not C > 0:
            raise ValueError(f"C must be positive, got {C}")
        if eta is not None and not eta > 0:
            raise ValueError(f"eta must be positive, got {eta}")
        if not 0 < anneal_factor < 1:
            raise ValueError(f"anneal_factor must be in (0, 1), got {anneal_factor}")
        if not stop_gap >= 0:
            raise ValueError(f"stop_gap must be >= 0, got {stop_gap}")
        if warm_start_scale is not None and not warm_start_scale >= 0:
            raise ValueError(f"warm_start_scale must be >= 0, got {warm_start_scale}")
        if warm_start_margin is not None and not math.isfinite(warm_start_margin):
            raise ValueError(f"warm_start_margin must be finite, got {warm_start_margin}")
        self.objective = objective
        self.C = float(C)
        self.schedule = schedule
        self.eta_ini = eta
        self.eta_search_fraction = eta_search_fraction
        self.eta_search_share = eta_search_share
        self.eta_growth = eta_growth
        if eta_fast_growth is not None and not eta_fast_growth >= 1:
            raise ValueError(f"eta_fast_growth must be >= 1, got {eta_fast_growth}")
        self.eta_fast_growth = eta_growth if eta_fast_growth is None else eta_fast_growth
        self.max_halvings = max_halvings
        self.objectives_every = 1 if anneal else max(1, int(objectives_every))
        self.anneal = anneal
        self.anneal_factor = anneal_factor
        self.anneal_tolerance = anneal_tolerance
        self.C_min = C_min
        self.stop_gap = float(stop_gap)
        self.warm_start = warm_start
        self.warm_start_scale = warm_start_scale
        self.warm_start_margin = warm_start_margin
        self.warm_start_fraction = warm_start_fraction
        self.primal_average = bool(primal_average)
        if not 0 <= gap_sampling < 1:
            raise ValueError(f"gap_sampling must be in [0, 1), got {gap_sampling}")
        if gap_sampling and schedule != "random":
            raise ValueError(f"gap_sampling needs the random schedule, not {schedule!r}")
        self.gap_sampling = float(gap_sampling)
        if gap_sampling_per_part and not gap_sampling:
            raise ValueError("gap_sampling_per_part needs gap_sampling > 0")
        self.gap_sampling_per_part = bool(gap_sampling_per_part)  # draw by gap_i / parts_i
        self.example_gaps: np.ndarray | None = None  # each example's term of the gap at w(alpha)/C
        self.primal_scale_search = bool(primal_scale_search) or self.primal_average  # the plane holds the ray
        self.primal_scale = 1.0  # t (u in the plane) of the last certificate (module docstring); 1 without the search
        self.average: np.ndarray | None = None  # the exponential mean of w(alpha) at epoch ends
        self.average_epochs = 0
        self.average_weight = 0.0  # v of the last certificate: w = (u w(alpha) + v average) / C
        self.search_start = (1.0, 0.0)  # the last certified (u, v), where the next plane search starts
        self.plane_evaluations = 30  # at most, per plane search
        self.plane_tolerance = 1e-5  # stop once P is within this share of the cutting planes' lower bound
        self.plane_gap_share = 0.02  # or once the plane's possible gain is within this share of the gap
        self.warm_weights: np.ndarray | None = None  # w0 (set directly, or loaded from warm_start)
        self.warm_layout: str | None = None  # the warm model's parser distance_features, when it names one
        self.warm_start_result: dict | None = None
        self.rng = np.random.default_rng(seed)
        self.weights: Weights | None = None
        self.scale: np.ndarray | None = None  # the diagonal metric S, None for the identity
        self.annealing_table: list[dict] = []
        self.epochs_done = 0
        self.accepted_changes: list[float] | None = None  # set to [] to record every accepted dQ (tests)

    # -- state ---------------------------------------------------------------
    def begin(self, structure: Structure, examples: list, hash_bits: int) -> None:
        """theta_i = 0 for every example (or the warm start's theta_i), w = w(sigma(theta)),
        and eta_ini (searched unless given)."""
        self.search_visits = 0
        warm = self._warm_coefficients(structure, examples, hash_bits)
        if self.eta_ini is None:
            self.eta_ini = self._search_eta(structure, examples, hash_bits, warm)
        self._init_state(structure, examples, hash_bits, self.eta_ini, warm)

    def tables(self) -> dict[str, list[dict]]:
        return {"annealing": self.annealing_table}

    def setup_report(self) -> dict:
        out = {"eta_ini": self.eta_ini}
        if getattr(self, "eta_search_result", None):
            r = self.eta_search_result
            out.update({"eta_ini": r["eta"], "eta_search_visits": r["visits"], "eta_search_subset": r["subset"]})
        if self.warm_start_result:
            out.update({f"warm_start_{k}": v for k, v in self.warm_start_result.items()})
        return out

    # -- warm start ------------------------------------------------------------
    def _load_warm_weights(self, hash_bits: int) -> np.ndarray | None:
        """w0: `warm_weights` if set, else the weights at `warm_start` (a .npy array, or a
        model directory or training output directory whose component has 2^hash_bits
        weights)."""
        if self.warm_weights is not None or self.warm_start is None:
            return self.warm_weights
        from pathlib import Path

        path = Path(self.warm_start)
        if path.suffix == ".npy":
            array = np.load(path, allow_pickle=False)
        else:
            # A model directory holds each component's weights as NAME.npy (float64, 2^bits).
            # They are read here as arrays, not through arborist.model, which the trainers'
            # layer does not import (the registry imports the trainers).
            if not (path / "meta.json").is_file() and (path / "model-best" / "meta.json").is_file():
                path = path / "model-best"
            found = [f for f in sorted(path.glob("*.npy"))
                     if (a := np.load(f, mmap_mode="r", allow_pickle=False)).ndim == 1
                     and a.dtype == np.float64 and a.size == 2 ** hash_bits]
            if len(found) != 1:
                raise ValueError(f"warm_start {self.warm_start}: expected one component with 2^{hash_bits} "
                                 f"weights, found {len(found)}")
            self.warm_layout = _distance_layout(path / "meta.json", found[0].name)
            array = np.load(found[0], allow_pickle=False)
        if array.size != 2 ** hash_bits:
            raise ValueError(f"warm_start {self.warm_start}: {array.size} weights, expected 2^{hash_bits}")
        self.warm_weights = np.asarray(array, dtype=np.float64).copy()
        return self.warm_weights

    def warm_theta(self, structure, x, w0: Weights | None, a: float, b: float) -> np.ndarray:
        """theta_i = a e_i + b w0 . phi(x_i, r) (w0 None: theta_i = a e_i)."""
        if w0 is None:
            theta = np.zeros_like(structure.part_cost(x, structure.gold(x)), dtype=np.float64)
        else:
            theta = b * np.asarray(structure.scores(x, w0), dtype=np.float64)
        if a:
            theta = theta + a * structure.part_cost(x, structure.gold(x))
        return theta

    def _warm_coefficients(self, structure, examples, hash_bits):
        """(w0 as Weights, a, b): b searched when not given, a too for M3N (the CRF's a is the
        given margin or 0); None without a warm start. A margin without a model gives
        (None, a, 0): theta_i = a e_i."""
        array = self._load_warm_weights(hash_bits)
        if array is None:
            if self.warm_start_margin:
                self.warm_start_result = {"scale": 0.0, "margin": self.warm_start_margin}
                return None, float(self.warm_start_margin), 0.0
            return None
        ours = getattr(getattr(structure, "features", None), "distance_features", None)
        theirs = self.warm_layout
        if ours is not None and theirs is not None and ours != theirs:
            raise ValueError(f"warm_start {self.warm_start}: its parser's distance_features are {theirs!r}, "
                             f"this one's {ours!r}: the weights would be read at other slots")
        w0 = Weights(hash_bits, False, array)
        a = (self.warm_start_margin or 0.0) if self.objective == "crf" else self.warm_start_margin
        b = self.warm_start_scale
        result = {}
        if a is None or b is None:
            n = len(examples)
            size = max(1, int(round(self.warm_start_fraction * n)))
            subset = [examples[i] for i in sorted(self.rng.choice(n, size=size, replace=False))]
            C_sub = self.C * size / n
            cache = [(x, np.asarray(structure.scores(x, w0), dtype=np.float64),
                      structure.part_cost(x, structure.gold(x))) for x in subset]
            values: dict[tuple[float, float], float] = {}

            def q(a_, b_):
                if (a_, b_) not in values:
                    values[(a_, b_)] = self._q_at(structure, cache, a_, b_, C_sub, hash_bits)
                return values[(a_, b_)]

            grid_b = [2.0 ** k for k in range(-12, 7)]
            grid_a = [0.0] + [2.0 ** k for k in range(-4, 7)]
            search_a, search_b = a is None, b is None
            # Coordinate descent over the two whole grids, from the CRF's form (no margin),
            # until neither coordinate moves: a search of b near one start can stop in a valley
            # where alpha sits on w0's own trees and w(alpha), the model, is near 0.
            a = 0.0 if search_a else a
            b = grid_b[0] if search_b else b
            for _ in range(len(grid_a) + len(grid_b)):
                moved = False
                if search_b:
                    best = min(grid_b, key=lambda v: (q(a, v), v))
                    moved |= best != b
                    b = best
                if search_a:
                    best = min(grid_a, key=lambda v: (q(v, b), v))
                    moved |= best != a
                    a = best
                if not (moved and search_a and search_b):
                    break
            evaluations = len(values)
            self.search_visits += evaluations * size  # each Q evaluation is one visit of the subset
            result = {"search_subset": size, "search_evaluations": evaluations, "search_visits": evaluations * size}
        self.warm_start_result = {"scale": b, "margin": a, **result}
        return w0, a, b

    def _q_at(self, structure, cache, a, b, C, hash_bits) -> float:
        """Q at theta_i = a e_i + b s0_i over the cached (x, s0_i, e_i), with this C."""
        w = Weights(hash_bits, False, scale=self.scale)
        terms = 0.0
        for x, s0, e in cache:
            theta = b * s0 + (a * e if a else 0.0)
            mu, logz = structure.marginals(x, theta)
            terms += self._term(e if self.objective == "m3n" else None, theta, mu, logz)
            structure.add_features(x, structure.indicator(x, structure.gold(x)) - mu, w, 1.0)
        return terms + w.sq_norm() / (2.0 * C)

    def _init_state(self, structure, examples, hash_bits, eta, warm=None):
        n = len(examples)
        self.weights = Weights(hash_bits, averaged=False, scale=self.scale)
        self.theta, self.mu = [], []
        self.logz = np.zeros(n)
        self.term = np.zeros(n)  # example i's part of the sum over labels in Q (see module doc)
        for i, x in enumerate(examples):
            gold = structure.gold(x)
            if warm is None:
                theta = np.zeros_like(structure.part_cost(x, gold), dtype=np.float64)
            else:
                theta = self.warm_theta(structure, x, *warm)
            mu, logz = structure.marginals(x, theta)
            self.theta.append(theta)
            self.mu.append(mu)
            self.logz[i] = logz
            self.term[i] = self._term(self._cost(structure, x), theta, mu, logz)
            structure.add_features(x, structure.indicator(x, gold) - mu, self.weights, 1.0)
        self.sq_norm = self.weights.sq_norm()
        self.eta = np.full(n, float(eta))
        self.batch_eta = float(eta)
        self.visits = 0
        self.parts_visited = 0  # the visits weighed by their examples' parts (long sentences cost more)
        self.halvings = 0
        self.stalls = 0
        self.iterations_at_C = 0.0

    def _cost(self, structure, x):
        """e_i over parts: only the M3N dual reads it."""
        return structure.part_cost(x, structure.gold(x)) if self.objective == "m3n" else None

    def _term(self, cost, theta, mu, logz) -> float:
        if self.objective == "crf":
            return float((mu * theta).sum() - logz)
        return -float((mu * cost).sum())

    def _theta_update(self, cost, theta, s, eta):
        if self.objective == "crf":
            return theta - eta * (theta - s)
        return theta + eta * (cost + s)

    def dual_value(self) -> float:
        """Q(alpha) for the current state (minimized; -Q is the reported dual)."""
        return float(self.term.sum() + self.sq_norm / (2.0 * self.C))

    # -- one example ---------------------------------------------------------
    def visit(self, structure: Structure, x, i: int, adaptive: bool = True) -> tuple[bool, float]:
        """One online EG update of example i (Figure 3), with the adaptive rate of §7.

        Returns (accepted, dQ). Each rate tried counts as one visit."""
        cost = self._cost(structure, x)
        s = structure.scores(x, self.weights) / self.C
        eta = self.eta[i]
        for attempt in range(self.max_halvings + 1 if adaptive else 1):
            accepted, dq = self._try(structure, x, cost, i, s, eta)
            if accepted:
                # Grow the rate only on a real improvement: an example already at its
                # optimum (dQ = 0) would otherwise grow eta, and theta, without bound.
                # A step accepted at the first rate tried grows it by eta_fast_growth
                # (issue 26: a rate that collapsed early regrows in a few visits).
                growth = self.eta_fast_growth if attempt == 0 else self.eta_growth
                self.eta[i] = eta * growth if adaptive and dq < 0 else eta
                return True, dq
            eta *= 0.5
            self.halvings += adaptive
        self.stalls += 1  # no rate improved Q (only at numerical convergence): leave i as it was
        return False, dq

    def _try(self, structure, x, cost, i, s, eta) -> tuple[bool, float]:
        self.visits += 1
        if self.parts_visited is not None:
            self.parts_visited += self.theta[i].size
        theta = self._theta_update(cost, self.theta[i], s, eta)
        mu, logz = structure.marginals(x, theta)
        term = self._term(cost, theta, mu, logz)
        w = self.weights
        w.sq_norm_change = 0.0
        structure.add_features(x, self.mu[i] - mu, w, 1.0)
        d_norm = w.sq_norm_change
        dq = term - self.term[i] + d_norm / (2.0 * self.C)
        tolerance = self._tolerance(theta, term, self.term[i])
        if dq <= tolerance:
            if dq >= -tolerance:
                dq = 0.0  # a change below rounding is no change
            self.theta[i], self.mu[i], self.logz[i], self.term[i] = theta, mu, logz, term
            self.sq_norm += d_norm
            if self.accepted_changes is not None:
                self.accepted_changes.append(dq)
            return True, dq
        structure.add_features(x, mu - self.mu[i], w, 1.0)  # undo
        return False, dq

    def _tolerance(self, theta, *terms) -> float:
        """The rounding error of dQ. Marginals come from exp(inside + outside - log Z),
        whose absolute error grows with the size of theta; ||w||^2 is a long sum."""
        scale = 1.0 + float(np.abs(theta).max(initial=0.0))
        return 1e-13 * (scale * (1.0 + sum(abs(t) for t in terms)) + self.sq_norm / self.C)

    # -- epochs --------------------------------------------------------------
    def epoch(self, structure: Structure, examples: list, tracker=None) -> dict:
        """One epoch: n online visits (random or cyclic order), or one accepted batch step."""
        n = len(examples)
        visits_before, halvings_before, stalls_before = self.visits, self.halvings, self.stalls
        start = time.perf_counter()
        if self.schedule == "batch":
            self._batch_step(structure, examples, tracker)
        else:
            if self.schedule == "cyclic":
                order = np.arange(n)
            elif self.gap_sampling and self.example_gaps is not None and self.example_gaps.sum() > 0:
                weight = self.example_gaps
                if self.gap_sampling_per_part:
                    weight = weight / np.array([t.size for t in self.theta], dtype=float)
                share = self.gap_sampling * weight / weight.sum() + (1 - self.gap_sampling) / n
                order = self.rng.choice(n, size=n, p=share / share.sum())
            else:
                order = self.rng.integers(n, size=n)
            for i in order:
                self.visit(structure, examples[i], int(i))
                if tracker is not None:
                    tracker.advance(1)
        seconds = time.perf_counter() - start
        self.epochs_done += 1
        self.iterations_at_C += (self.visits - visits_before) / n
        metrics = {
            "C": self.C,
            "effective_iterations": self.effective_iterations(n),
            # the same, each example weighing its share of all parts (gap_sampling favours long ones)
            "part_weighted_iterations": (None if self.parts_visited is None
                                         else self.parts_visited / sum(t.size for t in self.theta)),
            "visits": self.visits - visits_before,
            "halvings": self.halvings - halvings_before,
            "stalls": self.stalls - stalls_before,
            "mean_eta": float(self.batch_eta if self.schedule == "batch" else self.eta.mean()),
            "epoch_seconds": seconds,
            "examples_per_second": n / max(seconds, 1e-9),
        }
        # until this epoch's objectives certify a point (none: w(alpha)/C)
        self.primal_scale, self.average_weight = 1.0, 0.0
        if self.primal_average:  # a_k = d a_{k-1} + (1 - d) w_k: each epoch back weighs d times less
            self.average_epochs += 1
            if self.average is None:
                self.average = self.weights.array.copy()
            else:
                self.average *= AVERAGE_DECAY
                self.average += (1.0 - AVERAGE_DECAY) * self.weights.array
        if self.epochs_done % self.objectives_every == 0:
            start = time.perf_counter()
            metrics.update(self.objectives(structure, examples))
            metrics["objective_seconds"] = time.perf_counter() - start
        return metrics

    def effective_iterations(self, n: int) -> float:
        """Examples visited (every rate tried counts) divided by n, as §7 defines it."""
        return self.visits / n

    def _batch_step(self, structure, examples, tracker):
        """Figure 1: every theta_i moves at once, with the gradient at the same alpha.

        One global rate, halved until Q improves and then multiplied by 1.05 (the
        batch analogue of §7's rule); every rate tried costs n visits."""
        C = self.C
        scores = [structure.scores(x, self.weights) / C for x in examples]
        eta = self.batch_eta
        for attempt in range(self.max_halvings + 1):
            w_new = Weights(self.weights.bits, False, self.weights.array.copy(), self.scale)
            new_state = []
            d_terms = 0.0
            for i, x in enumerate(examples):
                cost = self._cost(structure, x)
                theta = self._theta_update(cost, self.theta[i], scores[i], eta)
                mu, logz = structure.marginals(x, theta)
                term = self._term(cost, theta, mu, logz)
                structure.add_features(x, self.mu[i] - mu, w_new, 1.0)
                new_state.append((theta, mu, logz, term))
                d_terms += term - self.term[i]
                if tracker is not None:
                    tracker.advance(1)
            self.visits += len(examples)
            if self.parts_visited is not None:
                self.parts_visited += sum(t.size for t in self.theta)
            sq_norm = w_new.sq_norm()
            dq = d_terms + (sq_norm - self.sq_norm) / (2.0 * C)
            largest = max((t for t, _, _, _ in new_state), key=lambda t: float(np.abs(t).max(initial=0.0)))
            tolerance = self._tolerance(largest, *self.term, *(term for _, _, _, term in new_state))
            if dq <= tolerance:
                if dq >= -tolerance:
                    dq = 0.0  # a change below rounding is no change
                for i, (theta, mu, logz, term) in enumerate(new_state):
                    self.theta[i], self.mu[i], self.logz[i], self.term[i] = theta, mu, logz, term
                self.weights, self.sq_norm = w_new, sq_norm
                self.batch_eta = eta * self.eta_growth if dq < 0 else eta
                if self.accepted_changes is not None:
                    self.accepted_changes.append(dq)
                return
            eta *= 0.5
            self.halvings += 1
        self.stalls += 1

    # -- objectives ----------------------------------------------------------
    def objectives(self, structure: Structure, examples: list) -> dict:
        """Primal P(w(alpha)/C), dual -Q(alpha), their gap, and training accuracy (one pass).
        With primal_scale_search, the primal is the minimum of P(t w(alpha)/C) over t > 0."""
        C = self.C
        ray = []  # (x, s, gold, gold part indicator, e_i for M3N) of every example
        for x in examples:
            gold = structure.gold(x)
            s = structure.scores(x, self.weights) / C
            ray.append((x, s, gold, structure.indicator(x, gold), self._cost(structure, x)))
        # Re-sync the running ||w||^2 with the array (it drifts by rounding only).
        self.sq_norm = self.weights.sq_norm()
        losses = self._losses_on_ray(structure, ray, 1.0)
        primal = self._primal_from(losses, 1.0)
        dual = -self.dual_value()
        if self.gap_sampling:
            # P(w(alpha)/C) + Q(alpha) = sum_i [loss_i + term_i + (g_i - mu_i).s_i], as
            # ||w(alpha)||^2 / C = sum_i (g_i - mu_i).s_i; each summand is >= 0 (M3N: example i's
            # Frank-Wolfe gap; CRF: KL(alpha_i || Gibbs(s_i)))
            self.example_gaps = np.maximum(0.0, losses + self.term + np.array(
                [float(((g - mu) * s).sum()) for (_, s, _, g, _), mu in zip(ray, self.mu)]))
        out = {}
        accuracy_scores = None  # the scores the model predicts with, when not w(alpha)'s
        if self.primal_average and self.average_epochs > 1:  # the first average is w(alpha): a ray
            u, v, best, out, averaged = self._best_in_plane(structure, ray, primal, dual)
            self.primal_scale, self.average_weight, self.search_start = u, v, (u, v)
            out.update({"primal_unscaled": primal, "primal_scale": u, "primal_average_weight": v})
            primal = best
            if v > 0:  # the model predicts with (u w(alpha) + v a) / C, whose trees are not w(alpha)'s
                accuracy_scores = [u * s + v * sa for (_, s, _, _, _), sa in zip(ray, averaged)]
        elif self.primal_scale_search:
            t, best = self._best_scale(structure, ray, primal)
            self.primal_scale, self.search_start = t, (t, 0.0)
            out = {"primal_unscaled": primal, "primal_scale": t}
            primal = best
        if accuracy_scores is None:
            accuracy_scores = [s for _, s, _, _, _ in ray]
        correct = total = 0.0
        for (x, _, gold, _, _), s in zip(ray, accuracy_scores):
            right, positions = structure.hits(x, gold, structure.argmax(x, s))
            correct += right
            total += positions
        gap = primal - dual
        return {
            "primal": primal,
            "dual": dual,
            "duality_gap": gap,
            "relative_gap": gap / abs(primal) if primal else 0.0,
            "train_accuracy": correct / max(total, 1.0),
            **out,
        }

    def _primal_on_ray(self, structure, ray, t: float) -> float:
        """P(t w(alpha)/C): the loss at scores t s_i plus t^2 ||w(alpha)||^2 / (2C)."""
        return self._primal_from(self._losses_on_ray(structure, ray, t), t)

    def _primal_from(self, losses: np.ndarray, t: float) -> float:
        loss = 0.0
        for value in losses:  # in order, as the sum always was
            loss += float(value)
        return loss + t * t * self.sq_norm / (2.0 * self.C)

    def _losses_on_ray(self, structure, ray, t: float) -> np.ndarray:
        """Each example's loss at scores t s_i."""
        return np.array([self._loss(structure, x, t * s, gold, g, cost)[0] for x, s, gold, g, cost in ray])

    def _loss(self, structure, x, scores, gold, g, cost) -> tuple[float, np.ndarray]:
        """(loss, mu) of one example at these scores: log Z - gold score and the marginals (CRF),
        or the loss-augmented tree's score minus the gold's and that tree's indicator (M3N); the
        loss's subgradient in the scores is mu - g."""
        gold_score = float((scores * g).sum())
        if self.objective == "crf":
            mu, logz = structure.marginals(x, scores)
            return logz - gold_score, mu
        mu = structure.indicator(x, structure.cost_augmented_argmax(x, scores, gold))
        return float(((scores + cost) * mu).sum()) - gold_score, mu

    def _best_in_plane(self, structure, ray, at_one: float, dual: float) -> tuple[float, float, float, dict, list]:
        """(u, v, P, report, the examples' scores by the average) minimizing
        P((u w(alpha) + v average) / C) over u, v >= 0 with 1/16 <= u + v <= 16 (the ray's
        bounds); (1, 0) unless lower. P is convex in (u, v) and
        each value comes with a subgradient (the scores' products with the loss-augmented tree,
        or the marginals, minus the gold tree; plus the Gram matrix of the two vectors), so
        Kelley's cutting planes, with the quadratic kept exact, find the minimum and bound it
        from below: they stop once P is within plane_tolerance of that bound, or once what the
        plane could still gain is at most plane_gap_share of the gap to the dual (a search for
        the last 0.001% of the primal is wasted while the gap is 1%)."""
        if self.scale is not None:  # the Gram matrix below takes the plain inner product
            raise ValueError("primal_average does not support a scaled dual metric (MaxEnDNet)")
        C = self.C
        start = time.perf_counter()
        averaged = Weights(self.weights.bits, False, self.average)
        plane = [(x, s, gold, g, cost, structure.scores(x, averaged) / C) for x, s, gold, g, cost in ray]
        cross = float(np.dot(self.weights.array, self.average))
        gram = np.array([[self.sq_norm, cross], [cross, float(np.dot(self.average, self.average))]]) / C

        def loss_and_subgradient(z):
            u, v = float(z[0]), float(z[1])
            loss, grad = 0.0, np.zeros(2)
            for x, s, gold, g, cost, sa in plane:
                value, mu = self._loss(structure, x, u * s + v * sa, gold, g, cost)
                loss += value
                d = mu - g
                grad += (float((s * d).sum()), float((sa * d).sum()))
            return loss, grad

        z, best, best_z, lower = np.array(self.search_start, dtype=float), math.inf, None, -math.inf
        intercepts, slopes = [], []
        for evaluations in range(1, self.plane_evaluations + 1):
            loss, grad = loss_and_subgradient(z)
            value = loss + 0.5 * float(z @ gram @ z)
            if value < best:
                best, best_z = value, z
            intercepts.append(loss - float(grad @ z))
            slopes.append(grad)
            if best - lower <= max(self.plane_tolerance * abs(best), self.plane_gap_share * (best - dual)):
                break
            z, step_lower = _cutting_plane_step(np.array(intercepts), np.array(slopes), gram, z, (1 / 16, 16.0))
            if not math.isfinite(step_lower):  # SLSQP failed: its point may be infeasible; keep the best
                break
            lower = max(lower, step_lower)
        # the lower bound stays unknown (None) when no cutting-plane step succeeded
        report = {"primal_search_evaluations": evaluations,
                  "primal_search_lower": lower if math.isfinite(lower) else None,
                  "primal_search_seconds": time.perf_counter() - start}
        averaged_scores = [sa for *_, sa in plane]
        if best < at_one:
            return float(best_z[0]), float(best_z[1]), best, report, averaged_scores
        return 1.0, 0.0, at_one, report, averaged_scores

    def _best_scale(self, structure, ray, at_one: float) -> tuple[float, float]:
        """(t, P) minimizing P(t w(alpha)/C) over t in [1/16, 16]; t = 1 unless lower. P is
        convex in t, so unimodal in log t, where the bounded Brent search runs (its tolerance
        is then relative: 0.1% of t). The bounds keep the model within what a confidence
        temperature absorbs (e^+-6); beyond them the gap is far from small anyway."""
        from scipy.optimize import minimize_scalar

        found = minimize_scalar(lambda u: self._primal_on_ray(structure, ray, math.exp(u)),
                                bounds=(math.log(1 / 16), math.log(16.0)), method="bounded", options={"xatol": 1e-3})
        if found.fun < at_one:
            return math.exp(float(found.x)), float(found.fun)
        return 1.0, at_one

    def finish_epoch(self, metrics: dict) -> bool:
        """C-annealing (§7.1.2): once the gap is within tolerance x primal, record the row
        (C, iterations, total iterations, the dev scores), multiply C by the factor and keep the
        dual state (warm start). Returns True when training should stop. Without annealing,
        the duality gap is the stopping rule when stop_gap > 0: stop once relative gap <= stop_gap."""
        if "relative_gap" not in metrics:
            return False
        if not self.anneal:
            return self.stop_gap > 0 and metrics["relative_gap"] <= self.stop_gap
        if metrics["relative_gap"] > self.anneal_tolerance:
            return False
        self.annealing_table.append({
            "C": self.C,
            "iterations": self.iterations_at_C,
            "total_iterations": metrics["effective_iterations"],
            **{k: v for k, v in metrics.items() if k.startswith("dev_")},
            "primal": metrics["primal"],
            "relative_gap": metrics["relative_gap"],
        })
        self.iterations_at_C = 0.0
        if self.C * self.anneal_factor < self.C_min:
            return True
        self.C *= self.anneal_factor
        # certified at the old C; the old C's w(alpha) do not average into the new one's
        self.primal_scale, self.average_weight, self.search_start = 1.0, 0.0, (1.0, 0.0)
        self.average, self.average_epochs = None, 0
        self.example_gaps = None  # the old C's gaps: the new C's first epoch draws uniformly
        self.sq_norm = self.weights.sq_norm()
        return False

    def prediction_weights(self) -> Weights:
        """The primal solution w = t S w(alpha) / C (S = 1 unless `set_scale`, t = 1 unless
        primal_scale_search)."""
        array = self.weights.array * (self.primal_scale / self.C)
        if self.average_weight:
            array += self.average * (self.average_weight / self.C)
        return Weights(self.weights.bits, False, array)

    def set_scale(self, structure: Structure, examples: list, scale: np.ndarray | None) -> None:
        """Make S = diag(scale) the dual's metric, keeping the dual state (a warm start).
        w(alpha) is rebuilt from the marginals in one feature pass rather than divided
        out of S_old w(alpha), which would lose precision where S_old is tiny."""
        u = Weights(self.weights.bits, False)
        for x, mu in zip(examples, self.mu):
            structure.add_features(x, structure.indicator(x, structure.gold(x)) - mu, u, 1.0)
        self.scale = scale
        array = u.array if scale is None else u.array * scale
        self.weights = Weights(u.bits, False, array, scale)
        self.sq_norm = self.weights.sq_norm()

    # -- eta_ini (§7) ----------------------------------------------------------
    def _search_eta(self, structure, examples, hash_bits, warm=None) -> float:
        """The largest rate that improves Q on >= 95% of visits of one randomized pass
        over a fixed 10% of the data, each candidate from a fresh state (theta = 0, or
        the warm start's theta with C scaled to the subset, as in the warm start's search)."""
        n = len(examples)
        size = max(1, int(round(self.eta_search_fraction * n)))
        subset = [examples[i] for i in sorted(self.rng.choice(n, size=size, replace=False))]
        chosen = ETA_CANDIDATES[-1]
        before = self.search_visits  # the warm start's search, when there is one, came first
        seed = int(self.rng.integers(2**31))
        for eta in ETA_CANDIDATES:
            share = self.improvement_share(structure, subset, hash_bits, eta, seed, warm,
                                           self.C * size / n if warm is not None else self.C)
            self.search_visits += size
            if share >= self.eta_search_share:
                chosen = eta
                break
        self.eta_search_result = {"eta": chosen, "subset": size, "visits": self.search_visits - before}
        return chosen

    def improvement_share(self, structure, examples, hash_bits, eta, seed, warm=None, C=None) -> float:
        """Share of visits of one randomized pass at a fixed rate that improve Q, from theta = 0
        (or from the warm start's theta), at C (default self.C)."""
        probe = EG(self.objective, self.C if C is None else C, "random", max_halvings=0, seed=seed)
        probe._init_state(structure, examples, hash_bits, eta, warm)
        order = probe.rng.integers(len(examples), size=len(examples))
        improved = sum(probe.visit(structure, examples[i], int(i), adaptive=False)[0] for i in order)
        return improved / len(examples)

    # -- checkpoints -----------------------------------------------------------
    def state(self) -> tuple[dict, dict]:
        """(arrays, meta) that `restore` turns back into this exact trainer state."""
        sizes = np.array([t.size for t in self.theta], dtype=np.int64)
        arrays = {
            "weights": self.weights.array,
            "theta": np.concatenate([t.ravel() for t in self.theta]) if self.theta else np.zeros(0),
            "theta_sizes": sizes,
            "eta": self.eta,
        }
        if self.average is not None:
            arrays["average"] = self.average
        if self.example_gaps is not None:
            arrays["example_gaps"] = self.example_gaps
        meta = {
            "trainer": self.name, "objective": self.objective, "C": self.C, "batch_eta": self.batch_eta,
            "eta_ini": self.eta_ini, "visits": self.visits, "parts_visited": self.parts_visited,
            "halvings": self.halvings, "stalls": self.stalls,
            "iterations_at_C": self.iterations_at_C, "epochs_done": self.epochs_done,
            "annealing_table": self.annealing_table, "rng": self.rng.bit_generator.state,
            "primal_scale": self.primal_scale,
            "average_epochs": self.average_epochs, "average_weight": self.average_weight,
            "search_start": list(self.search_start),
        }
        return arrays, meta

    def restore(self, structure: Structure, examples: list, arrays: dict, meta: dict) -> None:
        if meta.get("trainer") != self.name or meta.get("objective") != self.objective:
            raise ValueError(f"checkpoint is for {meta.get('trainer')}/{meta.get('objective')}, "
                             f"not {self.name}/{self.objective}")
        sizes = arrays["theta_sizes"]
        if len(sizes) != len(examples):
            raise ValueError(f"checkpoint has dual state for {len(sizes)} examples, the training set has {len(examples)}")
        self.weights = Weights(int(arrays["weights"].size).bit_length() - 1, False, arrays["weights"].copy(),
                               self.scale)
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        self.theta, self.mu = [], []
        self.logz = np.zeros(len(examples))
        self.term = np.zeros(len(examples))
        for i, x in enumerate(examples):
            gold = structure.gold(x)
            shape = structure.part_cost(x, gold).shape
            if math.prod(shape) != sizes[i]:
                raise ValueError(f"checkpoint dual state of example {i} has {sizes[i]} parts, expected {math.prod(shape)}")
            theta = arrays["theta"][offsets[i]:offsets[i + 1]].reshape(shape).copy()
            mu, logz = structure.marginals(x, theta)
            self.theta.append(theta)
            self.mu.append(mu)
            self.logz[i] = logz
            self.term[i] = self._term(self._cost(structure, x), theta, mu, logz)
        self.sq_norm = self.weights.sq_norm()
        self.eta = arrays["eta"].copy()
        for key in ("C", "batch_eta", "eta_ini", "visits", "halvings", "stalls", "iterations_at_C", "epochs_done",
                    "annealing_table"):
            setattr(self, key, meta[key])
        # checkpoints before issue 26's search have none; without the search it stays 1
        self.primal_scale = float(meta.get("primal_scale", 1.0)) if self.primal_scale_search else 1.0
        if meta.get("average_weight") and not (self.primal_average and "average" in arrays):
            self.primal_scale = 1.0  # u was certified with the average, which is not resumed
        # None in checkpoints before it: the count would start from 0 where the visits do not
        self.parts_visited = meta.get("parts_visited")
        self.search_start = (self.primal_scale, 0.0)
        self.average, self.average_epochs, self.average_weight = None, 0, 0.0
        self.example_gaps = arrays["example_gaps"].copy() if self.gap_sampling and "example_gaps" in arrays else None
        # the mean of w(alpha) goes on where it was kept; resumed without the option, it is dropped
        if self.primal_average and "average" in arrays:
            self.average = arrays["average"].copy()
            self.average_epochs = int(meta["average_epochs"])
            self.average_weight = float(meta["average_weight"])
            self.search_start = tuple(float(c) for c in meta["search_start"])
        self.rng.bit_generator.state = meta["rng"]


def _cutting_plane_step(intercepts, slopes, gram, z, total):
    """Kelley's step: the minimum of 0.5 z.G.z + max_k (c_k + g_k.z) over z >= 0 with z_1 + z_2
    in `total`, the exact quadratic plus the convex loss's cutting planes (which lie below it,
    so the minimum bounds the true one from below). A QP in (z, r), solved by SLSQP on the
    model divided by its size at z (SLSQP's tolerances are absolute: a primal in the tens of
    thousands made it stop at its start). Returns (argmin, min), min = -inf if SLSQP failed."""
    from scipy.optimize import minimize

    r = float(np.max(intercepts + slopes @ z))
    size = max(1.0, abs(0.5 * float(z @ gram @ z) + r))
    c, g, q = intercepts / size, slopes / size, gram / size
    ones = np.ones((len(c), 1))
    found = minimize(lambda zr: 0.5 * float(zr[:2] @ q @ zr[:2]) + zr[2], np.array([z[0], z[1], r / size]),
                     jac=lambda zr: np.concatenate([q @ zr[:2], [1.0]]), method="SLSQP",
                     bounds=[(0.0, None), (0.0, None), (None, None)],
                     constraints=[{"type": "ineq", "fun": lambda zr: zr[2] - c - g @ zr[:2],
                                   "jac": lambda zr: np.hstack([-g, ones])},
                                  {"type": "ineq", "fun": lambda zr: np.array([zr[0] + zr[1] - total[0],
                                                                               total[1] - zr[0] - zr[1]]),
                                   "jac": lambda zr: np.array([[1.0, 1.0, 0.0], [-1.0, -1.0, 0.0]])}],
                     options={"ftol": 1e-12, "maxiter": 200})
    return found.x[:2].copy(), float(found.fun) * size if found.success else -math.inf


def _distance_layout(meta_path, weights_name: str) -> str | None:
    """The parser feature layout (`distance_features`) of the component of a saved model whose
    weights file is `weights_name`: "fine" for arborist.DependencyTree.v1 calls, None when the
    component is not a parser or meta.json cannot tell. It reads the call itself: the
    registry imports the trainers, so resolving it here would be an import cycle."""
    import json

    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for entry in meta.get("components", []) if isinstance(meta, dict) else []:
        if not isinstance(entry, dict) or (entry.get("weights_file") or f"{entry.get('name')}.npy") != weights_name:
            continue
        call = entry.get("structure")
        if isinstance(call, dict) and str(call.get("@structures", "")).startswith("arborist.DependencyTree."):
            default = "coarse" if call["@structures"] == "arborist.DependencyTree.v2" else "fine"
            return call.get("distance_features", default)
    return None
