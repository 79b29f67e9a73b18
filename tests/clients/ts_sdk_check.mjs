// Checks kb-mcp with the official MCP TypeScript SDK 1.x client (npm
// @modelcontextprotocol/sdk, the one the MCP Inspector and many hosts are built on).
// That client checks any `structuredContent` against the tool's `outputSchema`, errors
// included, so this is where an error result that carries structured content shows up as
// "Structured content does not match the tool's output schema" instead of our error.
//
// Over stdio, at access `read` and then `propose`, it lists the tools (which arms the
// SDK's output validation), makes calls that succeed and calls that fail, and checks that
// each failure reaches the agent as `isError` with the JSON {"error": {code, message, hint}}
// in its text and no structured content. Prints one line per check and
// "N passed, N failed"; exits 1 if anything failed.
//
//   node ts_sdk_check.mjs BINARY VAULT     (run from a folder whose node_modules has the SDK;
//                                           tests/clients/conformance.sh does so)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [binary, fixture] = process.argv.slice(2);
if (!binary || !fixture) {
  console.error("usage: node ts_sdk_check.mjs BINARY VAULT");
  process.exit(2);
}
const temp = mkdtempSync(join(tmpdir(), "kb-mcp-ts-"));
const vault = join(temp, "vault");
cpSync(fixture, vault, { recursive: true });

let passed = 0;
let failed = 0;
function check(name, ok, detail = "") {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${ok || !detail ? "" : ": " + detail}`);
}

async function connect(access) {
  const transport = new StdioClientTransport({
    command: binary,
    args: ["--vault", vault, "--access", access],
    stderr: "ignore",
  });
  const client = new Client({ name: "kb-mcp-ts-check", version: "1.0.0" });
  await client.connect(transport);
  // Listing the tools is what makes the SDK validate every later result's structure.
  await client.listTools();
  return client;
}

/// Calls a tool as a host does; a thrown SDK error (a schema mismatch) is returned as such.
async function call(client, name, args) {
  try {
    return { result: await client.callTool({ name, arguments: args }) };
  } catch (error) {
    return { thrown: String(error?.message ?? error) };
  }
}

/// The error the agent reads: the JSON in the text content of an `isError` result.
function agentError({ result, thrown }) {
  if (thrown) return { problem: `the SDK threw: ${thrown}` };
  if (!result.isError) return { problem: "not an error result" };
  if (result.structuredContent !== undefined) return { problem: "an error carries structuredContent" };
  const text = result.content?.[0]?.text ?? "";
  try {
    return { error: JSON.parse(text).error ?? {} };
  } catch {
    return { problem: `the error text is not JSON: ${text.slice(0, 200)}` };
  }
}

function expectError(label, answer, code, more = () => true) {
  const { error, problem } = agentError(answer);
  const ok = !problem && error.code === code && !!error.message && !!error.hint && more(error);
  check(`${label} fails as ${code}, with message and hint`, ok, problem ?? JSON.stringify(error));
}

try {
  const reader = await connect("read");
  const found = await call(reader, "search_note_content", { query: "远程仓库" });
  check(
    "search_note_content succeeds and passes the SDK's output validation",
    !found.thrown && !found.result.isError && found.result.structuredContent?.total > 0,
    found.thrown ?? JSON.stringify(found.result).slice(0, 200),
  );
  const note = await call(reader, "read_note", { path: "z/备份仓库.md" });
  const hash = note.result?.structuredContent?.hash;
  check("read_note succeeds with a hash", typeof hash === "string" && hash.startsWith("sha256:"), note.thrown);
  expectError("read_note of a missing note", await call(reader, "read_note", { path: "z/no such note.md" }), "not_found");
  expectError("read_note of ../../etc/passwd", await call(reader, "read_note", { path: "../../etc/passwd" }), "path_denied");
  expectError(
    "search_knowledge with limit 99",
    await call(reader, "search_knowledge", { query: "x", limit: 99 }),
    "invalid_argument",
    (e) => e.message.includes("`limit`"),
  );
  expectError(
    "propose_new_note at access read",
    await call(reader, "propose_new_note", { title: "x", body: "x", reason: "x" }),
    "permission_denied",
  );
  await reader.close();

  const proposer = await connect("propose");
  expectError(
    "propose_note_patch on a stale base",
    await call(proposer, "propose_note_patch", {
      path: "z/备份仓库.md",
      base_hash: "sha256:" + "0".repeat(64),
      reason: "x",
      edits: [{ op: "append", content: "x\n" }],
    }),
    "stale_base",
    (e) => e.current_hash === hash,
  );
  expectError(
    "apply_proposal at access propose",
    await call(proposer, "apply_proposal", { proposal_id: "nope" }),
    "permission_denied",
  );
  const staged = await call(proposer, "propose_new_note", { title: "TS SDK check", body: "text\n", reason: "test" });
  check(
    "propose_new_note succeeds and passes the SDK's output validation",
    !staged.thrown && !staged.result.isError && !!staged.result.structuredContent?.proposal_id,
    staged.thrown ?? JSON.stringify(staged.result).slice(0, 200),
  );
  await proposer.close();
} catch (error) {
  check("session", false, String(error?.stack ?? error));
} finally {
  rmSync(temp, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
