// What the review card and page tests share: one `ok`/`FAIL` line per check, a kb-mcp
// server spoken to over stdio (raw newline-delimited JSON-RPC), a copy of a fixture vault,
// Chromium launched through playwright-core (installed by install.sh; never a browser
// download), a page watcher that fails on dialogs and console errors, and screenshots.
import { spawn } from "node:child_process";
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";

export const here = dirname(fileURLToPath(import.meta.url));
export const repo = resolve(here, "../../..");
/// A binary of this build (KB_REVIEW_BIN_DIR: another folder, e.g. target/release for timings).
export const bin = (name) => resolve(repo, process.env.KB_REVIEW_BIN_DIR || "target/debug", name);
export const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/// The ui capability a host declares in initialize.
export const UI_CAPABILITY = { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } };

/// Prints one line per check and counts the failures.
export class Checks {
  constructor(suite) {
    this.suite = suite;
    this.failed = 0;
    this.passed = 0;
  }

  /// Records one check; `detail` is printed only when it fails.
  check(name, ok, detail = "") {
    if (ok) this.passed++;
    else this.failed++;
    const more = ok || detail === "" ? "" : ": " + String(detail).slice(0, 600);
    console.log(`${ok ? "ok  " : "FAIL"} ${this.suite}: ${name}${more}`);
    return Boolean(ok);
  }

  /// Runs `body`; an exception is a failed check rather than a crash.
  async step(name, body) {
    try {
      await body();
    } catch (error) {
      this.check(name, false, error && error.stack ? error.stack.split("\n").slice(0, 4).join(" | ") : error);
    }
  }
}

const temps = [];

/// A temp copy of a fixture vault (default: fixtures/vault).
export function copyVault(fixture = join(repo, "fixtures/vault")) {
  const temp = mkdtempSync(join(tmpdir(), "kb-review-"));
  const vault = join(temp, "vault");
  cpSync(fixture, vault, { recursive: true });
  temps.push(temp);
  return { temp, vault };
}

/// Removes the temp vaults when every check passed (a failure keeps them to look at).
export function cleanUp(checks) {
  if (checks.failed) {
    console.log(`${checks.suite}: vaults kept for a look: ${temps.join(" ")}`);
    return;
  }
  for (const temp of temps) rmSync(temp, { recursive: true, force: true });
}

/// A kb-mcp server on stdio, spoken to with raw newline-delimited JSON-RPC.
export class McpServer {
  constructor(vault, access = "apply") {
    this.child = spawn(bin("kb-mcp"), ["--vault", vault, "--access", access], { stdio: ["pipe", "pipe", "pipe"] });
    this.nextId = 1;
    this.waiting = new Map();
    this.stderr = "";
    this.child.stderr.on("data", (chunk) => { this.stderr = (this.stderr + chunk).slice(-20000); });
    readline.createInterface({ input: this.child.stdout }).on("line", (line) => {
      let message;
      try { message = JSON.parse(line); } catch (_) { return; }
      const done = this.waiting.get(message.id);
      if (done) {
        this.waiting.delete(message.id);
        done(message);
      }
    });
  }

  /// Sends a request; resolves with the whole answer ({result} or {error}).
  request(method, params) {
    const id = this.nextId++;
    return new Promise((done, fail) => {
      const timer = setTimeout(() => fail(new Error(`${method}: no answer in 60 s; stderr: ${this.stderr.slice(-800)}`)), 60000);
      this.waiting.set(id, (message) => { clearTimeout(timer); done(message); });
      this.child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    });
  }

  /// Sends a notification.
  notify(method, params) {
    this.child.stdin.write(JSON.stringify(params ? { jsonrpc: "2.0", method, params } : { jsonrpc: "2.0", method }) + "\n");
  }

  /// initialize (2025-11-25, as a host with the ui extension unless told not) and initialized.
  async start(capabilities = UI_CAPABILITY) {
    const answer = await this.request("initialize", {
      protocolVersion: "2025-11-25",
      capabilities,
      clientInfo: { name: "kb-review-test", version: "0" },
    });
    if (!answer.result) throw new Error("initialize failed: " + JSON.stringify(answer.error));
    this.notify("notifications/initialized");
    return answer.result;
  }

  /// tools/call; returns the CallToolResult (a JSON-RPC error is thrown).
  async call(name, args) {
    const answer = await this.request("tools/call", { name, arguments: args });
    if (answer.error) throw new Error(`${name}: JSON-RPC error ${JSON.stringify(answer.error)}`);
    return answer.result;
  }

  /// Ends the server.
  close() {
    this.child.stdin.end();
    this.child.kill();
  }
}

/// The error JSON in an isError result's text.
export function toolError(result) {
  try { return JSON.parse(result.content[0].text).error; } catch (_) { return null; }
}

/// Stages a patch appending `text` to the note `path`; returns the propose result.
export async function proposeAppend(server, path, text, reason = "review test") {
  const read = await server.call("read_note", { path });
  if (read.isError) throw new Error("read_note: " + JSON.stringify(read.content));
  const result = await server.call("propose_note_patch", {
    path, base_hash: read.structuredContent.hash, reason, edits: [{ op: "append", content: text }],
  });
  if (result.isError) throw new Error("propose_note_patch: " + result.content[0].text);
  return result;
}

/// playwright-core from the folder install.sh filled (KB_REVIEW_TOOLS).
export function playwright() {
  const tools = process.env.KB_REVIEW_TOOLS || join(tmpdir(), "kb-mcp-review-tools");
  return createRequire(join(tools, "package.json"))("playwright-core");
}

/// Debian's Chromium, headless, quiet on a machine without network. Playwright gives every
/// launch a fresh temp --user-data-dir of its own.
export async function launchBrowser() {
  const { chromium } = playwright();
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
}

/// Fails the suite on any dialog (an injected alert), console error or page error.
export function watchPage(page, checks, label) {
  const problems = [];
  page.on("dialog", async (dialog) => {
    problems.push(`dialog ${dialog.type()}: ${dialog.message()}`);
    await dialog.dismiss().catch(() => {});
  });
  page.on("console", (message) => {
    if (message.type() === "error") problems.push("console error: " + message.text());
  });
  page.on("pageerror", (error) => problems.push("page error: " + error.message));
  return {
    problems,
    /// One check: nothing went wrong in the page so far.
    report() {
      checks.check(`${label}: no dialog, console error or page error`, problems.length === 0, problems.join(" | "));
    },
  };
}

/// Saves a screenshot in the run's temp folder, and in docs/ when KB_UPDATE_SCREENSHOTS=1.
export async function screenshot(target, name, options = {}) {
  const folder = join(tmpdir(), "kb-review-screenshots");
  mkdirSync(folder, { recursive: true });
  const file = join(folder, name);
  await target.screenshot({ path: file, ...options });
  if (process.env.KB_UPDATE_SCREENSHOTS === "1") copyFileSync(file, join(repo, "docs", name));
  return file;
}

/// The last audit line of a vault's log (inbox/_applied.jsonl), parsed.
export function lastAuditLine(vault) {
  const lines = readFileSync(join(vault, "inbox/_applied.jsonl"), "utf8").trim().split("\n");
  return JSON.parse(lines[lines.length - 1]);
}
