"""confection registries: the functions a .cfg file may name with '@'."""
from __future__ import annotations

import catalogue
import confection


class registry(confection.registry):
    structures = catalogue.create("arborist", "structures", entry_points=False)
    trainers = catalogue.create("arborist", "trainers", entry_points=False)


@registry.structures("arborist.DependencyTree.v1")
def dependency_tree(hash_bits: int = 22, single_root: bool = True, templates: list[str] | None = None):
    from .parser.features import DEFAULT_TEMPLATES
    from .parser.tree import DependencyTree

    return DependencyTree(templates or DEFAULT_TEMPLATES, hash_bits=hash_bits, single_root=single_root)


@registry.trainers("arborist.Perceptron.v1")
def perceptron(averaged: bool = True, shuffle: bool = True, seed: int = 0):
    from .learn.perceptron import Perceptron

    return Perceptron(averaged=averaged, shuffle=shuffle, seed=seed)


@registry.trainers("arborist.EG.v1")
def exponentiated_gradient(
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
    anneal_tolerance: float = 0.001,
    C_min: float = 0.0,
    seed: int = 0,
):
    from .learn.eg import EG

    return EG(objective=objective, C=C, schedule=schedule, eta=eta, eta_search_fraction=eta_search_fraction,
              eta_search_share=eta_search_share, eta_growth=eta_growth, max_halvings=max_halvings,
              objectives_every=objectives_every, anneal=anneal, anneal_factor=anneal_factor,
              anneal_tolerance=anneal_tolerance, C_min=C_min, seed=seed)
