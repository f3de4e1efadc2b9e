"""Multiword tokens: which surface tokens are several words, and which words.

Learned from the training tokens (`fit`):

* a lexicon: every lowercased surface token seen, with how often it was a multiword token
  and its most frequent expansion (lowercased words). A seen token is expanded when it was
  a multiword token in at least half of its occurrences (`MultiwordExpander.expand`);
* rules for unseen tokens: an expansion is written as a suffix rewrite, cut -> replacement
  words ("farlo" -> "far" + "lo" is cut "lo" -> ("", "lo"): the first word is the surface's
  stem plus "", then "lo"; "della" -> "di" + "la" is cut "ella" -> ("i", "la")). A backed-off
  suffix classifier, counted over token *types* (the generalization to unseen words is a
  property of types, not of a few frequent function words), maps the longest suffix with
  at least `min_types` types to its majority outcome (a rule, or "not multiword"), applied
  when that outcome's share is at least `min_share`.

The case pattern of the surface is put back on the lowercase words: all-caps surface ->
all-caps words, capitalized surface -> capitalized first word.

Serialized as plain JSON (`to_json` / `from_json`).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Iterable

MAX_SUFFIX = 7
NONE = ""  # the outcome "not a multiword token" in the suffix table


def _rule(surface: str, words: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """(cut, replacement words): surface = stem + cut and words = (stem + repl[0],) + repl[1:]."""
    first = words[0]
    p = 0
    while p < len(surface) and p < len(first) and surface[p] == first[p]:
        p += 1
    return surface[p:], (first[p:],) + tuple(words[1:])


def _encode(rule: tuple[str, tuple[str, ...]]) -> str:
    cut, repl = rule
    return "\t".join((cut,) + repl)


def _decode(key: str) -> tuple[str, tuple[str, ...]]:
    parts = key.split("\t")
    return parts[0], tuple(parts[1:])


def apply_case(surface: str, words: Iterable[str]) -> tuple[str, ...]:
    words = tuple(words)
    letters = [c for c in surface if c.isalpha()]
    if len(letters) > 1 and all(c.isupper() for c in letters):
        return tuple(w.upper() for w in words)
    if letters and surface[:1].isupper() and words:
        return (words[0][:1].upper() + words[0][1:],) + words[1:]
    return words


class MultiwordExpander:
    def __init__(self, min_types: int = 5, min_share: float = 0.6):
        self.min_types = int(min_types)
        self.min_share = float(min_share)
        self.lexicon: dict[str, tuple[str, ...] | None] = {}   # lowercased surface -> words or None
        self.suffixes: dict[str, tuple[str, float, int]] = {}  # suffix -> (outcome, share, types)
        self._cache: dict[str, tuple[str, ...] | None] = {}

    def fit(self, tokens: Iterable[tuple[str, tuple[str, ...] | None]]) -> "MultiwordExpander":
        """tokens: (surface form, its words when a multiword token else None) of the training data."""
        seen: dict[str, Counter] = defaultdict(Counter)
        for form, words in tokens:
            low = form.lower()
            seen[low][tuple(w.lower() for w in words) if words else None] += 1
        lexicon = {}
        outcomes = {}
        for low, counts in seen.items():
            total = sum(counts.values())
            multi = Counter({k: v for k, v in counts.items() if k is not None})
            if multi and 2 * sum(multi.values()) >= total:
                words = multi.most_common(1)[0][0]
                lexicon[low] = words
                outcomes[low] = _encode(_rule(low, words))
            else:
                lexicon[low] = None
                outcomes[low] = NONE
        # Only the multiword entries and the tokens that end like one matter at prediction;
        # keep the lexicon to the multiword entries plus the seen tokens that a rule would
        # wrongly expand (so they stay single).
        table: dict[str, Counter] = defaultdict(Counter)
        for low, outcome in outcomes.items():
            for k in range(1, min(MAX_SUFFIX, len(low)) + 1):
                table[low[-k:]][outcome] += 1
        suffixes = {}
        for suffix, counts in table.items():
            types = sum(counts.values())
            if types < self.min_types:
                continue
            outcome, count = counts.most_common(1)[0]
            if outcome == NONE:
                continue  # the default anyway
            share = count / types
            if share >= self.min_share:
                suffixes[suffix] = (outcome, share, types)
        # A suffix whose longer extensions all decided otherwise still holds; lookups take
        # the longest suffix with enough types, so store the negatives that shadow a rule too.
        for suffix, counts in table.items():
            types = sum(counts.values())
            if types >= self.min_types and suffix not in suffixes and any(
                    suffix[-k:] in suffixes for k in range(1, len(suffix))):
                suffixes[suffix] = (NONE, counts[NONE] / types, types)
        self.lexicon = {low: words for low, words in lexicon.items()
                        if words is not None or self._rule_for(low, suffixes) is not None}
        self.suffixes = suffixes
        self._cache = {}
        return self

    @staticmethod
    def _rule_for(low: str, suffixes) -> tuple[str, tuple[str, ...]] | None:
        for k in range(min(MAX_SUFFIX, len(low)), 0, -1):
            entry = suffixes.get(low[-k:])
            if entry is None:
                continue
            if entry[0] == NONE:
                return None
            cut, repl = _decode(entry[0])
            if low.endswith(cut) and len(low) > len(cut):
                return cut, repl
            return None
        return None

    def expand(self, form: str) -> tuple[str, ...] | None:
        """The words of surface token `form` when it is a multiword token, else None."""
        cached = self._cache.get(form, False)
        if cached is not False:
            return cached
        low = form.lower()
        if low in self.lexicon:
            words = self.lexicon[low]
        else:
            rule = self._rule_for(low, self.suffixes)
            if rule is None:
                words = None
            else:
                cut, repl = rule
                stem = low[:len(low) - len(cut)]
                words = (stem + repl[0],) + repl[1:]
        if words is not None:
            words = apply_case(form, words)
            if any(not w for w in words):
                words = None  # a rule that would leave an empty word: not a multiword token
        if len(self._cache) > 200_000:
            self._cache.clear()
        self._cache[form] = words
        return words

    def to_json(self) -> dict:
        return {
            "min_types": self.min_types,
            "min_share": self.min_share,
            "lexicon": {low: (list(words) if words is not None else None) for low, words in self.lexicon.items()},
            "suffixes": {s: list(v) for s, v in self.suffixes.items()},
        }

    @classmethod
    def from_json(cls, data: dict) -> "MultiwordExpander":
        out = cls(data["min_types"], data["min_share"])
        out.lexicon = {low: (tuple(words) if words is not None else None) for low, words in data["lexicon"].items()}
        out.suffixes = {s: (v[0], float(v[1]), int(v[2])) for s, v in data["suffixes"].items()}
        return out
