"""The markdown table of scripts/results/tokenizer_<treebank>.json (written by bench_tokenizer.py).

    python scripts/tokenizer_table.py [--fast | --suffix SUFFIX]

--suffix reads tokenizer_<treebank>SUFFIX.json (bench_tokenizer.py --suffix), e.g. _mwt_classifier.
"""
import json
import os
import sys

RESULTS = os.path.join(os.path.dirname(__file__), "results")
TREEBANKS = ("en_ewt", "el_gdt", "hu_szeged", "tr_imst", "it_partut")


def main() -> None:
    print("| treebank | Tokens F1 | Sentences F1 (target) | Words F1 (target) | round trip Tok / Sent / Words / MWT "
          "| train s | words/s wall (median) | words/CPU-s |")
    print("|---|---|---|---|---|---|---|---|")
    args = sys.argv[1:]
    suffix = "_fast" if "--fast" in args else args[args.index("--suffix") + 1] if "--suffix" in args else ""
    for tb in TREEBANKS:
        path = os.path.join(RESULTS, f"tokenizer_{tb}{suffix}.json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            r = json.load(f)
        d, rt, t = r["dev"], r["round_trip"], r["targets"]
        mwt = "n/a" if rt["mwt"]["recall"] is None else f"{rt['mwt']['recall']:.2f}"
        mark = lambda ok: "" if ok else " **miss**"
        print(f"| {tb} | {d['Tokens']:.2f} | {d['Sentences']:.2f} ({t['sentences_f1']}){mark(r['meets']['sentences_f1'])} "
              f"| {d['Words']:.2f} ({t['words_f1']}){mark(r['meets']['words_f1'])} "
              f"| {rt['Tokens']:.2f} / {rt['Sentences']:.2f} / {rt['Words']:.2f} / {mwt} "
              f"| {r['train_seconds']} | {r['train_words_per_second']:,} ({r['train_words_per_second_median']:,}) "
              f"| {r['train_words_per_cpu_second']:,} |")


if __name__ == "__main__":
    main()
