#!/usr/bin/env python3
"""Runs the README's first command as a new user would, on the clean clone, and
drives it over stdio like a client: initialize, one search, then end of input.

CI runs this before the README's second command (the tests), so a fresh clone
is checked in that order: whatever the server leaves in `fixtures/vault` (its
index, an inbox lock) must not change what the tests see (issue 18).
Exit 0 when the server answered the search with hits and exited cleanly.
"""

import json
import re
import subprocess
import sys
import time

README = "README.md"


def first_command() -> list[str]:
    """The first `cargo run` line of the README's two-command block."""
    with open(README, encoding="utf-8") as f:
        for line in f:
            match = re.match(r"^(cargo run [^#]*?)\s*(#.*)?$", line.strip())
            if match:
                return match.group(1).split()
    sys.exit("README.md has no `cargo run` line")


def main() -> int:
    command = first_command()
    print("running:", " ".join(command), flush=True)
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "readme-check", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "search_note_content", "arguments": {"query": "远程仓库"}}},
    ]
    for request in requests:
        server.stdin.write(json.dumps(request, ensure_ascii=False) + "\n")
    server.stdin.flush()
    answers = {}
    # The first run also builds the release binary: allow for a slow machine.
    deadline = time.monotonic() + 3600
    while len(answers) < 2 and time.monotonic() < deadline:
        line = server.stdout.readline()
        if not line:
            break
        reply = json.loads(line)
        if "id" in reply:
            answers[reply["id"]] = reply
    server.stdin.close()
    code = server.wait(timeout=60)
    search = answers.get(2, {}).get("result", {})
    total = search.get("structuredContent", {}).get("total", 0)
    print(f"server exit {code}; search answered with {total} matching notes")
    if code != 0 or search.get("isError") or total == 0:
        print("the README's first command did not work as written", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
