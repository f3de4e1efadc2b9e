"""arborist: linear structured models for dependency parsing and tagging."""
__version__ = "0.1.0"

from .model import Parser, Pipeline, Tagger, load  # noqa: E402

__all__ = ["Parser", "Pipeline", "Tagger", "load", "__version__"]
