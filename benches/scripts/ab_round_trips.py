#!/usr/bin/env python3
"""Two builds of kb-mcp side by side, under the same load: round trips interleaved.

On a shared machine the load changes from minute to minute, so two builds timed
one after the other cannot be compared. This script starts both servers on the
same vault (each with its own fresh index), waits for both start-up syncs, then
sends the same `search_note_content` queries to one and the other in turn
(A B B A, round after round) over their stdio pipes, and prints each build's
median, p90, p99 and max round trip and its tail ratio p99 / median, plus the
ratio of the two medians and of the two p99s, then the same per query (the
queries differ in cost, so the mixture's tail also holds the costliest query). Both servers therefore meet the
same load at nearly the same moments; only the code differs.

    python3 benches/scripts/ab_round_trips.py --a DIR_A --b DIR_B [--vault V] [--rounds 200]
        DIR_A, DIR_B: folders holding a release `kb-mcp` and `kb-index` each
        --vault: default the obsidian-help corpus beside the checkout
        --debug-log: also keep each server's per-request timing lines (stderr files)

Stdlib only; uses `process_figures.py`'s `Server` for the JSON-RPC plumbing.
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import process_figures  # noqa: E402

QUERIES = {
    "obsidian-help": process_figures.CORPUS_QUERIES,
    "generated": process_figures.GENERATED_QUERIES,
}


def start(label, binaries, vault, work, debug_log):
    index = work / f"index-{label}"
    subprocess.run(
        [str(binaries / "kb-index"), "--vault", str(vault), "--index-dir", str(index), "build", "--full"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    extra = ("--log-level", "debug") if debug_log else ()
    server = process_figures.Server(vault, index, work / f"{label}.stderr", binaries / "kb-mcp", extra)
    server.initialize()
    if not server.wait_synced():
        sys.exit(f"ab_round_trips: {label} never finished its start-up sync; see {server.stderr_path}")
    return server


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--a", type=Path, required=True)
    parser.add_argument("--b", type=Path, required=True)
    parser.add_argument("--vault", type=Path, default=process_figures.CORPUS)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--debug-log", action="store_true")
    args = parser.parse_args()
    queries = QUERIES["obsidian-help" if args.vault.resolve() == process_figures.CORPUS.resolve() else "generated"]
    with tempfile.TemporaryDirectory(prefix="kb-ab-") as work:
        work = Path(work)
        servers = {"A": start("A", args.a, args.vault, work, args.debug_log)}
        servers["B"] = start("B", args.b, args.vault, work, args.debug_log)
        for server in servers.values():  # warm both: first calls load readers and page caches
            for query in queries:
                server.search(query)
        times = {"A": [], "B": []}
        by_query = {(label, query): [] for label in "AB" for query in queries}
        for round_ in range(args.rounds):
            query = queries[round_ % len(queries)]
            for label in ("AB" if round_ % 2 == 0 else "BA"):
                started = time.perf_counter()
                servers[label].search(query)
                took = (time.perf_counter() - started) * 1e3
                times[label].append(took)
                by_query[(label, query)].append(took)
        for server in servers.values():
            server.close()
        if args.debug_log:
            for label in "AB":
                kept = Path(f"ab-{label}.stderr")
                kept.write_bytes((work / f"{label}.stderr").read_bytes())
                print(f"kept {kept}")
    print(f"vault {args.vault}, {args.rounds} calls each, queries {queries}")
    print("| build | median | p90 | p99 | max | p99 / median |")
    print("|---|---:|---:|---:|---:|---:|")
    summary = {}
    for label, folder in (("A", args.a), ("B", args.b)):
        t = times[label]
        median, p99 = statistics.median(t), process_figures.percentile(t, 0.99)
        summary[label] = (median, p99)
        print(
            f"| {label} `{folder}` | {median:.2f} ms | {process_figures.percentile(t, 0.90):.2f} ms | {p99:.2f} ms "
            f"| {max(t):.2f} ms | {p99 / median:.1f}× |"
        )
    (ma, pa), (mb, pb) = summary["A"], summary["B"]
    print(f"B / A: median {mb / ma:.2f}×, p99 {pb / pa:.2f}×")
    print()
    print("| query | A median / p99 | A p99 / median | B median / p99 | B p99 / median |")
    print("|---|---:|---:|---:|---:|")
    for query in queries:
        cells = []
        for label in "AB":
            t = by_query[(label, query)]
            median, p99 = statistics.median(t), process_figures.percentile(t, 0.99)
            cells.append(f"{median:.2f} / {p99:.2f} ms | {p99 / median:.1f}×")
        print(f"| `{query}` | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
