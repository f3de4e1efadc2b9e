"""Command line: arborist train / evaluate / parse / package."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import List, Optional

import typer

# Help texts are rich markup (typer's default): a literal "[" is written "\\[" ("arborist\\[ray]").
app = typer.Typer(add_completion=False, no_args_is_help=True, help="Linear dependency parsing and tagging.")


def _fail(message: str, code: int = 1):
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


@app.callback()
def _warnings_as_lines(ctx: typer.Context) -> None:
    """While a command runs, arborist's own warnings print as "warning: WHERE: WHAT", as errors
    do, not as Python's source line of the call that warned; other libraries' keep Python's form."""
    import warnings

    previous = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if category.__module__.split(".")[0] != "arborist":
            return previous(message, category, filename, lineno, file, line)
        print(f"warning: {message}", file=file or sys.stderr)

    warnings.showwarning = show
    ctx.call_on_close(lambda: setattr(warnings, "showwarning", previous))


@app.command()
def train(
    config: Path = typer.Argument(..., exists=True, dir_okay=False, help="confection .cfg file"),
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", help="output directory: model-best/, checkpoint/ and training.json"
    ),
    overrides: List[str] = typer.Option([], "--set", help="override a config value: section.key=value"),
    resume: bool = typer.Option(False, "--resume", help="continue the run in --output from its last checkpoint"),
    no_wandb: bool = typer.Option(False, "--no-wandb", help="do not log to Weights & Biases"),
):
    """Train the config's components (taggers, then a parser on jackknifed tags); the best
    epoch of each on dev goes into OUTPUT/model-best."""
    from .corpus import CorpusError
    from .train import load_config, parse_overrides, train as run

    if output is None:
        typer.echo("warning: no --output: the model is trained and not saved", err=True)
    try:
        cfg = load_config(config, parse_overrides(overrides))
        _, report = run(cfg, output, resume=resume, use_wandb=not no_wandb)
    except (CorpusError, ValueError, OSError) as e:
        _fail(str(e))
    for name, entry in report["components"].items():
        best = "-" if entry["best"] is None else f"{entry['best']:.2f}"
        if isinstance(entry["best_epoch"], list):  # trained with seeds: the mean of the runs
            typer.echo(f"{name}: the mean of {len(entry['best_epoch'])} runs (best epochs "
                       f"{', '.join(map(str, entry['best_epoch']))}), {entry['key']} {best}", err=True)
        else:
            typer.echo(f"{name}: best epoch {entry['best_epoch']}, {entry['key']} {best}", err=True)
    if output:
        typer.echo(f"model written to {output / 'model-best'}", err=True)


@app.command()
def evaluate(
    model: Path = typer.Argument(..., exists=True, file_okay=False, help="model directory"),
    gold: Path = typer.Argument(..., exists=True, dir_okay=False, help="gold CoNLL-U file"),
    gold_tags: bool = typer.Option(False, "--gold-tags", help="parse with the file's own UPOS/XPOS, not predicted tags"),
    as_json: bool = typer.Option(False, "--json", help="print scores as JSON"),
    raw_text: bool = typer.Option(False, "--raw-text", help="parse the gold file's own text (tokenizing and "
                                  "splitting it too) and score it as the CoNLL 2018 shared task does"),
    gold_sentences: bool = typer.Option(False, "--gold-sentences", help="with --raw-text: give the text a sentence "
                                        "per line (-i presegmented), so that only tokenizing is left to the model"),
):
    """Tag and parse a gold CoNLL-U file with the model; print tag, lemma and FEATS accuracy
    (all words and words unseen in training), UAS, LAS and exact match with the predicted
    tags, and the CoNLL 2018 scorer's table of the output (UPOS to BLEX, gold tokens)."""
    from .corpus import CorpusError, read_conllu
    from .model import ModelError, load

    if gold_sentences and not raw_text:
        _fail("--gold-sentences goes with --raw-text (without it, the gold file's sentences are parsed as they are)")
    if raw_text:
        from .raw_text import evaluate_raw_text

        try:
            pipeline = load(model)
            list(read_conllu(gold, require_heads=True))  # a malformed gold file fails here, with its line
            table = evaluate_raw_text(pipeline, model, gold, gold_sentences=gold_sentences)
        except (CorpusError, ModelError, OSError, ValueError) as e:
            _fail(str(e))
        if as_json:
            typer.echo(json.dumps(table, indent=2))
            return
        _echo_conll18(table)
        return
    from .raw_text import evaluate_gold_tokens

    try:
        pipeline = load(model)
        sentences = list(read_conllu(gold, require_heads=True))
        scores, parsed = evaluate_pipeline(pipeline, sentences, gold_tags, with_parsed=True)
        official = evaluate_gold_tokens(pipeline, gold, sentences, parsed, gold_tags)  # (the same parse)
    except (CorpusError, ModelError, OSError, ValueError) as e:
        _fail(str(e))
    if as_json:
        typer.echo(json.dumps({**scores, "conll18": official}, indent=2))
        return
    tagged = "gold" if gold_tags or not pipeline.taggers else "predicted"
    typer.echo(f"{'metric':<24}{'score':>8}")
    for key, value in scores.items():
        if key in UNSHOWN or not isinstance(value, (int, float)):
            continue
        typer.echo(f"{metric_label(key, tagged):<24}{value:>8.2f}")
        if key == "uas_nopunct" and "las" not in scores:
            for missing in ("las", "las_nopunct", "las_full"):
                typer.echo(f"{metric_label(missing, tagged):<24}{'-':>8}  (model predicts no labels)")
    unseen = f" ({scores['unseen_words']} unseen in training)" if 'unseen_words' in scores else ""
    typer.echo(f"{scores['words']} words{unseen}, {scores['sentences']} sentences")
    typer.echo(f"\nthe CoNLL 2018 scorer, on the gold tokens as the model annotates them ({'the file' if gold_tags else 'predicted'} "
               "tags; a column it does not predict is empty):")
    _echo_conll18(official)


def _echo_conll18(table: dict) -> None:
    """The official scorer's table (`raw_text.score`): precision, recall and F1 per metric."""
    typer.echo(f"{'metric':<11}{'precision':>10}{'recall':>10}{'F1':>10}")
    for metric, values in table.items():
        typer.echo(f"{metric:<11}{values['precision']:>10.2f}{values['recall']:>10.2f}{values['f1']:>10.2f}")


# How `arborist evaluate` names the scores (keyed by score, whichever component gives it).
METRIC_LABELS = {"uas": "UAS ({tagged} tags)", "uas_nopunct": "UAS (no punct)", "las": "LAS (universal labels)",
                 "las_nopunct": "LAS (no punct)", "las_full": "LAS (full labels)", "exact_match": "exact match",
                 "prune_recall": "pruner oracle recall", "heads_per_word": "pruner heads per word",
                 "feats_draft": "FEATS accuracy (draft)", "feats_draft_unseen": "FEATS unseen words (draft)",
                 "ufeats": "UFeats accuracy", "ufeats_unseen": "UFeats unseen words"}
UNSHOWN = {"words", "sentences", "unseen_words"}


def metric_label(key: str, tagged: str) -> str:
    if key in METRIC_LABELS:
        return METRIC_LABELS[key].format(tagged=tagged)
    column, _, unseen = key.partition("_")
    return f"{column.upper()} {'unseen words' if unseen == 'unseen' else 'accuracy'}" if unseen in ("", "unseen") \
        else key


def evaluate_pipeline(pipeline, sentences, gold_tags: bool = False, with_parsed: bool = False):
    """Every component's scores on gold sentences (`Component.score`), merged (see
    `Pipeline.score`): tag accuracy of the taggers, attachment scores of the parser...
    `with_parsed`: (scores, the annotated sentences)."""
    sentences = list(sentences)
    if not sentences:
        raise ValueError("nothing to evaluate: the gold file has no sentences")
    components = pipeline.stage(gold_tags)
    if not components:
        raise ValueError("nothing to evaluate: the model has no parser and --gold-tags skips its taggers")
    parsed = list(pipeline.parse(sentences, gold_tags))
    scores = pipeline.score(sentences, parsed, components)
    return (scores, parsed) if with_parsed else scores


@app.command()
def calibrate(
    model: Path = typer.Argument(..., exists=True, file_okay=False, help="model directory"),
    dev: Path = typer.Argument(..., exists=True, dir_okay=False, help="gold CoNLL-U file (the dev set)"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="write the calibrated model here "
                                          "(default: replace MODEL)"),
    threads: int = typer.Option(1, "--threads", min=1, help="compute the marginals in this many threads "
                                "(the same fit, faster with more cores)"),
):
    """Fit the temperature of each component's probabilities (heads, labels, tags) on a gold
    file by maximum likelihood and store it in the model (`arborist train` does this on its
    dev set; this is for models trained without one, or to calibrate on other data)."""
    from .confidence import calibrate_pipeline
    from .corpus import CorpusError, read_conllu
    from .model import ModelError, load

    try:
        pipeline = load(model)
        fits = calibrate_pipeline(pipeline, read_conllu(dev, require_heads=True),
                                  lambda line: typer.echo(line, err=True), threads=threads)
    except (CorpusError, ModelError, OSError, ValueError) as e:
        _fail(str(e))
    if not fits:
        _fail(f"{model}: no component gives probabilities")
    target = output or model
    if (target / "meta.json").exists() or not (target / "model-best" / "meta.json").exists():
        pipeline.save(target)
    else:
        pipeline.save(target / "model-best")  # a training output directory: its model-best
    typer.echo(f"calibrated model written to {target}", err=True)


@app.command()
def average(
    models: List[Path] = typer.Argument(..., exists=True, file_okay=False,
                                        help="model directories (or training output directories) to average"),
    output: Path = typer.Option(..., "--output", "-o", help="write the averaged model here"),
    dev: Optional[Path] = typer.Option(None, "--dev", exists=True, dir_okay=False,
                                       help="gold CoNLL-U file (the dev set) to fit the temperatures on"),
    threads: int = typer.Option(1, "--threads", min=1, help="with --dev: compute the marginals in this many "
                                "threads"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace OUTPUT if it exists (never one of the "
                                   "models)"),
):
    """Average the weights of models trained with one config and different seeds: an ensemble
    that parses as fast as one model. The models must differ only in their weights. The
    single models' temperatures are dropped; --dev fits the average's (as `arborist
    calibrate`)."""
    from .confidence import calibrate_pipeline
    from .corpus import CorpusError, read_conllu
    from .model import ModelError, average as average_models

    _check_output(output, overwrite, models)
    try:
        pipeline = average_models(models)
        if dev is not None:
            calibrate_pipeline(pipeline, read_conllu(dev, require_heads=True),
                               lambda line: typer.echo(line, err=True), threads=threads)
        pipeline.save(output)
    except (CorpusError, ModelError, OSError, ValueError) as e:
        _fail(str(e))
    typer.echo(f"the average of {len(models)} models written to {output}", err=True)


@app.command()
def parse(
    model: Path = typer.Argument(..., exists=True, file_okay=False, help="model directory"),
    inputs: List[str] = typer.Argument(
        ..., help="text files, CoNLL-U files (.conllu) or directories of them (searched recursively); - for "
        "standard input; with --engine ray also URLs fsspec reaches (s3://bucket/dir, gs://..., file://...)"),
    output_dir: Optional[str] = typer.Option(None, "--output-dir", "-d", help="directory for the parsed files "
                                             "(with --engine ray, also a URL); without it, the output goes to "
                                             "standard output"),
    fmt: str = typer.Option("conllu", "--format", "-f", help="conllu, json (spaCy's Doc JSON, one line per "
                            "paragraph or sentence) or html (displaCy)"),
    input_format: str = typer.Option("auto", "--input-format", "-i", help="auto (a .conllu file is CoNLL-U; "
                                     "other files and standard input are text), text, conllu, or pre-tokenized "
                                     "text as UDPipe's --input: horizontal (a sentence per line, tokens separated "
                                     "by spaces and tabs) or vertical (a token per line, a blank line after each "
                                     "sentence), or presegmented: text with a sentence per line, tokenized but not "
                                     "split (UDPipe's --tokenizer presegmented; a blank line starts a paragraph)"),
    gold_tags: bool = typer.Option(False, "--gold-tags", help="CoNLL-U input: keep its UPOS, XPOS, LEMMA and "
                                   "FEATS and parse with them"),
    trees: bool = typer.Option(True, "--parse/--no-parse", help="--no-parse: tokens, sentences, tags, lemmas and "
                               "features only, HEAD and DEPREL '_' (CoNLL-U input keeps its own; faster; a model without a parser "
                               "always runs so)"),
    n_process: int = typer.Option(1, "--n-process", "-n", min=1, help="worker processes"),
    overwrite: bool = typer.Option(False, "--overwrite", help="parse again inputs whose output exists"),
    lang: Optional[str] = typer.Option(None, "--lang", help="language of the text's tokenizer "
                                       "(default: the model's, Pipeline.lang)"),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="show a progress bar"),
    engine: str = typer.Option("local", "--engine", help="local (this machine's processes) or ray (a Ray cluster: "
                               "pip install \"arborist\\[ray]\")"),
    address: Optional[str] = typer.Option(None, "--address", help="--engine ray: the cluster to join (ray://HOST:10001, "
                                          "auto); default: start Ray on this machine"),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, help="--engine ray: parsing actors (default: "
                                          "the cluster's CPUs)"),
    share_weights: bool = typer.Option(False, "--share-weights/--copy-weights", help="--engine ray: the actors "
                                       "of a node memory-map the model's weights and share their pages (less "
                                       "memory; about 20% slower lookups) instead of each holding a copy"),
    shard_size: float = typer.Option(256.0, "--shard-size", min=0.0, help="--engine ray: inputs larger than this "
                                     "many MB are parsed in shards of about this size (NAME.shards/ and "
                                     "NAME.manifest.json); 0: never"),
    probs: bool = typer.Option(False, "--probs", help="write each word's probabilities: CoNLL-U MISC "
                               "HeadProb, DeprelProb, ArcProb (their product), UposProb, FeatsProb, LemmaProb...; "
                               "JSON token._ attributes head_prob, deprel_prob, head_candidates..."),
    k_best: int = typer.Option(0, "--k-best", min=0, help="with --probs, also each word's K most probable "
                               "heads (labels, tags) with their probabilities (MISC HeadCands=3:0.9,5:0.08; "
                               "FEATS and lemmas in JSON only)"),
    min_prob: Optional[float] = typer.Option(None, "--min-prob", min=0.0, max=1.0, help="mark the arcs whose "
                                             "head probability is below this (MISC LowProb=Yes)"),
    drop_low: bool = typer.Option(False, "--drop-low", help="with --min-prob: drop those arcs instead (HEAD and "
                                  "DEPREL '_' in CoNLL-U, head and dep null in JSON), for extraction jobs"),
    ranges: bool = typer.Option(False, "--ranges", help="CoNLL-U of text: each token's place in its input as "
                                "UDPipe's TokenRange=START:END in MISC (character offsets, END exclusive, as "
                                "Python slices: input_text[START:END] is the token)"),
):
    """Tag and parse text and CoNLL-U files. Text is tokenized and split into sentences by
    the model's tokenizer (multiword tokens expanded), or by spaCy's rule tokenizer and
    sentencizer when the model has none; CoNLL-U keeps every byte except the columns the
    model predicts (UPOS, XPOS, LEMMA, FEATS, HEAD, DEPREL; --gold-tags keeps the input's tags,
    lemmas and features and parses with them). With -d, outputs that exist are skipped
    (the run can be resumed); without it, everything goes to standard output in input order
    (`arborist parse MODEL - < in.txt > out.conllu`). A file that cannot be read is reported
    and skipped. Exit status: 0 all parsed, 2 some failed, 1 all failed. --probs, --k-best
    and --min-prob add the model's calibrated probabilities (off by default: the output is
    then unchanged)."""
    from .batch import (FORMATS, INPUT_FORMATS, PRETOKENIZED, ConfidenceOptions, WorkerLost, directory_files,
                        parse_files, plan, text_job_error)
    from .corpus import STDIN
    from .model import ModelError, load

    if fmt not in FORMATS:
        _fail(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if input_format not in INPUT_FORMATS:
        _fail(f"--input-format must be one of {', '.join(INPUT_FORMATS)}, got {input_format!r}")
    if lang is not None:
        _check_lang(lang)
    if k_best and not probs:
        _fail("--k-best needs --probs")
    if drop_low and min_prob is None:
        _fail("--drop-low needs --min-prob")
    if (probs or min_prob is not None) and fmt == "html":
        _fail("--probs and --min-prob write CoNLL-U or JSON, not html")
    if ranges and fmt != "conllu":
        _fail(f"--ranges writes CoNLL-U's MISC, not {fmt}")
    if ranges and input_format in ("conllu", *PRETOKENIZED):
        _fail(f"--ranges gives the places of the tokens of raw text; {input_format} input is already tokenized")
    confidence = ConfidenceOptions(probs, k_best, min_prob, drop_low) if probs or min_prob is not None else None
    urls = [p for p in [*inputs, output_dir or ""] if "://" in p]
    if urls and engine != "ray":
        _fail(f"{urls[0]}: URLs are read and written with --engine ray")
    if engine == "ray" and (output_dir is None or "-" in inputs):
        _fail("--engine ray reads files and writes them to --output-dir, not standard input and output")
    if gold_tags and input_format in (*PRETOKENIZED, "presegmented", "text"):
        _fail(f"--gold-tags keeps the tags of CoNLL-U input; {input_format} text has none")
    try:
        pipeline = load(model)
        _check_language(lang, pipeline, model)
    except ModelError as e:
        _fail(str(e))
    if pipeline.writer("head") is None or not trees:  # what needs trees is refused, with why
        for asked, needs, what in ((fmt == "html", "--format html draws dependency trees", "them"),
                                   (gold_tags, "--gold-tags runs the parser on the input's tags", "it"),
                                   (min_prob is not None, "--min-prob marks (or drops) arcs", "them")):
            if asked:
                _fail(f"{needs}: " + (f"--no-parse leaves {what} out" if pipeline.writer("head") else
                                      f"{model} has no parser"))
    if engine == "ray":
        for given in inputs:  # (the local engine tells it from its plan, below)
            if "://" not in given and Path(given).is_dir() and not directory_files(Path(given)):
                typer.echo(f"warning: {given}: no files to parse", err=True)
        if confidence is not None:
            _fail("--probs and --min-prob run with --engine local for now")
        if n_process > 1:
            typer.echo("warning: --n-process is for --engine local; on Ray, --workers sets the actors", err=True)
        try:
            from .distributed import parse as parse_on_ray

            report = parse_on_ray(inputs, model, output_dir, fmt, workers=workers, address=address, lang=lang,
                                  gold_tags=gold_tags, overwrite=overwrite, shard_bytes=int(shard_size * 2 ** 20),
                                  share_weights=share_weights, input_format=input_format, trees=trees,
                                  ranges=ranges)
        except ImportError as e:
            _fail(f"--engine ray needs Ray: pip install \"arborist[ray]\" ({e})")
        except ConnectionError as e:  # no cluster at --address (Ray's message says what it tried)
            _fail(f"--address {address}: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
        except ValueError as e:
            _fail(str(e))
        except OSError as e:  # the output directory: a file of that name, no permission...
            _fail(_os_error(e, output_dir))
    elif engine == "local":
        output_dir = Path(output_dir) if output_dir is not None else None
        reads_stdin = "-" in inputs
        try:
            jobs = plan([STDIN if p == "-" else Path(p) for p in inputs], output_dir, fmt, input_format)
        except ValueError as e:
            _fail(str(e))
        for given in inputs:  # (a directory's files are below it; hidden ones are left out)
            if given != "-" and Path(given).is_dir() and not any(
                    job.source != STDIN and Path(given) in Path(job.source).parents for job in jobs):
                typer.echo(f"warning: {given}: no files to parse", err=True)
        if gold_tags and text_job_error(jobs):
            _fail(text_job_error(jobs))
        if output_dir is not None:
            try:
                output_dir.mkdir(parents=True, exist_ok=True)
            except OSError as e:  # a file of that name, no permission...
                _fail(_os_error(e, output_dir))
        try:
            report = parse_files(pipeline, jobs, fmt, model_path=model, lang=lang, gold_tags=gold_tags,
                                 n_process=n_process, overwrite=overwrite, progress=progress and not reads_stdin
                                 and not (output_dir is None and sys.stdout is not None and sys.stdout.isatty()),
                                 confidence=confidence, trees=trees, ranges=ranges)
        except BrokenPipeError:
            # The reader of standard output went away (`arborist parse ... | head`): stop
            # quietly, as a filter does; the interpreter must not flush to the closed pipe again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(1)
        except OSError as e:  # the output side: a full disk (ENOSPC), a read-only filesystem (EROFS)
            _fail(_os_error(e, output_dir or "standard output"))
        except WorkerLost as e:
            _fail(str(e))
    else:
        _fail(f"--engine must be local or ray, got {engine!r}")
    speed = f", {report.words / report.seconds:,.0f} words/s" if report.seconds > 0 else ""
    typer.echo(f"{len(report.written)} parsed, {len(report.skipped)} skipped (already parsed), "
               f"{len(report.failed)} failed; {report.words:,} words{speed}", err=True)
    for source, reason in report.failed:
        typer.echo(f"failed: {reason}", err=True)
    if report.exit_code:
        raise typer.Exit(report.exit_code)


@app.command()
def package(
    model: Path = typer.Argument(..., exists=True, file_okay=False, help="model directory"),
    output_dir: Path = typer.Argument(..., help="directory for the spaCy pipeline"),
    lang: Optional[str] = typer.Option(None, "--lang", help="the pipeline's language (default: the "
                                       "model's, Pipeline.lang)"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace OUTPUT_DIR if it exists"),
):
    """Write a spaCy pipeline (the language's tokenizer, the sentencizer, arborist_tagger,
    arborist_parser) that spacy.load(OUTPUT_DIR) loads with the model inside it."""
    from .batch import spacy_pipeline
    from .model import ModelError, load, write_directory

    _check_output(output_dir, overwrite, [model])
    if lang is not None:
        _check_lang(lang)
    try:
        pipeline = load(model)
        _check_language(lang, pipeline, model)
        nlp = spacy_pipeline(pipeline, lang)
    except (ModelError, ImportError, OSError) as e:
        _fail(str(e))
    from . import __version__

    # `spacy package` turns this into the package's dependency: the components live in arborist
    nlp.meta["requirements"] = [f"arborist>={__version__}"]
    try:
        write_directory(output_dir, nlp.to_disk)
    except OSError as e:
        _fail(_os_error(e, output_dir))
    typer.echo(f"spaCy pipeline ({', '.join(nlp.pipe_names)}) written to {output_dir}; "
               f"load it with spacy.load({str(output_dir)!r})", err=True)
    if "arborist_parser" in nlp.pipe_names and "arborist_tagger" not in nlp.pipe_names:
        typer.echo(f"warning: {model} has no tagger: its parser reads the tags a Doc has, so add a tagger before "
                   "arborist_parser (without tags its trees are poor)", err=True)


def _check_output(output: Path, overwrite: bool, inputs: List[Path]) -> None:
    """An output directory to write, or a clean error before any work: not a file, not one of
    the inputs (nor inside one, nor holding one), and, unless `overwrite`, not there yet."""
    if output.is_symlink() or output.exists() and not output.is_dir():
        _fail(f"{output} exists and is not a directory")
    out = output.resolve()
    for given in inputs:
        given = given.resolve()
        if out == given or given in out.parents or out in given.parents:
            _fail(f"{output}: the output would replace {given} or what is in it, an input")
    if output.exists() and not overwrite:
        _fail(f"{output} exists (--overwrite replaces it)")


def _check_language(lang: Optional[str], pipeline, model: Path) -> None:
    """The model's language (or --lang) is one spaCy can make a pipeline of here, or a clean
    error naming the model."""
    from .model import ModelError, spacy_language_error

    lang = lang or pipeline.lang
    why = spacy_language_error(lang)
    if why is not None:
        raise ModelError(f"{model}: language {lang!r}: spaCy cannot make it ({why}); --lang xx gives spaCy's "
                         "multi-language class")


def _check_lang(lang: str) -> None:
    """A --lang spaCy has a tokenizer for, or a clean error."""
    import spacy.util

    try:
        spacy.util.get_lang_class(lang)
    except ImportError:
        _fail(f"--lang {lang}: spaCy has no language {lang!r} (a code such as en, de, el, hu, it, tr)")


def _os_error(error: OSError, where) -> str:
    """`file: reason` of an OSError, with what it means for the two that end a run."""
    import errno

    meaning = {errno.ENOSPC: " (the disk is full)", errno.EROFS: " (the filesystem is read-only)",
               errno.EEXIST: " (and is not a directory)"}
    return f"{error.filename or where}: {error.strerror or error}{meaning.get(error.errno, '')}"


def main():  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
