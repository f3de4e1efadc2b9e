"""Scoring as the CoNLL 2018 shared task does: raw text (`arborist evaluate --raw-text`), and
gold tokens (the official table of `arborist evaluate`).

The gold file's own text (its sentences' `# text`, paragraphs at `# newpar`/`# newdoc`,
joined as `ud_raw_text.py` joins them; a sentence without `# text`, which that script leaves
out, gets its forms and SpaceAfter) is parsed as `arborist parse` parses a text file,
and the output is scored against the gold file. With `gold_sentences` (`--gold-sentences`),
each sentence's text is a line of its own, parsed as presegmented text (`-i presegmented`):
the same score with the treebank's sentence boundaries, so the difference is what sentence
splitting costs.

Every metric, Tokens to BLEX, is the official CoNLL 2018 scorer's: `udtools.udeval`, the
UD project's package of that scorer (its `evaluate` and `load_conllu_file`: words aligned by
their character spans, and inside a multiword token by their forms). Until 2026-11-28
(session 25) Words to BLEX came from udapi's `eval.Conll18`, which aligns words by their forms
alone: identical forms near a tokenization difference could pair otherwise (tr_imst dev, two
"?" words, UPOS 90.13 against the scorer's 90.15).
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


TREE_METRICS = ("UAS", "LAS", "CLAS", "MLAS", "BLEX")


def score(gold: Path, system: Path, trees: bool = True) -> dict:
    """{metric: {"precision", "recall", "f1"}} in percent, the official scorer's (`udtools`).
    `trees` false: the system predicts no trees (HEAD '_', which the scorer refuses), so it is
    scored on a copy with placeholder trees and the tree metrics are left out. A file the scorer
    cannot read (two roots, a cycle, text that differs from the gold's) raises ValueError with
    its message."""
    from udtools.udeval import UDError, evaluate, load_conllu

    def load(path: Path):
        # as load_conllu_file, but a byte-order mark is no part of the first line (the
        # readers of arborist take it, and `arborist parse` keeps it in its output)
        with open(path, encoding="utf-8-sig") as f:
            return load_conllu(f, str(path), {})

    with tempfile.TemporaryDirectory() as tmp:
        if not trees:
            system = _with_chain_trees(system, Path(tmp) / "system.conllu")
        try:
            scores = evaluate(load(gold), load(system))
        except UDError as e:
            raise ValueError(f"the CoNLL 2018 scorer refuses {gold} or {system}: {e}") from None
    return {metric: {"precision": 100 * scores[metric].precision, "recall": 100 * scores[metric].recall,
                     "f1": 100 * scores[metric].f1} for metric in METRICS if trees or metric not in TREE_METRICS}


def _with_chain_trees(system: Path, out: Path) -> Path:
    """A copy of CoNLL-U whose words each hang from the word before (the first from the root,
    DEPREL "dep"): a tree the scorer reads, for output without one."""
    lines = []
    for line in system.read_text(encoding="utf-8").splitlines(keepends=True):
        columns = line.rstrip("\r\n").split("\t")
        if len(columns) == 10 and columns[0].isdigit():
            word = int(columns[0])
            columns[6], columns[7] = str(word - 1), "root" if word == 1 else "dep"
            line = "\t".join(columns) + line[len(line.rstrip("\r\n")):]
        lines.append(line)
    out.write_text("".join(lines), encoding="utf-8")
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
        jobs = plan([text], output, "conllu", "presegmented" if gold_sentences else "text")
        report = parse_files(pipeline, jobs, "conllu", model_path=model_path, lang=lang, progress=False,
                             quiet=True)  # its files are temporary: no line about them
        if report.failed:
            raise ValueError(report.failed[0][1])
        return score(gold, jobs[0].target, trees=pipeline.writer("head") is not None)


def evaluate_gold_tokens(pipeline, gold: Path, sentences: list, parsed: list, gold_tags: bool = False) -> dict:
    """The official scorer's table (see `score`) of gold sentences as the pipeline annotated them
    (`parsed`, of `Pipeline.parse(sentences, gold_tags)`): the CoNLL 2018 figures with gold
    tokenization, as UDPipe reports them beside the raw-text ones. The system file is what
    `arborist parse GOLD.conllu` writes, but for the columns the model predicts none of: they
    are "_" (kept, `arborist parse` would score the gold file's own lemmas, FEATS or labels),
    except the tags, lemmas and FEATS `gold_tags` keeps and parses with."""
    from .corpus import TAG_COLS, format_sentence

    written = {column for component in pipeline.stage(gold_tags) for column in component.writes}
    blank = [c for c in TAG_COLS if c not in written and not gold_tags]
    with tempfile.TemporaryDirectory() as tmp:
        system = Path(tmp) / "system.conllu"
        with open(system, "w", encoding="utf-8", newline="") as f:
            for sentence, annotated in zip(sentences, parsed):
                tags = {**annotated.columns, **{c: ["_"] * sentence.n for c in blank}}
                deprels = annotated.deprels
                if annotated.heads is not None and deprels is None:  # a parser without a labeler
                    deprels = ["_"] * (sentence.n + 1)
                f.write(format_sentence(sentence, annotated.heads, deprels, tags))
        return score(gold, system, trees=pipeline.writer("head") is not None)
