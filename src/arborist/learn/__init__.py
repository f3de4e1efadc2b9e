"""Trainers. Each sees structures only through the Structure protocol and offers
the same small interface to the training driver (`arborist.train`):

    begin(structure, examples, hash_bits)    fresh state (EG: theta_i = 0, w(alpha), eta_ini)
    epoch(structure, examples, tracker) -> metrics
    finish_epoch(metrics) -> stop?           after dev evaluation (EG: C-annealing)
    prediction_weights() -> Weights          what the model predicts with
    state() -> (arrays, meta)                everything needed to resume exactly
    restore(structure, examples, arrays, meta)
    columns                                  the metrics the console shows per epoch

and two optional outputs, with empty defaults here, that the driver reports when a
trainer has them:

    setup_report() -> dict                   what begin() decided (EG: the searched eta_ini)
    tables() -> {name: [row, ...]}           tables that grow during training, one row per
                                             finished stage (EG: "annealing", one row per C
                                             value; MaxEnDNet: "outer", per outer iteration)

Trainers subclass `Trainer` to inherit those defaults.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class Trainer(Protocol):
    columns: tuple[str, ...] = ()

    def begin(self, structure, examples: list, hash_bits: int) -> None: ...

    def epoch(self, structure, examples: list, tracker=None) -> dict: ...

    def finish_epoch(self, metrics: dict) -> bool: ...

    def prediction_weights(self): ...

    def state(self) -> tuple[dict, dict]: ...

    def restore(self, structure, examples: list, arrays: dict, meta: dict) -> None: ...

    def setup_report(self) -> dict:
        return {}

    def tables(self) -> dict[str, list[dict]]:
        return {}
