"""Command line: arborist train / evaluate / parse."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Linear dependency parsing and tagging.")


def _fail(message: str, code: int = 1):
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


@app.command()
def train(
    config: Path = typer.Argument(..., exists=True, dir_okay=False, help="confection .cfg file"),
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", help="output directory: model-best/, checkpoint/ and training.json"
    ),
    overrides: List[str] = typer.Option([], "--set", help="override a config value: section.key=value"),
    resume: bool = typer.Option(False, "--resume", help="continue the run in --output from its last checkpoint"),
):
    """Train a model from a config; the best epoch on dev is written to OUTPUT/model-best."""
    from .corpus import CorpusError
    from .train import load_config, parse_overrides, train as run

    try:
        cfg = load_config(config, parse_overrides(overrides))
        _, summary = run(cfg, output, resume=resume)
    except (CorpusError, ValueError, OSError) as e:
        _fail(str(e))
    typer.echo(
        f"best epoch {summary['best_epoch']}: dev UAS {summary['best_dev_uas']:.2f}"
        + (f"; model written to {output / 'model-best'}" if output else ""),
        err=True,
    )


@app.command()
def evaluate(
    model: Path = typer.Argument(..., exists=True, file_okay=False, help="model directory"),
    gold: Path = typer.Argument(..., exists=True, dir_okay=False, help="gold CoNLL-U file"),
    as_json: bool = typer.Option(False, "--json", help="print scores as JSON"),
):
    """Parse a gold CoNLL-U file with the model and print UAS, LAS and exact match."""
    from .corpus import CorpusError, read_conllu
    from .evaluate import attachment_scores
    from .model import ModelError, load

    try:
        parser = load(model)
        scores = attachment_scores((s, h, None) for s, h in parser.parse(read_conllu(gold, require_heads=True)))
    except (CorpusError, ModelError, OSError) as e:
        _fail(str(e))
    if as_json:
        typer.echo(json.dumps(scores, indent=2))
        return
    rows = [("UAS", "uas"), ("UAS (no punct)", "uas_nopunct"), ("LAS", "las"), ("LAS (no punct)", "las_nopunct"),
            ("exact match", "exact_match")]
    typer.echo(f"{'metric':<16}{'score':>8}")
    for name, key in rows:
        typer.echo(f"{name:<16}{scores[key]:>8.2f}" if key in scores else f"{name:<16}{'-':>8}  (model predicts no labels)")
    typer.echo(f"{scores['words']} words, {scores['sentences']} sentences")


@app.command()
def parse(
    model: Path = typer.Argument(..., exists=True, file_okay=False, help="model directory"),
    inputs: List[Path] = typer.Argument(..., exists=True, dir_okay=False, help="CoNLL-U files"),
    output_dir: Path = typer.Option(..., "--output-dir", "-d", help="directory for the parsed files"),
):
    """Parse CoNLL-U files (using their POS columns); HEAD is written, every other byte kept."""
    from .corpus import CorpusError, read_conllu, write_conllu
    from .model import ModelError, load

    try:
        parser = load(model)
    except ModelError as e:
        _fail(str(e))
    output_dir.mkdir(parents=True, exist_ok=True)
    failed = 0
    for path in inputs:
        target = output_dir / path.name
        try:
            write_conllu(target, ((s, h) for s, h in parser.parse(read_conllu(path))))
            typer.echo(f"{path} -> {target}", err=True)
        except (CorpusError, OSError) as e:
            typer.echo(f"error: {e}", err=True)
            failed += 1
    if failed:
        raise typer.Exit(1 if failed == len(inputs) else 2)


def main():  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
