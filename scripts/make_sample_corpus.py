#!/usr/bin/env python3
"""Generate a small, deterministic English Universal Dependencies sample treebank.

Usage (from the repository root):

    python scripts/make_sample_corpus.py

Writes

    corpora/sample/sample-train.conllu   (80 sentences)
    corpora/sample/sample-dev.conllu     (30 sentences, none identical to a train sentence)

All sentences are produced by the toy grammar and vocabulary below (no
sentence is taken from an existing treebank).  The output depends only on
SEED, so re-running the script reproduces the files byte for byte.  Only the
standard library is needed; if the third-party ``conllu`` package is
importable, the written files are additionally loaded with ``conllu.parse``.

Non-projective sentences (checked by ``validate``; see EXPECTED_NONPROJECTIVE):
    sample-train-16  "A child appeared last summer who carried the bottle."
                     extraposed relative clause: acl:relcl child(2)->carried(7) crosses
                     punct appeared(3)->.(10) (and the root arc)
    sample-train-19  "A workshop is scheduled on the project this evening."
                     nmod workshop(2)->project(7) crosses obl:tmod scheduled(4)->evening(9)
    sample-train-76  "A baker returned this morning who knew the truth."
                     extraposed relative clause, like sample-train-16
    sample-dev-4     "A meeting was expected about the plan last week."
                     like sample-train-19
All other sentences are projective (also asserted).

Sentences with a multiword token (contraction, UD English EWT style, e.g.
"didn't" = did + n't, "won't" = wo + n't): see EXPECTED_MWT below
    train: 2, 27, 34, 40, 59, 73      dev: 26, 28

Conventions follow UD English (EWT): copula constructions are headed by the
predicate (cop and nsubj attach to it), "n't"/"not" is PART/RB advmod,
contractions are multiword tokens ("don't" = do + n't, "can't" = ca + n't),
all punctuation attaches to the root with ``punct``.  SpaceAfter=No is put on
the word before the final punctuation; for a contraction the text has no
space inside the MWT, and (as required by the UD validator) SpaceAfter=No is
never placed on a word that belongs to a multiword token -- it would go on the
range line instead.
"""

from __future__ import annotations

import random
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

SEED = 20240521
N_TRAIN = 80
N_DEV = 30

ROOT_DIR = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT_DIR / "corpora" / "sample"
TRAIN_PATH = OUT_DIR / "sample-train.conllu"
DEV_PATH = OUT_DIR / "sample-dev.conllu"

# Kept in sync with the module docstring; validate() asserts that the set of
# non-projective trees found in the written files is exactly this set.  If the
# grammar or SEED is changed, update both (the script tells you the new ids).
EXPECTED_NONPROJECTIVE: set[str] | None = {
    "sample-train-16", "sample-train-19", "sample-train-76", "sample-dev-4",
}
EXPECTED_MWT: set[str] | None = {
    "sample-train-2", "sample-train-27", "sample-train-34", "sample-train-40",
    "sample-train-59", "sample-train-73", "sample-dev-26", "sample-dev-28",
}

UPOS_TAGS = {
    "ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART",
    "PRON", "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X",
}
# Penn Treebank tags allowed for each UPOS (as in UD English EWT).
XPOS_FOR_UPOS = {
    "ADJ": {"JJ", "JJR", "JJS"},
    "ADP": {"IN", "RP"},
    "ADV": {"RB", "RBR", "RBS", "WRB"},
    "AUX": {"MD", "VB", "VBD", "VBG", "VBN", "VBP", "VBZ"},
    "CCONJ": {"CC"},
    "DET": {"DT", "PDT", "WDT"},
    "INTJ": {"UH"},
    "NOUN": {"NN", "NNS"},
    "NUM": {"CD"},
    "PART": {"RB", "TO", "POS"},
    "PRON": {"PRP", "PRP$", "WP", "WDT", "DT"},
    "PROPN": {"NNP", "NNPS"},
    "PUNCT": {".", ",", ":", "``", "''", "-LRB-", "-RRB-"},
    "SCONJ": {"IN"},
    "SYM": {"SYM", "$"},
    "VERB": {"VB", "VBD", "VBG", "VBN", "VBP", "VBZ"},
    "X": {"FW", "LS", "ADD", "GW"},
}

# ---------------------------------------------------------------------------
# Vocabulary
# ---------------------------------------------------------------------------

# (singular, plural)
ANIMATE = [
    ("dog", "dogs"), ("cat", "cats"), ("teacher", "teachers"),
    ("student", "students"), ("farmer", "farmers"), ("child", "children"),
    ("doctor", "doctors"), ("neighbor", "neighbors"), ("baker", "bakers"),
    ("nurse", "nurses"), ("driver", "drivers"), ("girl", "girls"),
    ("boy", "boys"), ("woman", "women"), ("man", "men"), ("pilot", "pilots"),
]
HUMAN = [n for n in ANIMATE if n[0] not in ("dog", "cat")]
KIN = [
    ("brother", "brothers"), ("sister", "sisters"), ("mother", "mothers"),
    ("father", "fathers"), ("uncle", "uncles"), ("aunt", "aunts"),
    ("friend", "friends"), ("cousin", "cousins"), ("son", "sons"),
    ("daughter", "daughters"),
]
OCCUPATION = [
    ("teacher", "teachers"), ("doctor", "doctors"), ("nurse", "nurses"),
    ("baker", "bakers"), ("pilot", "pilots"), ("farmer", "farmers"),
    ("singer", "singers"), ("lawyer", "lawyers"),
]
PORTABLE = [
    ("book", "books"), ("letter", "letters"), ("box", "boxes"), ("map", "maps"),
    ("key", "keys"), ("bottle", "bottles"), ("picture", "pictures"),
    ("basket", "baskets"), ("ticket", "tickets"), ("bag", "bags"),
    ("cup", "cups"), ("plate", "plates"), ("phone", "phones"),
    ("coat", "coats"), ("lamp", "lamps"), ("umbrella", "umbrellas"),
]
FIXABLE = [
    ("car", "cars"), ("bike", "bikes"), ("lamp", "lamps"), ("chair", "chairs"),
    ("door", "doors"), ("window", "windows"), ("phone", "phones"),
    ("table", "tables"), ("clock", "clocks"), ("radio", "radios"),
    ("fence", "fences"),
]
OPENABLE = [
    ("door", "doors"), ("window", "windows"), ("box", "boxes"),
    ("bottle", "bottles"), ("bag", "bags"), ("letter", "letters"),
    ("book", "books"), ("gate", "gates"),
]
READABLE = [
    ("book", "books"), ("letter", "letters"), ("map", "maps"),
    ("story", "stories"), ("report", "reports"), ("note", "notes"),
]
WRITABLE = [
    ("letter", "letters"), ("story", "stories"), ("song", "songs"),
    ("note", "notes"), ("report", "reports"), ("poem", "poems"),
]
FOOD = [
    ("cake", "cakes"), ("apple", "apples"), ("sandwich", "sandwiches"),
    ("orange", "oranges"), ("pie", "pies"), ("egg", "eggs"),
]
PLACES = [
    ("garden", "gardens"), ("river", "rivers"), ("park", "parks"),
    ("market", "markets"), ("station", "stations"), ("library", "libraries"),
    ("kitchen", "kitchens"), ("village", "villages"), ("office", "offices"),
    ("school", "schools"), ("house", "houses"), ("hall", "halls"),
    ("bridge", "bridges"), ("shop", "shops"),
]
EVENTS = [
    ("hearing", "hearings"), ("meeting", "meetings"), ("vote", "votes"),
    ("debate", "debates"), ("review", "reviews"), ("workshop", "workshops"),
    ("lecture", "lectures"),
]
TOPICS = [
    ("issue", "issues"), ("budget", "budgets"), ("proposal", "proposals"),
    ("plan", "plans"), ("report", "reports"), ("project", "projects"),
]

# verbs: (lemma, past, 3sg, gerund, participle)
V = {
    "see": ("see", "saw", "sees", "seeing", "seen"),
    "find": ("find", "found", "finds", "finding", "found"),
    "buy": ("buy", "bought", "buys", "buying", "bought"),
    "sell": ("sell", "sold", "sells", "selling", "sold"),
    "carry": ("carry", "carried", "carries", "carrying", "carried"),
    "take": ("take", "took", "takes", "taking", "taken"),
    "bring": ("bring", "brought", "brings", "bringing", "brought"),
    "need": ("need", "needed", "needs", "needing", "needed"),
    "lose": ("lose", "lost", "loses", "losing", "lost"),
    "drop": ("drop", "dropped", "drops", "dropping", "dropped"),
    "forget": ("forget", "forgot", "forgets", "forgetting", "forgotten"),
    "open": ("open", "opened", "opens", "opening", "opened"),
    "close": ("close", "closed", "closes", "closing", "closed"),
    "fix": ("fix", "fixed", "fixes", "fixing", "fixed"),
    "paint": ("paint", "painted", "paints", "painting", "painted"),
    "clean": ("clean", "cleaned", "cleans", "cleaning", "cleaned"),
    "wash": ("wash", "washed", "washes", "washing", "washed"),
    "read": ("read", "read", "reads", "reading", "read"),
    "write": ("write", "wrote", "writes", "writing", "written"),
    "eat": ("eat", "ate", "eats", "eating", "eaten"),
    "cook": ("cook", "cooked", "cooks", "cooking", "cooked"),
    "visit": ("visit", "visited", "visits", "visiting", "visited"),
    "help": ("help", "helped", "helps", "helping", "helped"),
    "know": ("know", "knew", "knows", "knowing", "known"),
    "sleep": ("sleep", "slept", "sleeps", "sleeping", "slept"),
    "wait": ("wait", "waited", "waits", "waiting", "waited"),
    "sit": ("sit", "sat", "sits", "sitting", "sat"),
    "stay": ("stay", "stayed", "stays", "staying", "stayed"),
    "work": ("work", "worked", "works", "working", "worked"),
    "play": ("play", "played", "plays", "playing", "played"),
    "walk": ("walk", "walked", "walks", "walking", "walked"),
    "run": ("run", "ran", "runs", "running", "run"),
    "go": ("go", "went", "goes", "going", "gone"),
    "drive": ("drive", "drove", "drives", "driving", "driven"),
    "hurry": ("hurry", "hurried", "hurries", "hurrying", "hurried"),
    "return": ("return", "returned", "returns", "returning", "returned"),
    "arrive": ("arrive", "arrived", "arrives", "arriving", "arrived"),
    "appear": ("appear", "appeared", "appears", "appearing", "appeared"),
    "leave": ("leave", "left", "leaves", "leaving", "left"),
    "smile": ("smile", "smiled", "smiles", "smiling", "smiled"),
    "laugh": ("laugh", "laughed", "laughs", "laughing", "laughed"),
    "sing": ("sing", "sang", "sings", "singing", "sung"),
    "want": ("want", "wanted", "wants", "wanting", "wanted"),
    "try": ("try", "tried", "tries", "trying", "tried"),
    "decide": ("decide", "decided", "decides", "deciding", "decided"),
    "hope": ("hope", "hoped", "hopes", "hoping", "hoped"),
    "think": ("think", "thought", "thinks", "thinking", "thought"),
    "say": ("say", "said", "says", "saying", "said"),
    "schedule": ("schedule", "scheduled", "schedules", "scheduling", "scheduled"),
    "plan": ("plan", "planned", "plans", "planning", "planned"),
    "expect": ("expect", "expected", "expects", "expecting", "expected"),
    "pick": ("pick", "picked", "picks", "picking", "picked"),
    "put": ("put", "put", "puts", "putting", "put"),
    "turn": ("turn", "turned", "turns", "turning", "turned"),
    "throw": ("throw", "threw", "throws", "throwing", "thrown"),
    "fill": ("fill", "filled", "fills", "filling", "filled"),
    "look": ("look", "looked", "looks", "looking", "looked"),
}

# transitive verb -> compatible objects
TRANSITIVE = {
    "see": PORTABLE + FIXABLE, "find": PORTABLE, "buy": PORTABLE + FIXABLE,
    "sell": PORTABLE + FIXABLE, "carry": PORTABLE, "take": PORTABLE,
    "bring": PORTABLE + FOOD, "need": PORTABLE, "lose": PORTABLE,
    "drop": PORTABLE, "open": OPENABLE, "close": OPENABLE, "fix": FIXABLE,
    "paint": FIXABLE, "clean": FIXABLE + [("cup", "cups"), ("plate", "plates")],
    "wash": [("car", "cars"), ("cup", "cups"), ("plate", "plates"), ("window", "windows")],
    "read": READABLE, "write": WRITABLE, "eat": FOOD, "cook": FOOD[:2] + FOOD[3:],
    "forget": PORTABLE,
}
STATIC_INTRANS = ["sleep", "wait", "sit", "stay", "work", "play", "sing"]
MOTION_INTRANS = ["walk", "run", "go", "drive", "hurry", "return"]
STATIC_PREPS = ["in", "near", "behind", "at", "by", "outside"]
MOTION_PREPS = ["to", "toward", "across", "past", "into"]
# which prepositions fit which place (anything not listed: all but "across"/"under")
PLACE_PREPS = {
    "river": {"near", "by", "across", "to", "toward", "past"},
    "bridge": {"near", "by", "under", "across", "to", "toward", "past"},
    "park": {"in", "near", "behind", "by", "outside", "across", "to", "toward", "into", "past"},
    "garden": {"in", "near", "behind", "by", "outside", "across", "to", "toward", "into"},
    "village": {"in", "near", "outside", "to", "toward", "into", "past"},
    "kitchen": {"in", "into"},
}
VISITABLE = [x for x in PLACES if x[0] not in ("bridge", "river", "kitchen")]
# (preposition, noun) pairs for locative copula clauses: "The key was under the bed."
LOCATIONS = [("in", ("kitchen", "kitchens")), ("in", ("box", "boxes")), ("in", ("car", "cars")),
             ("in", ("drawer", "drawers")), ("in", ("bag", "bags")),
             ("on", ("table", "tables")), ("on", ("shelf", "shelves")), ("on", ("bed", "beds")),
             ("on", ("chair", "chairs")), ("under", ("table", "tables")), ("under", ("bed", "beds")),
             ("behind", ("door", "doors")), ("behind", ("sofa", "sofas")), ("near", ("window", "windows"))]
# subordinating conjunctions (SCONJ/IN, deprel mark); "when" is ADV/WRB advmod in EWT, so not here
SUBORDINATORS = {"because": "IN", "before": "IN", "after": "IN", "while": "IN"}
# verbs that take an object only when the subject acts on purpose (fit with modals/xcomp)
DELIBERATE_TRANS = ["open", "close", "fix", "paint", "clean", "wash", "carry", "write",
                    "read", "cook", "eat", "buy", "sell", "bring", "find", "take"]

ADJ_PRED_ANIMATE = ["happy", "tired", "hungry", "busy", "late", "ready", "angry", "calm", "sick"]
ADV_DEGREE = ["very", "quite", "really", "too"]
ADV_FREQ = ["often", "always", "sometimes", "usually"]
ADV_TIME = ["early", "later", "again"]
ADV_AGENTIVE = ["quickly", "slowly", "quietly", "carefully"]
# intransitive verb -> manner adverbs that fit it
MANNER = {
    "walk": ["quickly", "slowly", "carefully", "quietly"],
    "run": ["quickly", "slowly", "carefully"],
    "drive": ["quickly", "slowly", "carefully"],
    "hurry": ["quickly", "quietly"],
    "return": ["quickly", "slowly", "quietly"],
    "sing": ["loudly", "quietly", "happily"],
    "laugh": ["loudly", "quietly", "happily"],
    "smile": ["happily", "quietly", "politely"],
    "work": ["quietly", "happily", "carefully"],
    "play": ["quietly", "happily", "loudly"],
    "wait": ["quietly", "patiently", "calmly"],
    "sit": ["quietly", "patiently", "calmly"],
    "sleep": ["quietly", "peacefully", "soundly"],
    "leave": ["quickly", "quietly", "early", "later"],
    "arrive": ["early", "later", "again"],
}
# verbs whose transitive use needs a deliberate agent (fit "carefully X-ed the Y")
AGENTIVE_TRANS = ["open", "close", "fix", "paint", "clean", "wash", "carry", "write", "read", "cook"]
ANIMAL_OK = {"sleep", "wait", "sit", "stay", "play", "walk", "run", "hurry", "return"}

_HUMAN_LEMMAS = {n[0] for n in ANIMATE + KIN + OCCUPATION} - {"dog", "cat"}
_TEXTS = {"book", "letter", "map", "story", "report", "note", "song", "poem"}
_CONTAINERS = {"box", "bottle", "basket", "bag", "cup", "plate"}
_FIXABLE = {n[0] for n in FIXABLE} | {"umbrella", "light", "heater"}
_FOOD = {n[0] for n in FOOD}
_PLACES = {n[0] for n in PLACES}
_ABSTRACT = {"number", "name", "address", "word", "form", "answer", "way", "truth",
             "issue", "budget", "proposal", "plan", "project"}


def adjs_for(lemma: str) -> list[str]:
    """Attributive adjectives that fit a noun."""
    if lemma in _HUMAN_LEMMAS:
        return ["young", "tall", "quiet", "happy", "tired", "kind"]
    if lemma in ("dog", "cat"):
        return ["small", "big", "old", "black", "white"]
    if lemma in _TEXTS:
        return ["short", "long", "new", "old"]
    if lemma in _FOOD:
        return ["fresh", "warm", "big", "small"]
    if lemma in _PLACES:
        return ["old", "new", "big", "small", "quiet", "busy"]
    if lemma in _CONTAINERS:
        return ["empty", "heavy", "small", "big", "old", "red", "blue"]
    if lemma in _FIXABLE:
        return ["old", "new", "broken", "red", "blue", "cheap", "small"]
    if lemma in _ABSTRACT:
        return ["new", "old"]
    return ["old", "new", "small", "big", "red", "blue", "cheap"]


def pred_adjs_for(lemma: str) -> list[str]:
    """Predicative adjectives (copula constructions) that fit a subject noun."""
    special = {
        "bus": ["late", "full", "early"], "train": ["late", "full", "early"],
        "soup": ["cold", "hot", "ready"], "shop": ["closed", "open", "busy"],
        "room": ["cold", "empty", "warm"],
    }
    if lemma in special:
        return special[lemma]
    if lemma in _HUMAN_LEMMAS:
        return ADJ_PRED_ANIMATE
    if lemma in _CONTAINERS:
        return ["empty", "full", "heavy", "clean", "dirty"]
    if lemma in _FIXABLE:
        return ["broken", "new", "expensive", "cheap", "dirty", "old"]
    if lemma in _PLACES:
        return ["open", "closed", "busy", "quiet", "crowded"]
    if lemma in _TEXTS:
        return ["short", "long", "interesting"]
    return ["new", "expensive", "cheap", "heavy", "wet"]

COMPOUND_AGENTS = [("bus", "driver"), ("police", "officer"), ("shop", "owner"),
                   ("taxi", "driver"), ("school", "teacher"), ("music", "teacher")]
COMPOUND_THINGS = [("car", "key"), ("train", "ticket"), ("water", "bottle"),
                   ("coffee", "cup"), ("shopping", "bag"), ("phone", "charger"),
                   ("birthday", "cake"), ("kitchen", "lamp")]
COMPOUND_PLACES = [("coffee", "shop"), ("book", "store"), ("flower", "shop"),
                   ("bus", "station"), ("train", "station"), ("post", "office"),
                   ("city", "library")]

PARTICLE_VERBS = [  # (verb, particle, objects)
    ("pick", "up", PORTABLE),
    ("put", "down", PORTABLE),
    ("turn", "off", [("lamp", "lamps"), ("radio", "radios"), ("light", "lights"), ("phone", "phones")]),
    ("turn", "on", [("lamp", "lamps"), ("radio", "radios"), ("light", "lights"), ("heater", "heaters")]),
    ("write", "down", [("number", "numbers"), ("name", "names"), ("address", "addresses")]),
    ("throw", "out", [("box", "boxes"), ("bottle", "bottles"), ("letter", "letters"), ("cake", "cakes")]),
    ("fill", "out", [("form", "forms")]),
    ("look", "up", [("word", "words"), ("number", "numbers"), ("address", "addresses")]),
]

NUM_WORDS = ["two", "three", "four", "five", "six", "seven", "ten", "twelve"]
NUM_DIGITS = ["2", "3", "5", "8", "12", "15", "20"]

PRONOUNS = {  # form: (feats, person, number, xpos)
    "I": ("Case=Nom|Number=Sing|Person=1|PronType=Prs", 1, "Sing"),
    "you": ("Case=Nom|Person=2|PronType=Prs", 2, "Plur"),  # agrees like a plural
    "he": ("Case=Nom|Gender=Masc|Number=Sing|Person=3|PronType=Prs", 3, "Sing"),
    "she": ("Case=Nom|Gender=Fem|Number=Sing|Person=3|PronType=Prs", 3, "Sing"),
    "we": ("Case=Nom|Number=Plur|Person=1|PronType=Prs", 1, "Plur"),
    "they": ("Case=Nom|Number=Plur|Person=3|PronType=Prs", 3, "Plur"),
}
PRON_LEMMA = {"I": "I", "you": "you", "he": "he", "she": "she", "we": "we", "they": "they"}
POSSESSIVES = {
    "my": ("I", "Number=Sing|Person=1|Poss=Yes|PronType=Prs"),
    "your": ("you", "Person=2|Poss=Yes|PronType=Prs"),
    "his": ("he", "Gender=Masc|Number=Sing|Person=3|Poss=Yes|PronType=Prs"),
    "her": ("she", "Gender=Fem|Number=Sing|Person=3|Poss=Yes|PronType=Prs"),
    "our": ("we", "Number=Plur|Person=1|Poss=Yes|PronType=Prs"),
    "their": ("they", "Number=Plur|Person=3|Poss=Yes|PronType=Prs"),
}

# full auxiliary form -> (MWT surface form, form of the first word)
CONTRACTIONS = {
    "do": ("don't", "do"), "does": ("doesn't", "does"), "did": ("didn't", "did"),
    "is": ("isn't", "is"), "are": ("aren't", "are"), "was": ("wasn't", "was"),
    "were": ("weren't", "were"), "has": ("hasn't", "has"), "have": ("haven't", "have"),
    "had": ("hadn't", "had"), "can": ("can't", "ca"), "will": ("won't", "wo"),
    "could": ("couldn't", "could"), "should": ("shouldn't", "should"),
    "would": ("wouldn't", "would"),
}


# ---------------------------------------------------------------------------
# Sentence representation
# ---------------------------------------------------------------------------

@dataclass
class Word:
    form: str
    lemma: str
    upos: str
    xpos: str
    feats: str = "_"
    head: int = -1
    deprel: str = ""
    space_after: bool = True


@dataclass
class Sent:
    pattern: str
    words: list[Word] = field(default_factory=list)
    mwts: list[tuple[int, int, str]] = field(default_factory=list)  # (first, last, form)
    mwt_space_after: dict[int, bool] = field(default_factory=dict)

    def add(self, form, lemma, upos, xpos, feats="_") -> int:
        self.words.append(Word(form, lemma, upos, xpos, feats))
        return len(self.words)

    def att(self, dep: int, head: int, rel: str) -> None:
        w = self.words[dep - 1]
        w.head, w.deprel = head, rel

    def mwt_of(self, wid: int):
        for m in self.mwts:
            if m[0] <= wid <= m[1]:
                return m
        return None

    def finish(self, root: int, mark: str = ".") -> "Sent":
        self.att(root, 0, "root")
        prev = len(self.words)
        p = self.add(mark, mark, "PUNCT", ".")
        self.att(p, root, "punct")
        m = self.mwt_of(prev)
        if m is not None:
            self.mwt_space_after[m[0]] = False
        else:
            self.words[prev - 1].space_after = False
        self._fix_articles()
        self._capitalize()
        return self

    def _fix_articles(self) -> None:
        for i, w in enumerate(self.words[:-1]):
            if w.lemma == "a":
                nxt = self.words[i + 1].form
                w.form = "an" if nxt[0].lower() in "aeiou" else "a"

    def _capitalize(self) -> None:
        first = self.words[0]
        first.form = first.form[0].upper() + first.form[1:]
        m = self.mwt_of(1)
        if m is not None:
            self.mwts[self.mwts.index(m)] = (m[0], m[1], m[2][0].upper() + m[2][1:])

    def text(self) -> str:
        out = []
        i = 1
        while i <= len(self.words):
            m = self.mwt_of(i)
            if m is not None:
                out.append(m[2])
                if self.mwt_space_after.get(m[0], True):
                    out.append(" ")
                i = m[1] + 1
            else:
                w = self.words[i - 1]
                out.append(w.form)
                if w.space_after:
                    out.append(" ")
                i += 1
        return "".join(out).strip()

    def to_conllu(self, sent_id: str) -> str:
        lines = [f"# sent_id = {sent_id}", f"# text = {self.text()}"]
        for i, w in enumerate(self.words, start=1):
            for m in self.mwts:
                if m[0] == i:
                    misc = "_" if self.mwt_space_after.get(m[0], True) else "SpaceAfter=No"
                    lines.append("\t".join([f"{m[0]}-{m[1]}", m[2]] + ["_"] * 7 + [misc]))
            misc = "_" if w.space_after else "SpaceAfter=No"
            lines.append("\t".join([str(i), w.form, w.lemma, w.upos, w.xpos, w.feats,
                                    str(w.head), w.deprel, "_", misc]))
        return "\n".join(lines) + "\n\n"


# ---------------------------------------------------------------------------
# Word-level helpers
# ---------------------------------------------------------------------------

def verb_feats(xpos: str, *, imp: bool = False, passive: bool = False) -> str:
    if imp:
        return "Mood=Imp|VerbForm=Fin"
    return {
        "VB": "VerbForm=Inf",
        "VBD": "Mood=Ind|Tense=Past|VerbForm=Fin",
        "VBZ": "Mood=Ind|Number=Sing|Person=3|Tense=Pres|VerbForm=Fin",
        "VBP": "Mood=Ind|Tense=Pres|VerbForm=Fin",
        "VBG": "Tense=Pres|VerbForm=Part",
        "VBN": "Tense=Past|VerbForm=Part|Voice=Pass" if passive else "Tense=Past|VerbForm=Part",
        "MD": "VerbForm=Fin",
    }[xpos]


def verb(s: Sent, lemma: str, xpos: str, upos: str = "VERB", **kw) -> int:
    forms = V[lemma]
    form = {"VB": forms[0], "VBP": forms[0], "VBD": forms[1], "VBZ": forms[2],
            "VBG": forms[3], "VBN": forms[4]}[xpos]
    return s.add(form, lemma, upos, xpos, verb_feats(xpos, **kw))


def present_xpos(person: int, number: str) -> str:
    return "VBZ" if person == 3 and number == "Sing" else "VBP"


def be(s: Sent, tense: str, person: int, number: str) -> int:
    if tense == "Past":
        form = "was" if number == "Sing" and person != 2 else "were"
        return s.add(form, "be", "AUX", "VBD", "Mood=Ind|Tense=Past|VerbForm=Fin")
    if person == 1 and number == "Sing":
        return s.add("am", "be", "AUX", "VBP", "Mood=Ind|Number=Sing|Person=1|Tense=Pres|VerbForm=Fin")
    if person == 3 and number == "Sing":
        return s.add("is", "be", "AUX", "VBZ", verb_feats("VBZ"))
    return s.add("are", "be", "AUX", "VBP", verb_feats("VBP"))


def do_aux(s: Sent, tense: str, person: int, number: str) -> int:
    if tense == "Past":
        return s.add("did", "do", "AUX", "VBD", verb_feats("VBD"))
    x = present_xpos(person, number)
    return s.add("does" if x == "VBZ" else "do", "do", "AUX", x, verb_feats(x))


def have_aux(s: Sent, tense: str, person: int, number: str) -> int:
    if tense == "Past":
        return s.add("had", "have", "AUX", "VBD", verb_feats("VBD"))
    x = present_xpos(person, number)
    return s.add("has" if x == "VBZ" else "have", "have", "AUX", x, verb_feats(x))


def modal(s: Sent, form: str) -> int:
    return s.add(form, form, "AUX", "MD", "VerbForm=Fin")


def negate(s: Sent, aux: int, head: int, contract: bool) -> int:
    """Add "n't" (as a multiword token with the preceding auxiliary) or "not".

    Uncontracted "can" + "not" is written "cannot", also a multiword token (as in EWT).
    """
    w = s.words[aux - 1]
    if contract and w.form.lower() in CONTRACTIONS:
        mwt_form, first = CONTRACTIONS[w.form.lower()]
        w.form = first
        n = s.add("n't", "not", "PART", "RB")
        s.mwts.append((aux, n, mwt_form))
    elif w.form.lower() == "can":
        n = s.add("not", "not", "PART", "RB")
        s.mwts.append((aux, n, w.form + "not"))
    else:
        n = s.add("not", "not", "PART", "RB")
    s.att(n, head, "advmod")
    return n


def noun(s: Sent, pair, number: str = "Sing") -> int:
    form = pair[0] if number == "Sing" else pair[1]
    return s.add(form, pair[0], "NOUN", "NN" if number == "Sing" else "NNS", f"Number={number}")


def adj(s: Sent, lemma: str) -> int:
    return s.add(lemma, lemma, "ADJ", "JJ", "Degree=Pos")


def adv(s: Sent, lemma: str) -> int:
    return s.add(lemma, lemma, "ADV", "RB")


def det(s: Sent, kind: str) -> int:
    if kind == "the":
        return s.add("the", "the", "DET", "DT", "Definite=Def|PronType=Art")
    if kind == "a":
        return s.add("a", "a", "DET", "DT", "Definite=Ind|PronType=Art")
    if kind == "this":
        return s.add("this", "this", "DET", "DT", "Number=Sing|PronType=Dem")
    raise ValueError(kind)


def adp(s: Sent, form: str) -> int:
    return s.add(form, form, "ADP", "IN")


def pron(s: Sent, form: str) -> tuple[int, int, str]:
    feats, person, number = PRONOUNS[form]
    return s.add(form, PRON_LEMMA[form], "PRON", "PRP", feats), person, number


def splice(s: Sent, part: Sent) -> int:
    """Append the words of a separately built phrase; returns the id offset used."""
    off = len(s.words)
    for w in part.words:
        if w.head > 0:
            w.head += off
        s.words.append(w)
    return off


def poss(s: Sent, form: str) -> int:
    lemma, feats = POSSESSIVES[form]
    return s.add(form, lemma, "PRON", "PRP$", feats)


def num(s: Sent, form: str) -> int:
    nf = "Digit" if form.isdigit() else "Word"
    return s.add(form, form, "NUM", "CD", f"NumForm={nf}|NumType=Card")


# ---------------------------------------------------------------------------
# Phrase-level helpers
# ---------------------------------------------------------------------------

def np(s: Sent, rng: random.Random, nouns, *, number: str | None = None,
       det_kind: str | None = None, adj_p: float = 0.35,
       poss_p: float = 0.0) -> tuple[int, int, str]:
    """DET/POSS (ADJ) NOUN.  Returns (head id, person, number)."""
    if number is None:
        number = "Plur" if rng.random() < 0.25 else "Sing"
    pair = rng.choice(nouns)
    deps = []
    if rng.random() < poss_p:
        deps.append((poss(s, rng.choice(list(POSSESSIVES))), "nmod:poss"))
    else:
        kind = det_kind or ("the" if number == "Plur" or rng.random() < 0.7 else "a")
        if kind == "a" and number == "Plur":
            kind = "the"
        if not (kind == "none"):
            deps.append((det(s, kind), "det"))
    if rng.random() < adj_p:
        deps.append((adj(s, rng.choice(adjs_for(pair[0]))), "amod"))
    n = noun(s, pair, number)
    for d, rel in deps:
        s.att(d, n, rel)
    return n, 3, number


def subject(s: Sent, rng: random.Random, nouns=HUMAN, *, pron_p: float = 0.3,
            **kw) -> tuple[int, int, str]:
    if rng.random() < pron_p:
        return pron(s, rng.choice(list(PRONOUNS)))
    return np(s, rng, nouns, **kw)


def pp(s: Sent, rng: random.Random, preps, nouns=PLACES, adj_p: float = 0.25) -> int:
    """ADP DET (ADJ) NOUN; returns the noun id (caller attaches it)."""
    for _ in range(100):
        place = rng.choice(nouns)
        ok = PLACE_PREPS.get(place[0], set(preps) - {"across", "under"})
        fitting = [x for x in preps if x in ok]
        if fitting:
            break
    c = adp(s, rng.choice(fitting))
    n, _, _ = np(s, rng, [place], number="Sing", det_kind="the", adj_p=adj_p)
    s.att(c, n, "case")
    return n


def tmod(s: Sent, rng: random.Random, tense: str = "Past") -> int:
    """Bare-noun temporal modifier (obl:tmod); returns its head noun (caller attaches)."""
    if tense == "Past":
        choice = rng.choice(["yesterday", "last night", "last week", "this morning",
                             "last summer", "this afternoon"])
    else:
        choice = rng.choice(["today", "tomorrow", "next week", "this evening", "next month"])
    parts = choice.split()
    if len(parts) == 1:
        return s.add(parts[0], parts[0], "NOUN", "NN", "Number=Sing")
    if parts[0] == "this":
        d = det(s, "this")
    else:
        d = adj(s, parts[0])
    n = s.add(parts[1], parts[1], "NOUN", "NN", "Number=Sing")
    s.att(d, n, "det" if parts[0] == "this" else "amod")
    return n


def obj_np(s: Sent, rng: random.Random, verb_lemma: str, **kw) -> int:
    return np(s, rng, TRANSITIVE[verb_lemma], **kw)[0]


def compound_np(s: Sent, rng: random.Random, pairs, *, det_kind: str = "the",
                number: str = "Sing") -> int:
    mod, head = rng.choice(pairs)
    d = det(s, det_kind) if det_kind != "none" else None
    m = s.add(mod, mod, "NOUN", "NN", "Number=Sing")
    plural = head + ("es" if head.endswith(("ch", "x", "s")) else "s")
    h = noun(s, (head, plural), number)
    s.att(m, h, "compound")
    if d:
        s.att(d, h, "det")
    return h


# ---------------------------------------------------------------------------
# Sentence patterns
# ---------------------------------------------------------------------------

def p_transitive(rng, opts):
    """SUBJ VERB OBJ (PP) (TMOD) ."""
    s = Sent("transitive")
    subj, person, number = subject(s, rng)
    vl = rng.choice(list(TRANSITIVE))
    tense = "Past" if rng.random() < 0.75 else "Pres"
    v = verb(s, vl, "VBD" if tense == "Past" else present_xpos(person, number))
    s.att(subj, v, "nsubj")
    o = obj_np(s, rng, vl)
    s.att(o, v, "obj")
    if rng.random() < 0.3:
        s.att(pp(s, rng, STATIC_PREPS), v, "obl")
    if tense == "Past" and rng.random() < 0.3:
        s.att(tmod(s, rng), v, "obl:tmod")
    if tense == "Past" and (opts.get("advcl") or rng.random() < 0.15):
        # ... because/before/after/while SUBJ VERB PP  (advcl, mark)
        sc = rng.choice(list(SUBORDINATORS))
        m = s.add(sc, sc, "SCONJ", SUBORDINATORS[sc])
        vl2 = rng.choice(STATIC_INTRANS + MOTION_INTRANS)
        tmp = Sent("tmp")
        subj2, _, _ = subject(tmp, rng, ANIMATE if vl2 in ANIMAL_OK else HUMAN, pron_p=0.3)
        subj2 += splice(s, tmp)
        v2 = verb(s, vl2, "VBD")
        s.att(m, v2, "mark")
        s.att(subj2, v2, "nsubj")
        s.att(pp(s, rng, MOTION_PREPS if vl2 in MOTION_INTRANS else STATIC_PREPS), v2, "obl")
        s.att(v2, v, "advcl")
    return s.finish(v)


def p_intransitive(rng, opts):
    """SUBJ VERB PP (TMOD) ."""
    s = Sent("intransitive_pp")
    if opts.get("bare"):
        # PRON VERB .  (shortest sentences, 3 words)
        subj, _, _ = pron(s, rng.choice(list(PRONOUNS)))
        v = verb(s, rng.choice(["smile", "laugh", "leave", "arrive", "sleep", "wait"]), "VBD")
        s.att(subj, v, "nsubj")
        return s.finish(v)
    motion = rng.random() < 0.5
    vl = rng.choice(MOTION_INTRANS if motion else STATIC_INTRANS)
    subj, person, number = subject(s, rng, ANIMATE if vl in ANIMAL_OK else HUMAN)
    v = verb(s, vl, "VBD")
    s.att(subj, v, "nsubj")
    places = PLACES
    if vl == "drive":
        places = [x for x in PLACES if x[0] in ("village", "market", "station", "school",
                                                "office", "bridge", "river", "park")]
    s.att(pp(s, rng, MOTION_PREPS if motion else STATIC_PREPS, places), v, "obl")
    if rng.random() < 0.4:
        s.att(tmod(s, rng), v, "obl:tmod")
    return s.finish(v)


def p_negation(rng, opts):
    """SUBJ AUX not/n't VERB OBJ ."""
    s = Sent("negation")
    contract = opts.get("contract")
    if contract is None:
        contract = rng.random() < 0.5
    subj, person, number = subject(s, rng, pron_p=0.45)
    kind = rng.choice(["do", "modal", "have"])
    tense = rng.choice(["Past", "Pres"])
    if kind == "do":
        a = do_aux(s, tense, person, number)
        vx = "VB"
    elif kind == "modal":
        a = modal(s, rng.choice(["can", "will", "could", "should", "would"]))
        vx = "VB"
    else:
        a = have_aux(s, tense, person, number)
        vx = "VBN"
    vl = rng.choice(DELIBERATE_TRANS if kind == "modal" else list(TRANSITIVE))
    n_slot = len(s.words) + 1  # negation goes here; verb after it
    # add negation first (needs verb id): verb id will be n_slot + 1
    negate(s, a, n_slot + 1, contract)
    v = verb(s, vl, vx)
    s.att(a, v, "aux")
    s.att(subj, v, "nsubj")
    s.att(obj_np(s, rng, vl, adj_p=0.25, poss_p=0.2), v, "obj")
    if kind == "have" and rng.random() < 0.5:
        s.att(adv(s, "yet"), v, "advmod")
    elif kind != "have" and rng.random() < 0.3:
        s.att(tmod(s, rng, "Past" if tense == "Past" and kind == "do" else "Pres"), v, "obl:tmod")
    return s.finish(v)


def p_adverb(rng, opts):
    s = Sent("adverb")
    variant = rng.choice(["manner_after", "manner_before", "frequency"])
    subj, person, number = subject(s, rng)
    if variant == "manner_after":
        # SUBJ VERB (DEG) ADV (PP) .
        vl = rng.choice(sorted(set(MANNER) - {"leave", "arrive"}))
        v = verb(s, vl, "VBD")
        s.att(subj, v, "nsubj")
        deg = adv(s, rng.choice(ADV_DEGREE)) if rng.random() < 0.6 else None
        a = adv(s, rng.choice(MANNER[vl]))
        s.att(a, v, "advmod")
        if deg:
            s.att(deg, a, "advmod")
        if rng.random() < 0.3:
            s.att(pp(s, rng, MOTION_PREPS if vl in MOTION_INTRANS else STATIC_PREPS), v, "obl")
        return s.finish(v)
    if variant == "manner_before":
        # SUBJ ADV VERB OBJ (ADV) .
        a = adv(s, rng.choice(ADV_AGENTIVE))
        vl = rng.choice(AGENTIVE_TRANS)
        v = verb(s, vl, "VBD")
        s.att(subj, v, "nsubj")
        s.att(a, v, "advmod")
        s.att(obj_np(s, rng, vl), v, "obj")
        if rng.random() < 0.4:
            s.att(adv(s, rng.choice(["again", "later"])), v, "advmod")
        return s.finish(v)
    # SUBJ FREQ VERB(pres) OBJ .
    a = adv(s, rng.choice(ADV_FREQ))
    if rng.random() < 0.5:
        v = verb(s, "visit", present_xpos(person, number))
        o = np(s, rng, VISITABLE, number="Sing", det_kind="the")[0]
    else:
        vl = rng.choice(AGENTIVE_TRANS)
        v = verb(s, vl, present_xpos(person, number))
        o = obj_np(s, rng, vl, poss_p=0.3)
    s.att(subj, v, "nsubj")
    s.att(a, v, "advmod")
    s.att(o, v, "obj")
    return s.finish(v)


def p_copula(rng, opts):
    s = Sent("copula")
    variant = opts.get("variant") or rng.choice(["adj", "adj", "nominal", "locative"])
    tense = rng.choice(["Past", "Pres"])
    if variant == "adj":
        animate = rng.random() < 0.5
        if animate:
            subj, person, number = subject(s, rng, pron_p=0.4)
        else:
            subj, person, number = np(s, rng, PORTABLE + FIXABLE, adj_p=0.2,
                                      poss_p=0.25)
        subj_lemma = s.words[subj - 1].lemma
        c = be(s, tense, person, number)
        neg = rng.random() < 0.3 or opts.get("contract")
        slot_neg = neg
        # predicate id known after optional negation/degree adverb
        pre = []
        if slot_neg:
            pre.append("neg")
        if rng.random() < 0.5:
            pre.append("deg")
        head_id = len(s.words) + len(pre) + 1
        for item in pre:
            if item == "neg":
                negate(s, c, head_id, opts.get("contract", rng.random() < 0.5))
            else:
                s.att(adv(s, rng.choice(ADV_DEGREE)), head_id, "advmod")
        a = adj(s, rng.choice(ADJ_PRED_ANIMATE if animate else pred_adjs_for(subj_lemma)))
        assert a == head_id
        s.att(subj, a, "nsubj")
        s.att(c, a, "cop")
        return s.finish(a)
    if variant == "nominal":
        # (POSS|DET) NOUN BE a/an (ADJ) NOUN .
        if rng.random() < 0.5:
            p = poss(s, rng.choice(list(POSSESSIVES)))
            subj = noun(s, rng.choice(KIN))
            s.att(p, subj, "nmod:poss")
            person, number = 3, "Sing"
        else:
            people = [x for x in HUMAN if x[0] in ("girl", "boy", "woman", "man", "neighbor")]
            subj, person, number = subject(s, rng, people, number="Sing", det_kind="the",
                                           pron_p=0.4)
            if number != "Sing":
                # "you/we/they" -> plural predicate is awkward; use singular pronoun
                s.words.pop()
                subj, person, number = pron(s, rng.choice(["he", "she", "I"]))
        c = be(s, tense, person, number)
        d = det(s, "a")
        a = adj(s, rng.choice(["good", "young", "famous", "new", "busy"])) if rng.random() < 0.4 else None
        n = noun(s, rng.choice(OCCUPATION))
        s.att(d, n, "det")
        if a:
            s.att(a, n, "amod")
        s.att(subj, n, "nsubj")
        s.att(c, n, "cop")
        return s.finish(n)
    # locative: SUBJ BE ADP DET NOUN .
    subj, person, number = np(s, rng, PORTABLE, adj_p=0.3, poss_p=0.3)
    c = be(s, tense, person, number)
    loc_prep, loc_noun = rng.choice(LOCATIONS)
    prep = adp(s, loc_prep)
    n, _, _ = np(s, rng, [loc_noun], number="Sing", det_kind="the", adj_p=0.2)
    s.att(prep, n, "case")
    s.att(subj, n, "nsubj")
    s.att(c, n, "cop")
    return s.finish(n)


def p_coordination(rng, opts):
    s = Sent("coordination")
    variant = rng.choice(["subj", "obj", "verb"])
    if variant == "subj":
        n1, _, _ = np(s, rng, HUMAN, number="Sing", det_kind="the")
        cc = s.add("and", "and", "CCONJ", "CC")
        first = s.words[n1 - 1].lemma
        n2, _, _ = np(s, rng, [x for x in HUMAN if x[0] != first], number="Sing",
                      det_kind="the", adj_p=0.2)
        s.att(cc, n2, "cc")
        s.att(n2, n1, "conj")
        vl = rng.choice(STATIC_INTRANS)
        v = verb(s, vl, "VBD")
        s.att(n1, v, "nsubj")
        s.att(pp(s, rng, STATIC_PREPS), v, "obl")
        return s.finish(v)
    subj, person, number = subject(s, rng)
    if variant == "obj":
        vl = rng.choice(["buy", "sell", "carry", "bring", "find", "see", "take"])
        v = verb(s, vl, "VBD")
        s.att(subj, v, "nsubj")
        if rng.random() < 0.4:
            q = num(s, rng.choice(NUM_WORDS))
            o1 = noun(s, rng.choice(TRANSITIVE[vl]), "Plur")
            s.att(q, o1, "nummod")
        else:
            o1 = obj_np(s, rng, vl, number="Sing")
        cc = s.add("and", "and", "CCONJ", "CC")
        o2 = obj_np(s, rng, vl, adj_p=0.2)
        s.att(cc, o2, "cc")
        s.att(o2, o1, "conj")
        s.att(o1, v, "obj")
        return s.finish(v)
    # verb coordination: SUBJ VERB OBJ and VERB (ADV) .
    vl = rng.choice(["open", "close", "clean", "fix", "read", "wash"])
    v = verb(s, vl, "VBD")
    s.att(subj, v, "nsubj")
    s.att(obj_np(s, rng, vl), v, "obj")
    cc = s.add("and", "and", "CCONJ", "CC")
    v2l = rng.choice(["leave", "smile", "laugh", "return"])
    v2 = verb(s, v2l, "VBD")
    s.att(cc, v2, "cc")
    s.att(v2, v, "conj")
    if rng.random() < 0.5:
        s.att(adv(s, rng.choice(MANNER[v2l])), v2, "advmod")
    return s.finish(v)


def p_relative(rng, opts):
    s = Sent("relative_clause")
    if rng.random() < 0.6:
        # subject relative: DET (ADJ) NOUN who/that VERB OBJ VERB (ADV|PP) .
        n, _, number = np(s, rng, HUMAN, det_kind="the")
        rel = rng.choice(["who", "that"])
        rp = s.add(rel, rel, "PRON", "WP" if rel == "who" else "WDT", "PronType=Rel")
        vl = rng.choice(["help", "visit", "fix", "paint", "buy", "sell", "write", "read"])
        rv = verb(s, vl, "VBD")
        s.att(rp, rv, "nsubj")
        s.att(rv, n, "acl:relcl")
        if vl == "help":
            o = np(s, rng, HUMAN, det_kind="the")[0]
        elif vl == "visit":
            o = np(s, rng, VISITABLE, number="Sing", det_kind="the")[0]
        else:
            o = obj_np(s, rng, vl)
        s.att(o, rv, "obj")
        main = {"wait": STATIC_PREPS, "sit": STATIC_PREPS, "work": ["in", "at", "near"],
                "return": ["to"], "arrive": ["at"], "go": ["to"], "hurry": ["to", "toward"],
                "leave": None, "smile": None, "laugh": None}
        mvl = rng.choice(sorted(main))
        mv = verb(s, mvl, "VBD")
        s.att(n, mv, "nsubj")
        if main[mvl] is None or rng.random() < 0.3:
            s.att(adv(s, rng.choice(MANNER.get(mvl, ADV_TIME))), mv, "advmod")
        if main[mvl] is not None:
            s.att(pp(s, rng, main[mvl]), mv, "obl")
        if rng.random() < 0.25:
            s.att(tmod(s, rng), mv, "obl:tmod")
        return s.finish(mv)
    # object relative: SUBJ VERB DET NOUN that SUBJ2 VERB2 .
    subj, person, number = subject(s, rng, pron_p=0.5)
    vl = rng.choice(["find", "see", "take", "need", "buy"])
    v = verb(s, vl, "VBD")
    s.att(subj, v, "nsubj")
    o, _, _ = np(s, rng, PORTABLE, det_kind="the", adj_p=0.2)
    s.att(o, v, "obj")
    rp = s.add("that", "that", "PRON", "WDT", "PronType=Rel")
    s2, _, _ = np(s, rng, HUMAN, det_kind="the", adj_p=0.15)
    rv = verb(s, rng.choice(["lose", "drop", "forget", "bring", "sell", "carry"]), "VBD")
    s.att(rp, rv, "obj")
    s.att(s2, rv, "nsubj")
    s.att(rv, o, "acl:relcl")
    return s.finish(v)


def p_compound(rng, opts):
    s = Sent("compound")
    if rng.random() < 0.55:
        # DET COMP-NOUN VERB DET COMP-NOUN (PP) .
        subj = compound_np(s, rng, COMPOUND_AGENTS)
        vl = rng.choice(["find", "lose", "drop", "carry", "bring", "forget"])
        v = verb(s, vl, "VBD")
        s.att(subj, v, "nsubj")
        o = compound_np(s, rng, COMPOUND_THINGS, det_kind=rng.choice(["the", "a"]))
        s.att(o, v, "obj")
        if rng.random() < 0.35:
            s.att(pp(s, rng, STATIC_PREPS), v, "obl")
        return s.finish(v)
    # DET COMP-PLACE VERB ADV (TMOD) .
    subj = compound_np(s, rng, COMPOUND_PLACES)
    v = verb(s, rng.choice(["open", "close"]), "VBD")
    s.att(subj, v, "nsubj")
    s.att(adv(s, rng.choice(["early", "late"])), v, "advmod")
    if rng.random() < 0.6:
        s.att(tmod(s, rng), v, "obl:tmod")
    return s.finish(v)


def p_possessive(rng, opts):
    s = Sent("possessive")
    p = poss(s, rng.choice(list(POSSESSIVES)))
    number = "Plur" if rng.random() < 0.2 else "Sing"
    a = adj(s, rng.choice(["old", "young", "little"])) if rng.random() < 0.3 else None
    subj = noun(s, rng.choice(KIN), number)
    s.att(p, subj, "nmod:poss")
    if a:
        s.att(a, subj, "amod")
    vl = rng.choice(list(TRANSITIVE))
    v = verb(s, vl, "VBD")
    s.att(subj, v, "nsubj")
    o = obj_np(s, rng, vl, poss_p=0.6, adj_p=0.3)
    s.att(o, v, "obj")
    if rng.random() < 0.35:
        s.att(pp(s, rng, STATIC_PREPS), v, "obl")
    return s.finish(v)


def p_question(rng, opts):
    s = Sent("question")
    variant = rng.choice(["yesno", "yesno", "copula", "wh_obj", "wh_adv"])
    if variant == "copula":
        # BE SUBJ ADJ ?
        tense = rng.choice(["Past", "Pres"])
        tmp = Sent("tmp")  # subject built first to know the agreement of "be"
        is_place = rng.random() < 0.4
        subj, person, number = np(tmp, rng, PLACES if is_place else PORTABLE, det_kind="the",
                                  adj_p=0.2, poss_p=0.0 if is_place else 0.3)
        subj_lemma = tmp.words[subj - 1].lemma
        c = be(s, tense, person, number)
        subj += splice(s, tmp)
        a = adj(s, rng.choice(pred_adjs_for(subj_lemma)))
        s.att(subj, a, "nsubj")
        s.att(c, a, "cop")
        return s.finish(a, "?")
    if variant == "wh_adv":
        # Where/When did|will SUBJ VERB (OBJ) ?
        whf = rng.choice(["where", "when"])
        wh = s.add(whf, whf, "ADV", "WRB", "PronType=Int")
        a = s.add("did", "do", "AUX", "VBD", verb_feats("VBD")) if rng.random() < 0.6 \
            else modal(s, rng.choice(["will", "can", "should"]))
        subj, person, number = subject(s, rng, pron_p=0.5)
        vl = rng.choice(["put", "find", "buy", "see", "leave"])
        v = verb(s, vl, "VB")
        s.att(wh, v, "advmod")
        s.att(a, v, "aux")
        s.att(subj, v, "nsubj")
        objs = PORTABLE if vl in ("put", "leave") else TRANSITIVE.get(vl, PORTABLE)
        s.att(np(s, rng, objs, det_kind="the", adj_p=0.2, poss_p=0.3)[0], v, "obj")
        return s.finish(v, "?")
    if variant == "wh_obj":
        # What did SUBJ VERB (PP) ?
        wh = s.add("what", "what", "PRON", "WP", "PronType=Int")
        a = s.add("did", "do", "AUX", "VBD", verb_feats("VBD"))
        subj, person, number = subject(s, rng, HUMAN, pron_p=0.4)
        v = verb(s, rng.choice(["buy", "sell", "find", "bring", "write", "read", "cook"]), "VB")
        s.att(wh, v, "obj")
        s.att(a, v, "aux")
        s.att(subj, v, "nsubj")
        if rng.random() < 0.4:
            s.att(pp(s, rng, STATIC_PREPS), v, "obl")
        return s.finish(v, "?")
    # yes/no: AUX SUBJ VERB OBJ ?
    kind = rng.choice(["did", "do", "modal"])
    if kind == "modal":
        a = modal(s, rng.choice(["can", "will", "could", "should"]))
        subj, person, number = subject(s, rng, pron_p=0.5)
    else:
        # build subject first into a temp sentence to know agreement
        tmp = Sent("tmp")
        subj, person, number = subject(tmp, rng, pron_p=0.5)
        a = do_aux(s, "Past" if kind == "did" else "Pres", person, number)
        subj += splice(s, tmp)
    vl = rng.choice(DELIBERATE_TRANS if kind == "modal" else list(TRANSITIVE))
    v = verb(s, vl, "VB")
    s.att(a, v, "aux")
    s.att(subj, v, "nsubj")
    s.att(obj_np(s, rng, vl, poss_p=0.3), v, "obj")
    return s.finish(v, "?")


def p_numbers(rng, opts):
    s = Sent("numbers")
    if rng.random() < 0.35:
        # NUM NOUN(plural) VERB PP .
        q = num(s, rng.choice(NUM_WORDS))
        n = noun(s, rng.choice(ANIMATE), "Plur")
        s.att(q, n, "nummod")
        v = verb(s, rng.choice(STATIC_INTRANS), "VBD")
        s.att(n, v, "nsubj")
        s.att(pp(s, rng, STATIC_PREPS), v, "obl")
        return s.finish(v)
    subj, person, number = subject(s, rng)
    vl = rng.choice(["buy", "sell", "bring", "carry", "find", "cook", "eat", "wash"])
    v = verb(s, vl, "VBD")
    s.att(subj, v, "nsubj")
    q = num(s, rng.choice(NUM_WORDS + NUM_DIGITS))
    pair = rng.choice(TRANSITIVE[vl])
    a = adj(s, rng.choice(adjs_for(pair[0]))) if rng.random() < 0.3 else None
    o = noun(s, pair, "Plur")
    s.att(q, o, "nummod")
    if a:
        s.att(a, o, "amod")
    s.att(o, v, "obj")
    if rng.random() < 0.5:
        s.att(pp(s, rng, ["at", "in", "near"], [("market", "markets"), ("shop", "shops"),
                                                ("station", "stations"), ("kitchen", "kitchens")]),
              v, "obl")
    return s.finish(v)


def p_phrasal(rng, opts):
    s = Sent("phrasal_verb")
    vl, prt, objs = rng.choice(PARTICLE_VERBS)
    variant = rng.choice(["prt_obj", "obj_prt", "imperative"])
    if variant == "imperative":
        please = s.add("please", "please", "INTJ", "UH") if rng.random() < 0.5 else None
        v = s.add(V[vl][0], vl, "VERB", "VB", verb_feats("VB", imp=True))
        if please:
            s.att(please, v, "discourse")
        p = s.add(prt, prt, "ADP", "RP")
        s.att(p, v, "compound:prt")
        o = np(s, rng, objs, det_kind="the", adj_p=0.2, poss_p=0.3)[0]
        s.att(o, v, "obj")
        return s.finish(v)
    subj, person, number = subject(s, rng)
    v = verb(s, vl, "VBD")
    s.att(subj, v, "nsubj")
    if variant == "prt_obj":
        p = s.add(prt, prt, "ADP", "RP")
        o = np(s, rng, objs, det_kind="the", adj_p=0.25, poss_p=0.3)[0]
    else:
        o = np(s, rng, objs, det_kind="the", adj_p=0.25, poss_p=0.3)[0]
        p = s.add(prt, prt, "ADP", "RP")
    s.att(p, v, "compound:prt")
    s.att(o, v, "obj")
    if rng.random() < 0.3:
        s.att(adv(s, rng.choice(ADV_AGENTIVE + ["again"])), v, "advmod")
    return s.finish(v)


def p_complement(rng, opts):
    s = Sent("complement")
    subj, person, number = subject(s, rng, HUMAN, pron_p=0.6)
    if rng.random() < 0.5:
        # SUBJ want/try/decide/hope to VERB OBJ .
        vl = rng.choice(["want", "try", "decide", "hope"])
        tense = rng.choice(["Past", "Pres"])
        v = verb(s, vl, "VBD" if tense == "Past" else present_xpos(person, number))
        s.att(subj, v, "nsubj")
        to = s.add("to", "to", "PART", "TO")
        x = rng.choice(DELIBERATE_TRANS)
        xv = verb(s, x, "VB")
        s.att(to, xv, "mark")
        s.att(xv, v, "xcomp")
        s.att(obj_np(s, rng, x, poss_p=0.2), xv, "obj")
        return s.finish(v)
    # SUBJ think/say (that) SUBJ2 BE ADJ .
    vl = rng.choice(["think", "say"])
    v = verb(s, vl, "VBD" if vl == "say" else present_xpos(person, number))
    s.att(subj, v, "nsubj")
    mark = s.add("that", "that", "SCONJ", "IN") if rng.random() < 0.6 else None
    animate = rng.random() < 0.5
    if animate:
        s2, p2, n2 = np(s, rng, HUMAN, det_kind="the", adj_p=0.2)
    else:
        s2, p2, n2 = np(s, rng, [("bus", "buses"), ("train", "trains"), ("soup", "soups"),
                                 ("shop", "shops"), ("room", "rooms")],
                        number="Sing", det_kind="the", adj_p=0.0)
    c = be(s, "Past" if vl == "say" else "Pres", p2, n2)
    pred = adj(s, rng.choice(pred_adjs_for(s.words[s2 - 1].lemma)))
    s.att(s2, pred, "nsubj")
    s.att(c, pred, "cop")
    if mark:
        s.att(mark, pred, "mark")
    s.att(pred, v, "ccomp")
    return s.finish(v)


def p_nonprojective(rng, opts):
    s = Sent("nonprojective")
    variant = opts.get("variant") or rng.choice(["pp", "relcl"])
    if variant == "pp":
        # A EVENT is/was VBN on the TOPIC TMOD .   nmod EVENT->TOPIC crosses obl:tmod
        d = det(s, "a")
        n = noun(s, rng.choice(EVENTS), "Sing")
        s.att(d, n, "det")
        tense = rng.choice(["Past", "Pres"])
        a = be(s, tense, 3, "Sing")
        v = verb(s, rng.choice(["schedule", "plan", "expect"]), "VBN", passive=True)
        s.att(n, v, "nsubj:pass")
        s.att(a, v, "aux:pass")
        c = adp(s, rng.choice(["on", "about"]))
        t = np(s, rng, TOPICS, number="Sing", det_kind="the", adj_p=0.0)[0]
        s.att(c, t, "case")
        s.att(t, n, "nmod")
        s.att(tmod(s, rng, tense), v, "obl:tmod")
        return s.finish(v)
    # extraposed relative clause: A NOUN VERB ADV|TMOD who VERB the NOUN .
    d = det(s, "a")
    n = noun(s, rng.choice(HUMAN), "Sing")
    s.att(d, n, "det")
    v = verb(s, rng.choice(["arrive", "appear", "return"]), "VBD")
    s.att(n, v, "nsubj")
    if rng.random() < 0.5:
        s.att(adv(s, rng.choice(["early", "later", "again"])), v, "advmod")
    else:
        s.att(tmod(s, rng), v, "obl:tmod")
    rp = s.add("who", "who", "PRON", "WP", "PronType=Rel")
    rv = verb(s, rng.choice(["know", "fix", "bring", "carry", "write"]), "VBD")
    s.att(rp, rv, "nsubj")
    s.att(rv, n, "acl:relcl")
    rv_lemma = s.words[rv - 1].lemma
    if rv_lemma == "know":
        o = np(s, rng, [("answer", "answers"), ("way", "ways"), ("truth", "truths")],
               number="Sing", det_kind="the", adj_p=0.0)[0]
    else:
        o = obj_np(s, rng, rv_lemma, number="Sing", det_kind="the", adj_p=0.2)
    s.att(o, rv, "obj")
    return s.finish(v)


PATTERNS = {
    "transitive": p_transitive,
    "intransitive_pp": p_intransitive,
    "negation": p_negation,
    "adverb": p_adverb,
    "copula": p_copula,
    "coordination": p_coordination,
    "relative_clause": p_relative,
    "compound": p_compound,
    "possessive": p_possessive,
    "question": p_question,
    "numbers": p_numbers,
    "phrasal_verb": p_phrasal,
    "complement": p_complement,
    "nonprojective": p_nonprojective,
}


def plan(counts: dict[str, list[dict]], rng: random.Random) -> list[tuple[str, dict]]:
    items = [(name, o) for name, opts in counts.items() for o in opts]
    rng.shuffle(items)
    return items


TRAIN_PLAN = {
    "transitive": [{"advcl": True}] * 2 + [{}] * 5,
    "intransitive_pp": [{"bare": True}] * 2 + [{}] * 5,
    # 4 forced contractions, 2 forced "not", 2 random
    "negation": [{"contract": True}] * 4 + [{"contract": False}] * 2 + [{}] * 2,
    "adverb": [{}] * 6,
    "copula": [{}] * 7,
    "coordination": [{}] * 6,
    "relative_clause": [{}] * 6,
    "compound": [{}] * 5,
    "possessive": [{}] * 6,
    "question": [{}] * 6,
    "numbers": [{}] * 5,
    "phrasal_verb": [{}] * 5,
    "complement": [{}] * 3,
    "nonprojective": [{"variant": "pp"}, {"variant": "relcl"}, {"variant": "relcl"}],
}
DEV_PLAN = {
    "transitive": [{"advcl": True}] + [{}] * 2,
    "intransitive_pp": [{"bare": True}] + [{}] * 2,
    "negation": [{"contract": True}, {"contract": True}, {"contract": False}],
    "adverb": [{}] * 2,
    "copula": [{}] * 3,
    "coordination": [{}] * 2,
    "relative_clause": [{}] * 2,
    "compound": [{}] * 2,
    "possessive": [{}] * 2,
    "question": [{}] * 2,
    "numbers": [{}] * 2,
    "phrasal_verb": [{}] * 2,
    "complement": [{}] * 1,
    "nonprojective": [{"variant": "pp"}],
}


def generate(rng: random.Random, spec: dict, seen: set[str]) -> list[Sent]:
    out = []
    for name, opts in plan(spec, rng):
        for _ in range(1000):
            s = PATTERNS[name](rng, opts)
            t = s.text()
            people = [w.lemma for w in s.words if w.upos == "NOUN" and w.lemma in _HUMAN_LEMMAS]
            if len(people) != len(set(people)):  # "the boy thinks that the boy ..."
                continue
            if t not in seen and 3 <= len(s.words) <= 20:
                seen.add(t)
                out.append(s)
                break
        else:
            raise RuntimeError(f"could not generate a new sentence for pattern {name}")
    return out


def write(path: Path, prefix: str, sents: list[Sent]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for i, s in enumerate(sents, start=1):
            f.write(s.to_conllu(f"{prefix}-{i}"))


# ---------------------------------------------------------------------------
# Validation (re-reads the written files; independent of the generator)
# ---------------------------------------------------------------------------

FEATS_RE = re.compile(r"^[A-Z][A-Za-z0-9]*(\[[a-z0-9]+\])?=[A-Z0-9][A-Za-z0-9]*(,[A-Z0-9][A-Za-z0-9]*)*$")
DEPREL_RE = re.compile(r"^[a-z]+(:[a-z]+)?$")


def read_conllu(path: Path):
    """Yield (comments, lines) per sentence; asserts the blank-line layout."""
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n\n") and not text.endswith("\n\n\n"), f"{path}: bad file ending"
    blocks = text[:-2].split("\n\n")
    for b in blocks:
        assert b and not b.startswith("\n"), f"{path}: empty/extra blank line"
        comments, rows = [], []
        for line in b.split("\n"):
            if line.startswith("#"):
                assert not rows, f"{path}: comment inside sentence"
                comments.append(line)
            else:
                rows.append(line.split("\t"))
        yield comments, rows


def is_nonprojective(heads: dict[int, int]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Return pairs of crossing arcs (root arc excluded).  Empty list => projective."""
    arcs = [(min(d, h), max(d, h)) for d, h in heads.items() if h != 0]
    crossing = []
    for i, (a, b) in enumerate(arcs):
        for c, d in arcs[i + 1:]:
            if a < c < b < d or c < a < d < b:
                crossing.append(((a, b), (c, d)))
    return crossing


def has_nonprojective_arc(heads: dict[int, int]) -> bool:
    """Classic definition: arc h->d is projective iff h dominates every word between."""
    def dominated(k: int, h: int) -> bool:
        while k != 0:
            if k == h:
                return True
            k = heads[k]
        return h == 0
    for d, h in heads.items():
        lo, hi = min(d, h), max(d, h)
        if any(not dominated(k, h) for k in range(lo + 1, hi)):
            return True
    return False


def validate(paths: list[Path]) -> dict:
    seen_ids: set[str] = set()
    seen_texts: dict[str, str] = {}
    report = {"nonprojective": [], "mwt": [], "deprels": Counter(), "per_file": {}}
    for path in paths:
        n_sent = n_words = n_tokens = 0
        for comments, rows in read_conllu(path):
            n_sent += 1
            cdict = {}
            for c in comments:
                m = re.match(r"^# (\S+) = (.*)$", c)
                assert m, f"{path}: bad comment {c!r}"
                cdict[m.group(1)] = m.group(2)
            sid = cdict.get("sent_id")
            assert sid, f"{path}: missing sent_id"
            assert comments[0].startswith("# sent_id = "), f"{sid}: sent_id must come first"
            assert sid not in seen_ids, f"duplicate sent_id {sid}"
            seen_ids.add(sid)
            assert "text" in cdict, f"{sid}: missing text"
            words, mwts = [], []
            for cols in rows:
                assert len(cols) == 10, f"{sid}: {len(cols)} columns in {cols}"
                assert all(c and c == c.strip() for c in cols), f"{sid}: empty/space column {cols}"
                if "-" in cols[0]:
                    a, b = map(int, cols[0].split("-"))
                    assert a == len(words) + 1 and b > a, f"{sid}: misplaced range {cols[0]}"
                    assert cols[2:9] == ["_"] * 7, f"{sid}: MWT line must have _ columns"
                    assert cols[9] in ("_", "SpaceAfter=No")
                    mwts.append((a, b, cols[1], cols[9]))
                else:
                    assert cols[0].isdigit() and int(cols[0]) == len(words) + 1, \
                        f"{sid}: bad word id {cols[0]}"
                    words.append(cols)
            n = len(words)
            assert 3 <= n <= 20, f"{sid}: {n} words"
            heads = {}
            for cols in words:
                wid = int(cols[0])
                assert cols[3] in UPOS_TAGS, f"{sid}: bad UPOS {cols[3]}"
                assert cols[4] in XPOS_FOR_UPOS[cols[3]], f"{sid}: XPOS {cols[4]} vs UPOS {cols[3]}"
                if cols[5] != "_":
                    fs = cols[5].split("|")
                    assert all(FEATS_RE.match(f) for f in fs), f"{sid}: bad FEATS {cols[5]}"
                    names = [f.split("=")[0] for f in fs]
                    assert names == sorted(names, key=str.lower) and len(set(names)) == len(names), \
                        f"{sid}: FEATS not sorted/unique {cols[5]}"
                assert re.fullmatch(r"0|[1-9][0-9]*", cols[6]), f"{sid}: HEAD not an integer"
                h = int(cols[6])
                assert 0 <= h <= n and h != wid, f"{sid}: head {h} out of range for {wid}"
                assert DEPREL_RE.match(cols[7]), f"{sid}: bad DEPREL {cols[7]}"
                assert (h == 0) == (cols[7] == "root"), f"{sid}: root/HEAD=0 mismatch at {wid}"
                assert cols[8] == "_", f"{sid}: DEPS must be _"
                assert cols[9] in ("_", "SpaceAfter=No"), f"{sid}: bad MISC {cols[9]}"
                heads[wid] = h
                report["deprels"][cols[7]] += 1
            roots = [d for d, h in heads.items() if h == 0]
            assert len(roots) == 1, f"{sid}: {len(roots)} roots"
            root = roots[0]
            for d in heads:  # acyclicity: every node reaches 0 within n steps
                k, steps = d, 0
                while k != 0:
                    k = heads[k]
                    steps += 1
                    assert steps <= n, f"{sid}: cycle through {d}"
            for cols in words:
                if cols[3] == "PUNCT":
                    assert cols[7] == "punct" and int(cols[6]) == root, f"{sid}: punct must attach to root"
                if cols[7] == "punct":
                    assert cols[3] == "PUNCT"
            # text reconstruction from tokens + SpaceAfter
            in_mwt = {i for a, b, _, _ in mwts for i in range(a, b + 1)}
            parts, i = [], 1
            for cols in words:
                if int(cols[0]) in in_mwt:
                    assert cols[9] == "_", f"{sid}: SpaceAfter=No on a word inside an MWT"
            while i <= n:
                m = next((x for x in mwts if x[0] == i), None)
                if m:
                    parts.append(m[2] + ("" if m[3] == "SpaceAfter=No" else " "))
                    i = m[1] + 1
                else:
                    cols = words[i - 1]
                    parts.append(cols[1] + ("" if cols[9] == "SpaceAfter=No" else " "))
                    i += 1
                n_tokens += 1
            rebuilt = "".join(parts).rstrip(" ")
            assert rebuilt == cdict["text"], f"{sid}: text {cdict['text']!r} != forms {rebuilt!r}"
            assert words[-1][3] == "PUNCT" and (words[-2][9] == "SpaceAfter=No" or
                                                 any(x[1] == n - 1 and x[3] == "SpaceAfter=No" for x in mwts)), \
                f"{sid}: final punctuation must be attached without space"
            for a, b, form, _ in mwts:  # e.g. "can't" = "ca" + "n't", "don't" = "do" + "n't"
                assert form == "".join(words[k - 1][1] for k in range(a, b + 1)), f"{sid}: MWT {form}"
            if mwts:
                report["mwt"].append(sid)
            t = cdict["text"]
            assert t not in seen_texts, f"{sid}: same text as {seen_texts[t]}"
            seen_texts[t] = sid
            crossing = is_nonprojective(heads)
            assert bool(crossing) == has_nonprojective_arc(heads), f"{sid}: projectivity checks disagree"
            if crossing:
                report["nonprojective"].append((sid, crossing[0], cdict["text"]))
            n_words += n
        report["per_file"][str(path)] = (n_sent, n_words, n_tokens)
    return report


def check_with_conllu(paths: list[Path]) -> str:
    try:
        import conllu  # type: ignore
    except ImportError:
        return "conllu package not importable; skipped"
    msgs = []
    for p in paths:
        sents = conllu.parse(p.read_text(encoding="utf-8"))
        for s in sents:
            tree = s.to_tree()  # raises if the tree is malformed
            assert tree.token["deprel"] == "root"
        msgs.append(f"{p.name}: {len(sents)} sentences")
    return "conllu.parse OK (" + "; ".join(msgs) + ")"


def main() -> int:
    rng = random.Random(SEED)
    seen: set[str] = set()
    train = generate(rng, TRAIN_PLAN, seen)
    dev = generate(rng, DEV_PLAN, seen)
    assert len(train) == N_TRAIN and len(dev) == N_DEV, (len(train), len(dev))
    write(TRAIN_PATH, "sample-train", train)
    write(DEV_PATH, "sample-dev", dev)

    paths = [TRAIN_PATH, DEV_PATH]
    rep = validate(paths)
    nonproj = {sid for sid, _, _ in rep["nonprojective"]}
    assert sum(sid.startswith("sample-train") for sid in nonproj) >= 2, nonproj
    assert sum(sid.startswith("sample-train") for sid in rep["mwt"]) >= 3, rep["mwt"]
    assert sum(sid.startswith("sample-dev") for sid in rep["mwt"]) >= 1, rep["mwt"]
    subtypes = {d for d in rep["deprels"] if ":" in d}
    assert subtypes & {"nmod:poss", "acl:relcl", "obl:tmod", "compound:prt"}, subtypes
    assert EXPECTED_NONPROJECTIVE is None or nonproj == EXPECTED_NONPROJECTIVE, \
        f"non-projective ids changed; update EXPECTED_NONPROJECTIVE and the docstring: {sorted(nonproj)}"
    if EXPECTED_MWT is not None:
        assert set(rep["mwt"]) == EXPECTED_MWT, \
            f"MWT ids changed; update EXPECTED_MWT: {rep['mwt']}"
    conllu_msg = check_with_conllu(paths)

    print("Validation passed.")
    for p, (ns, nw, nt) in rep["per_file"].items():
        print(f"  {Path(p).relative_to(ROOT_DIR)}: {ns} sentences, {nw} words, {nt} tokens")
    print("  " + conllu_msg)
    print("Non-projective sentences (first crossing arc pair, as (lo, hi) word positions):")
    for sid, cross, text in rep["nonprojective"]:
        print(f"  {sid}: {cross}  {text}")
    print("Sentences with multiword tokens: " + ", ".join(rep["mwt"]))
    print("DEPREL labels used (count):")
    print("  " + ", ".join(f"{d} ({c})" for d, c in sorted(rep["deprels"].items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
