"""The spaCy components (arborist.spacy_components) in real spaCy pipelines: factories found
through the entry point, annotations as spaCy's own components set them, serialization,
displaCy, multiprocessing, nlp.evaluate, and `arborist package`."""
from __future__ import annotations

import multiprocessing
import pickle
import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest
import spacy
from spacy import displacy
from spacy.tokens import Doc
from spacy.training import Example
from typer.testing import CliRunner

import arborist
from arborist.cli import app
from arborist.components.parser import LongSentenceWarning
from arborist.corpus import read_corpus
from arborist.sentence import Sentence

REPO = Path(__file__).resolve().parents[1]
DEV = REPO / "corpora" / "sample" / "sample-dev.conllu"
TEXTS = [
    "The tired girl is not happy. He read the stories and smiled politely.",
    "She wrote the address down.  Then she left\nthe house.",
    "",
    "No punctuation at all here",
    "  Leading space. ",
]


def annotations(doc: Doc) -> list[tuple]:
    return [(t.text, t.pos_, t.tag_, t.head.i, t.dep_, t.is_sent_start) for t in doc]


def make_nlp(model, sentencizer: bool = True) -> spacy.Language:
    nlp = spacy.blank("en")
    if sentencizer:
        nlp.add_pipe("sentencizer")
    nlp.add_pipe("arborist_tagger", config={"model": str(model)})
    nlp.add_pipe("arborist_parser", config={"model": str(model)})
    return nlp


@pytest.fixture(scope="module")
def nlp(tiny_model):
    return make_nlp(tiny_model)


@pytest.fixture(scope="module")
def pipeline(tiny_model):
    return arborist.load(tiny_model)


def test_factories_are_registered_through_the_entry_point(tmp_path):
    names = {e.name: e.value for e in entry_points(group="spacy_factories")}
    assert names["arborist_tagger"] == "arborist.spacy_components:make_tagger"
    assert names["arborist_parser"] == "arborist.spacy_components:make_parser"
    # A fresh interpreter that never imports arborist (run outside the repository, so that
    # the installed package is the one found, as CI installs it):
    code = ("import sys, spacy; nlp = spacy.blank('en'); nlp.add_pipe('arborist_tagger'); "
            "nlp.add_pipe('arborist_parser'); print(nlp.pipe_names)")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['arborist_tagger', 'arborist_parser']"


def test_annotations_equal_the_pipeline_sentence_by_sentence(nlp, pipeline):
    doc = nlp(TEXTS[0] + " " + TEXTS[1])
    assert doc.has_annotation("TAG") and doc.has_annotation("POS") and doc.has_annotation("DEP")
    sentencizer = spacy.blank("en")
    sentencizer.add_pipe("sentencizer")
    assert [s.text for s in doc.sents] == [s.text for s in sentencizer(doc.text).sents]  # parsed one by one
    for sent in doc.sents:
        words = [t for t in sent if not t.is_space]
        tagged, heads, deprels = pipeline.annotate(Sentence.from_columns([t.text for t in words]))
        assert [t.pos_ for t in words] == tagged.upos[1:]
        assert [t.tag_ for t in words] == tagged.xpos[1:]
        expected_heads = [words[h - 1].i if h else t.i for t, h in zip(words, heads[1:])]
        assert [t.head.i for t in words] == expected_heads
        assert [t.dep_ for t in words] == ["ROOT" if h == 0 else d for h, d in zip(heads[1:], deprels[1:])]
        assert sum(t.dep_ == "ROOT" for t in sent) == 1


def test_whitespace_tokens_are_not_words(nlp):
    doc = nlp("She wrote it  down.\nThen she left.")
    spaces = [t for t in doc if t.is_space]
    assert spaces
    for t in spaces:
        assert (t.pos_, t.tag_, t.dep_) == ("SPACE", "_SP", "dep")
        assert not t.head.is_space and t.head.sent == t.sent and not list(t.children)
    assert all(not t.head.is_space for t in doc)


def test_without_sentence_boundaries_the_doc_is_one_tree(tiny_model):
    nlp = make_nlp(tiny_model, sentencizer=False)
    doc = nlp(TEXTS[0])
    assert not spacy.blank("en")(TEXTS[0]).has_annotation("SENT_START")
    assert len(list(doc.sents)) == 1  # from the parse: one root
    assert [t.dep_ for t in doc].count("ROOT") == 1


def test_long_sentences_are_parsed_in_pieces_that_make_one_tree(tiny_model):
    """A sentence longer than `max_sentence_length` is parsed in pieces whose roots hang from
    the first piece's (`Parser.predict_batch`): one sentence, the model's tree, and the model's
    own parser keeps its length."""
    nlp = make_nlp(tiny_model, sentencizer=False)
    text = "one two three four five six seven eight nine ten"
    whole = [t.head.i for t in nlp(text)]
    parser = nlp.get_pipe("arborist_parser")
    parser.max_sentence_length = 4
    with pytest.warns(LongSentenceWarning, match="^a sentence of 10 words is parsed in pieces of at most 4 words$"):
        doc = nlp(text)
    assert [len(s) for s in doc.sents] == [10] and [t.dep_ for t in doc].count("ROOT") == 1
    model = arborist.load(tiny_model)
    model.writer("head").max_sentence_length = 4
    sentence = Sentence.from_columns(text.split())
    with pytest.warns(LongSentenceWarning):
        (parsed,) = model.annotate_many([sentence])
    assert [t.head.i + 1 if t.head.i != t.i else 0 for t in doc] == parsed.heads[1:].tolist()
    assert [t.head.i for t in doc] != whole
    shared = arborist.load(tiny_model)  # a model the component shares (`set_model`) keeps its own length
    parser.set_model(shared)
    assert parser.arborist.writer("head").max_sentence_length == 4
    assert shared.writer("head").max_sentence_length == 256
    with pytest.raises(ValueError, match="at least 1"):
        parser.max_sentence_length = 0


def test_max_sentence_length_travels_with_the_component(tiny_model, tmp_path):
    """A length set on the parser component after it was made is kept by pickling, `to_bytes`
    and `to_disk` (spaCy's config holds the factory's value), as spaCy's own components keep
    their settings; a settings file that is not one is refused with its name."""
    nlp = make_nlp(tiny_model, sentencizer=False)
    nlp.get_pipe("arborist_parser").max_sentence_length = 3
    text = "one two three four five six seven"
    with pytest.warns(LongSentenceWarning, match="at most 3 words"):
        expected = [t.head.i for t in nlp(text)]
    fresh = make_nlp(tiny_model, sentencizer=False).from_bytes(nlp.to_bytes())
    nlp.to_disk(tmp_path / "nlp")
    for other in (pickle.loads(pickle.dumps(nlp)), fresh, spacy.load(tmp_path / "nlp")):
        assert other.get_pipe("arborist_parser").max_sentence_length == 3
        with pytest.warns(LongSentenceWarning, match="at most 3 words"):
            assert [t.head.i for t in other(text)] == expected
    (tmp_path / "nlp" / "arborist_parser" / "spacy_component.json").write_text("{}")
    with pytest.raises(arborist.model.ModelError, match="spacy_component.json: not the parser component's settings"):
        spacy.load(tmp_path / "nlp")


def test_the_parser_component_publishes_its_model_whole(tiny_model, monkeypatch):
    """`set_model` makes the component's stage, its own copy of the parser with its length
    included, before other threads can see it: a thread never parses with the shared parser."""
    import copy

    import arborist.spacy_components as components

    parser = make_nlp(tiny_model).get_pipe("arborist_parser")
    seen = []
    real_copy = copy.copy
    monkeypatch.setattr(components.copy, "copy", lambda x: seen.append(parser._model) or real_copy(x))
    parser.set_model(arborist.load(tiny_model))
    assert seen == [None] and parser._model.writer("head").max_sentence_length == 256


def test_conllu_of_a_doc_writes_no_space_after_no_at_its_end(nlp):
    """A Doc's last token ends its paragraph: no `SpaceAfter=No`, as the UD treebanks and the
    model's own path write it (before 2026-11-28, CoNLL-U from a Doc had it on every paragraph
    that ended without whitespace)."""
    from arborist.batch import doc_conllu

    for text in ("The cat sat.", "The cat sat.  ", "The cat sat.\n"):
        rows = [line.split("\t") for line in doc_conllu(nlp(text), 1).splitlines() if line and line[0] != "#"]
        assert [r[9] for r in rows] == ["_", "_", "SpaceAfter=No", "_"], text


def test_empty_and_whitespace_docs(nlp):
    assert len(nlp("")) == 0
    doc = nlp("   ")
    assert all(t.is_space for t in doc) and doc.has_annotation("DEP")


def test_to_disk_and_spacy_load_give_identical_output(nlp, tiny_model, tmp_path):
    expected = [annotations(d) for d in nlp.pipe(TEXTS)]
    model_copy = tmp_path / "model"
    shutil.copytree(tiny_model, model_copy)
    original = make_nlp(model_copy)
    original.to_disk(tmp_path / "pipeline")
    shutil.rmtree(model_copy)  # the saved pipeline carries its own copy of the model
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.pipe_names == ["sentencizer", "arborist_tagger", "arborist_parser"]
    assert [annotations(d) for d in loaded.pipe(TEXTS)] == expected


def test_to_bytes_and_from_bytes_give_identical_output(nlp):
    fresh = spacy.blank("en")
    fresh.add_pipe("sentencizer")
    fresh.add_pipe("arborist_tagger")
    fresh.add_pipe("arborist_parser")
    fresh.from_bytes(nlp.to_bytes())
    assert [annotations(d) for d in fresh.pipe(TEXTS)] == [annotations(d) for d in nlp.pipe(TEXTS)]


def test_a_component_without_a_model_says_so(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("arborist_parser")
    with pytest.raises(ValueError, match="no model"):
        nlp("A text.")
    nlp = spacy.blank("en")
    nlp.add_pipe("arborist_tagger", config={"model": str(tmp_path / "missing")})
    with pytest.raises(arborist.model.ModelError, match="missing"):
        nlp.initialize()


def test_displacy_renders_the_parse(nlp):
    doc = nlp(TEXTS[0])
    svg = displacy.render(doc, style="dep", jupyter=False)
    assert svg.startswith("<svg") and "girl" in svg and doc[1].dep_ in svg
    page = displacy.render(list(doc.sents), style="dep", page=True, jupyter=False)
    assert page.count("<svg") == 2


def test_pipe_with_two_processes_equals_one(nlp):
    texts = TEXTS * 6
    one = [annotations(d) for d in nlp.pipe(texts, n_process=1)]
    two = [annotations(d) for d in nlp.pipe(texts, n_process=2, batch_size=4)]
    assert two == one


def test_a_pickled_pipeline_annotates_as_the_original(nlp, tiny_model, tmp_path):
    # What spaCy sends to the processes nlp.pipe(n_process=N) spawns: each component with its
    # model's files, not the directory it was read from, which may be gone (or changed) by then.
    expected = [annotations(d) for d in nlp.pipe(TEXTS)]
    shutil.copytree(tiny_model, tmp_path / "model")
    original = make_nlp(tmp_path / "model")
    assert [annotations(d) for d in original.pipe(TEXTS)] == expected  # the models are loaded now
    shutil.rmtree(tmp_path / "model")
    copy = pickle.loads(pickle.dumps(original))
    assert copy.get_pipe("arborist_tagger")._model is not None  # loaded when unpickled
    assert [annotations(d) for d in copy.pipe(TEXTS)] == expected
    fresh = spacy.blank("en")
    fresh.add_pipe("sentencizer")
    fresh.add_pipe("arborist_tagger")
    fresh.add_pipe("arborist_parser")
    fresh.from_bytes(nlp.to_bytes())  # a temporary directory, gone: the files travel
    assert [annotations(d) for d in pickle.loads(pickle.dumps(fresh)).pipe(TEXTS)] == expected
    cold = make_nlp(nlp.get_pipe("arborist_tagger").model_path)
    assert [annotations(d) for d in pickle.loads(pickle.dumps(cold)).pipe(TEXTS)] == expected


def test_pipe_in_spawned_processes_equals_one(nlp):
    # The spawn start method (macOS's default; Linux's forkserver from Python 3.14 pickles too)
    # pickles the pipeline for each process.
    texts = TEXTS * 4
    one = [annotations(d) for d in nlp.pipe(texts, n_process=1)]
    before = multiprocessing.get_start_method(allow_none=True)
    multiprocessing.set_start_method("spawn", force=True)
    try:
        two = [annotations(d) for d in nlp.pipe(texts, n_process=2, batch_size=4)]
    finally:
        multiprocessing.set_start_method(before, force=True)
    assert two == one


def test_threads_share_a_pipeline(tiny_model, nlp):
    """Threads tagging new words at once with one (fresh) model: each gets its own words' features."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(0)
    texts = [" ".join("".join(rng.choice(list("abcdefgh"), 6)) for _ in range(30)) + "." for _ in range(40)]
    expected = [annotations(d) for d in nlp.pipe(texts)]
    shared = make_nlp(tiny_model)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda t: annotations(shared(t)), texts))
    finally:
        sys.setswitchinterval(interval)
    assert got == expected


def gold_examples(nlp) -> list[Example]:
    """One example per sample-dev sentence: a Doc of its words (no annotation), and the gold Doc."""
    examples = []
    for s in read_corpus(DEV):
        words = s.forms[1:]
        heads = [int(h) - 1 if h else m for m, h in enumerate(s.heads[1:])]
        gold = Doc(nlp.vocab, words=words, pos=s.upos[1:], tags=s.xpos[1:], heads=heads,
                   deps=["ROOT" if h == 0 else d for h, d in zip(s.heads[1:], s.deprels[1:])])
        examples.append(Example(Doc(nlp.vocab, words=words), gold))
    return examples


def test_nlp_evaluate_reports_spacy_scores(tiny_model, pipeline):
    nlp = make_nlp(tiny_model, sentencizer=False)  # each example is one sentence
    examples = gold_examples(nlp)
    scores = nlp.evaluate(examples)
    for key in ("dep_uas", "dep_las", "pos_acc", "tag_acc", "sents_f"):
        assert 0.0 <= scores[key] <= 1.0, key
    # The same figures computed from arborist's own predictions, as spaCy defines them:
    # tag accuracy over all words; UAS and LAS as F-scores over arcs whose label is not punct.
    pos = tag = words = 0
    pred_arcs, gold_arcs, pred_labeled, gold_labeled = 0, 0, 0, 0
    uas_hits = las_hits = 0
    for s in read_corpus(DEV):
        tagged, heads, deprels = pipeline.annotate(Sentence.from_columns(s.forms[1:]))
        pos += sum(a == b for a, b in zip(tagged.upos[1:], s.upos[1:]))
        tag += sum(a == b for a, b in zip(tagged.xpos[1:], s.xpos[1:]))
        words += s.n
        pred = {(m, int(heads[m]), deprels[m].lower()) for m in range(1, s.n + 1) if deprels[m] != "punct"}
        gold = {(m, int(s.heads[m]), s.deprels[m].lower()) for m in range(1, s.n + 1) if s.deprels[m] != "punct"}
        pred_arcs, gold_arcs = pred_arcs + len(pred), gold_arcs + len(gold)
        las_hits += len(pred & gold)
        uas_hits += len({a[:2] for a in pred} & {a[:2] for a in gold})
    assert scores["pos_acc"] == pytest.approx(pos / words)
    assert scores["tag_acc"] == pytest.approx(tag / words)
    f = lambda hits: 2 * hits / (pred_arcs + gold_arcs)  # noqa: E731
    assert scores["dep_uas"] == pytest.approx(f(uas_hits))
    assert scores["dep_las"] == pytest.approx(f(las_hits))


def test_arborist_package_writes_a_loadable_pipeline(tiny_model, tmp_path, nlp):
    out = tmp_path / "en_arborist"
    runner = CliRunner()
    result = runner.invoke(app, ["package", str(tiny_model), str(out), "--lang", "en"])
    assert result.exit_code == 0, result.output
    loaded = spacy.load(out)
    assert loaded.lang == "en"
    assert loaded.pipe_names == ["sentencizer", "arborist_tagger", "arborist_parser"]
    assert loaded.config["components"]["arborist_parser"]["model"] is None  # no path of this machine
    assert loaded.meta["requirements"] == [f"arborist>={arborist.__version__}"]
    assert [annotations(d) for d in loaded.pipe(TEXTS)] == [annotations(d) for d in nlp.pipe(TEXTS)]
    result = runner.invoke(app, ["package", str(tiny_model), str(out)])
    assert result.exit_code != 0 and "exists" in result.output
    assert runner.invoke(app, ["package", str(tiny_model), str(out), "--overwrite"]).exit_code == 0


def test_unknown_language_is_reported(tiny_model, tmp_path):
    result = CliRunner().invoke(app, ["package", str(tiny_model), str(tmp_path / "p"), "--lang", "zz"])
    assert result.exit_code != 0 and "zz" in result.output


def test_arborist_package_gives_the_pipeline_the_models_language(tiny_model, tmp_path):
    """A model trained on an Italian UD file packages as Italian (it was English before the
    model knew its language): spaCy's Italian stop words, not English ones."""
    import json
    import shutil

    italian = tmp_path / "model"
    shutil.copytree(tiny_model, italian)
    meta = json.loads((italian / "meta.json").read_text(encoding="utf-8"))
    meta["info"]["config"] = meta["info"]["config"].replace("sample-train.conllu", "it_sample-ud-train.conllu")
    (italian / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    assert CliRunner().invoke(app, ["package", str(italian), str(tmp_path / "p")]).exit_code == 0
    loaded = spacy.load(tmp_path / "p")
    assert loaded.lang == "it" and loaded.meta["lang"] == "it"
    assert [t.is_stop for t in loaded("Non lo so")] == [True, True, False]


def test_model_language_comes_from_the_config(pipeline):
    assert pipeline.lang == "en"  # the training config's [nlp] lang is null, its training file not UD-named
    assert '[nlp]\nlang = null' in pipeline.info["config"]
    german = arborist.Pipeline(info={"config": pipeline.info["config"].replace('lang = null', 'lang = "de"')})
    assert german.lang == "de"


def test_feats_bundles_whose_feature_order_spacy_changes_keep_their_features():
    """spaCy keys a morphological analysis by its own (case-sensitive) order of the features:
    "NumType=Card|Number=Sing", where UD writes "Number=Sing|NumType=Card" (hu_szeged dev has
    322 such words). The bridge gives `Doc.from_array` the analysis's key, not the bundle's
    string id (with which the token got no features), and CoNLL-U from a Doc is in UD's order."""
    from spacy.attrs import MORPH

    from arborist.spacy_components import morph_keys, to_spacy_value, ud_feats
    from arborist.strings import hash_strings

    vocab = spacy.blank("en").vocab
    names = ["Number=Sing|NumType=Card", "_", "Case=Nom", "Number=Sing|NumType=Card"]
    ids = hash_strings(names)
    for name in names:
        vocab.strings.add(name)  # as the bridge does: the values are string ids
    doc = Doc(vocab, words=["a", "b", "c", "d"])
    doc.from_array([MORPH], ids.reshape(-1, 1).astype(np.uint64))
    assert str(doc[0].morph) == ""  # what the string id gives: the features are lost
    doc.from_array([MORPH], morph_keys(vocab, ids, sorted(set(names))).reshape(-1, 1))
    assert [str(t.morph) for t in doc] == ["NumType=Card|Number=Sing", "", "Case=Nom", "NumType=Card|Number=Sing"]
    assert [ud_feats(str(t.morph)) for t in doc] == names[:2] + ["Case=Nom", names[0]]
    assert [to_spacy_value("feats", n) for n in names[:3]] == [str(t.morph) for t in doc][:3]
    # a bundle spaCy cannot read (a feature without a value) is no features there, not an error
    assert to_spacy_value("feats", "Typo") == "" and str(Doc(vocab, words=["x"], morphs=[""])[0].morph) == ""
    doc.from_array([MORPH], morph_keys(vocab, hash_strings(["Typo"] * 4), ["Typo"]).reshape(-1, 1))
    assert [str(t.morph) for t in doc] == [""] * 4


def test_feats_candidates_after_a_memory_zone():
    """spaCy forgets the strings added inside a memory zone (`arborist parse` opens one on a
    large vocabulary), while an analysis registered there stays: a bundle's spaCy string is
    made without the StringStore, so its candidates are written after the zone (looking the
    analysis's key up raised E018)."""
    from arborist.batch import set_confidences
    from arborist.component import Confidence

    nlp = spacy.blank("en")
    bundle = "Case=Nom|Number=Sing"  # in spaCy's order already: the zone's string is the analysis's
    with nlp.memory_zone():
        nlp.vocab.strings.add(bundle)
        nlp.vocab.morphology.add(bundle)
    assert bundle not in nlp.vocab.strings  # what the zone leaves: the analysis without its string
    doc = Doc(nlp.vocab, words=["she"])
    c = Confidence(np.array([0.9]), np.array([[0, 1]]), np.array([[0.9, 0.1]]), [bundle, "_"])
    set_confidences(doc, {"feats": c}, k_best=2)
    assert doc[0]._.feats_candidates == [(bundle, 0.9), ("", 0.1)] and doc[0]._.feats_prob == 0.9


def test_a_lemma_or_xpos_of_no_value_is_the_same_in_tokens_and_candidates():
    """CoNLL-U's "_" lemma (tr_imst's suffix words) was "" in the JSON of CoNLL-U input and "_"
    in that of text, and "_" in the candidates of both: it is no value, "", everywhere."""
    from arborist.spacy_components import to_spacy_value

    assert to_spacy_value("lemma", "_") == "" and to_spacy_value("xpos", "_") == ""
    assert to_spacy_value("lemma", "a") == "a" and to_spacy_value("upos", "_") == "_"


def test_a_treebank_without_xpos_gives_no_tags(tmp_path):
    """XPOS "_" in every training word (hu_szeged) is CoNLL-U's "no value": the tagger leaves
    token.tag_ unset, as spaCy's converter does, rather than set the tag "_" (which gave
    `tag_acc` 0 in `nlp.evaluate`); it scores no tag_acc; CoNLL-U still writes "_"."""
    from trackers import Quiet

    from arborist.batch import doc_conllu
    from arborist.train import load_config, train

    repo = Path(__file__).resolve().parents[1]
    sample = repo / "corpora" / "sample"
    for split in ("train", "dev"):
        lines = (sample / f"sample-{split}.conllu").read_text(encoding="utf-8").splitlines()
        blank = ["\t".join(c[:4] + ["_"] + c[5:]) if len(c := line.split("\t")) == 10 else line for line in lines]
        (tmp_path / f"{split}.conllu").write_text("\n".join(blank) + "\n", encoding="utf-8")
    overrides = {"paths.train": str(tmp_path / "train.conllu"), "paths.dev": str(tmp_path / "dev.conllu"),
                 "training.max_epochs": 1, "training.jackknife_folds": 2,
                 "components.xpos.structure.missing_tag": True}  # as configs/ud_pipeline.cfg
    train(load_config(repo / "configs" / "quickstart.cfg", overrides), tmp_path / "run", Quiet())
    model = arborist.load(tmp_path / "run" / "model-best")
    assert model.writer("xpos").classes == ("_",)
    nlp = make_nlp(tmp_path / "run" / "model-best")
    doc = nlp("The tired girl is not happy.  She left.")
    assert [t.tag_ for t in doc] == [""] * len(doc) and not doc.has_annotation("TAG")
    assert all(t.pos_ for t in doc) and doc.has_annotation("DEP")
    assert all(line.split("\t")[4] == "_" for line in doc_conllu(doc).splitlines() if line[:1].isdigit())
    gold = Doc(nlp.vocab, words=[t.text for t in doc], spaces=[bool(t.whitespace_) for t in doc],
               pos=[t.pos_ for t in doc], tags=[t.pos_ for t in doc])
    gold = gold[:7].as_doc()  # spaCy's scorer aligns no whitespace token: one sentence without
    scores = nlp.evaluate([Example(nlp.make_doc(gold.text), gold)])
    assert scores.get("tag_acc") is None and scores["pos_acc"] == 1.0


def test_the_parser_warns_on_docs_without_tags(nlp):
    """Without a tagger before it the parser reads no tags and its trees are poor: spaCy's
    `analyze_pipes` names the missing requirement, and the parser warns (it said nothing)."""
    import warnings

    from arborist.spacy_components import UntaggedDocWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", UntaggedDocWarning)
        nlp("She wrote the address down.")
    with nlp.select_pipes(disable=["arborist_tagger"]):
        with pytest.warns(UntaggedDocWarning, match="without POS tags"):
            nlp("She wrote the address down.")
        assert nlp.analyze_pipes()["problems"]["arborist_parser"] == ["token.pos"]


def test_packaging_a_parser_without_taggers_warns(tiny_model, tmp_path):
    """A parser trained on gold tags packages as a pipeline that reads the Doc's tags: said
    once at packaging (it said nothing, then every Doc warned)."""
    pipeline = arborist.load(tiny_model)
    parser_only = pipeline.subset(lambda c: not c.tagging)
    parser_only.save(tmp_path / "parser_only")
    result = CliRunner().invoke(app, ["package", str(tmp_path / "parser_only"), str(tmp_path / "p")])
    assert result.exit_code == 0 and "has no tagger: its parser reads the tags a Doc has" in result.output
    result = CliRunner().invoke(app, ["package", str(tiny_model), str(tmp_path / "q")])
    assert result.exit_code == 0 and "has no tagger" not in result.output
