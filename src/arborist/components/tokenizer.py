"""The tokenizer kind: raw text to tokens, multiword tokens' words and sentences, by a
character chain trained on the treebank (`arborist.tokenizer`). It is the pipeline's text
stage: it runs before the sentence batches the other components annotate
(`Pipeline.tokenize`), and it trains on the raw-text signal of the training sentences'
CoNLL-U lines (`# text`, SpaceAfter=No, multiword tokens, `# newpar`/`# newdoc`)."""
from __future__ import annotations

import json
from pathlib import Path

from ..component import Component, ModelError
from ..tokenizer.api import Tokenizer as TextTokenizer
from ..tokenizer.api import paragraph_examples
from ..tokenizer.corpus import align, gold_paragraphs, paragraph_texts
from ..tokenizer.mwt import MultiwordExpander


class Tokenizer(Component):
    kind = "tokenizer"
    structures = ("arborist.Tokenizer.v1",)
    reads = ("text",)
    writes = ("form",)
    score_key = "dev_words_f1"

    def examples(self, sentences, training: bool = False) -> list:
        s = self.structure
        return paragraph_examples(gold_paragraphs(sentences), s.window_sentences, False, None, s.join, s.design)

    def annotate(self, batch):
        return None  # the text stage: sentences reach the batch already tokenized

    def tokenize(self, texts, presegmented: bool = False):
        """Documents (paragraphs of sentences of tokens, with the words of multiword tokens) of raw
        texts; `presegmented`: each line is a sentence (`arborist.tokenizer.api.Tokenizer.tokenize`)."""
        s = self.structure
        return TextTokenizer(s, self.weights.array, s.expander, s.max_sentence_tokens).tokenize(
            texts, presegmented=presegmented)

    def score(self, gold, parsed, unseen=None) -> dict:
        """Tokens, sentences and words F1 on the raw text of the gold sentences' paragraphs (the
        words of a multiword token count in order within it). `arborist evaluate` with the
        official scorer gives the CoNLL 2018 figures; this is the dev score of training."""
        paragraphs = gold_paragraphs(gold)
        docs = self.tokenize(paragraph_texts(paragraphs))
        counts = {k: [0, 0, 0] for k in ("tokens", "sentences", "words")}  # right, predicted, gold
        for paragraph, doc in zip(paragraphs, docs):
            wanted = {"tokens": set(), "sentences": set(), "words": set()}
            offset = 0
            for sentence in paragraph.sentences:
                spans = [(offset + a, offset + b) for a, b in align(sentence)]
                wanted["sentences"].add((spans[0][0], spans[-1][1]))
                for (a, b), token in zip(spans, sentence.tokens):
                    wanted["tokens"].add((a, b))
                    wanted["words"].update((a, b, k, w) for k, w in enumerate(token.words or (token.form,)))
                offset += len(sentence.text) + 1
            got = {"tokens": set(), "sentences": set(), "words": set()}
            for sentence in doc.sentences:
                got["sentences"].add((sentence.tokens[0].start, sentence.tokens[-1].end))
                for t in sentence.tokens:
                    got["tokens"].add((t.start, t.end))
                    got["words"].update((t.start, t.end, k, w) for k, w in enumerate(t.word_forms))
            for k in counts:
                counts[k][0] += len(wanted[k] & got[k])
                counts[k][1] += len(got[k])
                counts[k][2] += len(wanted[k])
        f1 = {k: 200.0 * right / (predicted + expected) if predicted + expected else 0.0
              for k, (right, predicted, expected) in counts.items()}
        # "words" and "sentences" are counts in every component's scores; the F1s are named apart
        return {"words": counts["words"][2], "sentences": counts["sentences"][2], "tokens_f1": f1["tokens"],
                "sentences_f1": f1["sentences"], "words_f1": f1["words"]}

    def save(self, directory: Path) -> None:
        super().save(directory)
        (directory / f"{self.name}.expander.json").write_text(
            json.dumps(self.structure.expander.to_json(), ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path, name: str, structure, info=None, weights_file=None, mmap=False):
        path = directory / f"{name}.expander.json"
        try:
            structure.expander = MultiwordExpander.from_json(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError, RecursionError) as e:
            raise ModelError(f"{path}: cannot read the multiword expander ({type(e).__name__}: {e})") from None
        return super().load(directory, name, structure, info, weights_file, mmap)
