"""Multiword tokens: which surface tokens are several words, and which words.

Learned from the training tokens (`fit`):

* a lexicon: every lowercased surface token seen, with how often it was a multiword token
  and its most frequent expansion (lowercased words). A seen token is expanded when it was
  a multiword token in at least half of its occurrences (`MultiwordExpander.expand`);
* rules for unseen tokens: every expansion seen is written as a suffix rewrite, cut ->
  replacement ("farlo" -> "far" + "lo" is cut "lo" -> ("", "lo"): the first word is the
  surface's stem plus "", then "lo"; "della" -> "di" + "la" is cut "ella" -> ("i", "la");
  Turkish "elbiseli" -> "elbise" + "li" is cut "li" -> ("", "li")). Whether a rule applies
  to an unseen token is decided by its precision on the training token *types* it could
  apply to (the generalization to unseen words is a property of types, not of a few
  frequent function words), conditioned on whether the rule's first word (stem + replacement) is a known
  standalone word of the training data ("elbise" is, so "elbiseli" splits) and on the
  CONTEXT_CHARS characters before the cut, backing off to fewer: "-rsi" verbs split
  ("formarsi" -> "formar" + "si") where other words in "-si" do not. The most specific
  context seen on at least `min_types` types decides; a rule applies when it was right on
  at least `min_share` of them; of several, the most precise (then the longest cut) wins.

With `classifier`, a learned ranking decides unseen tokens instead of the precision rule:
a `Ranking` structure (`arborist.ranking`) trained by the averaged perceptron on the training
token *types*, whose candidates are "one word" and every rule whose cut ends the token, and
whose features say what each rewrite would make: the rule and its cut with the characters
before it, whether the first word is a known standalone word and with which UPOS (the
stem "genç" is an ADJ, so "gençti" is "genç" + "ti"; "kazan" is mostly a VERB stem's
prefix, so "kazandı" stays one word), how many known words start with it by UPOS, how many
types the rule was seen on. Training is leave-one-out: a type's candidates, counts and
stem statistics leave that type out, so that it is seen as an unseen token would be.

Seen tokens that the treebank writes both ways ("its" is "its" or "it" + "s" in en_ewt) can
be conditioned on their neighbours (`fit_context`): for such a surface, the next token (then
the previous one; "<s>"/"</s>" at a sentence's edges) decides when it was seen with it at
least `context_min_count` times and one outcome had at least `context_min_share` of them;
only the contexts whose decision differs from the lexicon's are kept
(`expand_in_context`).

The surface's case is put back on the lowercase words (`apply_case`): words that spell the
surface are its pieces, character for character; other words get its pattern (all-caps
surface -> all-caps words, capitalized surface -> capitalized first word).

Serialized as plain JSON (`to_json` / `from_json`).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

MAX_CUT = 12  # longest suffix a rule rewrites
CONTEXT_CHARS = 2  # characters before a rule's cut its statistics may condition on


def _rule(surface: str, words: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """(cut, replacement words): surface = stem + cut and words = (stem + repl[0],) + repl[1:]."""
    first = words[0]
    p = 0
    while p < len(surface) and p < len(first) and surface[p] == first[p]:
        p += 1
    return surface[p:], (first[p:],) + tuple(words[1:])


def apply_case(surface: str, words: Iterable[str]) -> tuple[str, ...]:
    """The lowercase words of a multiword token in the case of its surface. Words that spell
    the surface ("nasa" + "'s" of "NASA's") are its pieces, character for character: every
    such multiword token of the five treebanks is written that way ("NASA" + "'s",
    "McDonald" + "s"). Other words get the surface's pattern: all-caps surface -> all-caps
    words, capitalized surface -> capitalized first word ("Della" -> "Di" + "la")."""
    words = tuple(words)
    if "".join(words) == surface.lower() and len(surface.lower()) == len(surface):
        cuts = np.cumsum([0] + [len(w) for w in words])
        return tuple(surface[a:b] for a, b in zip(cuts[:-1], cuts[1:]))
    letters = [c for c in surface if c.isalpha()]
    if len(letters) > 1 and all(c.isupper() for c in letters):
        return tuple(w.upper() for w in words)
    if letters and surface[:1].isupper() and words:
        return (words[0][:1].upper() + words[0][1:],) + words[1:]
    return words


CLASSIFIER_BITS = 18  # the classifier's weight table: 2**18 slots
NOMINAL = ("NOUN", "ADJ", "PROPN")  # the UPOS counted together in the stem statistics


def _bucket(n: int) -> str:
    return "0" if n <= 0 else "1" if n == 1 else "2" if n < 5 else "5"


class MultiwordExpander:
    def __init__(self, min_types: int = 3, min_share: float = 0.6, classifier: bool = False,
                 classifier_epochs: int = 10, classifier_runs: int = 4, seed: int = 0,
                 classifier_margin: float = 30.0):
        """`classifier`: decide unseen tokens by the learned ranking instead of the rules'
        precision on the training types. It is the mean of `classifier_runs` averaged
        perceptrons of `classifier_epochs` epochs, whose example orders come from seeds
        `seed`, `seed` + 1, ... (the mean of a few runs is steadier than one: the training
        types are few), each with a margin of `classifier_margin` (`MarginPerceptron`; gold
        dev tokens, Words F1 at margins 0 / 20 / 30 / 50: tr_imst 98.28 / 98.33 / 98.37 /
        98.38, it_partut 99.79 / 99.79 / 99.79 / 99.74, en_ewt and el_gdt unchanged)."""
        if classifier_epochs < 1 or classifier_runs < 1:
            raise ValueError("classifier_epochs and classifier_runs must be at least 1")
        if classifier_margin < 0:
            raise ValueError(f"classifier_margin must not be negative, got {classifier_margin!r}")
        self.min_types = int(min_types)
        self.min_share = float(min_share)
        self.classifier = bool(classifier)
        self.classifier_epochs = int(classifier_epochs)
        self.classifier_runs = int(classifier_runs)
        self.classifier_margin = float(classifier_margin)
        self.seed = int(seed)
        self.word_upos: dict[str, str] = {}     # lowercased standalone word -> its most frequent UPOS
        self.rule_types: list[int] = []          # per rule: how many training types it was seen on
        self.weights: np.ndarray | None = None   # the classifier's weights (2**CLASSIFIER_BITS)
        self._prefix_counts: dict | None = None  # prefix -> (VERB words, nominal words), built lazily
        self.lexicon: dict[str, tuple[str, ...] | None] = {}  # lowercased surface -> words or None
        self.rules: list[tuple[str, tuple[str, ...]]] = []    # (cut, replacement words)
        self.precision: dict[str, float] = {}                   # "rule|known|context" -> precision
        self.vocab: set[str] = set()                           # lowercased standalone words
        self._by_cut: dict[str, list[int]] = {}
        self._cache: dict[str, tuple[str, ...] | None] = {}
        # "low\tn\tnext" / "low\tp\tprev" -> words or None, where the context overrides the lexicon
        self.context: dict[str, tuple[str, ...] | None] = {}
        self.ambiguous: set[str] = set()     # lowercased surfaces with context entries
        self._ambiguous_forms: set[str] = set()  # exact forms expanded so far that are ambiguous
        self._ranking = None  # (structure, weights) of the classifier at prediction

    def cache_lookup(self):
        """A function (form, default) -> `expand(form)` if it was computed already (and is still
        cached), else default: the fast path of a caller that expands many tokens."""
        return self._cache.get

    def _index(self) -> None:
        self._by_cut = defaultdict(list)
        for r, (cut, _) in enumerate(self.rules):
            self._by_cut[cut].append(r)
        self._by_cut = dict(self._by_cut)
        self._cache = {}
        self._ranking = None
        self._ambiguous_forms = set()

    def _applicable(self, low: str):
        """(rule id, cut length) of every rule whose cut ends `low` and leaves a non-empty stem."""
        for k in range(min(MAX_CUT, len(low) - 1) + 1):
            for r in self._by_cut.get(low[len(low) - k:], ()):
                yield r, k

    def _rewrite(self, low: str, r: int) -> tuple[str, ...]:
        """The lowercased words rule `r` makes of surface `low`."""
        cut, repl = self.rules[r]
        return (low[:len(low) - len(cut)] + repl[0],) + repl[1:]

    def _candidates(self, low: str):
        """(rule id, contexts) of every rule that applies to `low` (`_applicable`); contexts are
        the statistics keys to try, most specific first: the rule with the CONTEXT_CHARS, then
        fewer, characters before its cut, and whether its first word (stem + replacement) is a
        known standalone word."""
        for r, k in self._applicable(low):
            known = self._rewrite(low, r)[0] in self.vocab
            yield r, [f"{r}|{int(known)}|{low[max(0, len(low) - k - extra):len(low) - k]}"
                      for extra in range(min(CONTEXT_CHARS, len(low) - k - 1), -1, -1)]

    def fit(self, tokens: Iterable[tuple]) -> MultiwordExpander:
        """tokens: (surface form, its words when a multiword token else None[, the UPOS of a
        one-word token]) of the training data. The classifier reads the UPOS; without them
        it sees every known word with an unknown UPOS."""
        seen: dict[str, Counter] = defaultdict(Counter)
        upos_counts: dict[str, Counter] = defaultdict(Counter)
        for form, words, *upos in tokens:
            low = form.lower()
            seen[low][tuple(w.lower() for w in words) if words else None] += 1
            if not words:
                upos_counts[low][upos[0] if upos and upos[0] else "_"] += 1
        lexicon, outcome = {}, {}
        rule_ids: dict = {}
        for low, counts in seen.items():
            total = sum(counts.values())
            multi = Counter({k: v for k, v in counts.items() if k is not None})
            if multi and 2 * sum(multi.values()) >= total:
                words = multi.most_common(1)[0][0]
                lexicon[low] = words
                rule = _rule(low, words)
                if rule not in rule_ids and len(rule[0]) <= MAX_CUT and len(low) > len(rule[0]):
                    rule_ids[rule] = len(rule_ids)
                outcome[low] = rule_ids.get(rule, -2)  # -2: a multiword token no rule writes
            else:
                lexicon[low] = None
                outcome[low] = -1
        self.rules = list(rule_ids)
        self.vocab = {low for low, counts in seen.items() if counts[None] > 0}
        self.word_upos = {low: counts.most_common(1)[0][0] for low, counts in upos_counts.items()}
        types_of_rule = Counter(r for r in outcome.values() if r >= 0)
        self.rule_types = [types_of_rule[r] for r in range(len(self.rules))]
        self._prefix_counts = None
        self.weights = None
        self._index()
        hits: Counter = Counter()
        totals: Counter = Counter()
        for low, right in outcome.items():
            for r, contexts in self._candidates(low):
                for key in contexts:
                    totals[key] += 1
                    hits[key] += r == right
        # Every context with enough types, right or wrong: a specific context that says no
        # must stop the back-off to a general one that says yes.
        self.precision = {key: hits[key] / n for key, n in totals.items() if n >= self.min_types}
        if self.classifier:
            self._train_classifier(outcome)
        # Keep the multiword entries, and the seen single tokens a rule would split.
        self.lexicon = {low: words for low, words in lexicon.items()
                        if words is not None or self._decide(low) is not None}
        self._cache = {}
        return self

    # -- the classifier ---------------------------------------------------------------
    def _prefixes(self) -> dict:
        """prefix -> [VERB words, nominal words] among the known words that start with it
        (and are longer): how a stem is used, for the classifier's features."""
        if self._prefix_counts is None:
            table: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            for word, upos in self.word_upos.items():
                column = 0 if upos == "VERB" else 1 if upos in NOMINAL else -1
                if column >= 0:
                    for k in range(1, len(word)):
                        table[word[:k]][column] += 1
            self._prefix_counts = dict(table)
        return self._prefix_counts

    def _classifier_candidates(self, low: str, leave_out: int | None = None) -> list[int]:
        """-1 (one word), then the rules that apply to `low` and were seen on a training type.
        `leave_out`: `low` is a training type left out, whose outcome was that rule (or -1 / -2),
        so a rule seen on that type alone is no candidate."""
        return [-1] + [r for r, _ in self._applicable(low) if self.rule_types[r] - (r == leave_out) >= 1]

    def _candidate_features(self, low: str, r: int, leave_out: int | None = None) -> list[str]:
        """The feature strings of candidate `r` (-1: one word) of surface `low`. With `leave_out`
        (the type's own outcome, as in `_classifier_candidates`), `low` is a training type seen
        as if unseen: its own rule count, UPOS and prefix counts are left out."""
        if r < 0:
            return ["none"] + [f"none|s{k}|{low[-k:]}" for k in (1, 2, 3)]
        left_out = leave_out is not None
        cut, repl = self.rules[r]
        name = f"{cut}>{'+'.join(repl)}"
        stem = low[:len(low) - len(cut)]
        first = stem + repl[0]
        n = self.rule_types[r] - (leave_out == r)
        upos = self.word_upos.get(first) if not (left_out and first == low) else None
        su = upos or "?"
        verbs, nominals = self._prefixes().get(first, (0, 0))
        if left_out and len(low) > len(first) and low.startswith(first):
            own = self.word_upos.get(low)
            verbs -= own == "VERB"
            nominals -= own in NOMINAL
        pv, pn = _bucket(verbs), _bucket(nominals)
        c1, c2, c3 = stem[-1:], stem[-2:], stem[-3:]
        return ["split", f"r|{name}", f"r|{name}|n{_bucket(n)}", f"cut|{cut}", f"r|{name}|su|{su}",
                f"cut|{cut}|su|{su}", f"su|{su}", f"r|{name}|c1|{c1}", f"r|{name}|c2|{c2}", f"cut|{cut}|c2|{c2}",
                f"cut|{cut}|c3|{c3}", f"r|{name}|pv{pv}|pn{pn}", f"cut|{cut}|pv{pv}|pn{pn}", f"pv{pv}|pn{pn}|su|{su}",
                f"r|{name}|len{min(len(stem), 8)}", f"r|{name}|c3|{c3}", f"r|{name}|su|{su}|c1|{c1}",
                f"cut|{cut}|s5|{low[-5:]}", f"r|{name}|known|{upos is not None}",
                f"apos|{chr(39) in low}|{cut[:1]}", f"digit|{any(ch.isdigit() for ch in stem)}|{cut}"]

    def _ranking_item(self, low: str, candidates: list[int], leave_out: int | None = None) -> list[np.ndarray]:
        from ..strings import hash_strings

        return [hash_strings(self._candidate_features(low, r, leave_out)) for r in candidates]

    def _train_classifier(self, outcome: dict[str, int]) -> None:
        """The averaged perceptron on every training type that has a rule to choose from and
        whose own rule is among its candidates (leave-one-out)."""
        from ..learn.perceptron import MarginPerceptron
        from ..ranking import Ranking, RankingExample

        structure = Ranking(CLASSIFIER_BITS)
        examples = []
        for low in sorted(outcome):
            right = outcome[low]
            candidates = self._classifier_candidates(low, right)
            if len(candidates) < 2 or right not in candidates:  # (right = -2 never is)
                continue
            examples.append(RankingExample.of([self._ranking_item(low, candidates, right)], [candidates.index(right)]))
        if not examples:
            self.weights = None
            return
        total = np.zeros(1 << CLASSIFIER_BITS)
        for run in range(self.classifier_runs):
            trainer = MarginPerceptron(self.classifier_margin, averaged=True, shuffle=True, seed=self.seed + run)
            trainer.begin(structure, examples, CLASSIFIER_BITS)
            for _ in range(self.classifier_epochs):
                trainer.epoch(structure, examples)
            total += trainer.prediction_weights().array
        self.weights = total / self.classifier_runs
        self._ranking = None

    def _classify(self, low: str) -> int | None:
        """The classifier's rule for surface `low`, or None (one word)."""
        from ..ranking import Ranking, RankingExample
        from ..weights import Weights

        if self.weights is None:
            return None
        candidates = self._classifier_candidates(low)
        if len(candidates) < 2:
            return None
        if self._ranking is None:
            self._ranking = (Ranking(CLASSIFIER_BITS), Weights(CLASSIFIER_BITS, False, self.weights))
        structure, w = self._ranking
        x = RankingExample.of([self._ranking_item(low, candidates)])
        r = candidates[int(np.argmax(structure.scores(x, w)))]  # one item: argmax is its first best candidate
        return r if r >= 0 else None

    def _decide(self, low: str) -> int | None:
        """The rule an unseen surface gets (None: one word)."""
        return self._classify(low) if self.classifier else self._rule_for(low)

    def fit_context(self, sentences: Iterable[Sequence[tuple[str, tuple[str, ...] | None]]],
                    min_count: int = 2, min_share: float = 0.7, pair_min_count: int = 0) -> MultiwordExpander:
        """sentences: sequences of (surface form, words or None). Call after `fit`.
        pair_min_count > 0 also stores both neighbours together ("low\tb\tprev\tnext", tried
        first) where the training data had that pair at least `pair_min_count` times, always
        with one outcome, and that outcome is not what the single neighbours and the lexicon
        give (memorizes the training text's decisions: 1 stores every unanimous pair)."""
        sentences = [[(form.lower(), tuple(w.lower() for w in words) if words else None) for form, words, *_ in s]
                     for s in sentences]
        outcomes: dict[str, set] = defaultdict(set)
        for s in sentences:
            for low, words in s:
                outcomes[low].add(words)
        ambiguous = {low for low, seen in outcomes.items() if len(seen) > 1}
        table: dict[str, Counter] = defaultdict(Counter)
        for s in sentences:
            for i, (low, words) in enumerate(s):
                if low in ambiguous:
                    table[f"{low}\tn\t{s[i + 1][0] if i + 1 < len(s) else '</s>'}"][words] += 1
                    table[f"{low}\tp\t{s[i - 1][0] if i else '<s>'}"][words] += 1
        self.context = {}
        for key, counts in table.items():
            total = sum(counts.values())
            words, n = counts.most_common(1)[0]
            if total >= min_count and n >= min_share * total and words != self.lexicon.get(key.split("\t", 1)[0]):
                self.context[key] = words
        if pair_min_count > 0:
            pairs: dict[str, Counter] = defaultdict(Counter)
            for s in sentences:
                for i, (low, words) in enumerate(s):
                    if low in ambiguous:
                        previous = s[i - 1][0] if i else "<s>"
                        following = s[i + 1][0] if i + 1 < len(s) else "</s>"
                        pairs[(low, previous, following)][words] += 1
            found = {}
            for (low, previous, following), counts in pairs.items():
                words, n = counts.most_common(1)[0]
                if n >= pair_min_count and n == sum(counts.values()) and \
                        words != self._single_context(low, previous, following):
                    found[f"{low}\tb\t{previous}\t{following}"] = words
            self.context.update(found)
        self.ambiguous = {key.split("\t", 1)[0] for key in self.context}
        self._cache = {}
        self._ambiguous_forms = set()
        return self

    def _single_context(self, low: str, previous: str, following: str):
        """The lowercased decision of the single-neighbour contexts, else the lexicon's."""
        found, words = self._context_words(low, previous, following, pairs=False)
        return words if found else self.lexicon.get(low)

    def _context_words(self, low: str, previous: str, following: str, pairs: bool = True):
        """(whether a context decides, its lowercased words): both neighbours first (with
        `pairs`), then the next token, then the previous one."""
        keys = (f"{low}\tn\t{following}", f"{low}\tp\t{previous}")
        if pairs:
            keys = (f"{low}\tb\t{previous}\t{following}",) + keys
        for key in keys:
            if key in self.context:
                return True, self.context[key]
        return False, None

    def fit_sentences(self, sentences: Iterable[Sequence[tuple]], context: bool = True,
                      min_count: int = 2, min_share: float = 0.7, pair_min_count: int = 1) -> MultiwordExpander:
        """`fit` on every token of the sentences (sequences of (surface form, words or None[,
        UPOS])),
        then, with `context`, `fit_context`: how `train_tokenizer` and the tokenizer component
        learn their expansions."""
        sentences = [list(s) for s in sentences]
        self.fit(token for sentence in sentences for token in sentence)
        if context:
            self.fit_context(sentences, min_count, min_share, pair_min_count)
        return self

    def ambiguous_forms(self) -> set[str]:
        """The exact forms expanded so far (by `expand`) whose answer may depend on their neighbours."""
        return self._ambiguous_forms

    def expand_in_context(self, form: str, previous: str, following: str) -> tuple[str, ...] | None:
        """`expand(form)`, unless the neighbours (lowercased forms, "<s>"/"</s>" at a sentence's
        edges) decide otherwise: the next token first, then the previous one."""
        low = form.lower()
        if low in self.ambiguous:
            found, words = self._context_words(low, previous.lower(), following.lower())
            if found:
                return apply_case(form, words) if words is not None else None
        return self.expand(form)

    def _rule_for(self, low: str) -> int | None:
        best, best_key = None, None
        for r, contexts in self._candidates(low):
            for level, key in enumerate(contexts):
                p = self.precision.get(key)
                if p is None:
                    continue
                if p >= self.min_share:
                    rank = (p, -level, len(self.rules[r][0]))
                    if best_key is None or rank > best_key:
                        best, best_key = r, rank
                break  # the most specific context with enough types decides
        return best

    def expand(self, form: str) -> tuple[str, ...] | None:
        """The words of surface token `form` when it is a multiword token, else None."""
        cached = self._cache.get(form, False)
        if cached is not False:
            return cached
        low = form.lower()
        seen = low in self.lexicon
        if seen:
            words = self.lexicon[low]
        else:
            r = self._decide(low)
            words = None if r is None else self._rewrite(low, r)
        if words is not None:
            words = apply_case(form, words)
            if any(not w or w.isspace() for w in words):
                words = None  # a rule that would leave an empty word: not a multiword token
        if len(self._cache) > 200_000:
            self._cache.clear()
        if self.ambiguous and low in self.ambiguous:
            self._ambiguous_forms.add(form)
        self._cache[form] = words
        return words

    def to_json(self) -> dict:
        return {
            "min_types": self.min_types,
            "min_share": self.min_share,
            "lexicon": {low: (list(words) if words is not None else None) for low, words in self.lexicon.items()},
            "rules": [[cut, *repl] for cut, repl in self.rules],
            "precision": self.precision,
            "vocab": sorted(self.vocab),
            "context": {key: (list(words) if words is not None else None) for key, words in self.context.items()},
            "classifier": self._classifier_json(),
        }

    def _classifier_json(self) -> dict | None:
        if not self.classifier:
            return None
        nonzero = np.flatnonzero(self.weights) if self.weights is not None else np.zeros(0, dtype=np.int64)
        return {"epochs": self.classifier_epochs, "runs": self.classifier_runs, "seed": self.seed,
                "margin": self.classifier_margin,
                "hash_bits": CLASSIFIER_BITS,
                "word_upos": self.word_upos, "rule_types": self.rule_types,
                "slots": nonzero.tolist(), "weights": self.weights[nonzero].tolist() if len(nonzero) else []}

    @classmethod
    def from_json(cls, data: dict) -> MultiwordExpander:
        out = cls(data["min_types"], data["min_share"])
        out.lexicon = {low: (tuple(words) if words is not None else None) for low, words in data["lexicon"].items()}
        out.rules = [(rule[0], tuple(rule[1:])) for rule in data["rules"]]
        out.precision = {key: float(p) for key, p in data["precision"].items()}
        out.vocab = set(data["vocab"])
        out.context = {key: (tuple(words) if words is not None else None)
                       for key, words in data.get("context", {}).items()}
        out.ambiguous = {key.split("\t", 1)[0] for key in out.context}
        found = data.get("classifier")
        if found is not None:
            if not isinstance(found, dict) or not isinstance(found.get("word_upos"), dict) \
                    or not all(isinstance(found.get(k), list) for k in ("rule_types", "slots", "weights")):
                raise ValueError("the multiword classifier's entry is malformed")
            if int(found["hash_bits"]) != CLASSIFIER_BITS or len(found["rule_types"]) != len(out.rules):
                raise ValueError("the multiword classifier's table does not match this version or its rules")
            out.classifier = True
            out.classifier_epochs, out.classifier_runs = int(found["epochs"]), int(found["runs"])
            out.seed = int(found["seed"])
            out.classifier_margin = float(found.get("margin", 0.0))  # files before the margin: 0
            out.word_upos = {str(k): str(v) for k, v in found["word_upos"].items()}
            out.rule_types = [int(n) for n in found["rule_types"]]
            slots = np.asarray(found["slots"], dtype=np.int64)
            if len(slots) != len(found["weights"]) or (len(slots) and (slots.min() < 0 or slots.max() >> CLASSIFIER_BITS)):
                raise ValueError("the multiword classifier's weights are malformed")
            out.weights = np.zeros(1 << CLASSIFIER_BITS)
            out.weights[slots] = np.asarray(found["weights"], dtype=np.float64)
        out._index()
        return out
