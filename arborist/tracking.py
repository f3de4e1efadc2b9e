"""Training progress: one interface for trainers and `arborist train`.

Trainers never print; they call `advance` within an epoch, and the training
driver calls `end_epoch` with the epoch's metrics. The console backend shows a
progress bar (items/s, ETA, running training accuracy) and a table row per epoch.
"""
from __future__ import annotations

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
        self.console.print(text)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.2f}" if abs(value) >= 0.01 or value == 0 else f"{value:.4f}"
    return str(value)
