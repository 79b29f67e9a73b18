#!/usr/bin/env python3
"""Several vaults behind one server (issue 39), on the real release binaries (stdlib only).

Makes N vaults of the generated vault of `--notes` notes (hard-linked copies of
its Markdown under $KB_BENCH_DIR, each with a kb.toml of its own turning the
semantic layer and the history off, so that neither background pass blurs the
figures; both are per vault and measured elsewhere), builds each one's index
with `kb-index build --full`, lists them in a vaults file, then:

1. start-up: spawns `kb-mcp --vaults FILE`, times the `initialize` answer, the
   first answered `list_vaults` (it waits for every vault) and the moment every
   vault's start-up sync is done (N `index_synced` log lines);
2. serving: `search_note_content` in one vault (`vault: v0`) and across every
   vault (`vault: "*"`), `--calls` each, one at a time over the pipes, the
   queries of process_figures.py cycled: median and p99 of each;
3. memory: the serving process's VmHWM and RssAnon after those calls;
4. beside it, in the same run, a server of vault v0 alone with the same index:
   the same single-vault calls, its memory.

Prints a Markdown table and writes target/kb-bench/vaults.json.

    python3 benches/scripts/vaults_figures.py [--vaults 10] [--notes 10000] [--calls 200] [--bin-dir DIR]
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import process_figures as pf  # noqa: E402

OFF = "[semantic]\nenabled = false\n[history]\nenabled = false\n"


def synced(server):
    """How many vaults' start-up syncs the server has logged as done."""
    return Path(server.stderr_path).read_bytes().count(b'"index_synced"')


def make_vaults(source, count, root):
    """`count` vaults at root/v0… (notes hard-linked to `source`'s), their
    indexes at root/index-v0…, and the vaults file listing them."""
    entries = []
    for number in range(count):
        vault = root / f"v{number}"
        index = root / f"index-v{number}"
        if not vault.is_dir():
            subprocess.run(["cp", "-al", str(source), str(vault)], check=True)
        toml = vault / "kb.toml"
        if toml.exists():
            toml.unlink()  # a hard link to the source's: never written through
        toml.write_text(OFF)
        if not (index / "kb-mcp-index.json").is_file():
            pf.run_measured(
                [str(pf.RELEASE / "kb-index"), "--vault", str(vault), "--index-dir", str(index), "build", "--full"],
                root / f"build-v{number}.stderr",
            )
        entries.append(f'[[vault]]\nname = "v{number}"\npath = "{vault}"\nindex_dir = "{index}"\n')
    file = root / "vaults.toml"
    file.write_text("\n".join(entries))
    return file


def timed_searches(server, calls, queries, vault):
    took = []
    for i in range(calls):
        arguments = {"query": queries[i % len(queries)]}
        if vault is not None:
            arguments["vault"] = vault
        started = time.perf_counter()
        server.tool("search_note_content", arguments)
        took.append(time.perf_counter() - started)
    return took


def summary(took):
    return {"median_ms": statistics.median(took) * 1e3, "p99_ms": pf.percentile(took, 0.99) * 1e3}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vaults", type=int, default=10)
    parser.add_argument("--notes", default="10000")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--bin-dir", type=Path)
    args = parser.parse_args()
    if args.bin_dir:
        pf.RELEASE = args.bin_dir
    else:
        pf.build_binaries()
    source, files, _, queries = pf.get_vault(args.notes)
    root = pf.BENCH_DIR / f"vaults-{args.vaults}x{args.notes}"
    pf.check_outside_repo(root)
    root.mkdir(parents=True, exist_ok=True)
    file = make_vaults(source, args.vaults, root)
    pf.log(f"{args.vaults} vaults of {files} notes listed in {file}")

    server = pf.Server.with_args(["--vaults", str(file)], root / "serve.stderr")
    server.initialize()
    initialize_ms = (time.perf_counter() - server.started) * 1e3
    server.tool("list_vaults", {})
    listed_ms = (time.perf_counter() - server.started) * 1e3
    deadline = time.perf_counter() + 600
    while synced(server) < args.vaults and time.perf_counter() < deadline:
        time.sleep(0.02)
    synced_ms = (time.perf_counter() - server.started) * 1e3
    one = timed_searches(server, args.calls, queries, "v0")
    every = timed_searches(server, args.calls, queries, "*")
    memory = server.memory()
    server.close()

    alone = pf.Server(root / "v0", root / "index-v0", root / "alone.stderr")
    alone.initialize()
    alone_initialize_ms = (time.perf_counter() - alone.started) * 1e3
    alone.wait_synced()
    alone_took = timed_searches(alone, args.calls, queries, None)
    alone_memory = alone.memory()
    alone.close()

    figures = {
        "vaults": args.vaults,
        "notes_each": files,
        "calls": args.calls,
        "initialize_ms": initialize_ms,
        "list_vaults_answered_ms": listed_ms,
        "all_synced_ms": synced_ms,
        "one_vault": summary(one),
        "every_vault": summary(every),
        "peak_rss": memory["VmHWM"],
        "rss_anon": memory.get("RssAnon"),
        "alone_initialize_ms": alone_initialize_ms,
        "alone": summary(alone_took),
        "alone_peak_rss": alone_memory["VmHWM"],
        "alone_rss_anon": alone_memory.get("RssAnon"),
    }
    pf.log(json.dumps(figures))
    mib = 2**20
    print(f"| {args.vaults} vaults × {files} notes | one server | one vault alone |")
    print("|---|---|---|")
    print(f"| `initialize` answered | {initialize_ms:.0f} ms | {alone_initialize_ms:.0f} ms |")
    print(f"| first `list_vaults` answered (every vault open) | {listed_ms:.0f} ms | – |")
    print(f"| every vault's start-up sync done | {synced_ms:.0f} ms | – |")
    print(
        f"| `search_note_content`, one vault: median / p99 | {figures['one_vault']['median_ms']:.2f} / "
        f"{figures['one_vault']['p99_ms']:.2f} ms | {figures['alone']['median_ms']:.2f} / {figures['alone']['p99_ms']:.2f} ms |"
    )
    print(
        f"| `search_note_content`, `vault: \"*\"`: median / p99 | {figures['every_vault']['median_ms']:.2f} / "
        f"{figures['every_vault']['p99_ms']:.2f} ms | – |"
    )
    print(
        f"| peak RSS (VmHWM) / anonymous RSS | {memory['VmHWM'] / mib:.0f} / {memory.get('RssAnon', 0) / mib:.0f} MiB | "
        f"{alone_memory['VmHWM'] / mib:.0f} / {alone_memory.get('RssAnon', 0) / mib:.0f} MiB |"
    )
    out = pf.TARGET / "kb-bench"
    out.mkdir(parents=True, exist_ok=True)
    (out / "vaults.json").write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
