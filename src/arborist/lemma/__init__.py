"""Lemmatization as edit scripts (`scripts`) chosen per word by a linear model (`Lemmatizer`)."""
from .lemmatizer import Lemmatizer
from .scripts import Script, apply, applies, extract

__all__ = ["Lemmatizer", "Script", "apply", "applies", "extract"]
