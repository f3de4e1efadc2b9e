"""Training progress: one interface for trainers and `arborist train`.

Trainers never print; they call `advance` within an epoch, and the training
driver calls `start_component`, `start_epoch`, `end_epoch` with the epoch's
metrics, `log` for other rows (one per C value of C-annealing), `summary`,
`log_model` and `close`. Two backends, which run together through `Trackers`:

- `ConsoleTracker`: a progress bar (items/s, ETA, running training accuracy)
  and a table row per epoch;
- `WandbTracker`: a Weights & Biases run (project, entity, name, tags and the
  full resolved config), online when credentials are configured and offline
  otherwise, its history keyed "COMPONENT/metric", the best model as an artifact.

`trackers_for(settings, ...)` builds them from a config's [tracking] section.
"""
from __future__ import annotations

import netrc
import os
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


class ConsoleTracker:
    def __init__(self, console: Console | None = None, columns: tuple[str, ...] = ()):
        self.console = console or Console(stderr=True)
        self.columns = columns
        self._progress: Progress | None = None
        self._task = None
        self._header_done = False

    def start_component(self, name: str, columns: tuple[str, ...]) -> None:
        """A new component starts training: its name, and the metrics its table shows."""
        self.columns = columns
        self._header_done = False
        self.console.rule(name)

    def start_epoch(self, epoch: int, total: int) -> None:
        if self._progress is None:
            self._progress = Progress(
                TextColumn("epoch {task.fields[epoch]}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"),
                TextColumn("{task.fields[acc]}"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self._progress.start()
        self._task = self._progress.add_task("train", total=total, epoch=epoch, rate="", acc="")

    def advance(self, n: int = 1, train_accuracy: float | None = None) -> None:
        if self._progress is None or self._task is None:
            return
        speed = self._progress.tasks[-1].speed or 0.0
        acc = f"train acc {100 * train_accuracy:5.2f}" if train_accuracy is not None else ""
        self._progress.update(self._task, advance=n, rate=f"{speed:7.0f} sent/s", acc=acc)

    def end_epoch(self, epoch: int, metrics: dict) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.remove_task(self._task)
            self._task = None
        keys = [k for k in self.columns if k in metrics] or list(metrics)
        if not self._header_done:
            self.console.print("  ".join(f"{k:>14}" for k in ["epoch"] + keys))
            self._header_done = True
        cells = [f"{epoch:>14}"] + [f"{_fmt(metrics[k]):>14}" for k in keys]
        self.console.print("  ".join(cells))

    def message(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False)  # "[nlp] lang" is text, not Rich markup

    def log(self, metrics: dict) -> None:
        """Rows besides the epoch table (C-annealing): the console prints its table at the end."""

    def summary(self, values: dict) -> None:
        pass

    def log_model(self, path, name: str) -> None:
        pass

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.2f}" if abs(value) >= 0.01 or value == 0 else f"{value:.4f}"
    return str(value)


TRACKING_DEFAULTS = {"wandb": True, "project": "arborist", "entity": None, "name": None, "tags": [], "mode": None}


def has_wandb_credentials() -> bool:
    """Whether W&B can go online: an API key in WANDB_API_KEY or in ~/.netrc for its host."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    host = os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai").split("://")[-1].split("/")[0]
    try:
        return netrc.netrc().authenticators(host) is not None
    except (OSError, netrc.NetrcParseError):
        return False


class WandbTracker:
    """One W&B run for a whole `arborist train`: every component's epochs in its history."""

    def __init__(self, config: dict, project: str = "arborist", entity: str | None = None, name: str | None = None,
                 tags=(), mode: str | None = None, directory: str | os.PathLike | None = None,
                 run_id: str | None = None):
        import wandb

        # An explicit mode wins, then the user's WANDB_MODE; otherwise online only with credentials.
        mode = mode or os.environ.get("WANDB_MODE") or ("online" if has_wandb_credentials() else "offline")
        if directory is not None:
            Path(directory).mkdir(parents=True, exist_ok=True)
        self.run = wandb.init(
            project=project, entity=entity, name=name, tags=list(tags or []), config=config, mode=mode,
            dir=str(directory) if directory is not None else None, id=run_id,
            resume="allow" if run_id else None,
            settings=wandb.Settings(silent=True, console="off"),
        )
        self.component = ""

    @property
    def run_id(self) -> str:
        return self.run.id

    @property
    def run_dir(self) -> Path:
        """The run's local directory (the offline history lives in its run-*.wandb file)."""
        return Path(self.run.dir).parent

    def start_component(self, name: str, columns: tuple[str, ...]) -> None:
        self.component = name

    def start_epoch(self, epoch: int, total: int) -> None:
        pass

    def advance(self, n: int = 1, train_accuracy: float | None = None) -> None:
        pass  # per-sentence progress is the console's; W&B gets one row per epoch

    def end_epoch(self, epoch: int, metrics: dict) -> None:
        self.log({"epoch": epoch, **metrics})

    def log(self, metrics: dict) -> None:
        row = {f"{self.component}/{k}": v for k, v in metrics.items()
               if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if row:
            self.run.log(row)

    def message(self, text: str) -> None:
        pass

    def summary(self, values: dict) -> None:
        self.run.summary.update(values)

    def log_model(self, path, name: str) -> None:
        import wandb

        artifact = wandb.Artifact(name, type="model")
        artifact.add_dir(str(path))
        self.run.log_artifact(artifact)

    def close(self) -> None:
        import wandb

        self.run.finish()
        # finish() can return before wandb-core has written the run's transaction log
        # (seen on a loaded machine: the offline .wandb file still held only its header);
        # tearing the service down waits for it, so the run directory is complete when
        # `train` returns, not only when the process exits. A later run starts a new one.
        wandb.teardown()


class Trackers:
    """Several trackers as one (the console and W&B)."""

    def __init__(self, *trackers):
        self.trackers = [t for t in trackers if t is not None]

    @property
    def run_id(self) -> str | None:
        return next((t.run_id for t in self.trackers if hasattr(t, "run_id")), None)

    def _each(self, method: str, *args) -> None:
        for tracker in self.trackers:
            fn = getattr(tracker, method, None)
            if fn is not None:
                fn(*args)

    def start_component(self, name, columns):
        self._each("start_component", name, columns)

    def start_epoch(self, epoch, total):
        self._each("start_epoch", epoch, total)

    def advance(self, n=1, train_accuracy=None):
        for tracker in self.trackers:
            tracker.advance(n, train_accuracy=train_accuracy)

    def end_epoch(self, epoch, metrics):
        self._each("end_epoch", epoch, metrics)

    def log(self, metrics):
        self._each("log", metrics)

    def message(self, text):
        self._each("message", text)

    def summary(self, values):
        self._each("summary", values)

    def log_model(self, path, name):
        self._each("log_model", path, name)

    def close(self):
        self._each("close")


def tracking_settings(config) -> dict:
    """The config's [tracking] section over TRACKING_DEFAULTS; unknown keys are an error."""
    section = dict(config.get("tracking", {}) or {})
    unknown = sorted(set(section) - set(TRACKING_DEFAULTS))
    if unknown:
        raise ValueError(f"unknown [tracking] setting(s): {', '.join(unknown)}; known: {', '.join(TRACKING_DEFAULTS)}")
    settings = {**TRACKING_DEFAULTS, **section}
    if settings["mode"] not in (None, "online", "offline", "disabled"):
        raise ValueError(f'tracking.mode must be "online", "offline", "disabled" or null, got {settings["mode"]!r}')
    return settings


def trackers_for(config, output=None, use_wandb: bool = True, run_id: str | None = None) -> Trackers:
    """The console, and W&B unless --no-wandb or [tracking] wandb = false; the W&B run's
    files go into OUTPUT/wandb, and `run_id` continues an earlier run (--resume)."""
    settings = tracking_settings(config)
    console = ConsoleTracker()
    if not (use_wandb and settings["wandb"]):
        return Trackers(console)
    wandb_tracker = WandbTracker(
        config=config.interpolate() if hasattr(config, "interpolate") else dict(config),
        project=settings["project"], entity=settings["entity"], name=settings["name"], tags=settings["tags"],
        mode=settings["mode"], directory=Path(output) if output is not None else None, run_id=run_id)
    return Trackers(console, wandb_tracker)
