// Checks kb-mcp with the official MCP TypeScript SDK 1.x client (npm
// @modelcontextprotocol/sdk, the one the MCP Inspector and many hosts are built on).
// That client checks any `structuredContent` against the tool's `outputSchema`, errors
// included, so this is where an error result that carries structured content shows up as
// "Structured content does not match the tool's output schema" instead of our error.
//
// Over stdio, at access `read` and then `propose`, it lists the tools (which arms the
// SDK's output validation), makes calls that succeed and calls that fail, and checks that
// each failure reaches the agent as `isError` with the JSON {"error": {code, message, hint}}
// in its text and no structured content.
//
// Then over Streamable HTTP with the SDK's own OAuth client (`authProvider`): the 401 leads
// it to the metadata, registration and the consent page (answered here as the owner would,
// with the passphrase), it calls read tools with the token it got, and a propose tool then
// gets a 403 `insufficient_scope`. SDK 1.32 answers that by refreshing its token, which
// cannot widen it; once the host drops the refresh token the SDK follows the challenge to a
// second consent for `propose`, after which the call succeeds. Prints one line per check and
// "N passed, N failed"; exits 1 if anything failed.
//
//   node ts_sdk_check.mjs BINARY VAULT     (run from a folder whose node_modules has the SDK;
//                                           tests/clients/conformance.sh does so)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { execFileSync, spawn } from "node:child_process";
import { createInterface } from "node:readline";
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

const PASSPHRASE = "correct horse battery staple";
const REDIRECT = "http://127.0.0.1:9/callback";

/// `kb-mcp --http` with a token file whose owner passphrase is set; its base URL.
async function startHttp(tokens) {
  execFileSync(binary, ["token", "add", "laptop", "--scope", "read", "--tokens", tokens], { stdio: "ignore" });
  execFileSync(binary, ["owner", "set", "--tokens", tokens], { input: PASSPHRASE + "\n", stdio: ["pipe", "ignore", "ignore"] });
  const server = spawn(binary, ["--http", "127.0.0.1:0", "--tokens", tokens, "--vault", vault], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  for await (const line of createInterface({ input: server.stderr })) {
    if (!line.startsWith("{")) continue;
    const event = JSON.parse(line);
    if (event.event === "listening") {
      server.stderr.resume();
      return { server, base: `http://${event.addr}` };
    }
  }
  throw new Error("kb-mcp --http did not say it was listening");
}

/// The person's browser at the consent page `url`: reads it, answers its form
/// with the passphrase for `scope`, and returns the code it is sent back with.
async function consent(base, url, scope) {
  const page = await fetch(url);
  const cookie = (page.headers.get("set-cookie") ?? "").split(";")[0];
  const html = await page.text();
  check(`[oauth ${scope}] the consent page names the client`, page.status === 200 && html.includes("kb-mcp ts check"), String(page.status));
  const field = (name) => html.match(new RegExp(`name="${name}" value="([^"]+)"`))?.[1] ?? "";
  const form = new URLSearchParams({ attempt: field("attempt"), csrf: field("csrf"), scope, passphrase: PASSPHRASE, decision: "allow" });
  const answer = await fetch(`${base}/oauth/authorize`, {
    method: "POST",
    body: form,
    redirect: "manual",
    headers: { Origin: base, Cookie: cookie, "Content-Type": "application/x-www-form-urlencoded" },
  });
  const location = answer.headers.get("location") ?? "";
  check(`[oauth ${scope}] the owner's answer redirects back with a code`, answer.status === 303 && location.startsWith(REDIRECT), `${answer.status} ${location}`);
  return new URL(location).searchParams.get("code");
}

/// An OAuth client kept in memory, as a host keeps it.
function memoryProvider(onRedirect) {
  const kept = {};
  return {
    kept,
    get redirectUrl() { return REDIRECT; },
    get clientMetadata() {
      return { client_name: "kb-mcp ts check", redirect_uris: [REDIRECT], grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"], token_endpoint_auth_method: "none" };
    },
    clientInformation: () => kept.client,
    saveClientInformation: (client) => { kept.client = client; },
    tokens: () => kept.tokens,
    saveTokens: (tokens) => { kept.tokens = tokens; },
    redirectToAuthorization: (url) => onRedirect(url),
    saveCodeVerifier: (verifier) => { kept.verifier = verifier; },
    codeVerifier: () => kept.verifier,
  };
}

/// Connects with `provider`, going through consent for `scope` when the server asks.
async function connectHttp(base, provider, redirects, scope) {
  for (let round = 0; round < 2; round++) {
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
    const client = new Client({ name: "kb-mcp-ts-check", version: "1.0.0" });
    try {
      await client.connect(transport);
      return client;
    } catch (error) {
      if (!(error instanceof UnauthorizedError) || redirects.length === 0) throw error;
      await transport.finishAuth(await consent(base, redirects.pop(), scope));
    }
  }
  throw new Error("still unauthorized after consent");
}

async function oauthSession() {
  const { server, base } = await startHttp(join(temp, "tokens.json"));
  try {
    const redirects = [];
    const provider = memoryProvider((url) => redirects.push(String(url)));
    const reader = await connectHttp(base, provider, redirects, "read");
    const names = (await reader.listTools()).tools.map((t) => t.name);
    check("[oauth read] the granted read scope lists the read tools only",
      names.includes("search_knowledge") && !names.includes("propose_new_note"), names.join(","));
    const found = await call(reader, "search_knowledge", { query: "sync" });
    check("[oauth read] a tool call with the OAuth token", !found.thrown && !found.result.isError, found.thrown);
    check("[oauth read] the SDK registered and holds a read token",
      !!provider.kept.client?.client_id && provider.kept.tokens?.scope === "read", JSON.stringify(provider.kept.tokens ?? {}));

    // A propose tool with a read token: 403 insufficient_scope. SDK 1.32 first refreshes its
    // token (without asking for the new scope), gets the same scope, and stops: its error
    // names the upscoping it tried, so it read the challenge.
    const refused = await call(reader, "propose_new_note", { title: "Via OAuth", body: "text\n", reason: "test" });
    check("[oauth propose] the SDK reads the 403 as insufficient_scope",
      (refused.thrown ?? "").includes("after trying upscoping"), refused.thrown ?? JSON.stringify(refused.result));
    // A host that then drops its refresh token (and connects again: the transport stops at a
    // challenge it has seen) goes back to consent, for the scope the challenge named.
    await reader.close();
    delete provider.kept.tokens.refresh_token;
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
    const again = new Client({ name: "kb-mcp-ts-check", version: "1.0.0" });
    await again.connect(transport);
    const stepped = await call(again, "propose_new_note", { title: "Via OAuth", body: "text\n", reason: "test" });
    const asked = redirects.length === 1 ? new URL(redirects[0]).searchParams.get("scope") ?? "" : "";
    check("[oauth propose] without a refresh token, the challenge sends the SDK to consent for propose",
      asked.split(" ").includes("propose"), `${stepped.thrown ?? "no error"}; redirects ${redirects.join(" ")}`);
    if (redirects.length === 1) await transport.finishAuth(await consent(base, redirects.pop(), "propose"));
    await again.close();
    const proposer = await connectHttp(base, provider, redirects, "propose");
    const staged = await call(proposer, "propose_new_note", { title: "Via OAuth", body: "text\n", reason: "test" });
    check("[oauth propose] after the second consent the propose call succeeds",
      !staged.thrown && !staged.result.isError && !!staged.result.structuredContent?.proposal_id,
      staged.thrown ?? JSON.stringify(staged.result).slice(0, 200));
    await proposer.close();
  } finally {
    server.kill();
  }
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
}
try {
  await oauthSession();
} catch (error) {
  check("[oauth] session", false, String(error?.stack ?? error));
} finally {
  rmSync(temp, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
