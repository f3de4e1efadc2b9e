"""arborist: linear structured models for dependency parsing and tagging."""
__version__ = "0.1.0"

from .model import Parser, load  # noqa: E402

__all__ = ["Parser", "load", "__version__"]
