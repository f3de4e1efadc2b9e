"""CharacterChain: a first-order tag chain over the characters of a text, behind the Structure protocol.

Tags (one per character):
  O  outside every token (whitespace between tokens)
  B  first character of a token that does not start a sentence
  I  any later character of a token (a space inside a FORM too)
  S  first character of a token that starts a sentence

Sentence ends are thus marked at the start of the next sentence, where the features see
both sides of the boundary (". The" vs "Mr. Smith"); the first token of a text always
starts a sentence (the decoder makes it so). One tag set, K = 4, keeps the Viterbi cheap
(16 transitions per character).

An example (`CharExample`) is a text with its gold tags; its parts and scores are those of
an order-1 `arborist.tagger.viterbi` chain, shape (n, K+1, K). Prediction of long texts goes
through `tag_texts`, which cuts them into bounded windows (WINDOW characters kept, MARGIN of
context either side) decoded by one GIL-free kernel call per group of windows.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..structure import take_positions
from ..tagger.viterbi import chain_argmax, chain_marginals, valid_parts
from .chars import code_points
from .features import char_values
from .features import CONTEXT, DEFAULT_TEMPLATES, CharFeatures, token_table

TAGS = ("O", "B", "I", "S")
O, B, I, S = range(4)
# The other design (`design="end"`): a sentence ends at a tagged character, E (inside a token)
# or F (a token's first character, a one-character token: "."), instead of starting at S.
END_TAGS = ("O", "B", "I", "E", "F")
E, F = 3, 4
# The combined design (`design="both"`): S on a sentence's first character and E/F on its last
# (a one-character sentence of one token is S); a sentence starts at an S or after an E/F.
BOTH_TAGS = ("O", "B", "I", "S", "E", "F")
DESIGNS = {"start": TAGS, "end": END_TAGS, "both": BOTH_TAGS}
DESIGN_IDS = {"start": 0, "end": 1, "both": 2}
BOTH_E, BOTH_F = 4, 5
WINDOW = 8192          # characters a window keeps
MARGIN = max(CONTEXT, 256)  # context either side: exact features, and the Viterbi paths have merged
BATCH_CHARS = 1 << 20  # characters per kernel call (bounds the memory of one call)


def known_tokens(forms, min_count: int = 2) -> np.ndarray:
    """The known-token table of the features kpre/ksuf/klong: the forms (compared lowercased)
    seen at least `min_count` times. Not every training token: with min_count = 2 the
    training data also shows the model tokens it does not know, as test data will."""
    counts: dict[str, int] = {}
    for form in forms:
        low = form.lower()
        counts[low] = counts.get(low, 0) + 1
    return token_table([f for f, c in counts.items() if c >= min_count])


@dataclass(slots=True)
class CharExample:
    text: str
    chars: np.ndarray   # (n, 4) uint64 `chars.char_values`
    tags: np.ndarray    # (n,) int32 gold tags (may be empty when unknown)
    source: str = "<text>"
    line: int = 0

    @property
    def n(self) -> int:
        return len(self.text)


def make_example(text: str, tags=None, source: str = "<text>", line: int = 0) -> CharExample:
    tags = np.zeros(0, dtype=np.int32) if tags is None else np.asarray(tags, dtype=np.int32)
    if len(tags) and len(tags) != len(text):
        raise ValueError(f"{source}:{line}: {len(tags)} tags for {len(text)} characters")
    return CharExample(text, char_values(code_points(text)), tags, source, line)


class CharacterChain:
    name = "character-chain"

    def __init__(self, hash_bits: int = 20, templates: Sequence[str] | None = None, vocab_table=None,
                 design: str = "start"):
        """`vocab_table`: the known-token table (`known_tokens`), None for none. `design`: "start"
        (tags O B I S, the default) or "end" (O B I E F, see END_TAGS)."""
        if design not in DESIGNS:
            raise ValueError(f"design must be one of {tuple(DESIGNS)}, got {design!r}")
        self.design = design
        self.design_id = DESIGN_IDS[design]  # `features.decode_spans`
        self.tags = DESIGNS[design]
        self.templates = tuple(DEFAULT_TEMPLATES if templates is None else templates)
        self.features = CharFeatures(len(self.tags), hash_bits, self.templates)
        self.features.set_vocab(vocab_table)
        self._valid: dict[int, np.ndarray] = {}

    @property
    def vocab_table(self) -> np.ndarray:
        return self.features.vocab_table

    @property
    def hash_bits(self) -> int:
        return self.features.bits

    @property
    def n_tags(self) -> int:
        return len(self.tags)

    def config(self) -> dict:
        return {"structure": self.name, "tags": list(self.tags), "hash_bits": self.hash_bits,
                "templates": list(self.templates), "design": self.design}

    @classmethod
    def from_config(cls, config: dict, vocab_table=None) -> CharacterChain:
        design = config.get("design", "start")
        if design not in DESIGNS or tuple(config.get("tags", DESIGNS[design])) != DESIGNS[design]:
            raise ValueError(f"character chain design {design!r} with tags {config.get('tags')}: "
                             f"expected one of {DESIGNS}")
        return cls(config["hash_bits"], config.get("templates"), vocab_table, design)

    def shape(self, n: int) -> tuple[int, ...]:
        return (n, self.n_tags + 1, self.n_tags)

    def valid_parts(self, n: int) -> np.ndarray:
        mask = self._valid.get(n)
        if mask is None:
            mask = self._valid[n] = valid_parts(n, self.n_tags, 1)
            mask.flags.writeable = False
        return mask

    # -- the protocol -------------------------------------------------------
    def scores(self, x: CharExample, w) -> np.ndarray:
        return self.features.score(x.chars, w.array)

    def argmax(self, x: CharExample, scores: np.ndarray) -> np.ndarray:
        return chain_argmax(scores)[0]

    def cost_augmented_argmax(self, x: CharExample, scores: np.ndarray, gold: np.ndarray) -> np.ndarray:
        return self.argmax(x, scores + self.part_cost(x, gold))

    def marginals(self, x: CharExample, scores: np.ndarray) -> tuple[np.ndarray, float]:
        return chain_marginals(scores)

    def indicator(self, x: CharExample, y: np.ndarray) -> np.ndarray:
        y = np.asarray(y, dtype=np.intp)
        n = len(y)
        out = np.zeros(self.shape(n))
        prev = np.empty(n, dtype=np.intp)
        prev[0:1] = self.n_tags  # START before the text
        prev[1:] = y[:-1]
        out[np.arange(n), prev, y] = 1.0
        return out

    def part_cost(self, x: CharExample, gold: np.ndarray) -> np.ndarray:
        n, K = len(gold), self.n_tags
        wrong = (np.arange(K)[None, :] != np.asarray(gold)[:, None]).astype(np.float64)
        cost = np.broadcast_to(wrong[:, None, :], self.shape(n)).copy()
        cost[~self.valid_parts(n)] = 0.0
        return cost

    def add_features(self, x: CharExample, coef: np.ndarray, w, scale: float = 1.0) -> None:
        self.features.add(x.chars, coef, w, scale)

    def mix(self, gold: np.ndarray, pred: np.ndarray, positions: Sequence[int]) -> np.ndarray:
        return take_positions(gold, pred, positions)

    def gold(self, x: CharExample) -> np.ndarray:
        if len(x.tags) != x.n:
            raise ValueError(f"{x.source}:{x.line}: the example has no gold tags")
        return x.tags

    def hits(self, x: CharExample, gold: np.ndarray, pred: np.ndarray) -> tuple[int, int]:
        return int((np.asarray(gold) == np.asarray(pred)).sum()), len(gold)

    # -- prediction -----------------------------------------------------------
    def predict_batch(self, texts: Sequence[str], w) -> list[np.ndarray]:
        """The best tags (int8 per character) of every text: `tag_texts` with the weights' array."""
        return self.tag_texts(texts, w.array)

    def tag_texts(self, texts: Sequence[str], weights: np.ndarray, window: int = WINDOW,
                  margin: int = MARGIN, batch_chars: int = BATCH_CHARS) -> list[np.ndarray]:
        """The best tags (int8 per character) of every text: `tag_concat` split per text."""
        tags, starts = self.tag_concat(texts, weights, window, margin, batch_chars)
        return [tags[starts[i]:starts[i + 1]] for i in range(len(texts))]

    def tag_concat(self, texts: Sequence[str], weights: np.ndarray, window: int = WINDOW,
                   margin: int = MARGIN, batch_chars: int = BATCH_CHARS) -> tuple[np.ndarray, np.ndarray]:
        """(tags, starts): the best tags of the texts concatenated (int8, text i at
        starts[i]..starts[i+1]-1), decoded window by window. A text longer than `window` is
        cut into windows of `window` kept characters, each decoded with `margin` characters of
        context on both sides (exact features, and by then the Viterbi paths have merged), so
        memory is bounded by `batch_chars` per kernel call whatever the length of a text.
        Windows are grouped into kernel calls of at most about `batch_chars` characters
        (`CharFeatures.tag_many`, without the GIL)."""
        if window < 1 or margin < 0:
            raise ValueError("window must be positive and margin not negative")
        starts = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum([len(t) for t in texts], out=starts[1:])
        out = np.zeros(int(starts[-1]), dtype=np.int8)
        group: list = []
        size = 0
        for i, text in enumerate(texts):
            n = len(text)
            for a in range(0, n, window):
                b = min(n, a + window)
                lo, hi = max(0, a - margin), min(n, b + margin)
                if group and size + hi - lo > batch_chars:
                    self._tag_group(texts, group, weights, out, starts)
                    group, size = [], 0
                group.append((i, lo, hi, a, b))
                size += hi - lo
        if group:
            self._tag_group(texts, group, weights, out, starts)
        return out, starts

    def _tag_group(self, texts, group, weights, out, text_starts) -> None:
        whole = len(group) > 1 and all(lo == 0 and hi == len(texts[i]) for i, lo, hi, _, _ in group)
        if whole:  # short texts, each one window: one encode of all of them
            cps = code_points("".join(texts[i] for i, *_ in group))
        else:
            cps = np.concatenate([code_points(texts[i][lo:hi]) for i, lo, hi, _, _ in group])
        starts = np.zeros(len(group) + 1, dtype=np.int64)
        np.cumsum([hi - lo for _, lo, hi, _, _ in group], out=starts[1:])
        tags = self.features.tag_many(char_values(cps), starts, weights)
        for k, (i, lo, hi, a, b) in enumerate(group):
            base = text_starts[i]
            out[base + a:base + b] = tags[starts[k] + (a - lo):starts[k] + (b - lo)]


class TokenizerChain(CharacterChain):
    """The character chain of a tokenizer component (`arborist.Tokenizer.v1`): the chain
    (the Structure trainers train) with what a tokenizer learns besides its weights, the
    multiword-token expander, and how its training examples are made."""

    def __init__(self, hash_bits: int = 20, templates: Sequence[str] | None = None, design: str = "start",
                 window_sentences: int = 3, join: str = "space", mwt_min_types: int = 3,
                 mwt_min_share: float = 0.6, max_sentence_tokens: int = 1000, mwt_context: bool = True,
                 mwt_context_min_count: int = 2, mwt_context_min_share: float = 0.7,
                 mwt_context_pair_min_count: int = 1, mwt_classifier: bool = True, mwt_classifier_epochs: int = 10,
                 mwt_classifier_runs: int = 4, mwt_classifier_seed: int = 0, mwt_classifier_margin: float = 30.0):
        from .mwt import MultiwordExpander

        super().__init__(hash_bits, templates, None, design)
        if window_sentences < 1 or max_sentence_tokens < 1:
            raise ValueError("window_sentences and max_sentence_tokens must be at least 1")
        self.window_sentences, self.join = int(window_sentences), join
        self.max_sentence_tokens = int(max_sentence_tokens)
        self.expander = MultiwordExpander(mwt_min_types, mwt_min_share, mwt_classifier, mwt_classifier_epochs,
                                          mwt_classifier_runs, mwt_classifier_seed, mwt_classifier_margin)
        # The multiword decisions in context (`MultiwordExpander.fit_context`), as `train_tokenizer`'s.
        self.mwt_context = (bool(mwt_context), int(mwt_context_min_count), float(mwt_context_min_share),
                            int(mwt_context_pair_min_count))

    def registry_call(self) -> dict:
        on, min_count, min_share, pair_min_count = self.mwt_context
        return {"@structures": "arborist.Tokenizer.v1", "hash_bits": self.hash_bits, "templates": list(self.templates),
                "design": self.design, "window_sentences": self.window_sentences, "join": self.join,
                "mwt_min_types": self.expander.min_types, "mwt_min_share": self.expander.min_share,
                "max_sentence_tokens": self.max_sentence_tokens, "mwt_context": on,
                "mwt_context_min_count": min_count, "mwt_context_min_share": min_share,
                "mwt_context_pair_min_count": pair_min_count, "mwt_classifier": self.expander.classifier,
                "mwt_classifier_epochs": self.expander.classifier_epochs,
                "mwt_classifier_runs": self.expander.classifier_runs, "mwt_classifier_seed": self.expander.seed,
                "mwt_classifier_margin": self.expander.classifier_margin}

    def initialize(self, sentences) -> None:
        """Learn the multiword expansions of the training sentences (their CoNLL-U lines), and
        with `mwt_context` the decisions their neighbours make for the surfaces the treebank
        writes both ways."""
        from .corpus import gold_paragraphs

        self.expander.fit_sentences(([(t.form, t.words or None, t.upos) for t in s.tokens] for p in gold_paragraphs(sentences)
                                     for s in p.sentences), *self.mwt_context)
