"""A trained tokenizer, sentence segmenter and multiword-token expander (issue 23).

`CharacterChain` (a Structure: a tag chain over characters, Cython features and batch
kernel), `MultiwordExpander` (lexicon and suffix rules), and the `Tokenizer` API that
turns raw texts into documents and CoNLL-U.
"""
from .api import (
                  Document,
                  Paragraph,
                  Sentence,
                  Token,
                  Tokenizer,
                  conllu_lines,
                  decode_tags,
                  paragraph_examples,
                  split_paragraphs,
                  train_tokenizer,
                  write_conllu,
)
from .chain import TAGS, CharacterChain, CharExample, known_tokens, make_example
from .corpus import (
                  GoldParagraph,
                  GoldSentence,
                  GoldToken,
                  align,
                  paragraph_texts,
                  read_paragraphs,
)
from .mwt import MultiwordExpander

__all__ = [
                  "TAGS",
                  "CharExample",
                  "CharacterChain",
                  "Document",
                  "GoldParagraph",
                  "GoldSentence",
                  "GoldToken",
                  "MultiwordExpander",
                  "Paragraph",
                  "Sentence",
                  "Token",
                  "Tokenizer",
                  "align",
                  "conllu_lines",
                  "decode_tags",
                  "known_tokens",
                  "make_example",
                  "paragraph_examples",
                  "paragraph_texts",
                  "read_paragraphs",
                  "split_paragraphs",
                  "train_tokenizer",
                  "write_conllu",
]
