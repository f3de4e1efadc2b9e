"""A silent tracker for tests that run the training driver."""
from __future__ import annotations


class Quiet:
    """A tracker that prints nothing, records the components it is told about, and can
    interrupt training part-way through an epoch of a component or at a message."""

    def __init__(self, interrupt_at: tuple[str, int, int] | None = None, interrupt_on: str | None = None):
        self.interrupt_at = interrupt_at
        self.interrupt_on = interrupt_on
        self.components: list[str] = []
        self.columns: tuple[str, ...] = ()
        self.messages: list[str] = []
        self.logged: list[dict] = []
        self.summaries: list[dict] = []
        self.models: list = []
        self.component, self.epoch, self.seen = None, 0, 0

    def start_component(self, name, columns):
        self.components.append(name)
        self.component = name
        self.columns = columns

    def start_epoch(self, epoch, total):
        self.epoch, self.seen = epoch, 0

    def advance(self, n=1, **kwargs):
        self.seen += n
        if self.interrupt_at == (self.component, self.epoch, self.seen):
            raise KeyboardInterrupt

    def end_epoch(self, epoch, metrics):
        pass

    def message(self, text):
        self.messages.append(text)
        if self.interrupt_on is not None and self.interrupt_on in text:
            raise KeyboardInterrupt

    def log(self, metrics):
        self.logged.append(metrics)

    def summary(self, values):
        self.summaries.append(values)

    def log_model(self, path, name):
        self.models.append((path, name))

    def close(self):
        pass
