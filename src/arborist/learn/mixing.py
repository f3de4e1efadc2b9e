"""Iterative parameter mixing (McDonald, Hall and Mann 2010, "Distributed training
strategies for the structured perceptron", Figure 3) for the perceptron family, with
exact averaging.

Each epoch n, the trainer's random permutation of the M training examples (the one a
serial epoch would visit them in) is dealt into K shards, shard k = order[k::K]. Every
shard runs one perceptron epoch over its examples, in that order, starting from the
mixed weights W^{n-1} (W^0 = 0), and the new mixed weights are the uniform average of
the shards' final weights:

    W^n = (1/K) sum_k (W^{n-1} + D_k) = W^{n-1} + (1/K) sum_k D_k

where D_k is shard k's change of the weights during the epoch.

The averaged (prediction) weights. Every visit of an example, in any shard of any epoch,
leaves the visiting shard with running weights w_t (after the example's update, if any).
The averaged weights after N epochs are the mean of those over all T = N M visits:

    A_N = (1/T) sum_{n <= N} sum_k sum_{j = 1}^{m_k} w^{n,k}_j,
    w^{n,k}_j = W^{n-1} + (shard k's updates among its first j examples of epoch n).

With K = 1 this is the serial averaged perceptron's mean over every example visited.
It is kept exactly with the lazy accumulator of `Weights`: A = W - U / T. A shard starts
its clock at 0 and an empty accumulator, so at its end it holds u_k = sum_j j d_j (d_j
the update at its (j+1)-th example) and sum_j w^{n,k}_j = m_k (W^{n-1} + D_k) - u_k. Keeping
U_n = T_n W^n - S_n, S_n the sum above, gives the update

    U_n = U_{n-1} + sum_k u_k + T_n (W^n - W^{n-1}) - sum_k m_k D_k,    T_n = T_{n-1} + M

(the W^{n-1} terms cancel in closed form; tests/test_mixing.py checks A against a
brute-force mean of the running weights). The trainer's state is then what a serial
trainer's is (W, U, the clock T and its random state), so checkpoints keep their format;
they also record the number of shards K, which a resumed run must keep.

The shards run in forked processes on this machine ("local": they read the examples and
W^{n-1} copy-on-write and write D_k and u_k to shared memory) or as Ray actors ("ray",
which hold the examples once and receive W^{n-1} through the object store). A shard hands
back D_k and u_k only where one of them is not zero, and the mixing reads and writes only
those weights (an epoch's updates touch a fraction of a 2**24 vector). Both engines give the
same weights, bit for bit: the shards' work and the mixing's arithmetic (in shard order)
do not depend on where they run. Ray is imported only by the "ray" engine.

Mixing applies to the SWVP family (`SWVP`, `Perceptron` and their subclasses), whose
`epoch` visits every example once, in `self.rng`'s order or in list order when `shuffle`
is off, updating `self.weights` and ticking its clock once per example. EG is not mixed:
its dual state partitions by shard, but w(alpha) sums over all sentences, so a parallel
EG has to exchange each shard's change of w every epoch (see `parallel_trainer`).
"""
from __future__ import annotations

import copy
import mmap
import multiprocessing
import os
import time

import numpy as np

from ..weights import Weights
from . import Trainer
from .perceptron import SWVP

ENGINES = ("local", "ray")


def mixable(trainer) -> bool:
    """Whether parameter mixing can train `trainer` (the perceptron family)."""
    return isinstance(trainer, SWVP)


def parallel_trainer(trainer, workers: int, engine: str = "local", tracker=None, mixes_per_epoch: int = 1):
    """`trainer` mixed over `workers` shards when it is of the perceptron family and
    workers > 1; otherwise `trainer` itself (serial training), with a message when
    workers > 1 asked for more."""
    if workers <= 1:
        return trainer
    if not mixable(trainer):
        if tracker is not None:
            name = getattr(trainer, "name", type(trainer).__name__)
            tracker.message(
                f"training.workers = {workers}: the {name} trainer trains serially (parameter mixing is "
                "implemented for the perceptron family only: EG's dual state splits by shard, but w(alpha) "
                "sums over all sentences, so shards would have to exchange their changes of w)")
        return trainer
    return ParameterMixing(trainer, workers, engine, mixes_per_epoch)


class ParameterMixing(Trainer):
    """A perceptron-family trainer whose epochs run as K shards mixed by averaging (see the
    module docstring); it offers the same Trainer interface as the trainer it wraps."""

    def __init__(self, trainer: SWVP, workers: int, engine: str = "local", mixes_per_epoch: int = 1):
        if not mixable(trainer):
            raise ValueError(f"parameter mixing trains the perceptron family, not {type(trainer).__name__}")
        if not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be a positive integer, got {workers!r}")
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
        if not isinstance(mixes_per_epoch, int) or isinstance(mixes_per_epoch, bool) or mixes_per_epoch < 1:
            raise ValueError(f"mixes_per_epoch must be a positive integer, got {mixes_per_epoch!r}")
        self.trainer = trainer
        self.workers = workers
        self.mixes_per_epoch = mixes_per_epoch
        self.engine_name = engine
        self.engine = None
        self.columns = trainer.columns
        self.name = trainer.name
        self._positions: np.ndarray | None = None
        self.mix_weight: float | None = None  # None: the uniform mixture 1/K (see `mix`)

    # -- the Trainer interface ---------------------------------------------------------
    def begin(self, structure, examples: list, hash_bits: int) -> None:
        self.trainer.begin(structure, examples, hash_bits)
        self._positions = None

    def restore(self, structure, examples: list, arrays: dict, meta: dict) -> None:
        recorded = meta.get("workers", 1)
        if recorded != self.workers:
            raise ValueError(f"the checkpoint was trained with {recorded} worker(s) (shards mixed per epoch), "
                             f"this run has {self.workers}; resume with training.workers = {recorded}")
        mixes = meta.get("mixes_per_epoch", 1)
        if mixes != self.mixes_per_epoch:
            raise ValueError(f"the checkpoint was trained with {mixes} mix(es) per epoch, this run has "
                             f"{self.mixes_per_epoch}; resume with training.mixes_per_epoch = {mixes}")
        self.trainer.restore(structure, examples, arrays, meta)
        self._positions = None

    def state(self) -> tuple[dict, dict]:
        arrays, meta = self.trainer.state()
        return arrays, {**meta, "workers": self.workers, "mixes_per_epoch": self.mixes_per_epoch}

    def settings(self) -> dict:
        return self.trainer.settings()

    def finish_epoch(self, metrics: dict) -> bool:
        return self.trainer.finish_epoch(metrics)

    def prediction_weights(self) -> Weights:
        return self.trainer.prediction_weights()

    def setup_report(self) -> dict:
        return self.trainer.setup_report()

    def tables(self) -> dict:
        return self.trainer.tables()

    def epoch(self, structure, examples: list, tracker=None) -> dict:
        """One mixed epoch: the epoch's order cut into `mixes_per_epoch` consecutive rounds;
        each round, K shards of it from the mixed weights, then their mix (W, U and the
        clock T as after an epoch of the module docstring, with the round's examples)."""
        inner = self.trainer
        start = time.perf_counter()
        order = inner.rng.permutation(len(examples)) if inner.shuffle else np.arange(len(examples))
        if self._positions is None:
            self._positions = np.array([structure.hits(x, g, g)[1] for x in examples
                                        for g in (structure.gold(x),)], dtype=np.float64)
        if self.engine is None:
            self.engine = make_engine(self.engine_name, self.workers, tracker)
        correct = positions = mix_seconds = shard_seconds = shard_cpu = 0.0
        updates = backoffs = 0
        for part in np.array_split(order, min(self.mixes_per_epoch, max(len(order), 1))):
            shards = [part[k::self.workers] for k in range(self.workers)]
            results = self.engine.run(inner, structure, examples, inner.weights, shards, tracker)
            mix_start = time.perf_counter()
            mix(inner.weights, [r.sparse() for r in results], self.mix_weight)
            mix_seconds += time.perf_counter() - mix_start
            for r, s in zip(results, shards):
                p = float(self._positions[s].sum())
                correct += r.metrics["train_accuracy"] * p
                positions += p
            updates += sum(r.metrics.get("updates", 0) for r in results)
            backoffs += sum(r.metrics.get("backoffs", 0) for r in results)
            shard_seconds += max(r.metrics.get("epoch_seconds", 0.0) for r in results)
            shard_cpu += max(r.metrics.get("cpu_seconds", 0.0) for r in results)
            for r in results:
                r.release()
        seconds = time.perf_counter() - start
        # Each shard ran an epoch on a copy of the trainer: an epoch-scheduled setting (a
        # MarginPerceptron's margin_epochs) advances on the trainer itself, once per mixed epoch.
        if hasattr(inner, "epochs_done"):
            inner.epochs_done += 1
        return {
            **({"margin": results[0].metrics["margin"]} if "margin" in results[0].metrics else {}),
            "train_accuracy": correct / max(positions, 1.0),
            "updates": updates,
            "backoffs": backoffs,
            "epoch_seconds": seconds,
            "examples_per_second": len(order) / max(seconds, 1e-9),
            "shard_seconds_max": shard_seconds,  # summed over the rounds: the slowest shard of each
            "shard_cpu_seconds_max": shard_cpu,
            "mix_seconds": mix_seconds,
        }

    def close(self) -> None:
        """Stop the engine's workers (Ray actors) and free its shared memory."""
        if self.engine is not None:
            self.engine.close()
            self.engine = None


def mix(weights: Weights, shards: list[tuple[np.ndarray, np.ndarray, np.ndarray | None, float]],
        weight: float | None = None) -> None:
    """Mix in place: `weights` holds W^{n-1} (and U_{n-1}, T_{n-1}); `shards` are each
    shard's (indices, D_k, u_k, m_k), D_k and u_k at the indices where either is not zero
    (elsewhere both are). Leaves W^n, U_n and T_n (module docstring), shard by shard:

        W += D_k / K,    U += u_k + (T_n / K - m_k) D_k

    Only the weights some shard changed are read or written. `weight` (default 1/K, the
    uniform mixture) replaces 1/K: W += weight D_k, U += u_k + (weight T_n - m_k) D_k keeps
    the same exact average for any weight (an experiment: weight 1 sums the shards' changes,
    outside McDonald et al.'s convex mixtures)."""
    k = len(shards)
    total = weights.step + sum(m for _, _, _, m in shards)
    for idx, delta, accumulator, steps in shards:
        if weights.averaged:
            u = weights.accumulator
            u[idx] += accumulator
            u[idx] += ((total / k if weight is None else total * weight) - steps) * delta
        weights.array[idx] += delta / k if weight is None else delta * weight
    weights.step = total


class ShardResult:
    """What one shard hands back: the indices where D_k or u_k is not zero, D_k and u_k
    there (u_k None without averaging), m_k and its metrics."""

    def __init__(self, indices, delta, accumulator, steps: float, metrics: dict):
        self.indices, self.delta, self.accumulator, self.steps, self.metrics = indices, delta, accumulator, steps, metrics

    def sparse(self) -> tuple:
        return self.indices, self.delta, self.accumulator, self.steps

    def release(self) -> None:
        self.indices = self.delta = self.accumulator = None


def run_shard(trainer: SWVP, structure, examples: list, start: np.ndarray, indices, tracker=None, out=None):
    """One shard's epoch from the weights `start`, over examples[indices] in that order:
    (indices where D_k or u_k is not zero, D_k and u_k there, m_k, metrics); with `out`
    (three flat buffers), the three arrays are written to their starts instead, and their
    length is returned in place of the indices."""
    shard = copy.copy(trainer)  # the same settings; its own weights, and no shuffling (the order is given)
    shard.shuffle = False
    shard.weights = Weights(int(start.size).bit_length() - 1, trainer.averaged, np.array(start, dtype=np.float64))
    cpu = time.process_time()
    metrics = shard.epoch(structure, [examples[i] for i in indices], tracker)
    metrics["cpu_seconds"] = time.process_time() - cpu  # vs its epoch_seconds: how much of a core it had
    w = shard.weights
    changed = w.array != start
    if w.averaged:
        changed |= w.accumulator != 0.0
    touched = np.flatnonzero(changed)
    del changed
    if out is None:
        delta = w.array[touched] - start[touched]
        return touched, delta, w.accumulator[touched] if w.averaged else None, float(w.step), metrics
    n = touched.size
    index_out, delta_out, acc_out = out
    index_out[:n] = touched
    np.subtract(w.array[touched], start[touched], out=delta_out[:n])
    if w.averaged:
        acc_out[:n] = w.accumulator[touched]
    return n, None, None, float(w.step), metrics


class _Scaled:
    """The progress of shard 0, counted for all K shards (they run at about the same pace)."""

    def __init__(self, tracker, k: int):
        self.tracker, self.k = tracker, k

    def advance(self, n: int = 1, train_accuracy: float | None = None) -> None:
        self.tracker.advance(n * self.k, train_accuracy=train_accuracy)


def make_engine(name: str, workers: int, tracker=None):
    if name == "ray":
        return RayShards(workers)
    if "fork" not in multiprocessing.get_all_start_methods():
        if tracker is not None:
            tracker.message("no fork() on this platform: the shards run one after another in this process")
        return SerialShards()
    return LocalShards(workers)


class SerialShards:
    """The shards one after another in this process (the reference; same result)."""

    def run(self, trainer, structure, examples, weights: Weights, shards, tracker=None) -> list[ShardResult]:
        out = []
        for indices in shards:
            out.append(ShardResult(*run_shard(trainer, structure, examples, weights.array, indices)))
            if tracker is not None:
                tracker.advance(len(indices))
        return out

    def close(self) -> None:
        pass


_SHARD_JOB = None  # what the forked shard processes inherit: (trainer, structure, examples, start, shards, buffers)


def _forked_shard(k: int) -> tuple[int, float, dict]:
    trainer, structure, examples, start, shards, buffers = _SHARD_JOB
    n, _, _, steps, metrics = run_shard(trainer, structure, examples, start, shards[k], None, buffers[k - 1])
    return n, steps, metrics


class LocalShards:
    """Shard 0 in this process, shards 1..K-1 in processes forked for the epoch: they see the
    examples and W^{n-1} copy-on-write, and write their changed indices, D_k and u_k into
    anonymous shared memory (nothing large is pickled; untouched pages cost nothing)."""

    def __init__(self, workers: int):
        self.workers = workers
        self._maps: list[mmap.mmap] = []
        self._buffers: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def _buffers_for(self, size: int):
        if self._buffers and self._buffers[0][0].size == size:
            return self._buffers
        self.close()
        for _ in range(self.workers - 1):
            parts = []
            for dtype in (np.int64, np.float64, np.float64):
                m = mmap.mmap(-1, size * 8)  # MAP_SHARED | MAP_ANONYMOUS: shared with forked children
                self._maps.append(m)
                parts.append(np.frombuffer(m, dtype=dtype))
            self._buffers.append(tuple(parts))
        return self._buffers

    def run(self, trainer, structure, examples, weights: Weights, shards, tracker=None) -> list[ShardResult]:
        global _SHARD_JOB
        buffers = self._buffers_for(weights.array.size)
        _SHARD_JOB = (trainer, structure, examples, weights.array, shards, buffers)
        try:
            with multiprocessing.get_context("fork").Pool(self.workers - 1) as pool:
                pending = pool.map_async(_forked_shard, range(1, self.workers), chunksize=1)
                first = run_shard(trainer, structure, examples, weights.array, shards[0],
                                  _Scaled(tracker, self.workers) if tracker is not None else None)
                rest = pending.get()
        finally:
            _SHARD_JOB = None
        out = [ShardResult(*first)]
        for (index, delta, acc), (n, steps, metrics) in zip(buffers, rest):
            out.append(ShardResult(index[:n], delta[:n], acc[:n] if weights.averaged else None, steps, metrics))
        return out

    def close(self) -> None:
        self._buffers = []
        for m in self._maps:
            try:
                m.close()
            except BufferError:  # a view is still alive; the map goes with it
                pass
        self._maps = []


def connect_ray(workers: int):
    """Ray, initialized if it is not: the cluster at RAY_ADDRESS when that is set, else a
    local one with `workers` CPUs (`ray.init(num_cpus=workers)`)."""
    try:
        import ray
    except ImportError as e:
        raise ValueError(f'training.engine = "ray" needs Ray: pip install "arborist[ray]" ({e})') from None

    if not ray.is_initialized():
        address = os.environ.get("RAY_ADDRESS") or None
        ray.init(address=address, num_cpus=None if address else workers, include_dashboard=False,
                 log_to_driver=False, configure_logging=False)
    return ray


class _ShardActor:
    """A Ray actor that holds the training examples and runs shards on request."""

    def __init__(self, trainer, structure, examples):
        self.trainer, self.structure, self.examples = trainer, structure, examples

    def run(self, start: np.ndarray, indices: np.ndarray, epochs_done: int | None = None):
        # The actor's trainer is the first epoch's copy: an epoch-scheduled setting (a
        # MarginPerceptron's margin_epochs) follows the driver's count, sent with each run.
        if epochs_done is not None:
            self.trainer.epochs_done = epochs_done
        return run_shard(self.trainer, self.structure, self.examples, start, indices)


class RayShards:
    """The K shards as K Ray actors (one CPU each), created on the first epoch with the
    examples (put once in the object store); each epoch W^{n-1} goes out once through
    the object store, and D_k and u_k come back through it (at the changed indices only)."""

    def __init__(self, workers: int):
        self.workers = workers
        self.ray = connect_ray(workers)
        self.actors = None
        self._key = None

    def run(self, trainer, structure, examples, weights: Weights, shards, tracker=None) -> list[ShardResult]:
        ray = self.ray
        key = (id(structure), id(examples), len(examples))
        if self.actors is None or self._key != key:
            self.close()
            template = copy.copy(trainer)
            template.weights = None
            actor = ray.remote(num_cpus=1)(_ShardActor)
            refs = ray.put(template), ray.put(structure), ray.put(examples)
            self.actors = [actor.remote(*refs) for _ in range(self.workers)]
            self._key = key
        start = ray.put(weights.array)
        epochs_done = getattr(trainer, "epochs_done", None)
        results = ray.get([a.run.remote(start, s, epochs_done) for a, s in zip(self.actors, shards)])
        del start
        if tracker is not None:
            tracker.advance(sum(len(s) for s in shards))
        return [ShardResult(*r) for r in results]

    def close(self) -> None:
        if self.actors:
            for a in self.actors:
                self.ray.kill(a)
        self.actors = None
        self._key = None
