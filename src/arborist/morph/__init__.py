"""Morphological tagging (FEATS) and the per-word candidate-choice structure the
lemmatizer shares (`choice.AtomChoice`, kernel `atoms`)."""
from .choice import AtomChoice, ChoiceExample
from .morphologizer import Morphologizer

__all__ = ["AtomChoice", "ChoiceExample", "Morphologizer"]
