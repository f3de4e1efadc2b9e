"""POS tagging as a linear chain: Viterbi and forward-backward (first and second
order), hashed emission and transition features, and the `LinearChain` structure
that the generic trainers train through the Structure protocol."""
from .chain import LinearChain

__all__ = ["LinearChain"]
