#!/usr/bin/env python3
"""The tools that read the whole catalog, timed through the real server (stdlib only).

Starts `kb-mcp` (debug log on) over VAULT with its index in INDEX, makes one
search, waits for the start-up sync, measures the CPU the idle server uses for
--idle seconds, then calls get_related_notes (on the search's first hit),
list_tags, get_vault_overview and list_notes (by tag) --rounds times, printing
each call's wall time, then get_vault_overview --overviews more times (median
and p99: with a watcher it answers from the last walk, issue 42). With --edit,
it then appends a link to the first hit's note on disk, waits until a search
finds it (the watcher's sync), times get_related_notes (the graph updated from
the last one, not built again) and puts the note's bytes back. The debug log (--log) holds each call's stages
(`timing` lines: graph, staleness, contexts, ...).

    python3 benches/scripts/graph_tools_probe.py --vault V --index-dir I --bin target/release
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import process_figures as pf  # noqa: E402


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vault", required=True, type=Path)
    parser.add_argument("--index-dir", required=True, type=Path)
    parser.add_argument("--bin", required=True, type=Path, help="folder holding kb-mcp")
    parser.add_argument("--log", default="/tmp/graph_tools_probe.log")
    parser.add_argument("--idle", type=float, default=20.0, help="seconds of idle CPU to measure")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tag", default="project", help="the tag list_notes filters by")
    parser.add_argument("--overviews", type=int, default=0, help="get_vault_overview calls timed at the end")
    parser.add_argument("--edit", action="store_true", help="time the graph tool after a one-note edit on disk")
    args = parser.parse_args()

    server = pf.Server(args.vault, args.index_dir, args.log, args.bin / "kb-mcp", ("--log-level", "debug"))
    server.initialize()
    hit = server.search(pf.GENERATED_QUERIES[0])["structuredContent"]["results"]
    print("first search answered after %.0f ms" % ((time.perf_counter() - server.started) * 1e3), flush=True)
    waited = time.perf_counter()
    synced = server.wait_synced(3600)
    print("start-up sync done: %s, %.1f s later" % (synced, time.perf_counter() - waited), flush=True)
    before = cpu_seconds(server.process.pid)
    time.sleep(args.idle)
    print("idle %.0f s: the server used %.2f s of CPU" % (args.idle, cpu_seconds(server.process.pid) - before))
    calls = [
        ("get_related_notes", {"path": hit[0]["path"]} if hit else {"path": "missing.md"}),
        ("list_tags", {}),
        ("get_vault_overview", {}),
        ("list_notes", {"tag": args.tag}),
    ]
    for round_ in range(args.rounds):
        for name, arguments in calls:
            started = time.perf_counter()
            server.tool(name, arguments)
            print("round %d %-20s %8.0f ms" % (round_ + 1, name, (time.perf_counter() - started) * 1e3), flush=True)
    if args.overviews:
        times = []
        for _ in range(args.overviews):
            started = time.perf_counter()
            server.tool("get_vault_overview", {})
            times.append((time.perf_counter() - started) * 1e3)
        times.sort()
        p99 = times[min(len(times) - 1, round(0.99 * (len(times) - 1)))]
        print("get_vault_overview x%d: median %.1f ms, p99 %.1f ms" % (len(times), statistics.median(times), p99))
    if args.edit and hit:
        note = args.vault / hit[0]["path"]
        original = note.read_bytes()
        word = "graphprobe%d" % int(time.time())
        try:
            note.write_bytes(original + ("\n\n%s [[%s]]\n" % (word, Path(hit[-1]["path"]).stem)).encode())
            edited = time.perf_counter()
            while server.search(word)["structuredContent"]["total"] == 0:
                time.sleep(0.05)
            print("one-note edit searchable after %.0f ms" % ((time.perf_counter() - edited) * 1e3))
            for round_ in range(2):
                started = time.perf_counter()
                server.tool("get_related_notes", {"path": hit[0]["path"]})
                print("after the edit, get_related_notes %d: %.0f ms" % (round_ + 1, (time.perf_counter() - started) * 1e3))
        finally:
            note.write_bytes(original)
    print("memory", server.memory())
    server.close()


if __name__ == "__main__":
    main()
