// The OAuth consent page in a real browser, against the real `kb-mcp --http`: a client
// registers and sends the browser to the consent page, which names the client, the vault
// and the access asked for and offers no more than that; a wrong passphrase is refused on
// the page; the right one with a lower level chosen sends the browser back to the client's
// redirect URI with a code, which the client exchanges (PKCE) for a token that opens an MCP
// session. A page of another origin submitting the consent form (with the browser's own
// cookie, as a cross-origin attack would) is refused and yields no code. Screenshot:
// oauth-consent.png.
//
//   node tests/clients/review/consent.mjs   (run.sh builds the binaries and installs the tools)
import { spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import http from "node:http";
import { join } from "node:path";
import readline from "node:readline";
import { Checks, bin, cleanUp, copyVault, launchBrowser, screenshot, watchPage } from "./common.mjs";

const checks = new Checks("consent");
const check = checks.check.bind(checks);
const PASSPHRASE = "correct horse battery staple";

/// Starts `kb-mcp --http 127.0.0.1:0` with an owner passphrase; resolves with the process and base URL.
function startServer(temp, vault) {
  const tokens = join(temp, "tokens.json");
  const add = spawnSync(bin("kb-mcp"), ["token", "add", "laptop", "--scope", "read", "--tokens", tokens]);
  if (add.status !== 0) throw new Error("token add: " + add.stderr);
  const owner = spawnSync(bin("kb-mcp"), ["owner", "set", "--tokens", tokens], { input: PASSPHRASE + "\n" });
  if (owner.status !== 0) throw new Error("owner set: " + owner.stderr);
  const child = spawn(bin("kb-mcp"), ["--http", "127.0.0.1:0", "--tokens", tokens, "--vault", vault],
    { stdio: ["ignore", "ignore", "pipe"] });
  return new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error("kb-mcp --http did not listen in 60 s")), 60000);
    readline.createInterface({ input: child.stderr }).on("line", (line) => {
      try {
        const event = JSON.parse(line);
        if (event.event === "listening") {
          clearTimeout(timer);
          done({ child, base: `http://${event.addr}` });
        }
      } catch {}
    });
    child.on("exit", (code) => fail(new Error(`kb-mcp exited ${code}`)));
  });
}

/// The client's side: a redirect URI that records what it receives, and a page of its own
/// origin that submits a form to kb-mcp (the cross-origin attack).
function startClient() {
  const received = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://127.0.0.1");
    if (url.pathname === "/callback") {
      received.push(Object.fromEntries(url.searchParams));
      res.writeHead(200, { "content-type": "text/html" }).end('<link rel="icon" href="data:,"><p>back at the client</p>');
    } else if (url.pathname === "/forge") {
      const target = url.searchParams.get("target");
      const fields = ["attempt", "csrf"].map((name) =>
        `<input type="hidden" name="${name}" value="${url.searchParams.get(name)}">`).join("");
      res.writeHead(200, { "content-type": "text/html" }).end(
        `<form id="f" method="post" action="${target}">${fields}<input type="hidden" name="scope" value="read">` +
        `<input type="hidden" name="passphrase" value="${PASSPHRASE}"><input type="hidden" name="decision" value="allow">` +
        `</form><script>document.getElementById("f").submit()</script>`);
    } else {
      res.writeHead(404).end();
    }
  });
  return new Promise((done) => server.listen(0, "127.0.0.1", () => done({ server, received, port: server.address().port })));
}

const { temp, vault } = copyVault();
const { child, base } = await startServer(temp, vault);
const client = await startClient();
const redirectUri = `http://127.0.0.1:${client.port}/callback`;
const browser = await launchBrowser();
try {
  const registered = await (await fetch(`${base}/oauth/register`, {
    method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ client_name: "Browser Test Client", redirect_uris: [redirectUri] }),
  })).json();
  const verifier = randomBytes(32).toString("base64url");
  const challenge = createHash("sha256").update(verifier).digest("base64url");
  const authorize = () => `${base}/oauth/authorize?` + new URLSearchParams({
    response_type: "code", client_id: registered.client_id, redirect_uri: redirectUri, code_challenge: challenge,
    code_challenge_method: "S256", state: "s1", scope: "read propose", resource: `${base}/mcp`,
  });

  const context = await browser.newContext({ viewport: { width: 900, height: 900 } });
  const page = await context.newPage();
  const watcher = watchPage(page, checks, "consent page");
  await checks.step("the consent page, a wrong passphrase, then a grant of less than asked", async () => {
    await page.goto(authorize());
    const text = await page.locator("main").innerText();
    check("the page names the client", text.includes("Browser Test Client"), text);
    check("the page names the vault", text.includes("vault"), text);
    check("the page names the access asked for", /asks to .*stage proposed changes/.test(text), text);
    const levels = await page.locator("input[name=scope]").evaluateAll((inputs) => inputs.map((i) => i.value));
    check("it offers read and propose, never apply", JSON.stringify(levels) === '["read","propose"]', levels);
    await screenshot(page, "oauth-consent.png", { fullPage: true });
    await page.fill("input[name=passphrase]", "not the passphrase");
    await page.click("button[value=allow]");
    const refused = await page.locator("main").innerText();
    check("a wrong passphrase is refused on the page", refused.includes("Wrong passphrase"), refused);
    check("no code reached the client", client.received.length === 0, JSON.stringify(client.received));
    await page.check("input[name=scope][value=read]");
    await page.fill("input[name=passphrase]", PASSPHRASE);
    await Promise.all([page.waitForURL(/\/callback/), page.click("button[value=allow]")]);
    const back = client.received[0] || {};
    check("the browser returns to the client with a code, its state and the issuer",
      back.code && back.state === "s1" && back.iss === base, JSON.stringify(back));
    const tokens = await (await fetch(`${base}/oauth/token`, {
      method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "authorization_code", code: back.code, client_id: registered.client_id,
        redirect_uri: redirectUri, code_verifier: verifier }),
    })).json();
    check("the code buys a token of the level chosen", tokens.scope === "read" && tokens.access_token, JSON.stringify(tokens));
    const session = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${tokens.access_token}`, "content-type": "application/json",
        accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "browser-test", version: "0" } } }),
    });
    check("the token opens an MCP session", session.status === 200, session.status);
  });
  // The wrong passphrase's page is a 403 on purpose; Chromium logs every 4xx page as an error.
  const expected = watcher.problems.findIndex((p) => p.includes("status of 403"));
  if (expected >= 0) watcher.problems.splice(expected, 1);
  watcher.report();

  await checks.step("a form submitted from another origin is refused", async () => {
    const fresh = await context.newPage();
    await fresh.goto(authorize());
    const attempt = await fresh.locator("input[name=attempt]").inputValue();
    const csrf = await fresh.locator("input[name=csrf]").inputValue();
    const before = client.received.length;
    const forge = `http://127.0.0.1:${client.port}/forge?` +
      new URLSearchParams({ target: `${base}/oauth/authorize`, attempt, csrf });
    await fresh.goto(forge);
    await fresh.waitForLoadState("load");
    const text = await fresh.locator("body").innerText();
    check("the forged answer gets a refusal page", text.includes("did not come from"), text);
    check("and no code", client.received.length === before, JSON.stringify(client.received));
  });
} finally {
  await browser.close();
  client.server.close();
  child.kill();
}
cleanUp(checks);
console.log(`consent: ${checks.passed} passed, ${checks.failed} failed`);
process.exit(checks.failed ? 1 : 0);
