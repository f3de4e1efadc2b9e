"""confection registries: the functions a .cfg file may name with '@', and the component kinds.

    structures   "@structures" in a config: a structure's registry call (its arguments are
                 the structure's whole schema; a saved model stores the call with what was
                 learned, and loading resolves it here)
    trainers     "@trainers"
    components   component kinds, by the name `[components.NAME] kind` gives (or the kind
                 registered for the component's structure): classes deriving from
                 `arborist.component.Component`

Each registry also reads the entry points of its group (`arborist_structures`,
`arborist_trainers`, `arborist_components`), so a structure, trainer or component kind
can live in another package: declare it in that package's entry points and every
command of arborist finds it (see the README, "Adding a component kind").
"""
from __future__ import annotations

import catalogue
import confection
from confection import Config


class registry(confection.registry):
    structures = catalogue.create("arborist", "structures", entry_points=True)
    trainers = catalogue.create("arborist", "trainers", entry_points=True)
    components = catalogue.create("arborist", "components", entry_points=True)


def make_structure(call: dict):
    """The structure of a registry call ({"@structures": name, **arguments}), validated
    against the registered function's signature."""
    return registry.resolve(Config({"structure": call}), validate=True)["structure"]


def _templates(templates, default):
    """A structure's feature templates: the default set when none are given; an empty list is
    an error (a model whose features are all gone scores nothing)."""
    if templates is None:
        return default
    if not templates:
        raise ValueError("templates must not be an empty list (leave it out for the default set)")
    return templates


def component_kind(name: str) -> type:
    """The component class registered as `name` (its `kind` is that name)."""
    cls = registry.components.get(name)
    if not cls.kind:
        cls.kind = name
    return cls


def kind_for_structure(structure_name: str) -> str | None:
    """The kind registered for a structure's registry name (a config without `kind`)."""
    for name, cls in registry.components.get_all().items():
        if structure_name in getattr(cls, "structures", ()) and not getattr(cls, "intermediate", False):
            return name
    return None


@registry.structures("arborist.DependencyTree.v2")
def dependency_tree_v2(hash_bits: int = 22, single_root: bool = True, templates: list[str] | None = None,
                       projective: bool | str = "auto", order: int = 1, parts: list[str] | None = None,
                       sibling_templates: list[str] | None = None, grandparent_templates: list[str] | None = None,
                       prune_distances: bool = False, max_distances: dict | None = None,
                       distance_features: str = "coarse", lift_nonprojective: bool = False):
    """A parser's structure. projective: true (Eisner), false (Chu-Liu-Edmonds and the
    matrix-tree theorem) or "auto" (the default: non-projective when the training treebank
    has at least `tree.AUTO_NONPROJECTIVE_SHARE` non-projective sentences).

    order = 2 adds second-order parts (exact decoding is projective; projective = false
    decodes approximately by hill climbing from the projective tree): `parts` is a list of "sibling",
    "grandparent" and "stop" (default the first two; stop parts, a head's outermost child on
    a side or none, take the sibling templates), with their templates (defaults in
    `arborist.parser.part_features`); a pipeline's pruner (`arborist.Pruner.v1`) decides
    which arcs they may use.

    prune_distances = true (first order), TurboParser's distance pruning: when parsing, an
    arc longer than the longest training arc of its (head UPOS, modifier UPOS, direction) is
    not scored (about 40% of en_ewt's arcs); training scores every arc. `max_distances` is
    that table, which training learns and the saved model holds.

    distance_features: how each arc feature is conjoined with the arc's direction and
    distance (`arborist.parser.features`): "coarse" (7 codes, in the plain feature's cache
    line: faster and, on en_ewt, more accurate) or "fine" (11 bins a direction, hashed
    anywhere; v1's only layout, which models saved as v1 keep).

    lift_nonprojective = true: a projective parser trains on the lift of each non-projective
    training tree (its crossing arcs moved up to ancestors, `tree.lift_to_projective`), a
    tree it can predict, instead of the tree itself (README, "EG on the CRF and M3N duals")."""
    from .parser.features import DEFAULT_TEMPLATES
    from .parser.tree import DependencyTree

    if order == 1:
        if parts or sibling_templates or grandparent_templates:
            raise ValueError("parts, sibling_templates and grandparent_templates need order = 2")
        return DependencyTree(_templates(templates, DEFAULT_TEMPLATES), hash_bits=hash_bits, single_root=single_root,
                              projective=projective, prune_distances=prune_distances, max_distances=max_distances,
                              distance_features=distance_features, lift_nonprojective=lift_nonprojective)
    if prune_distances or max_distances is not None:
        raise ValueError("prune_distances is for first-order parsers: a second-order parser has its pruner")
    if order != 2:
        raise ValueError(f"order must be 1 or 2, got {order!r}")
    from .parser.part_features import DEFAULT_GRANDPARENT_TEMPLATES, DEFAULT_SIBLING_TEMPLATES
    from .parser.second_order import DEFAULT_PARTS, SecondOrderTree

    return SecondOrderTree(_templates(templates, DEFAULT_TEMPLATES), hash_bits=hash_bits, single_root=single_root,
                           projective=projective, parts=parts or DEFAULT_PARTS,
                           sibling_templates=sibling_templates or DEFAULT_SIBLING_TEMPLATES,
                           grandparent_templates=grandparent_templates or DEFAULT_GRANDPARENT_TEMPLATES,
                           distance_features=distance_features, lift_nonprojective=lift_nonprojective)


@registry.structures("arborist.DependencyTree.v1")
def dependency_tree(hash_bits: int = 22, single_root: bool = True, templates: list[str] | None = None,
                    projective: bool | str = "auto", order: int = 1, parts: list[str] | None = None,
                    sibling_templates: list[str] | None = None, grandparent_templates: list[str] | None = None,
                    prune_distances: bool = False, max_distances: dict | None = None,
                    lift_nonprojective: bool = False):
    """`arborist.DependencyTree.v2` with distance_features = "fine": the layout of every
    model saved before v2 (and of the configs that name v1)."""
    return dependency_tree_v2(hash_bits, single_root, templates, projective, order, parts, sibling_templates,
                              grandparent_templates, prune_distances, max_distances, distance_features="fine",
                              lift_nonprojective=lift_nonprojective)


@registry.structures("arborist.Pruner.v1")
def pruner(hash_bits: int = 22, single_root: bool = True, templates: list[str] | None = None,
           threshold: float = 1e-4, max_heads: int = 10, projective: bool | str = True):
    """A first-order model whose arc marginals prune a second-order parser's arcs: per
    word, the heads with marginal >= threshold x the best head's, at most max_heads,
    plus its own best projective tree's arcs. projective = false (or "auto", decided
    by the training trees) takes matrix-tree marginals and adds its best non-projective
    tree's arcs: for a parser with projective = false. Without `templates`,
    `arborist.parser.second_order.PRUNER_TEMPLATES`."""
    from .parser.second_order import PRUNER_TEMPLATES, ArcPruner

    return ArcPruner(_templates(templates, PRUNER_TEMPLATES), hash_bits=hash_bits, single_root=single_root,
                     threshold=threshold, max_heads=max_heads, projective=projective)


@registry.structures("arborist.LinearChain.v1")
def linear_chain(attribute: str = "upos", order: int = 1, hash_bits: int = 22, tags: list[str] | None = None,
                 templates: list[str] | None = None, missing_tag: bool = False, candidates_from: str | None = None,
                 candidates: dict | None = None, dictionary_min_count: int = 0):
    """A tagger's structure; without `tags`, the tag set is read from the training data; without
    `templates`, the emission templates are `arborist.tagger.features.EMISSION_TEMPLATES`.
    `candidates_from = "upos"` (XPOS, order 1): when tagging, a word may only take the XPOS
    tags seen with its UPOS in training (`candidates`, learned by training).
    `dictionary_min_count = N > 0` (order 1): when tagging, a lowercase form seen N times or
    more in training may only take the tags seen with it (the table is saved beside the weights)."""
    from .tagger.chain import LinearChain

    return LinearChain(tags, attribute=attribute, order=order, hash_bits=hash_bits,
                       templates=None if templates is None else _templates(templates, None), missing_tag=missing_tag,
                       candidates_from=candidates_from, candidates=candidates,
                       dictionary_min_count=dictionary_min_count)


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
from .learn.perceptron import MarginPerceptron  # noqa: E402

registry.trainers("arborist.Perceptron.v1", func=Perceptron)
registry.trainers("arborist.SWVP.v1", func=SWVP)
registry.trainers("arborist.EG.v1", func=EG)
registry.trainers("arborist.SGD.v1", func=SGD)
registry.trainers("arborist.MaxEnDNet.v1", func=MaxEnDNet)
registry.trainers("arborist.MarginPerceptron.v1", func=MarginPerceptron)


@registry.structures("arborist.Multiclass.v1")
def multiclass(classes: list[str], hash_bits: int = 18):
    """One class out of K per example (a word's MISC value, say): `arborist.multiclass`."""
    from .multiclass import Multiclass

    return Multiclass(classes, hash_bits=hash_bits)


@registry.structures("arborist.Ranking.v1")
def ranking(hash_bits: int = 18):
    """One candidate per item, each candidate with its own features (the multiword
    expander's classifier): `arborist.ranking`."""
    from .ranking import Ranking

    return Ranking(hash_bits=hash_bits)


@registry.structures("arborist.Morphologizer.v1")
def morphologizer(hash_bits: int = 22, feature_templates: list[str] | None = None,
                  bundle_templates: list[str] | None = None, known_min_count: int = 10, joint: bool = False,
                  upos_templates: list[str] | None = None, joint_min_count: int = 3, suffix_length: int = 5,
                  suffix_min_count: int = 3, reads_draft: bool = False, reads_lemma: bool = False):
    """FEATS, one bundle per word (`arborist.morph.Morphologizer`); the bundles, candidate sets
    and lexicons are learned from the training data and saved beside the weights.
    `reads_draft`: the feature templates (the default ones unless given) also read the FEATS
    that a `morphologizer_draft` component before it predicted (`DRAFT_TEMPLATES`: stacking).
    `reads_lemma`: they also read the inflection of the word and its neighbours, from the
    lemmas a lemmatizer before it predicted (`LEMMA_TEMPLATES`; the lemmatizer's templates
    must then not read FEATS)."""
    from .morph.morphologizer import DRAFT_TEMPLATES, LEMMA_TEMPLATES, Morphologizer, with_templates

    if reads_draft or reads_lemma:
        feature_templates = with_templates(feature_templates, DRAFT_TEMPLATES if reads_draft else (),
                                           LEMMA_TEMPLATES if reads_lemma else ())
    return Morphologizer(hash_bits, feature_templates, bundle_templates, known_min_count, joint, upos_templates,
                         joint_min_count, suffix_length, suffix_min_count)


@registry.structures("arborist.Lemmatizer.v1")
def lemmatizer(hash_bits: int = 22, script_templates: list[str] | None = None,
               suffix_templates: list[str] | None = None, prefix_templates: list[str] | None = None,
               case_templates: list[str] | None = None, min_count: int = 1, lexicon_min_count: int = 1,
               upos_candidates: bool = False, form_lexicon: bool = True, lexicon_share: float = 0.99,
               known_lemmas: bool = True, known_templates: list[str] | None = None):
    """LEMMA, one edit script per word (`arborist.lemma.Lemmatizer`); the scripts and lexicons
    are learned from the training data and saved beside the weights."""
    from .lemma.lemmatizer import Lemmatizer

    return Lemmatizer(hash_bits, script_templates, suffix_templates, prefix_templates, case_templates, min_count,
                      lexicon_min_count, upos_candidates, form_lexicon, lexicon_share, known_lemmas, known_templates)


@registry.structures("arborist.Tokenizer.v1")
def tokenizer(hash_bits: int = 20, templates: list[str] | None = None, design: str = "start",
              window_sentences: int = 3, join: str = "space", mwt_min_types: int = 3, mwt_min_share: float = 0.6,
              max_sentence_tokens: int = 1000, mwt_context: bool = True, mwt_context_min_count: int = 2,
              mwt_context_min_share: float = 0.7, mwt_context_pair_min_count: int = 1, mwt_classifier: bool = True,
              mwt_classifier_epochs: int = 10, mwt_classifier_runs: int = 4, mwt_classifier_seed: int = 0,
              mwt_classifier_margin: float = 30.0):
    """A tokenizer's character chain (`arborist.tokenizer`): tags O/B/I/S per character; its
    multiword expansions are learned from the training sentences (with `mwt_context`, also
    the decisions of a surface's neighbours where the treebank writes it both ways; with
    `mwt_classifier`, unseen tokens are decided by a learned ranking of the suffix rewrites
    that apply, else by the rules' precision). Training examples are windows of
    `window_sentences` sentences of a paragraph, joined as `join` says."""
    from .tokenizer.chain import TokenizerChain

    return TokenizerChain(hash_bits, _templates(templates, None) if templates is not None else None, design,
                          window_sentences, join, mwt_min_types, mwt_min_share, max_sentence_tokens, mwt_context,
                          mwt_context_min_count, mwt_context_min_share, mwt_context_pair_min_count, mwt_classifier,
                          mwt_classifier_epochs, mwt_classifier_runs, mwt_classifier_seed, mwt_classifier_margin)


# The component kinds of this package.
from .components.labeler import Labeler  # noqa: E402
from .components.lemmatizer import Lemmatizer  # noqa: E402
from .components.morphologizer import Morphologizer, MorphologizerDraft  # noqa: E402
from .components.parser import Parser  # noqa: E402
from .components.pruner import Pruner  # noqa: E402
from .components.tagger import Tagger  # noqa: E402
from .components.tokenizer import Tokenizer  # noqa: E402

for _kind in (Tokenizer, Tagger, Morphologizer, Lemmatizer, Pruner, Parser, Labeler, MorphologizerDraft):
    registry.components(_kind.kind, func=_kind)
