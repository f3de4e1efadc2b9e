"""confection registries: the functions a .cfg file may name with '@'."""
from __future__ import annotations

import catalogue
import confection


class registry(confection.registry):
    structures = catalogue.create("arborist", "structures", entry_points=False)
    trainers = catalogue.create("arborist", "trainers", entry_points=False)


@registry.structures("arborist.DependencyTree.v1")
def dependency_tree(hash_bits: int = 22, single_root: bool = True, templates: list[str] | None = None,
                    projective: bool | str = "auto"):
    """A parser's structure. projective: true (Eisner), false (Chu-Liu-Edmonds and the
    matrix-tree theorem) or "auto" (the default: non-projective when the training treebank
    has at least `tree.AUTO_NONPROJECTIVE_SHARE` non-projective sentences)."""
    from .parser.features import DEFAULT_TEMPLATES
    from .parser.tree import DependencyTree

    return DependencyTree(templates or DEFAULT_TEMPLATES, hash_bits=hash_bits, single_root=single_root,
                          projective=projective)


@registry.structures("arborist.LinearChain.v1")
def linear_chain(attribute: str = "upos", order: int = 1, hash_bits: int = 22, tags: list[str] | None = None,
                 templates: list[str] | None = None):
    """A tagger's structure; without `tags`, the tag set is read from the training data; without
    `templates`, the emission templates are `arborist.tagger.features.EMISSION_TEMPLATES`."""
    from .tagger.chain import LinearChain

    return LinearChain(tags, attribute=attribute, order=order, hash_bits=hash_bits, templates=templates)


@registry.structures("arborist.ArcLabels.v1")
def arc_labels(hash_bits: int = 22, labels: list[str] | None = None, templates: list[str] | None = None):
    """A labeler's structure: the DEPREL of each arc of the parser's tree. Without `labels`,
    the label set (full DEPREL strings, subtypes included) is read from the training data;
    without `templates`, the templates are `arborist.parser.label_features.DEFAULT_LABEL_TEMPLATES`."""
    from .parser.labels import ArcLabels

    return ArcLabels(labels, hash_bits=hash_bits, templates=templates)


# Trainers register their classes: the constructor's signature is the config
# schema, so defaults and validation live in one place.
from .learn.baselines import SGD  # noqa: E402
from .learn.eg import EG  # noqa: E402
from .learn.medn import MaxEnDNet  # noqa: E402
from .learn.perceptron import SWVP, Perceptron  # noqa: E402

registry.trainers("arborist.Perceptron.v1", func=Perceptron)
registry.trainers("arborist.SWVP.v1", func=SWVP)
registry.trainers("arborist.EG.v1", func=EG)
registry.trainers("arborist.SGD.v1", func=SGD)
registry.trainers("arborist.MaxEnDNet.v1", func=MaxEnDNet)
