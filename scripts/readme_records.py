"""Which README figures a JSON in scripts/results/ holds: the table of notes/records.md.

For every README line with a figure (a number with decimals, with thousands separators,
or of three digits or more; exponents such as 2**22 and 2^24 are left out), it looks
for the figure in the JSON files that the line's section names (`scripts/results/X.json`,
`X.json`, with `<treebank>`, `<name>`, `<tb>` and `{a,b}` patterns expanded), and
reports the first key that holds it: the value as written, rounded or truncated to
the figure's decimals, or x100 (a share written as a percentage). A figure computed
from others (a difference, a ratio) is not looked for and shows as unmatched, as does
a figure no JSON holds; `--statuses FILE` (JSON: [[line substring, figure or "*",
status, note], ...]) gives those their status.

    python scripts/readme_records.py [--statuses notes/records_statuses.json] > table.md

A match is a number, not a meaning: the key is printed so that a reader can check it.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import math
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "scripts" / "results"
FIGURE = re.compile(r"(?<![\w.^/-])[−-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.^/])[−-]?\d+\.\d+|(?<![\w.^/-])\d{3,}(?![\d^])")
JSON_NAME = re.compile(r"([\w<>{},-]+)\.(?:json\b|\{json|\*|md\b)")
YEAR = re.compile(r"(19|20)\d\d")  # citations and CoNLL 2018: not figures
COMMAND = re.compile(r"`((?:python |arborist |pytest |pip )[^`]+)`")


def flatten(obj, path, out):
    if isinstance(obj, dict):
        for key, value in obj.items():
            flatten(value, f"{path}.{key}" if path else str(key), out)
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            flatten(value, f"{path}[{i}]", out)
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        out.append((path, float(obj)))
    elif isinstance(obj, str):
        for m in re.finditer(r"-?\d[\d,]*\.?\d*", obj):
            try:
                out.append((path + " (text)", float(m.group().replace(",", "").rstrip("."))))
            except ValueError:
                pass


def load_results() -> dict[str, list]:
    files = {}
    for path in sorted(RESULTS.rglob("*.json")):
        values: list = []
        try:
            flatten(json.loads(path.read_text(encoding="utf-8")), "", values)
        except (ValueError, UnicodeDecodeError):
            continue
        files[str(path.relative_to(RESULTS))] = values
    return files


def patterns(name: str) -> list[str]:
    """`lemma_morph_<treebank>{,_joint}` -> glob patterns."""
    name = name.split("/")[-1]
    name = re.sub(r"<[^>]+>", "*", name)
    brace = re.search(r"\{([^}]*)\}", name)
    if brace:
        return [name[:brace.start()] + alt + name[brace.end():] for alt in brace.group(1).split(",")]
    return [name]


def sections(lines: list[str]) -> list[tuple[int, int]]:
    starts = [i for i, line in enumerate(lines) if re.match(r"#{2,3} ", line)] + [len(lines)]
    spans = [(0, starts[0])] if starts[0] > 0 else []
    return spans + [(starts[k], starts[k + 1]) for k in range(len(starts) - 1)]


def find(figure: float, decimals: int, values) -> str | None:
    scale = 10 ** decimals
    for path, v in values:
        for w in (v, v * 100):
            if abs(w) > 1e15:
                continue
            if round(w, decimals) == figure or math.floor(w * scale + 1e-9) / scale == figure:
                return path
    return None


def number(raw: str) -> float:
    return float(raw.replace("−", "-").replace(",", "").lstrip("+"))


def derived_from(raw: str, figures: list[str], missing: list[str]) -> bool:
    """A difference or a ratio of two figures of the same line that a JSON holds."""
    target = abs(number(raw))
    found = [number(f) for f in figures if f not in missing]
    for i, a in enumerate(found):
        for j, b in enumerate(found):
            if i == j:
                continue
            if abs(abs(a - b) - target) <= 0.011 + 1e-9:
                return True
            if b and abs(a / b - target) <= max(0.006, 0.005 * target):
                return True
    return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--readme", type=Path, default=REPO / "README.md")
    ap.add_argument("--statuses", type=Path, default=None)
    args = ap.parse_args()
    statuses = json.loads(args.statuses.read_text(encoding="utf-8")) if args.statuses else []
    results = load_results()
    lines = args.readme.read_text(encoding="utf-8").splitlines()
    in_code = False
    code_lines = set()
    for i, line in enumerate(lines):
        if line.startswith("```"):
            in_code = not in_code
            code_lines.add(i)
        elif in_code:
            code_lines.add(i)
    counts = {"figures": 0}
    line_counts: dict[str, int] = {}
    print("| line | figures | command (nearest before, in the section) | JSON: key | status |")
    print("|---:|---|---|---|---|")
    for lo, hi in sections(lines):
        text = "\n".join(lines[lo:hi])
        named = sorted({p for m in JSON_NAME.finditer(text) for p in patterns(m.group(1))})
        files = [f for f in results if any(fnmatch.fnmatch(Path(f).name, p + ".json") for p in named)]
        command = ""
        for i in range(lo, hi):
            line = lines[i]
            found = COMMAND.findall(line)
            if found:
                command = found[-1]
            if i in code_lines:
                continue
            clean = re.sub(r"(\d)\*\*(\d+)", r"\1^\2", line).replace("**", "")
            clean = re.sub(r"`[^`]*`", "", clean)  # commands and code: arguments, not figures
            clean = re.sub(r"(\dk?)-(\d)", r"\1 to \2", clean)  # ranges: 109,554-184,539, 194k-308k
            figures = [f for f in FIGURE.findall(clean) if not YEAR.fullmatch(f)]
            if not figures:
                continue
            where, missing = [], []
            for raw in figures:
                s = raw.replace("−", "-").replace(",", "")
                decimals = len(s.split(".")[1]) if "." in s else 0
                value = float(s)
                if re.search(re.escape(raw) + r"k\b", clean):  # 268k: thousands
                    value, decimals = value * 1000, -3
                hit = None
                in_line = {q for m in JSON_NAME.finditer(line) for q in patterns(m.group(1))}
                order = sorted(files, key=lambda f: (not any(fnmatch.fnmatch(Path(f).name, q + ".json") for q in in_line),
                                                     f.startswith("runs/")))
                signed = raw[0] in "−-" or re.search(r"\+" + re.escape(raw), clean)
                for f in ([] if signed else order):  # a signed figure is a difference; the line's own JSON first
                    hit = find(abs(value), decimals, results[f]) or find(value, decimals, results[f])
                    if hit:
                        where.append(f"{raw} = {f}: {hit}")
                        break
                if hit is None:
                    missing.append(raw)
            derived = [m for m in missing if derived_from(m, figures, missing)]
            missing = [m for m in missing if m not in derived]
            if derived:
                where.append("computed from the line's figures: " + ", ".join(derived))
            counts["figures"] += len(figures)
            status, note = ("ok" if not missing else "unmatched"), ""
            for substring, figure, given, given_note in statuses:
                if substring in line and (figure == "*" or figure in missing or figure in figures):
                    status, note = given, given_note
                    break
            counts[status] = counts.get(status, 0) + len(figures)
            line_counts[status] = line_counts.get(status, 0) + 1
            cell = "; ".join(where)
            if missing:
                cell += ("; " if cell else "") + "not found: " + ", ".join(missing)
            cmd = f"`{command}`" if command else ""
            print(f"| {i + 1} | {len(figures)} | {cmd} | {cell} | {status}{(': ' + note) if note else ''} |")
    print(f"\nfigures by line status: {counts}", file=sys.stderr)
    print(f"lines by status: {line_counts} ({sum(line_counts.values())} lines)", file=sys.stderr)


if __name__ == "__main__":
    main()
