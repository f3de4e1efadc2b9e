"""Per-character values the character-chain kernel reads: lowercase code point, class, script.

They are computed once per code point (a table over the Basic Multilingual Plane, built on
first use; characters above it, rare, one at a time) so the nogil kernel never touches a
Python string. Everything here is deterministic across runs and machines (the script id
is the string hash of the first word of the character's Unicode name), so a saved model's
features mean the same after loading.
"""
from __future__ import annotations

import re
import unicodedata

import numpy as np

from ..strings import hash_string

# Character classes (column CLASS of the kernel's values).
# Punctuation is split by role (Unicode categories): OPEN brackets and initial quotes (Ps, Pi),
# CLOSE brackets and final quotes (Pe, Pf), DASH (Pd), other PUNCT (Po, Pc): "(" and "«" share
# what they teach (an opening bracket before a letter starts a token) instead of sharing it
# with "." (which often continues one: "π.μ.", "U.S.").
SPACE, UPPER, LOWER, LETTER, DIGIT, PUNCT, SYMBOL, MARK, OTHER, NEWLINE, OPEN, CLOSE, DASH = range(13)
CLASS_NAMES = ("space", "upper", "lower", "letter", "digit", "punct", "symbol", "mark", "other", "newline",
               "open", "close", "dash")
BMP = 0x10000
# Unicode's control characters (Cc): not text, never in a CoNLL-U line (raw text and the
# writers replace them; `features.decode_spans` keeps them out of tokens)
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def char_class(ch: str) -> int:
    if ch in "\n\r\u2028\u2029\x0b\x0c":
        return NEWLINE
    if ch.isspace():
        return SPACE
    if ch.isupper():
        return UPPER
    if ch.islower():
        return LOWER
    if ch.isalpha():
        return LETTER
    cat = unicodedata.category(ch)
    if cat[0] == "N":
        return DIGIT
    if cat in ("Ps", "Pi"):
        return OPEN
    if cat in ("Pe", "Pf"):
        return CLOSE
    if cat == "Pd":
        return DASH
    if cat[0] == "P":
        return PUNCT
    if cat[0] == "S":
        return SYMBOL
    if cat[0] == "M":
        return MARK
    return OTHER


def char_script(ch: str) -> int:
    """A hash of the first word of the Unicode name ("LATIN", "GREEK", "DIGIT", ...); 0 if unnamed."""
    name = unicodedata.name(ch, "")
    return hash_string(name.split(" ", 1)[0]) if name else 0


def char_lower(ch: str) -> int:
    low = ch.lower()
    # A few characters lowercase to two ("İ" -> "i̇"): keep one code point per character.
    return ord(low) if len(low) == 1 else ord(ch)


_TABLES = None


def _tables():
    global _TABLES
    if _TABLES is None:
        lower = np.empty(BMP, dtype=np.uint32)
        cls = np.empty(BMP, dtype=np.uint8)
        script = np.empty(BMP, dtype=np.uint64)
        for cp in range(BMP):
            ch = chr(cp)
            lower[cp] = char_lower(ch)
            cls[cp] = char_class(ch)
            script[cp] = char_script(ch)
        _TABLES = (lower, cls, script)
    return _TABLES


def code_points(text: str) -> np.ndarray:
    """uint32 code points of text, one per character (surrogates kept as they are)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
