#!/usr/bin/env python3
"""End-to-end time of apply_proposal over stdio, on a writable copy of a vault.

For each round: stage a new note with propose_new_note (not timed), then time the
apply_proposal round trip (checks, atomic write, archive, index update, audit line),
then search for the note's unique word and require it to be found right away (the
index update is visible before apply returns). Prints median, p90 and max.

    python3 benches/scripts/apply_latency.py [--vault ../shared/corpora/obsidian-help] [--rounds 40] [--kind new|patch]

Needs `cargo build --release` first. The vault is copied to a temp folder (the
corpus is never written); the index goes to a temp folder too. Stdlib only.
"""

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class Server:
    def __init__(self, binary, vault, index_dir):
        self.proc = subprocess.Popen(
            [str(binary), "--vault", str(vault), "--index-dir", str(index_dir), "--access", "apply"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1,
        )
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "apply-latency", "version": "0"}})
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")

    def request(self, method, params):
        self.next_id += 1
        wanted = self.next_id
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": wanted, "method": method, "params": params}) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("server closed stdout")
            message = json.loads(line)
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(message["error"])
                return message["result"]

    def tool(self, name, arguments):
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError"):
            raise RuntimeError(result["content"][0]["text"])
        return result["structuredContent"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--vault", default=str(ROOT.parent / "shared/corpora/obsidian-help"))
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--binary", default=str(ROOT / "target/release/kb-mcp"))
    parser.add_argument("--kind", choices=["new", "patch"], default="new",
                        help="new: apply new notes; patch: apply patches of one note (a swap, watched for late saves)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        shutil.copytree(args.vault, vault, ignore=shutil.ignore_patterns(".git", ".kb"))
        server = Server(args.binary, vault, Path(tmp) / "index")
        overview = server.tool("get_vault_overview", {})
        notes = overview["counts"]["notes"]
        times = []
        for round_ in range(args.rounds):
            word = f"quokka{round_}zeta"
            if args.kind == "new" or round_ == 0:
                staged = server.tool("propose_new_note", {"title": f"Apply latency {round_}", "body": f"A note about {word}.\n", "reason": "benchmark"})
                target = staged["target"]
            else:
                base = server.tool("read_note", {"path": target})["hash"]
                staged = server.tool("propose_note_patch", {"path": target, "base_hash": base, "reason": "benchmark",
                                                            "edits": [{"op": "append", "content": f"About {word}.\n"}]})
            started = time.perf_counter()
            applied = server.tool("apply_proposal", {"proposal_id": staged["proposal_id"]})
            elapsed = (time.perf_counter() - started) * 1000
            assert applied["status"] == "applied", applied
            found = server.tool("search_note_content", {"query": word})
            assert found["total"] == 1, f"{word} not searchable right after apply"
            times.append(elapsed)
        server.close()
    if args.kind == "patch":
        times = times[1:]  # the first round created the note the others patch
    times.sort()
    p90 = times[int(len(times) * 0.9) - 1]
    print(f"vault: {args.vault} ({notes} notes), {len(times)} applies of kind {args.kind}")
    print(f"apply_proposal end to end: median {statistics.median(times):.1f} ms, p90 {p90:.1f} ms, max {times[-1]:.1f} ms")


if __name__ == "__main__":
    sys.exit(main())
