"""Scoring raw text as the CoNLL 2018 shared task does (`arborist evaluate --raw-text`).

The gold file's own text (its sentences' `# text`, paragraphs at `# newpar`/`# newdoc`,
joined as `ud_raw_text.py` joins them; a sentence without `# text`, which that script leaves
out, gets its forms and SpaceAfter) is parsed as `arborist parse` parses a text file,
and the output is scored against the gold file. With `gold_sentences` (`--gold-sentences`),
each sentence's text is a line of its own, parsed as presegmented text (`-i presegmented`):
the same score with the treebank's sentence boundaries, so the difference is what sentence
splitting costs.

- Tokens and Sentences F1: spans over the text's characters without whitespace, as the
  official scorer defines them;
- Words, UPOS, XPOS, UFeats, AllTags, Lemmas, UAS, LAS, CLAS, MLAS and BLEX F1: udapi's
  `eval.Conll18` on the sentences `util.ResegmentGold` aligns (udapi's reimplementation
  of the official scorer; its figures equal the scorer's).
"""
from __future__ import annotations

import tempfile
from pathlib import Path

METRICS = ("Tokens", "Sentences", "Words", "UPOS", "XPOS", "UFeats", "AllTags", "Lemmas", "UAS", "LAS", "CLAS",
           "MLAS", "BLEX")


def raw_text(gold: Path, gold_sentences: bool = False) -> str:
    """The text a treebank was annotated from: each paragraph's sentence texts joined by a
    space (`gold_sentences`: a line each), paragraphs separated by a blank line."""
    from .corpus import read_conllu
    from .tokenizer.corpus import gold_paragraphs, paragraph_texts

    paragraphs = gold_paragraphs(read_conllu(gold))
    if gold_sentences:
        return "\n\n".join("\n".join(s.text for s in p.sentences) for p in paragraphs) + "\n"
    return "\n\n".join(paragraph_texts(paragraphs)) + "\n"


def spans(path: Path) -> tuple[set, set]:
    """(token spans, sentence spans) of a CoNLL-U file over its characters without whitespace."""
    tokens, sentences = set(), set()
    position, first, last, skip_to = 0, None, None, 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\r\n")
            if not line:
                if first is not None:
                    sentences.add((first, last))
                first, skip_to = None, 0
                continue
            if line.startswith("#"):
                continue
            columns = line.split("\t")
            if "." in columns[0]:
                continue
            if "-" in columns[0]:
                skip_to = int(columns[0].split("-")[1])
            elif int(columns[0]) <= skip_to:
                continue  # a word of a multiword token: the token has the characters
            length = len("".join(columns[1].split()))
            tokens.add((position, position + length))
            first = position if first is None else first
            position += length
            last = position
    if first is not None:
        sentences.add((first, last))
    return tokens, sentences


def score(gold: Path, system: Path) -> dict:
    """{metric: {"precision", "recall", "f1"}} in percent."""
    from udapi.block.eval.conll18 import Conll18, prec_rec_f1
    from udapi.block.read.conllu import Conllu
    from udapi.block.util.resegmentgold import ResegmentGold
    from udapi.core.document import Document

    out = {}
    gold_spans, system_spans = spans(gold), spans(system)
    for name, g, s in zip(("Tokens", "Sentences"), gold_spans, system_spans):
        p, r, f, _ = prec_rec_f1(len(g & s), len(s), len(g))
        out[name] = {"precision": 100 * p, "recall": 100 * r, "f1": 100 * f}
    document = Document()
    Conllu(files=str(gold), zone="gold").apply_on_document(document)
    Conllu(files=str(system), zone="pred", ignore_sent_id=True).apply_on_document(document)
    ResegmentGold().apply_on_document(document)
    evaluation = Conll18(print_results=False)
    evaluation.apply_on_document(document)
    count = evaluation.total_count
    for metric in METRICS[2:]:
        content = metric in ("CLAS", "MLAS", "BLEX")
        pred, wanted = (count["pred_cont"], count["gold_cont"]) if content else (count["pred"], count["gold"])
        p, r, f, _ = prec_rec_f1(count[metric], pred, wanted)
        out[metric] = {"precision": 100 * p, "recall": 100 * r, "f1": 100 * f}
    return out


def evaluate_raw_text(pipeline, model_path: Path, gold: Path, lang: str | None = None,
                      gold_sentences: bool = False) -> dict:
    """Parse the gold file's own text as `arborist parse` would and score it (see `score`);
    `gold_sentences`: a sentence per line, parsed as presegmented text."""
    from .batch import parse_files, plan

    with tempfile.TemporaryDirectory() as tmp:
        text = Path(tmp) / f"{gold.stem}.txt"
        text.write_text(raw_text(gold, gold_sentences), encoding="utf-8")
        output = Path(tmp) / "out"
        output.mkdir()
        jobs = plan([text], output, "conllu", "presegmented" if gold_sentences else "auto")
        report = parse_files(pipeline, jobs, "conllu", model_path=model_path, lang=lang, progress=False)
        if report.failed:
            raise ValueError(report.failed[0][1])
        return score(gold, output / f"{gold.stem}.conllu")
