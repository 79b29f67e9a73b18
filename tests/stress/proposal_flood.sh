#!/bin/sh
# The long run of issue 12 item 12 (a propose-level agent flooding the inbox): not
# part of `cargo test`. Through the real server over stdio, 500 patch proposals
# against one ~1.9 MB note (caps raised in kb.toml), then the time of:
# `list_proposals`, an unrelated propose + apply, `kb-index inbox list`. Then the
# same flood with the caps at their defaults, which stops it with the cap's error.
#
# Usage: tests/stress/proposal_flood.sh [BIN_DIR] [PROPOSALS]
#   (default target/release and 500; build first with `cargo build --release`,
#   or pass target/debug). Needs python3. Uses about 1 GB of disk in $TMPDIR.
set -eu
BIN=${1:-target/release}
COUNT=${2:-500}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

make_vault() { # $1: folder, $2: kb.toml text
    mkdir -p "$1/z"
    printf '%s' "$2" >"$1/kb.toml"
    python3 - "$1" <<'PY'
import sys
line = "A line of the big note, long enough to look like prose in a real vault.\n"
with open(f"{sys.argv[1]}/z/big.md", "w") as f:
    f.write("# Big\n\n")
    f.write(line * (1_900_000 // len(line)))
with open(f"{sys.argv[1]}/z/other.md", "w") as f:
    f.write("# Other\n\nAn unrelated note.\n")
PY
    "$BIN/kb-index" build --vault "$1" >/dev/null
}

flood() { # $1: vault, $2: proposals, $3: label
    python3 - "$BIN/kb-mcp" "$1" "$2" "$3" <<'PY'
import json, subprocess, sys, time
server, vault, count, label = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
proc = subprocess.Popen([server, "--access", "apply", "--vault", vault],
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
next_id = 0
def rpc(method, params=None):
    global next_id
    next_id += 1
    message = {"jsonrpc": "2.0", "id": next_id, "method": method}
    if params is not None:
        message["params"] = params
    proc.stdin.write((json.dumps(message) + "\n").encode()); proc.stdin.flush()
    while True:
        answer = json.loads(proc.stdout.readline())
        if answer.get("id") == next_id:
            return answer
def call(name, arguments):
    started = time.perf_counter()
    result = rpc("tools/call", {"name": name, "arguments": arguments})["result"]
    return result, time.perf_counter() - started
rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "proposal-flood", "version": "0"}})
proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'); proc.stdin.flush()
note, _ = call("read_note", {"path": "z/big.md", "max_bytes": 100})
base = note["structuredContent"]["hash"]
started = time.perf_counter()
staged = 0
refused = None
for n in range(count):
    result, _ = call("propose_note_patch", {"path": "z/big.md", "base_hash": base, "reason": f"flood {n}",
                                             "edits": [{"op": "append", "content": f"flood line {n}"}]})
    if result.get("isError"):
        refused = result["structuredContent"]["error"]
        break
    staged += 1
flood_s = time.perf_counter() - started
print(f"{label}: {staged} patch proposals staged in {flood_s:.1f} s")
if refused:
    print(f"{label}: proposal {staged + 1} refused: {refused['code']}: {refused['message']}")
listed, list_s = call("list_proposals", {"limit": 500})
assert not listed.get("isError"), listed
print(f"{label}: list_proposals ({len(listed['structuredContent']['proposals'])} pending): {list_s * 1000:.0f} ms")
new, _ = call("propose_new_note", {"title": "Unrelated", "body": "Unrelated.\n", "reason": "flood"})
applied, apply_s = call("apply_proposal", {"proposal_id": new["structuredContent"]["proposal_id"]})
assert not applied.get("isError"), applied
print(f"{label}: an unrelated apply_proposal: {apply_s * 1000:.0f} ms")
proc.stdin.close(); proc.wait()
PY
    du -sh "$1/inbox" | sed "s|$1/||; s|^|$3: inbox holds |"
    start=$(python3 -c 'import time; print(time.perf_counter())')
    "$BIN/kb-index" inbox list --vault "$1" >/dev/null
    end=$(python3 -c 'import time; print(time.perf_counter())')
    python3 -c "print('$3: kb-index inbox list: %.0f ms' % (($end - $start) * 1000))"
}

echo "== caps raised: pending_max_count = 1000, pending_max_bytes = 1 GiB"
make_vault "$work/raised" "[limits]
pending_max_count = 1000
pending_max_bytes = 1073741824
"
flood "$work/raised" "$COUNT" raised
rm -rf "$work/raised"

echo "== caps at their defaults (100 proposals, 128 MiB)"
make_vault "$work/default" ""
flood "$work/default" "$COUNT" default
