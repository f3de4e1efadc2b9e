"""arborist: linear structured models for dependency parsing and tagging."""
__version__ = "0.1.0"

from .components.labeler import Labeler  # noqa: E402
from .components.parser import Parser  # noqa: E402
from .components.pruner import Pruner  # noqa: E402
from .components.tagger import Tagger  # noqa: E402
from .model import Pipeline, load  # noqa: E402

__all__ = ["Labeler", "Parser", "Pipeline", "Pruner", "Tagger", "load", "__version__"]
