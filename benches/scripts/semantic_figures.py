#!/usr/bin/env python3
"""The semantic layer's cost (issue 37), on the real release binaries (stdlib only).

For each vault (generated 10k and 100k notes, the obsidian-help corpus copied
under $KB_BENCH_DIR so a kb.toml can be put beside it) this script:

1. builds the word index alone, `kb-index build --full --lexical-only`, timed,
   and measures its size;
2. embeds the notes, `kb-index build` (the index is current: only the
   embedding runs), timed, with its peak RSS, and measures `embeddings/`;
3. serves the vault twice from that index, `[semantic] enabled = false` in
   kb.toml (lexical) and without it (hybrid, once a search says so), and sends
   `search_knowledge` and `search_note_content` calls over stdio, one at a
   time: keyword queries (the vault's, cycled) and questions, each asked once
   (a server keeps the vectors of its last queries, so a repeated question
   would not pay for its embedding): median and p99 per path and kind, and the
   serving process's peak RSS (VmHWM).

Prints a Markdown table and writes target/kb-bench/semantic.json.

    python3 benches/scripts/semantic_figures.py [--sizes 10000,obsidian-help] [--calls 200] [--bin-dir DIR]
        [--serve-only | --resume]
"""

import argparse
import itertools
import json
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import process_figures as pf  # noqa: E402

QUESTIONS = [
    "how do I keep my notes the same on my phone and my laptop",
    "why did the sync conflict happen after I edited on two devices",
    "what should I do before I change the version control settings",
    "如何在两台设备之间同步笔记",
]


def fresh_questions(count):
    """`count` distinct questions in a person's words, the same on every run."""
    starts = ["how do I", "why can't I", "what is the best way to", "when should I", "where do I", "what happens if I"]
    verbs = ["back up", "sync", "search", "rename", "link", "archive", "tag", "review", "export", "share", "merge", "restore"]
    things = ["my notes", "the daily journal", "a project folder", "my reading list", "meeting notes", "old drafts",
              "the templates", "attachments", "bookmarks", "open tasks"]
    tails = ["on my phone", "after a conflict", "without losing history", "every week", "across two laptops",
             "before a release"]
    every = [" ".join(words) for words in itertools.product(starts, verbs, things, tails)]
    random.Random(37).shuffle(every)
    return every[:count]


def vault_of(label):
    found = pf.get_vault(label)
    if found is None:
        return None
    vault, files, md_bytes, queries = found
    if label == pf.CORPUS_LABEL:
        # The corpus is only read: a copy takes the kb.toml that turns the layer off.
        copy = pf.BENCH_DIR / "semantic-corpus"
        if not (copy / "en").is_dir():
            shutil.copytree(vault, copy, ignore=shutil.ignore_patterns(".git"))
        vault = copy
    return vault, files, md_bytes, list(queries) + QUESTIONS


def serve(vault, index, label, path, queries, calls):
    toml = vault / "kb.toml"
    # History off: its first pass (every note read once, after start-up) is
    # not what a search costs, and would run beside these calls.
    if path == "lexical":
        toml.write_text("[semantic]\nenabled = false\n[history]\nenabled = false\n")
    else:
        toml.write_text("[history]\nenabled = false\n")
    server = pf.Server(vault, index, pf.BENCH_DIR / f"semantic-{label}-{path}.stderr")
    server.initialize()
    server.wait_synced()
    deadline = time.perf_counter() + 600
    while True:
        ranking = server.tool("search_knowledge", {"query": QUESTIONS[0]})["structuredContent"]["ranking"]
        if ranking["path"] == path or (path == "lexical" and ranking["why"].startswith("off")):
            break
        if time.perf_counter() > deadline:
            sys.exit(f"semantic_figures: {label} never ranked {path}: {ranking}")
        time.sleep(0.5)
    figures = {}
    questions = iter(fresh_questions(2 * calls))
    for tool in ("search_knowledge", "search_note_content"):
        for kind, asked in (("keywords", (queries[i % len(queries)] for i in range(calls))),
                            ("questions", itertools.islice(questions, calls))):
            times = []
            for query in asked:
                started = time.perf_counter()
                server.tool(tool, {"query": query})
                times.append(time.perf_counter() - started)
            figures[f"{tool} {kind}"] = {
                "median_ms": statistics.median(times) * 1e3,
                "p99_ms": pf.percentile(times, 0.99) * 1e3,
            }
    figures["peak_rss"] = server.memory()["VmHWM"]
    server.close()
    if toml.exists():
        toml.unlink()
    return figures


def measure(label, calls, serve_only, resume=False):
    found = vault_of(label)
    if found is None:
        pf.log(f"no {label} vault; skipped")
        return None
    vault, files, md_bytes, queries = found
    index = pf.BENCH_DIR / f"semantic-index-{label}"
    pf.check_outside_repo(index)
    kb_index = [str(pf.RELEASE / "kb-index"), "--vault", str(vault), "--index-dir", str(index), "build"]
    kept = pf.BENCH_DIR / f"semantic-{label}.json"
    if serve_only and kept.exists():
        figures = json.loads(kept.read_text())
        figures["lexical"] = serve(vault, index, label, "lexical", queries, calls)
        figures["hybrid"] = serve(vault, index, label, "hybrid", queries, calls)
        return figures
    if resume and (index / "embeddings").is_dir():
        # A run cut short: the word index stays, and the pass resumes from what
        # it kept; embed_s is then only this last part (add the earlier ones).
        lexical_s = json.loads(kept.read_text())["lexical_build_s"] if kept.exists() else float("nan")
        index_bytes = pf.dir_size(index) - pf.dir_size(index / "embeddings")
    else:
        lexical_s, _ = pf.run_measured([*kb_index, "--full", "--lexical-only"], pf.BENCH_DIR / "semantic-build.stderr")
        shutil.rmtree(index / "embeddings", ignore_errors=True)
        index_bytes = pf.dir_size(index)
    embed_s, embed_rss = pf.run_measured(kb_index, pf.BENCH_DIR / "semantic-embed.stderr")
    embeddings_bytes = pf.dir_size(index / "embeddings")
    kept.write_text(json.dumps({
        "label": label, "notes": files, "markdown_bytes": md_bytes, "lexical_build_s": lexical_s,
        "index_bytes": index_bytes, "embed_s": embed_s, "embed_peak_rss": embed_rss,
        "embeddings_bytes": embeddings_bytes, "resumed": bool(resume),
    }))
    figures = {
        "label": label,
        "notes": files,
        "markdown_bytes": md_bytes,
        "lexical_build_s": lexical_s,
        "index_bytes": index_bytes,
        "embed_s": embed_s,
        "embed_peak_rss": embed_rss,
        "embeddings_bytes": embeddings_bytes,
        "lexical": serve(vault, index, label, "lexical", queries, calls),
        "hybrid": serve(vault, index, label, "hybrid", queries, calls),
    }
    pf.log(f"{label}: {json.dumps(figures)}")
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=f"10000,{pf.CORPUS_LABEL}")
    parser.add_argument("--calls", type=int, default=200, help="calls per tool and path")
    parser.add_argument("--serve-only", action="store_true", help="reuse the builds of an earlier run; measure serving only")
    parser.add_argument("--resume", action="store_true",
                        help="a run cut short: keep its word index and resume its embedding (only that last part is timed)")
    parser.add_argument("--bin-dir", help="take the binaries from here (DIR/kb-mcp, DIR/kb-index, DIR/examples/gen-vault)")
    args = parser.parse_args()
    if args.bin_dir:
        pf.RELEASE = Path(args.bin_dir)
    else:
        pf.build_binaries()
    pf.BENCH_DIR.mkdir(parents=True, exist_ok=True)
    rows = [r for r in (measure(label, args.calls, args.serve_only, args.resume) for label in args.sizes.split(",")) if r]
    out = pf.TARGET / "kb-bench" / "semantic.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2))
    mib = 2**20
    print("| vault | word index: build / size | embedding: time / size / peak RSS | path "
          "| `search_knowledge` keywords / questions: median, p99 "
          "| `search_note_content` keywords / questions: median, p99 | serving peak RSS |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        for path in ("lexical", "hybrid"):
            f = r[path]

            def cell(tool):
                k, q = f[f"{tool} keywords"], f[f"{tool} questions"]
                return (f"{k['median_ms']:.2f}, {k['p99_ms']:.2f} / "
                        f"{q['median_ms']:.2f}, {q['p99_ms']:.2f} ms")

            head = (
                f"| {r['label']} ({r['notes']} notes) | {r['lexical_build_s']:.1f} s / {r['index_bytes'] / mib:.1f} MiB "
                f"| {r['embed_s']:.1f} s / {r['embeddings_bytes'] / mib:.1f} MiB / {r['embed_peak_rss'] / mib:.0f} MiB "
                if path == "lexical" else "| | | "
            )
            print(f"{head}| {path} | {cell('search_knowledge')} | {cell('search_note_content')} "
                  f"| {f['peak_rss'] / mib:.0f} MiB |")

if __name__ == "__main__":
    main()
