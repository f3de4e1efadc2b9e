"""Edit scripts: a lemma as an edit of its form (UDPipe's lemma rules, spaCy's edit
trees with one split point).

A script is (case, prefix_del, prefix_add, suffix_del, suffix_add). Applied to a form:

  base = form.lower() for the cases "lower", "title", "upper", the form itself for "keep";
  base must start with prefix_del and end with suffix_del (without overlap), and
  core = base with them removed; edited = prefix_add + core + suffix_add; then
  lower: edited            title: edited[:1].upper() + edited[1:]
  upper: edited.upper()    keep:  edited

`extract(form, lemma)` picks the script from the longest common substring of base and
lemma (the core; leftmost on ties), so the strings a script strips and adds are as
short as possible and the script applies to every form with the same ending ("cats" ->
"cat" strips "s"). Casing is described relative to the lowercased form whenever that
round-trips, so "The" -> "the" and "the" -> "the" share one script, and "Paris" ->
"Paris" ("keep", no edits) is shared by every proper noun. Every extracted script is
checked to round-trip; "keep" with a full replacement of the form always does.
"""
from __future__ import annotations

from typing import NamedTuple

CASES = ("lower", "title", "upper", "keep")


class Script(NamedTuple):
    case: str
    prefix_del: str
    prefix_add: str
    suffix_del: str
    suffix_add: str

    def __str__(self) -> str:
        return encode(self)


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _base(case: str, form: str) -> str:
    return form if case == "keep" else form.lower()


def applies(script: Script, form: str) -> bool:
    """Whether the script's deletions match the form (the script can be applied)."""
    base = _base(script.case, form)
    p, s = script.prefix_del, script.suffix_del
    return len(p) + len(s) <= len(base) and base.startswith(p) and base.endswith(s)


def apply(script: Script, form: str) -> str:
    """The lemma the script makes of `form`; ValueError when it does not apply."""
    if not applies(script, form):
        raise ValueError(f"edit script {encode(script)!r} does not apply to {form!r}")
    return lemmas((script,), form)[0]


def lemmas(scripts, form: str) -> list[str]:
    """The lemma each script makes of `form`, or the form itself where a script does not
    apply: `apply` of many scripts in one loop (the lemmatizer tries a new form's 100-odd
    candidate scripts, so the calls per script are most of the cost)."""
    lower = form.lower()
    out = []
    for case, prefix_del, prefix_add, suffix_del, suffix_add in scripts:
        base = form if case == "keep" else lower
        if len(prefix_del) + len(suffix_del) > len(base) or not base.startswith(prefix_del) \
                or not base.endswith(suffix_del):
            out.append(form)
            continue
        edited = prefix_add + base[len(prefix_del):len(base) - len(suffix_del)] + suffix_add
        out.append(_cap(edited) if case == "title" else edited.upper() if case == "upper" else edited)
    return out


def _longest_common_substring(a: str, b: str) -> tuple[int, int, int]:
    """(start in a, start in b, length) of the longest common substring, leftmost in a, then in b."""
    best = (0, 0, 0)
    if not a or not b:
        return best
    previous = [0] * (len(b) + 1)
    for i in range(1, len(a) + 1):
        current = [0] * (len(b) + 1)
        ai = a[i - 1]
        for j in range(1, len(b) + 1):
            if ai == b[j - 1]:
                current[j] = previous[j - 1] + 1
                if current[j] > best[2]:
                    best = (i - current[j], j - current[j], current[j])
        previous = current
    return best


def _edit(case: str, base: str, target: str) -> Script:
    i, j, n = _longest_common_substring(base, target)
    return Script(case, base[:i], target[:j], base[i + n:], target[j + n:])


def extract(form: str, lemma: str) -> Script:
    """The script that turns `form` into `lemma` (see the module docstring for the choice)."""
    lower = lemma.lower()
    candidates = []
    if lemma == lower:
        candidates.append(_edit("lower", form.lower(), lemma))
    keep = _edit("keep", form, lemma)
    # Relative to the lowercased form when the lemma's casing is a pattern (Title, UPPER)
    # and copying the form's casing would not keep as much of the form.
    for case, fits in (("title", lemma == _cap(lower)), ("upper", lemma == lower.upper())):
        if fits:
            scripted = _edit(case, form.lower(), lower)
            if _kept(scripted, form) > _kept(keep, form):
                candidates.append(scripted)
    candidates.append(keep)
    for script in candidates:
        if applies(script, form) and apply(script, form) == lemma:
            return script
    raise AssertionError(f"no edit script round-trips {form!r} -> {lemma!r}")  # keep always does


def _kept(script: Script, form: str) -> int:
    return len(_base(script.case, form)) - len(script.prefix_del) - len(script.suffix_del)


# A script as one string (JSON, class names): the fields joined by a separator that
# no form contains (U+001F, the ASCII unit separator).
SEPARATOR = "\x1f"


def encode(script: Script) -> str:
    for text in script[1:]:
        if SEPARATOR in text:
            raise ValueError(f"an edit script string contains U+001F: {text!r}")
    return SEPARATOR.join(script)


def decode(text: str) -> Script:
    fields = text.split(SEPARATOR)
    if len(fields) != 5 or fields[0] not in CASES:
        raise ValueError(f"not an encoded edit script: {text!r}")
    return Script(*fields)
