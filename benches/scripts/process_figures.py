#!/usr/bin/env python3
"""Whole-process figures of kb-mcp, measured on the real binaries (stdlib only).

For each vault (generated 10k and 100k notes, and the obsidian-help corpus
beside the checkout when it is there) this script:

1. builds the release binaries and the vault generator if needed;
2. gets the vault (`gen-vault` example, cached under $KB_BENCH_DIR, default
   /tmp/kb-bench; the corpus is only read);
3. builds a fresh index with `kb-index --vault V --index-dir I build --full`
   (I under $KB_BENCH_DIR), timing it and reading the process's peak RSS;
4. cold start, several times: spawns `kb-mcp --vault V --index-dir I` with
   that existing index and times, from the spawn, the `initialize` answer and
   the first answered `search_note_content`;
5. warm round trips: once the server reports its start-up sync done, sends
   100 `tools/call search_note_content` requests as raw JSON-RPC lines on the
   pipes, one at a time, cycling over five kinds of query; median and p99;
6. peak RSS of the serving process (VmHWM in /proc/PID/status after the calls),
   then again after `get_related_notes`, `list_tags` and `get_vault_overview`
   (the link graph and a walk of the vault, which searches never build);
7. index size on disk against the Markdown size;
8. side by side, in the same run: SQLite FTS5 (Python's sqlite3, tokenizer
   unicode61, one row per note: its path and its whole file) builds a database
   of the same vault in a process of its own (timed like the kb-index build),
   then this process answers the same queries, the same number of times, with
   bm25 ranking, the first 10 rows and a snippet() each; the ratios
   kb-mcp / FTS5 (build; median per query) and kb-mcp's tail ratio p99 / median
   are printed beside the absolute figures. FTS5 is asked in-process, kb-mcp
   through its pipes, so a query ratio includes kb-mcp's JSON-RPC round trip.

Prints two Markdown tables (kb-mcp's figures; the side by side) and writes the
figures to target/kb-bench/process.json.
Page caches are warm (the vault and index were just read); "cold" means a new
process, not a cold disk.

    python3 benches/scripts/process_figures.py [--sizes 10000,100000,obsidian-help] [--runs 5] [--calls 100]
        [--bin-dir DIR]   # binaries copied elsewhere (DIR/kb-mcp, DIR/kb-index, DIR/examples/gen-vault); no build
        [--no-fts5]       # leave out the SQLite FTS5 side by side
"""

import argparse
import json
import os
import select
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
RELEASE = TARGET / "release"  # replaced by --bin-dir
BENCH_DIR = Path(os.environ.get("KB_BENCH_DIR", "/tmp/kb-bench"))
CORPUS = REPO.parent / "shared" / "corpora" / "obsidian-help"
CORPUS_LABEL = "obsidian-help"

# The same queries as the criterion benchmarks (benches/src/lib.rs).
GENERATED_QUERIES = ["backup", "sync conflict resolution", '"version control"', "备份仓库", "xylophonist"]
CORPUS_QUERIES = ["canvas", "sync vault settings", '"command palette"', "核心插件", "xylophonist"]


def log(message):
    print(f"process_figures: {message}", file=sys.stderr, flush=True)


def build_binaries():
    """Builds kb-mcp, kb-index and the generator in release mode (a no-op when fresh)."""
    subprocess.run(["cargo", "build", "--release", "--bins"], cwd=REPO, check=True)
    subprocess.run(
        ["cargo", "build", "--release", "-p", "kb-bench", "--example", "gen-vault"], cwd=REPO, check=True
    )


def check_outside_repo(path):
    """Refuses to write inside the repository or the shared corpora."""
    resolved = Path(path).resolve()
    for root in (REPO.resolve(), (REPO.parent / "shared").resolve()):
        if resolved == root or root in resolved.parents:
            sys.exit(f"process_figures: refusing to write {resolved} inside {root}")


def markdown_stats(vault):
    files, size = 0, 0
    for folder, dirs, names in os.walk(vault):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            if name.endswith(".md") and not name.startswith("."):
                files += 1
                size += os.path.getsize(os.path.join(folder, name))
    return files, size


def dir_size(path):
    return sum(
        os.path.getsize(os.path.join(folder, name)) for folder, _, names in os.walk(path) for name in names
    )


def get_vault(label):
    """(path, files, bytes, queries) of a vault label."""
    if label == CORPUS_LABEL:
        if not CORPUS.is_dir():
            return None
        files, size = markdown_stats(CORPUS)
        return CORPUS, files, size, CORPUS_QUERIES
    out = subprocess.run(
        [str(RELEASE / "examples" / "gen-vault"), "--notes", label],
        check=True,
        capture_output=True,
        text=True,
    )
    info = json.loads(out.stdout)
    return Path(info["path"]), info["files"], info["bytes"], GENERATED_QUERIES


def run_measured(argv, log_path):
    """Runs a command (stderr to `log_path`); returns (seconds, peak RSS in bytes)."""
    with open(log_path, "wb") as stderr:
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        sys.exit(f"process_figures: {argv} failed ({process.returncode}); see {log_path}")
    return seconds, usage.ru_maxrss * 1024


class Server:
    """One kb-mcp process spoken to in newline-delimited JSON-RPC on its pipes."""

    def __init__(self, vault, index, stderr_path, binary=None, extra_args=()):
        binary = binary or RELEASE / "kb-mcp"
        self.spawn([str(binary), "--vault", str(vault), "--index-dir", str(index), *extra_args], stderr_path)

    @classmethod
    def with_args(cls, args, stderr_path):
        """A server started as `kb-mcp ARGS` (several vaults, say)."""
        server = cls.__new__(cls)
        server.spawn([str(RELEASE / "kb-mcp"), *args], stderr_path)
        return server

    def spawn(self, argv, stderr_path):
        self.stderr_path = stderr_path
        self.stderr = open(stderr_path, "wb")
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, bufsize=0
        )
        self.buffer = b""
        self.next_id = 1

    def send(self, message):
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method, params, timeout=120.0):
        """Sends a request and waits for its answer (skipping notifications)."""
        ident = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        deadline = time.perf_counter() + timeout
        while True:
            line = self.read_line(deadline)
            message = json.loads(line)
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method} failed: {message['error']}")
                return message["result"]

    def read_line(self, deadline):
        fd = self.process.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError("no answer from kb-mcp")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"kb-mcp closed stdout; see {self.stderr_path}")
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def initialize(self):
        result = self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "kb-bench process_figures", "version": "0"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    def tool(self, name, arguments):
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError"):
            raise RuntimeError(f"{name} failed: {result}")
        return result

    def search(self, query):
        result = self.request("tools/call", {"name": "search_note_content", "arguments": {"query": query}})
        if result.get("isError"):
            raise RuntimeError(f"search_note_content {query!r} failed: {result}")
        return result

    def wait_synced(self, timeout=600.0):
        """Waits for the start-up sync's `index_synced` log line."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if b'"index_synced"' in Path(self.stderr_path).read_bytes():
                return True
            time.sleep(0.05)
        return False

    def memory(self):
        """VmHWM (peak), VmRSS and its anonymous and file-backed (mmap'd index) parts, in bytes."""
        fields = {}
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                key, _, value = line.partition(":")
                if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
                    fields[key] = int(value.split()[0]) * 1024
        return fields

    def close(self):
        self.process.stdin.close()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            self.process.wait()
        self.stderr.close()


def fts5_build(vault, db):
    """Builds the FTS5 database of a vault (run in a process of its own, see --fts5-build)."""
    db = Path(db)
    for leftover in (db, Path(f"{db}-journal"), Path(f"{db}-wal")):
        if leftover.exists():
            leftover.unlink()
    connection = sqlite3.connect(db)
    connection.execute("PRAGMA journal_mode = OFF")
    connection.execute("PRAGMA synchronous = OFF")
    connection.execute("CREATE VIRTUAL TABLE notes USING fts5(path UNINDEXED, body, tokenize = 'unicode61')")

    def rows():
        for folder, dirs, names in os.walk(vault):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in names:
                if name.endswith(".md") and not name.startswith("."):
                    full = os.path.join(folder, name)
                    with open(full, encoding="utf-8", errors="replace") as note:
                        yield os.path.relpath(full, vault), note.read()

    with connection:
        connection.executemany("INSERT INTO notes (path, body) VALUES (?, ?)", rows())
    connection.close()


def fts5_measure(vault, label, queries, calls):
    """Builds FTS5 over `vault` in a child process, then times `calls` queries here."""
    db = BENCH_DIR / f"process-fts5-{label}.sqlite"
    seconds, rss = run_measured(
        [sys.executable, str(Path(__file__).resolve()), "--fts5-build", str(vault), str(db)],
        BENCH_DIR / f"process-fts5-build-{label}.stderr",
    )
    connection = sqlite3.connect(db)
    sql = (
        "SELECT path, snippet(notes, 1, '**', '**', '…', 12) FROM notes "
        "WHERE notes MATCH ? ORDER BY rank LIMIT 10"
    )
    by_query = {query: [] for query in queries}
    timings = []
    hits = {}
    for i in range(calls):
        query = queries[i % len(queries)]
        started = time.perf_counter()
        try:
            rows = connection.execute(sql, (query,)).fetchall()
        except sqlite3.OperationalError as error:
            log(f"{label}: FTS5 cannot run {query!r}: {error}")
            rows = []
        took = time.perf_counter() - started
        hits[query] = len(rows)
        timings.append(took)
        by_query[query].append(took)
    connection.close()
    figures = {
        "fts5_build_seconds": seconds,
        "fts5_build_peak_rss": rss,
        "fts5_db_bytes": db.stat().st_size,
        "fts5_median_ms": statistics.median(timings) * 1e3,
        "fts5_p99_ms": percentile(timings, 0.99) * 1e3,
        "fts5_median_ms_by_query": {q: statistics.median(t) * 1e3 for q, t in by_query.items() if t},
        "fts5_hits_by_query": hits,
    }
    log(f"{label}: FTS5 build {seconds:.2f} s, query median {figures['fts5_median_ms']:.2f} ms")
    db.unlink()
    return figures


def slowest_breakdown(stderr_path):
    """With KB_LOG=debug in the environment, the server logs where each request's
    time went (`timing` lines): the median of each stage over the searches of the
    last server, and the stages of the slowest two."""
    lines = []
    for line in Path(stderr_path).read_text(errors="replace").splitlines():
        if '"timing"' in line:
            event = json.loads(line)
            if event.get("tool") == "search_note_content":
                lines.append(event)
    if not lines:
        return None
    stages = sorted({k for e in lines for k, v in e.items() if k.endswith("_ms") and isinstance(v, (int, float))})
    medians = {k: statistics.median(e.get(k, 0) for e in lines) for k in stages}
    slowest = sorted(lines, key=lambda e: e.get("total_ms", 0), reverse=True)[:2]
    for event in slowest:
        log("slow call: " + json.dumps({k: event[k] for k in ["total_ms", *stages, "waited_for"] if k in event}))
    log("median stages: " + json.dumps(medians))
    return {"median": medians, "slowest": slowest}


def percentile(values, q):
    ordered = sorted(values)
    return ordered[round((len(ordered) - 1) * q)]


def measure(label, runs, calls, fts5):
    found = get_vault(label)
    if found is None:
        log(f"no {label} vault; skipped")
        return None
    vault, files, md_bytes, queries = found
    log(f"{label}: {files} notes, {md_bytes / 1e6:.1f} MB at {vault}")
    index = BENCH_DIR / f"process-index-{label}"
    check_outside_repo(index)
    build_seconds, build_rss = run_measured(
        [str(RELEASE / "kb-index"), "--vault", str(vault), "--index-dir", str(index), "build", "--full"],
        BENCH_DIR / f"process-build-{label}.stderr",
    )
    log(f"{label}: kb-index build --full {build_seconds:.2f} s, peak RSS {build_rss / 2**20:.0f} MiB")
    index_bytes = dir_size(index)
    stderr_path = BENCH_DIR / f"process-{label}.stderr"

    cold_init, cold_search = [], []
    for run in range(runs):
        server = Server(vault, index, stderr_path)
        server.initialize()
        cold_init.append(time.perf_counter() - server.started)
        server.search(queries[0])
        cold_search.append(time.perf_counter() - server.started)
        if run + 1 < runs:
            server.close()
    log(
        f"{label}: cold start initialize {statistics.median(cold_init) * 1e3:.1f} ms, "
        f"first search {statistics.median(cold_search) * 1e3:.1f} ms (median of {runs})"
    )

    synced = server.wait_synced()
    round_trips = []
    by_query = {query: [] for query in queries}
    for i in range(calls):
        query = queries[i % len(queries)]
        started = time.perf_counter()
        server.search(query)
        took = time.perf_counter() - started
        round_trips.append(took)
        by_query[query].append(took)
    memory = server.memory()
    # Then the tools that need the link graph and a walk of the vault, which the
    # searches above never build: peak RSS with every structure in memory.
    hit = server.search(queries[0])["structuredContent"]["results"]
    if hit:
        server.tool("get_related_notes", {"path": hit[0]["path"]})
    server.tool("list_tags", {})
    server.tool("get_vault_overview", {})
    memory_all = server.memory()
    server.close()
    breakdown = slowest_breakdown(stderr_path)
    figures = {
        "label": label,
        "notes": files,
        "markdown_bytes": md_bytes,
        "index_bytes": index_bytes,
        "index_ratio": index_bytes / md_bytes,
        "build_seconds": build_seconds,
        "build_mb_per_s": md_bytes / 1e6 / build_seconds,
        "build_peak_rss": build_rss,
        "cold_initialize_ms": statistics.median(cold_init) * 1e3,
        "cold_first_search_ms": statistics.median(cold_search) * 1e3,
        "cold_runs": runs,
        "warm_calls": calls,
        "warm_median_ms": statistics.median(round_trips) * 1e3,
        "warm_p99_ms": percentile(round_trips, 0.99) * 1e3,
        "warm_max_ms": max(round_trips) * 1e3,
        "warm_tail_ratio": percentile(round_trips, 0.99) / statistics.median(round_trips),
        "warm_p99_ms_by_query": {q: percentile(t, 0.99) * 1e3 for q, t in by_query.items() if t},
        "startup_sync_done": synced,
        "warm_median_ms_by_query": {q: statistics.median(t) * 1e3 for q, t in by_query.items() if t},
        "serving_peak_rss": memory["VmHWM"],
        "serving_rss": memory["VmRSS"],
        "serving_rss_anon": memory.get("RssAnon"),
        "serving_rss_file": memory.get("RssFile"),
        "all_tools_peak_rss": memory_all["VmHWM"],
        "all_tools_rss_anon": memory_all.get("RssAnon"),
        "all_tools_rss_file": memory_all.get("RssFile"),
    }
    if breakdown:
        figures["timing_breakdown"] = breakdown
    if fts5:
        figures.update(fts5_measure(vault, label, queries, calls))
    log(f"{label}: {json.dumps(figures)}")
    return figures


def table(rows):
    mib = 2**20
    lines = [
        "| vault | notes | Markdown | index (ratio) | `kb-index build --full` | build peak RSS "
        "| cold start → `initialize` | cold start → first search | warm `search_note_content` round trip "
        "median / p99 | serving peak RSS (now: anon + file) | peak RSS after graph, tags, overview |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['label']} | {r['notes']:,} | {r['markdown_bytes'] / 1e6:.1f} MB "
            f"| {r['index_bytes'] / 1e6:.1f} MB ({r['index_ratio']:.2f}×) "
            f"| {r['build_seconds']:.2f} s ({r['build_mb_per_s']:.1f} MB/s) | {r['build_peak_rss'] / mib:.0f} MiB "
            f"| {r['cold_initialize_ms']:.1f} ms | {r['cold_first_search_ms']:.1f} ms "
            f"| {r['warm_median_ms']:.2f} / {r['warm_p99_ms']:.2f} ms ({r['warm_calls']} calls) "
            f"| {r['serving_peak_rss'] / mib:.0f} MiB ({(r['serving_rss_anon'] or 0) / mib:.0f} + "
            f"{(r['serving_rss_file'] or 0) / mib:.0f} MiB) "
            f"| {r['all_tools_peak_rss'] / mib:.0f} MiB ({(r['all_tools_rss_anon'] or 0) / mib:.0f} + "
            f"{(r['all_tools_rss_file'] or 0) / mib:.0f} MiB) |"
        )
    return "\n".join(lines)


def side_by_side(rows):
    """kb-mcp against SQLite FTS5 in the same run: ratios first, then the absolute figures."""
    rows = [r for r in rows if "fts5_build_seconds" in r]
    if not rows:
        return ""
    queries = list(rows[0]["warm_median_ms_by_query"])
    lines = [
        "| vault | build kb / FTS5 | "
        + " | ".join(f"`{q}` kb / FTS5 (ms)" for q in queries)
        + " | kb-mcp tail p99 / median | FTS5 build, db size, peak RSS |",
        "|---|---:|" + "---:|" * len(queries) + "---:|---:|",
    ]
    for r in rows:
        cells = []
        for q in r["warm_median_ms_by_query"]:
            kb, fts = r["warm_median_ms_by_query"][q], r["fts5_median_ms_by_query"].get(q)
            if fts:
                cells.append(f"{kb / fts:.1f}× ({kb:.2f} / {fts:.2f})")
            else:
                cells.append(f"– ({kb:.2f} / –)")
        lines.append(
            f"| {r['label']} | {r['build_seconds'] / r['fts5_build_seconds']:.2f}× "
            f"({r['build_seconds']:.2f} / {r['fts5_build_seconds']:.2f} s) | "
            + " | ".join(cells)
            + f" | {r['warm_tail_ratio']:.1f}× ({r['warm_p99_ms']:.2f} / {r['warm_median_ms']:.2f} ms) "
            f"| {r['fts5_build_seconds']:.2f} s, {r['fts5_db_bytes'] / 1e6:.1f} MB, "
            f"{r['fts5_build_peak_rss'] / 2**20:.0f} MiB |"
        )
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=f"10000,100000,{CORPUS_LABEL}")
    parser.add_argument("--runs", type=int, default=5, help="cold starts per vault (median)")
    parser.add_argument("--calls", type=int, default=100, help="warm round trips per vault")
    parser.add_argument("--no-build", action="store_true", help="use the release binaries as they are")
    parser.add_argument("--bin-dir", help="take the binaries from here instead of target/release (implies --no-build)")
    parser.add_argument("--no-fts5", action="store_true", help="leave out the SQLite FTS5 side by side")
    parser.add_argument("--fts5-build", nargs=2, metavar=("VAULT", "DB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fts5_build:
        fts5_build(*args.fts5_build)
        return
    global RELEASE
    if args.bin_dir:
        RELEASE = Path(args.bin_dir).resolve()
        args.no_build = True
    check_outside_repo(BENCH_DIR)
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    if not args.no_build:
        build_binaries()
    rows = []
    for label in [s.strip() for s in args.sizes.split(",") if s.strip()]:
        figures = measure(label, args.runs, args.calls, not args.no_fts5)
        if figures:
            rows.append(figures)
    out = TARGET / "kb-bench" / "process.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2) + "\n")
    print(table(rows))
    print()
    print(side_by_side(rows))


if __name__ == "__main__":
    main()
