"""Lemmatizer and morphologizer (FEATS) on UD treebanks with gold tokens.

For each treebank: train a UPOS tagger as the pipeline configs do (first-order chain,
averaged perceptron with a margin of 20, the tag dictionary at N = 1 (`--tagger-dictionary`,
0: none, the default before 2026-11-26's session 8), best epoch on dev), tag dev with it and the
training set by k-fold jackknifing (the morphologizer and the lemmatizer read UPOS); train the
morphologizer and the lemmatizer (averaged perceptron with a margin of 20, best epoch on dev
UFeats / Lemmas; `--tagger-margin`, `--morph-margin`, `--lemma-margin`, 0 for the plain
perceptron, the defaults before 2026-11-26's session 7); score dev with the official CoNLL 2018 scorer (Lemmas, UFeats; UPOS for
reference) and, on words whose form was not in training, with the same conventions
(universal features only; a gold lemma '_' counts as right). Speed: both components
together in one process, batches of 64 sentences, predicted ids written into the
batch's FEATS and LEMMA rows as string ids (as a pipeline would), after one warm-up pass.

    python scripts/bench_lemma_morph.py [--treebanks en_ewt el_gdt ...]

With --stacked, a draft morphologizer trained first gives the morphologizer its bundles
(5-fold jackknifed on the training set, `--folds`), which its DRAFT_TEMPLATES read, as a
`morphologizer_draft` component does in a pipeline; the speed then counts both morphologizers,
and `speed_without_draft` is the draft and the lemmatizer alone (what the pipeline runs without
stacking), the two alternated three times in the run (medians).

With --morph-reads-lemma, the morphologizers (the draft too) read the inflection of the
lemmatizer's lemmas (`reads_lemma = true`): the lemmatizer trains first, its lemmas are
`--folds`-fold jackknifed on the training set and predicted on dev, and the speed runs the
lemmatizer first, as the pipeline does.

With --morph-seeds N, each morphologizer (the draft, each of its jackknife folds, the second
one) is the mean of N runs' weights, run k with trainer seed k kept at its best epoch on dev,
as `seeds = N` in a pipeline config trains it (`Training.train_members`, `train._fold`).

Writes scripts/results/lemma_morph_<treebank>.json. Jackknifed tags are cached in
--cache (reused only with the same tagger settings).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from arborist.components.lemmatizer import add_lemma_strings
from arborist.corpus import read_corpus
from arborist.learn.perceptron import MarginPerceptron
from arborist.lemma.lemmatizer import Lemmatizer
from arborist.morph.choice import conll_column, format_columns
from arborist.morph.morphologizer import DRAFT_TEMPLATES, LEMMA_TEMPLATES, Morphologizer, with_templates
from arborist.sentence import FEATS, FORM, LEMMA, ROOT, UPOS, SentenceBatch
from arborist.strings import hash_strings
from arborist.tagger.chain import LinearChain
from arborist.weights import Weights

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import official_scorer  # noqa: E402  (scripts/official_scorer.py)

ROOT_DIR = Path(__file__).resolve().parent.parent
UD = Path(os.environ.get("ARBORIST_UD", "/work/shared/corpora/ud"))
TREEBANKS = ("en_ewt", "el_gdt", "hu_szeged", "tr_imst", "it_partut")
TARGETS = {"en_ewt": (97.0, 96.0), "el_gdt": (94.6, 90.3), "hu_szeged": (88.5, 88.1),
           "tr_imst": (90.0, 88.5), "it_partut": (96.5, 96.3)}
BATCH = 64


def make_trainer(margin: float, seed: int = 0):
    """The averaged perceptron, cost-augmented with `margin` (0: the plain one exactly)."""
    return MarginPerceptron(margin=margin, averaged=True, shuffle=True, seed=seed)


def with_upos(sentence, tags, blank=False):
    """The sentence with these UPOS tags; `blank`: and no LEMMA or FEATS (the gold values of
    dev must not reach a model's input rows)."""
    attrs = sentence.attrs.copy()
    attrs[UPOS] = hash_strings([ROOT] + list(tags))
    if blank:
        attrs[LEMMA, 1:] = attrs[FEATS, 1:] = hash_strings(["_"])[0]
    return replace(sentence, attrs=attrs, upos=[ROOT] + list(tags))


def with_feats(sentence, bundles):
    """The sentence with these bundles in its FEATS row (a draft morphologizer's, for stacking)."""
    attrs = sentence.attrs.copy()
    attrs[FEATS, 1:] = hash_strings(list(bundles))
    return replace(sentence, attrs=attrs)


def with_lemmas(sentence, lemmas):
    """The sentence with these lemmas in its LEMMA row and strings (a lemmatizer's, for a
    morphologizer reading the inflection)."""
    attrs = sentence.attrs.copy()
    attrs[LEMMA, 1:] = hash_strings(list(lemmas))
    return replace(sentence, attrs=attrs, lemmas=[ROOT] + list(lemmas))


def feature_templates(args, drafts=False):
    """The morphologizer's feature templates: the default ones, with LEMMA_TEMPLATES
    (`--morph-reads-lemma`) and DRAFT_TEMPLATES (`drafts`)."""
    if not (args.morph_reads_lemma or drafts):
        return None
    return with_templates(None, LEMMA_TEMPLATES if args.morph_reads_lemma else (), DRAFT_TEMPLATES if drafts else ())


def by_sentence(predict_batch, strings, sentences):
    """The strings of each sentence's predicted ids, predicted in batches of 256 sentences."""
    out = []
    for k in range(0, len(sentences), 256):
        part = sentences[k:k + 256]
        ids = predict_batch(SentenceBatch.from_sentences(part))
        pos = 0
        for s in part:
            out.append(strings(ids[pos:pos + s.n]))
            pos += s.n
    return out


def predict_lemmas(model, w, sentences):
    """The lemma strings of each sentence, predicted in batches."""
    ids = by_sentence(lambda b: model.predict_batch(b, w), lambda x: x, sentences)
    return [model.lemma_strings(s.forms[1:], i) for s, i in zip(sentences, ids)]


def predict_bundles(model, w, sentences):
    return by_sentence(lambda b: model.predict_batch(b, w), model.feats_strings, sentences)


def jackknife(sentences, folds, fit_predict):
    """Each sentence's values from a model that did not train on it: `fit_predict(rest, held)`
    trains on the other folds and returns one value per sentence of the held-out fold."""
    out: list = [None] * len(sentences)
    for fold in range(folds):
        rest = [x for i, x in enumerate(sentences) if i % folds != fold]
        held = [x for i, x in enumerate(sentences) if i % folds == fold]
        for i, values in zip(range(fold, len(sentences), folds), fit_predict(rest, held)):
            out[i] = values
    return out


def draft_bundles(args, train_p, dev_p, score):
    """Stacking (`--stacked`): a first morphologizer trained as the default one (best epoch on
    dev), its bundles on dev, and its `--folds`-fold jackknifed bundles on the training set
    (each fold trained for the best epoch count), as `arborist train` gives them to a
    morphologizer with reads_draft = true. Returns (model, weights, train drafts, dev drafts,
    report)."""
    make = lambda: Morphologizer(hash_bits=args.bits, known_min_count=args.known_min_count,
                                 suffix_length=args.suffix_length, suffix_min_count=args.suffix_min_count,
                                 feature_templates=feature_templates(args))
    draft = make()
    draft.initialize(train_p)
    w, epoch, history, seconds = train_component(draft, train_p, dev_p, None, args.epochs,
                                                 lambda ids: score(draft.feats_strings(ids)),
                                                 margin=args.morph_margin, seeds=args.morph_seeds)

    def fit_predict(rest, held):
        model = make()
        model.initialize(rest)
        return predict_bundles(model, trained_for(model, model.examples(rest, training=True), epoch,
                                                  args.morph_margin), held)

    start = time.perf_counter()
    jack = jackknife(train_p, args.folds, fit_predict)
    report = {"best_epoch": epoch, "history": history, "train_seconds": seconds,
              "jackknife_seconds": time.perf_counter() - start}
    return draft, w, jack, predict_bundles(draft, w, dev_p), report


def tag_sentences(chain, w, sentences):
    return by_sentence(lambda b: chain.predict_batch(b, w), lambda ids: [chain.tags[i] for i in ids], sentences)


def upos_accuracy(tags, sentences):
    right = sum(a == b for t, s in zip(tags, sentences) for a, b in zip(t, s.upos[1:]))
    return right / sum(s.n for s in sentences)


def train_tagger(train, dev, epochs, fixed=False, margin=0.0, dictionary=0, seeds=1):
    """(chain, weights, best epoch, dev accuracy): best epoch on dev unless `fixed`. `seeds`:
    the mean of that many runs' weights (run k with trainer seed k at its best epoch, or at
    `epochs[k]` epochs when `fixed`: `epochs` is then the list of the runs' best epochs), and
    the list of their best epochs."""
    chain = LinearChain.from_sentences(train, "upos", order=1, hash_bits=22, dictionary_min_count=dictionary)
    runs, best_epochs = [], []
    for seed in range(seeds):
        n = epochs[seed] if isinstance(epochs, list) else epochs
        trainer = make_trainer(margin, seed=seed)
        trainer.begin(chain, train, chain.hash_bits)
        best = (None, 0, -1.0)
        for epoch in range(1, n + 1):
            trainer.epoch(chain, train)
            if fixed and epoch < n:
                continue
            w = trainer.prediction_weights()
            acc = upos_accuracy(tag_sentences(chain, w, dev), dev) if dev else 0.0
            if acc > best[2] or fixed:
                best = (w, epoch, acc)
        if seeds == 1:
            return chain, best[0], best[1], best[2]
        runs.append(best[0])
        best_epochs.append(best[1])
    w = mean_weights(runs)
    return chain, w, best_epochs, upos_accuracy(tag_sentences(chain, w, dev), dev) if dev else 0.0


def upos_tags(name, train, dev, args):
    """Predicted dev UPOS and jackknifed train UPOS (cached), and the tagger's figures."""
    key = f"{name}_e{args.tagger_epochs}_f{args.folds}"
    if args.tagger_margin > 0:
        key += f"_m{args.tagger_margin:g}"
    if args.tagger_dictionary > 0:
        key += f"_d{args.tagger_dictionary}"
    if args.max_train:
        key += f"_n{args.max_train}"
    if args.tagger_seeds > 1:
        key += f"_s{args.tagger_seeds}"
    cache = Path(args.cache) / f"{key}.json"
    if cache.exists():
        cached = json.loads(cache.read_text(encoding="utf-8"))
        if cached.get("tagger_margin", 0.0) != args.tagger_margin:
            raise SystemExit(f"{cache}: a jackknife of tagger margin {cached.get('tagger_margin', 0.0)}, "
                             f"not {args.tagger_margin}")
        return cached
    start = time.perf_counter()
    chain, w, best_epoch, dev_acc = train_tagger(train, dev, args.tagger_epochs, margin=args.tagger_margin,
                                                 dictionary=args.tagger_dictionary, seeds=args.tagger_seeds)
    tagger_seconds = time.perf_counter() - start
    dev_tags = tag_sentences(chain, w, dev)
    start = time.perf_counter()

    def fit_predict(rest, held):
        c, wf, _, _ = train_tagger(rest, [], best_epoch, fixed=True, margin=args.tagger_margin,
                                   dictionary=args.tagger_dictionary, seeds=args.tagger_seeds)
        return tag_sentences(c, wf, held)

    jack = jackknife(train, args.folds, fit_predict)
    out = {"dev": dev_tags, "train": jack, "tagger_best_epoch": best_epoch, "tagger_dev_upos": dev_acc,
           "tagger_train_seconds": tagger_seconds, "jackknife_seconds": time.perf_counter() - start,
           "jackknife_train_upos": upos_accuracy(jack, train), "tagger_margin": args.tagger_margin,
           "tagger_dictionary": args.tagger_dictionary, "tagger_seeds": args.tagger_seeds}
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(out), encoding="utf-8")
    return out


def mean_weights(runs) -> Weights:
    """The mean of the runs' weights, summed in run order and divided once (as `arborist
    average` and a component trained with `seeds` do)."""
    total, n = None, 0
    for w in runs:
        total = w.array.copy() if total is None else total + w.array
        n += 1
        bits = w.bits
    return Weights(bits, False, total / n)


def train_component(model, train, dev, dev_gold, epochs, score, margin=0.0, seeds=1):
    """Perceptron epochs (`make_trainer`) on `train` examples; keep the weights of the best dev
    score. With `seeds` > 1, as a component trained with `seeds` in a pipeline config: run k
    with trainer seed k, each kept at its best epoch on dev, and the mean of their weights
    returned; the best epoch is then the list of the runs' and the history one list per run."""
    start = time.perf_counter()
    examples = model.examples(train, training=True)
    batch_dev = [SentenceBatch.from_sentences(dev[k:k + 256]) for k in range(0, len(dev), 256)]
    runs, best_epochs, histories = [], [], []
    for seed in range(seeds):
        trainer = make_trainer(margin, seed=seed)
        trainer.begin(model, examples, model.hash_bits)
        best = (None, 0, -1.0)
        history = []
        for epoch in range(1, epochs + 1):
            metrics = trainer.epoch(model, examples)
            w = trainer.prediction_weights()
            ids = np.concatenate([model.predict_batch(b, w) for b in batch_dev])
            acc = score(ids)
            history.append({"epoch": epoch, "train_accuracy": metrics["train_accuracy"], "dev": acc})
            if acc > best[2]:
                best = (w, epoch, acc)
        if seeds == 1:
            return best[0], best[1], history, time.perf_counter() - start
        runs.append(best[0])
        best_epochs.append(best[1])
        histories.append(history)
    return mean_weights(runs), best_epochs, histories, time.perf_counter() - start


def trained_for(model, examples, epochs, margin):
    """The prediction weights after `epochs` epochs (a list: the mean of as many runs, run k
    with trainer seed k for epochs[k] epochs, as `train_component` with seeds)."""
    def run(seed, n):
        trainer = make_trainer(margin, seed=seed)
        trainer.begin(model, examples, model.hash_bits)
        for _ in range(n):
            trainer.epoch(model, examples)
        return trainer.prediction_weights()

    if not isinstance(epochs, list):
        return run(0, epochs)
    return mean_weights(run(seed, n) for seed, n in enumerate(epochs))


def universal(feats: str) -> str:
    return "|".join(sorted(f for f in feats.split("|") if f.split("=", 1)[0] in UNIVERSAL))


def run(name, args):
    train = read_corpus(UD / name / f"{name}-ud-train.conllu")
    dev = read_corpus(UD / name / f"{name}-ud-dev.conllu")
    if args.max_train:
        train = train[:args.max_train]
    if args.stacked and args.joint:
        raise SystemExit("--stacked and --joint: a draft of joint classes is not measured here")
    if args.morph_reads_lemma and args.joint:
        raise SystemExit("--morph-reads-lemma and --joint: the lemmatizer would run before the joint UPOS it reads")
    tags = upos_tags(name, train, dev, args)
    train_p = [with_upos(s, t) for s, t in zip(train, tags["train"])]
    dev_p = [with_upos(s, t, blank=True) for s, t in zip(dev, tags["dev"])]
    gold_lemmas = [l for s in dev for l in conll_column(s, 2)]
    gold_feats = [f for s in dev for f in conll_column(s, 5)]
    gold_ufeats = [universal(f) for f in gold_feats]
    forms = [f for s in dev for f in s.forms[1:]]
    seen = {f for s in train for f in s.forms[1:]}
    unseen = np.array([f not in seen for f in forms])

    bundles_score = lambda bundles: float(np.mean([universal(b) == g for b, g in zip(bundles, gold_ufeats)]))
    make_lemmatizer = lambda: Lemmatizer(hash_bits=args.bits, min_count=args.min_count,
                                         lexicon_min_count=args.lexicon_min_count,
                                         upos_candidates=args.upos_candidates, lexicon_share=args.lexicon_share,
                                         known_lemmas=args.known_lemmas)
    lem = make_lemmatizer()
    lemma_ok = lambda pred: [p == g or g == "_" for p, g in zip(pred, gold_lemmas)]
    lemma_score = lambda ids: float(np.mean(lemma_ok(lem.lemma_strings(forms, ids))))

    def train_lemmatizer(dev_sentences):
        lem.initialize(train_p)
        return train_component(lem, train_p, dev_sentences, gold_lemmas, args.epochs, lemma_score,
                               margin=args.lemma_margin)

    draft = w_draft = draft_report = lemma_jackknife = None
    morph_train, morph_dev = train_p, dev_p
    if args.morph_reads_lemma:
        # The lemmatizer first (it reads UPOS only), its lemmas on dev and its --folds-fold
        # jackknifed lemmas on the training set, for the morphologizers' inflection templates.
        w_lem, lem_epoch, lem_history, lem_seconds = train_lemmatizer(dev_p)

        def fit_predict(rest, held):
            model = make_lemmatizer()
            model.initialize(rest)
            return predict_lemmas(model, trained_for(model, model.examples(rest, training=True), lem_epoch,
                                                     args.lemma_margin), held)

        start = time.perf_counter()
        jack = jackknife(train_p, args.folds, fit_predict)
        lemma_jackknife = {"seconds": time.perf_counter() - start,
                           "train_lemmas": 100 * float(np.mean([a == b for x, j in zip(train_p, jack)
                                                                for a, b in zip(conll_column(x, 2), j)]))}
        morph_train = [with_lemmas(x, j) for x, j in zip(train_p, jack)]
        morph_dev = [with_lemmas(x, j) for x, j in zip(dev_p, predict_lemmas(lem, w_lem, dev_p))]
    if args.stacked:
        draft, w_draft, train_drafts, dev_drafts, draft_report = draft_bundles(args, morph_train, morph_dev,
                                                                               bundles_score)
        draft_report["dev_ufeats"] = 100 * bundles_score([b for d in dev_drafts for b in d])
        morph_train = [with_feats(s, d) for s, d in zip(morph_train, train_drafts)]
        morph_dev = [with_feats(s, d) for s, d in zip(morph_dev, dev_drafts)]
    morph = Morphologizer(hash_bits=args.bits, known_min_count=args.known_min_count, joint=args.joint,
                          suffix_length=args.suffix_length, suffix_min_count=args.suffix_min_count,
                          feature_templates=feature_templates(args, drafts=args.stacked))
    start = time.perf_counter()
    morph.initialize(morph_train)
    feats_score = lambda ids: bundles_score(morph.feats_strings(ids))
    w_morph, morph_epoch, morph_history, morph_seconds = train_component(morph, morph_train, morph_dev, gold_feats,
                                                                         args.epochs, feats_score,
                                                                         margin=args.morph_margin,
                                                                         seeds=args.morph_seeds)
    morph_seconds += 0.0
    if args.joint:
        # The lemmatizer reads the joint morphologizer's UPOS on dev (trained on the jackknifed tagger's).
        dev_ids = np.concatenate([morph.predict_batch(SentenceBatch.from_sentences(dev_p[k:k + 256]), w_morph)
                                  for k in range(0, len(dev_p), 256)])
        retagged, pos = [], 0
        for s in dev_p:
            retagged.append(with_upos(s, morph.upos_strings(dev_ids[pos:pos + s.n]), blank=True))
            pos += s.n
        dev_p = retagged
    if not args.morph_reads_lemma:
        w_lem, lem_epoch, lem_history, lem_seconds = train_lemmatizer(dev_p)

    # Predictions on dev, the official scorer.
    batch = SentenceBatch.from_sentences(morph_dev)
    feats_ids = morph.predict_batch(batch, w_morph)
    dev_upos = [s.upos[1:] for s in dev_p]
    lemma_ids = lem.predict_batch(batch, w_lem)
    pred_feats = morph.feats_strings(feats_ids)
    pred_lemmas = lem.lemma_strings(forms, lemma_ids)
    system, k = [], 0
    for s, t in zip(dev, dev_upos):
        system.append(format_columns(s, lemma=pred_lemmas[k:k + s.n], upos=list(t), feats=pred_feats[k:k + s.n]))
        k += s.n
    with tempfile.NamedTemporaryFile("w", suffix=".conllu", delete=False, encoding="utf-8") as f:
        f.write("".join(system))
        system_path = f.name
    ev = SCORE.evaluate(SCORE.load_conllu_file(str(UD / name / f"{name}-ud-dev.conllu")),
                        SCORE.load_conllu_file(system_path))
    os.unlink(system_path)
    lemma_right = np.array(lemma_ok(pred_lemmas))
    feats_right = np.array([universal(b) == g for b, g in zip(pred_feats, gold_ufeats)])

    # Diagnostic: the same models on dev with gold UPOS rows (how much the tagger's errors cost).
    gold_upos = [with_upos(s, s.upos[1:], blank=True) for s in dev]
    if args.morph_reads_lemma:
        gold_upos = [with_lemmas(x, l) for x, l in zip(gold_upos, predict_lemmas(lem, w_lem, gold_upos))]
    if args.stacked:
        gold_upos = [with_feats(s, d) for s, d in zip(gold_upos, predict_bundles(draft, w_draft, gold_upos))]
    gold_batch = SentenceBatch.from_sentences(gold_upos)
    oracle = {"ufeats_all": 100 * feats_score(morph.predict_batch(gold_batch, w_morph)),
              "lemmas_all": 100 * lemma_score(lem.predict_batch(gold_batch, w_lem))}
    speed = measure_speed(dev_p, morph, w_morph, lem, w_lem, draft=draft, w_draft=w_draft,
                          lemma_first=args.morph_reads_lemma)
    speed_without_draft = None
    if args.stacked:
        # The same run without stacking (the draft alone is the default morphologizer): the two
        # alternated three times, the median of each kept (the machine is shared).
        with_runs, without_runs = [speed], []
        for k in range(3):
            without_runs.append(measure_speed(dev_p, draft, w_draft, lem, w_lem, lemma_first=args.morph_reads_lemma))
            if k < 2:
                with_runs.append(measure_speed(dev_p, morph, w_morph, lem, w_lem, draft=draft, w_draft=w_draft,
                                               lemma_first=args.morph_reads_lemma))
        median = lambda runs: sorted(runs, key=lambda r: r["words_per_second"])[len(runs) // 2]
        speed, speed_without_draft = median(with_runs), median(without_runs)
        speed["runs_words_per_second"] = [r["words_per_second"] for r in with_runs]
        speed_without_draft["runs_words_per_second"] = [r["words_per_second"] for r in without_runs]
    result = {
        "treebank": name,
        "train_words": sum(s.n for s in train), "dev_words": len(forms), "dev_unseen_words": int(unseen.sum()),
        "official": {"Lemmas": 100 * ev["Lemmas"].f1, "UFeats": 100 * ev["UFeats"].f1, "UPOS": 100 * ev["UPOS"].f1},
        "lemmas_all": 100 * float(lemma_right.mean()), "lemmas_unseen": 100 * float(lemma_right[unseen].mean()),
        "ufeats_all": 100 * float(feats_right.mean()), "ufeats_unseen": 100 * float(feats_right[unseen].mean()),
        "with_gold_upos": oracle,
        "targets": {"Lemmas": TARGETS[name][0], "UFeats": TARGETS[name][1]},
        "upos_tagger": {k: tags[k] for k in ("tagger_best_epoch", "tagger_dev_upos", "tagger_train_seconds",
                                             "jackknife_seconds", "jackknife_train_upos")},
        "margins": {"tagger": args.tagger_margin, "morph": args.morph_margin, "lemma": args.lemma_margin},
        "tagger_dictionary": args.tagger_dictionary,
        "morphologizer": {"config": {k: v for k, v in morph.config().items() if k != "classes"},
                          "bundles": len(morph.bundles), "pairs": len(morph.pairs), "best_epoch": morph_epoch,
                          "train_seconds": morph_seconds, "history": morph_history, "draft": draft_report},
        "lemmatizer": {"config": {k: v for k, v in lem.config().items() if k != "scripts"},
                       "scripts": len(lem.scripts), "lexicon": int(len(lem.arrays()["lexicon_keys"])),
                       "best_epoch": lem_epoch, "train_seconds": lem_seconds, "history": lem_history,
                       "jackknife": lemma_jackknife},
        "speed": speed,
        "speed_without_draft": speed_without_draft,
        "settings": vars(args),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
    }
    return result


def measure_speed(sentences, morph, w_morph, lem, w_lem, passes=3, draft=None, w_draft=None, lemma_first=False):
    """Words/s of morphologizer + lemmatizer on batches of BATCH sentences (UPOS already in the
    rows), ids written back as string ids; the first pass warms the form caches and is reported
    apart. With a `draft` morphologizer (stacking), it runs first and writes the FEATS row.
    `lemma_first` (morphologizers reading the inflection): the lemmatizer runs first and writes
    its lemmas' ids into the batch, and the source of their strings, as the lemmatizer
    component does."""
    batches = [SentenceBatch.from_sentences(sentences[k:k + BATCH]) for k in range(0, len(sentences), BATCH)]
    words = sum(s.n for s in sentences)

    def lemmatize(b, kernel_only):
        mask = b.words
        lids = lem.predict_batch(b, w_lem)
        if not kernel_only or lemma_first:
            form_ids = b.attrs[FORM, mask]
            hashes = lem.lemma_hashes(form_ids, lids, b.text_of)
            b.attrs[LEMMA, mask] = hashes
            if lemma_first:
                add_lemma_strings(b, lem, form_ids, lids, hashes)

    def one_pass(kernel_only=False, clock=time.perf_counter):
        start = clock()
        for b in batches:
            mask = b.words
            if lemma_first:
                lemmatize(b, kernel_only)
            if draft is not None:
                b.attrs[FEATS, mask] = draft.feats_hashes(draft.predict_batch(b, w_draft))
            ids = morph.predict_batch(b, w_morph)
            if not kernel_only:
                b.attrs[FEATS, mask] = morph.feats_hashes(ids)
            if not lemma_first:
                lemmatize(b, kernel_only)
        return clock() - start

    cold = one_pass()
    warm = min(one_pass() for _ in range(passes))
    kernels = min(one_pass(kernel_only=True) for _ in range(passes))
    # CPU time of this process: the machine is shared, wall time counts other jobs' turns too.
    cpu = min(one_pass(clock=time.process_time) for _ in range(passes))
    return {"words": words, "batch_sentences": BATCH, "cold_words_per_second": words / cold,
            "words_per_second": words / warm, "predict_only_words_per_second": words / kernels,
            "words_per_cpu_second": words / max(cpu, 1e-9), "passes": passes}


def f2(value: float) -> str:
    """Two decimals, truncated (figures are never rounded up)."""
    return f"{math.floor(value * 100) / 100:.2f}"


def table(directory: Path, treebanks, tag: str = "") -> str:
    """Markdown: official Lemmas/UFeats (target), unseen words, with gold UPOS, UPOS, speed."""
    rows = ["| treebank | Lemmas (target) | UFeats (target) | Lemmas / UFeats unseen | with gold UPOS | UPOS "
            "| train s (morph + lemma) | words/s wall | words/CPU-s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name in treebanks:
        path = directory / f"lemma_morph_{name}{tag}.json"
        if not path.exists():
            continue
        r = json.loads(path.read_text(encoding="utf-8"))
        o, g, sp = r["official"], r.get("with_gold_upos", {}), r["speed"]
        t = r["targets"]
        mark = lambda v, target: f"{f2(v)} ({target}{'' if v >= target else ', miss'})"
        rows.append(f"| {name} | {mark(o['Lemmas'], t['Lemmas'])} | {mark(o['UFeats'], t['UFeats'])} "
                    f"| {f2(r['lemmas_unseen'])} / {f2(r['ufeats_unseen'])} "
                    f"| {f2(g.get('lemmas_all', float('nan')))} / {f2(g.get('ufeats_all', float('nan')))} | {f2(o['UPOS'])} "
                    f"| {r['morphologizer']['train_seconds']:.0f} + {r['lemmatizer']['train_seconds']:.0f} "
                    f"| {int(sp['words_per_second']):,} | {int(sp['words_per_cpu_second']):,} |")
    return "\n".join(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--treebanks", nargs="+", default=list(TREEBANKS))
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--tagger-epochs", type=int, default=15)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--bits", type=int, default=22)
    parser.add_argument("--known-min-count", type=int, default=10)
    parser.add_argument("--suffix-length", type=int, default=5)
    parser.add_argument("--suffix-min-count", type=int, default=3)
    parser.add_argument("--stacked", action="store_true",
                        help="a draft morphologizer first; the morphologizer reads its jackknifed bundles (DRAFT_TEMPLATES)")
    parser.add_argument("--joint", action="store_true", help="joint UPOS+FEATS classes; the lemmatizer reads their UPOS")
    parser.add_argument("--upos-candidates", action="store_true",
                        help="lemma candidates: only the scripts seen with the word's UPOS")
    parser.add_argument("--min-count", type=int, default=1)
    parser.add_argument("--lexicon-min-count", type=int, default=1)
    parser.add_argument("--lexicon-share", type=float, default=0.99,
                        help="lemma lexicon: force a pair only when its top script has this share")
    parser.add_argument("--no-known-lemmas", dest="known_lemmas", action="store_false",
                        help="lemma classes without the known atom (a candidate whose lemma is attested with another form)")
    parser.add_argument("--max-train", type=int, default=0)
    parser.add_argument("--tagger-dictionary", type=int, default=1,
                        help="UPOS tagger: restrict forms seen this often in training to their tags, as the pipeline "
                             "configs (0: no dictionary)")
    parser.add_argument("--tagger-margin", type=float, default=20.0,
                        help="UPOS tagger (and its jackknife folds): the perceptron's margin, as the pipeline configs (0: the plain perceptron)")
    parser.add_argument("--morph-margin", type=float, default=20.0,
                        help="morphologizers (draft, its folds, stacked): the perceptron's margin (0: plain)")
    parser.add_argument("--morph-reads-lemma", action="store_true",
                        help="the morphologizers read the inflection of the lemmatizer's lemmas (reads_lemma = "
                             "true): the lemmatizer trains first, jackknifed on the training set")
    parser.add_argument("--tagger-seeds", type=int, default=1,
                        help="runs averaged for the UPOS tagger (and each of its jackknife folds)")
    parser.add_argument("--morph-seeds", type=int, default=1,
                        help="runs averaged for each morphologizer (the draft, its jackknife folds and the "
                             "second one), as `seeds` in a pipeline config; 1: one run")
    parser.add_argument("--lemma-margin", type=float, default=20.0,
                        help="lemmatizer: the perceptron's margin (0: plain)")
    parser.add_argument("--cache", default="/tmp/arborist_lemma_morph_cache")
    parser.add_argument("--out", default=str(ROOT_DIR / "scripts" / "results"))
    parser.add_argument("--tag", default="", help="suffix of the result file name (variants)")
    parser.add_argument("--table", action="store_true", help="print the Markdown table of the result files and exit")
    args = parser.parse_args()
    if args.table:
        print(table(Path(args.out), args.treebanks, args.tag))
        return
    for name in args.treebanks:
        result = run(name, args)
        path = Path(args.out) / f"lemma_morph_{name}{args.tag}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=1), encoding="utf-8")
        o, sp = result["official"], result["speed"]
        print(f"{name}: Lemmas {f2(o['Lemmas'])} (unseen {f2(result['lemmas_unseen'])}) UFeats {f2(o['UFeats'])} "
              f"(unseen {f2(result['ufeats_unseen'])}) UPOS {f2(o['UPOS'])} | targets {TARGETS[name]} | "
              f"train morph {result['morphologizer']['train_seconds']:.0f}s lemma {result['lemmatizer']['train_seconds']:.0f}s "
              f"| {sp['words_per_second']:.0f} w/s, {sp['words_per_cpu_second']:.0f} w/cpu-s (predict only {sp['predict_only_words_per_second']:.0f})", flush=True)


SCORE = official_scorer.scorer()  # the official scorer's module (scripts/official_scorer.py)
UNIVERSAL = SCORE.UNIVERSAL_FEATURES

if __name__ == "__main__":
    main()
