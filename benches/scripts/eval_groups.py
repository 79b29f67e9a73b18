#!/usr/bin/env python3
"""R@5 and MRR@10 per language and tool from `kb-index eval --json` reports.

Usage: eval_groups.py NAME=REPORT.json[,REPORT.json…] …  Each NAME is a column
(kb-mcp hybrid, lexical, BM25); reports joined by commas are summed (one
suite over several vaults). Prints a Markdown table, one row per language and
tool, with the number of questions."""
import json
import sys
from collections import defaultdict


def groups(paths):
    out = defaultdict(list)
    for path in paths:
        for case in json.load(open(path))["cases"]:
            if not case.get("acceptable"):
                continue
            rank = case.get("matchedRank")
            out[(case["language"], case["tool"])].append(rank)
    return out


def main(args):
    columns = []
    for arg in args:
        name, _, paths = arg.partition("=")
        columns.append((name, groups(paths.split(","))))
    keys = sorted({k for _, g in columns for k in g})
    print("| language · tool | questions | " + " | ".join(n for n, _ in columns) + " |")
    print("|---|---:|" + "---|" * len(columns))
    for key in keys:
        cells = []
        for _, g in columns:
            ranks = g.get(key, [])
            n = len(ranks) or 1
            r5 = sum(1 for r in ranks if r and r <= 5) / n
            mrr = sum(1 / r for r in ranks if r and r <= 10) / n
            cells.append(f"{r5:.3f} / {mrr:.3f}")
        print(f"| {key[0]} · `{key[1]}` | {len(columns[0][1].get(key, []))} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
