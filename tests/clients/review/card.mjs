// The review card in a real browser, against the real kb-mcp server: Chromium (Debian's) shows
// host.html, a small MCP Apps host of our own, which puts the card (the HTML the server serves
// as ui://kb-mcp/review) in a sandboxed iframe and proxies its tools/call to kb-mcp on stdio.
// Real proposals are staged, then approved and rejected by clicking; the vault, the inbox and
// the audit log are checked on disk. Also: a stale proposal cannot be applied, a note holding
// markup and a javascript: link shows as text (no dialog, no console error), the model is
// refused approve_proposal without the card's key, and the MCP Apps handshake is as the spec
// says. Screenshots: review-card-light.png and review-card-dark.png.
//
//   node tests/clients/review/card.mjs      (run.sh builds the binaries and installs the tools)
// KB_REVIEW_BENCH=N also times the card on a move rewriting N links (N notes linking one note).
import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { spawnSync } from "node:child_process";
import {
  Checks, cleanUp, McpServer, bin, copyVault, here, lastAuditLine, launchBrowser, proposeAppend, repo, screenshot,
  sleep, toolError, watchPage,
} from "./common.mjs";

const checks = new Checks("card");
const check = checks.check.bind(checks);
const HOSTILE = "<script>alert(1)</script> <img src=x onerror=alert(1)> [x](javascript:alert(1))";

/// Every file under `folder` (recursive), as vault-relative-ish paths.
function filesUnder(folder) {
  if (!existsSync(folder)) return [];
  return readdirSync(folder, { recursive: true }).map(String);
}

/// The pending proposal's files still in the inbox (`inbox/<kind>/…<short id>…`).
function stillPending(vault, proposalId) {
  const short = proposalId.replace(/^p_/, "").slice(0, 8);
  return ["patch", "new", "move", "delete", "batch", "revert"]
    .some((kind) => filesUnder(join(vault, "inbox", kind)).some((f) => f.includes(short)));
}

/// Whether a proposal's metadata lies under inbox/<where>/ (applied or rejected).
function archivedIn(vault, where, proposalId) {
  const short = proposalId.replace(/^p_/, "").slice(0, 8);
  return filesUnder(join(vault, "inbox", where)).some((f) => f.includes(short) && f.endsWith(".proposal.json"));
}

/// Shows a card in the host page for one tool result; returns the card's frame locator.
async function mount(page, html, tools, toolName, toolInput, toolResult, theme = "light") {
  const tool = tools.find((t) => t.name === toolName);
  await page.evaluate((options) => window.host.mount(options), { html, theme, tools, tool, toolInput, toolResult });
  return page.frameLocator("#card");
}

/// A new browser page showing the host, with the stdio server behind its tools/call.
async function hostPage(browser, server, label) {
  const page = await browser.newPage({ viewport: { width: 900, height: 1000 } });
  const watch = watchPage(page, checks, label);
  const calls = [];
  await page.exposeFunction("kbCallTool", async (name, args) => {
    const started = Date.now();
    const result = await server.call(name, args);
    calls.push({ name, ms: Date.now() - started });
    return result;
  });
  await page.goto(pathToFileURL(join(here, "host.html")).href);
  return { page, watch, calls };
}

/// The text of every diff table in the card.
async function diffText(card) {
  return (await card.locator("table.diff").allInnerTexts()).join("\n");
}

async function main() {
  const { vault } = copyVault();
  const server = new McpServer(vault, "apply");
  const init = await server.start();
  check("initialize declares the io.modelcontextprotocol/ui extension",
    init.capabilities && init.capabilities.extensions && init.capabilities.extensions["io.modelcontextprotocol/ui"],
    JSON.stringify(init.capabilities));

  const tools = (await server.request("tools/list", {})).result.tools;
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  for (const name of ["review_proposal", "approve_proposal", "reject_proposal"]) {
    const visibility = byName[name] && byName[name]._meta && byName[name]._meta.ui && byName[name]._meta.ui.visibility;
    check(`tools/list has ${name}, visible to the app only`, JSON.stringify(visibility) === '["app"]', JSON.stringify(byName[name] && byName[name]._meta));
  }
  const patchUi = byName.propose_note_patch && byName.propose_note_patch._meta && byName.propose_note_patch._meta.ui;
  check("propose_note_patch names the card (_meta.ui.resourceUri)", patchUi && patchUi.resourceUri === "ui://kb-mcp/review", JSON.stringify(patchUi));

  // A client without the extension sees no card tools.
  const plain = new McpServer(vault, "apply");
  await plain.start({});
  const plainTools = (await plain.request("tools/list", {})).result.tools.map((t) => t.name);
  plain.close();
  check("a client without the ui extension is not listed the card's tools",
    !plainTools.some((n) => ["review_proposal", "approve_proposal", "reject_proposal"].includes(n)), plainTools.join(","));

  const read = await server.request("resources/read", { uri: "ui://kb-mcp/review" });
  const content = read.result && read.result.contents && read.result.contents[0];
  const html = content ? content.text : "";
  check("resources/read ui://kb-mcp/review is text/html;profile=mcp-app", content && content.mimeType === "text/html;profile=mcp-app", JSON.stringify(read.error || content && content.mimeType));
  check("the served card is src/review/view.html (the binary is fresh)", html === readFileSync(join(repo, "src/review/view.html"), "utf8"));
  check("the card is at most 60 KB", Buffer.byteLength(html) <= 60 * 1024, Buffer.byteLength(html));

  // The model may not approve: without the key, or with a wrong one.
  const model = await proposeAppend(server, "z/Restore drills.md", "\nmodel tries to approve\n", "model self-approval");
  const modelId = model.structuredContent.proposal_id;
  const noKey = await server.call("approve_proposal", { proposal_id: modelId });
  check("approve_proposal without review_token is refused (isError)", noKey.isError === true, JSON.stringify(noKey).slice(0, 300));
  const wrongKey = await server.call("approve_proposal", { proposal_id: modelId, review_token: "0".repeat(64) });
  check("approve_proposal with a wrong review_token is refused (permission_denied)",
    wrongKey.isError === true && (toolError(wrongKey) || {}).code === "permission_denied", JSON.stringify(wrongKey).slice(0, 300));
  const rejectNoKey = await server.call("reject_proposal", { proposal_id: modelId, reason: "model", review_token: "nope" });
  check("reject_proposal with a wrong review_token is refused", rejectNoKey.isError === true, JSON.stringify(rejectNoKey).slice(0, 300));
  check("the proposal stays pending after the refused calls", stillPending(vault, modelId));

  const browser = await launchBrowser();

  // A card given no tool result says it waits (checked at the end, after 10 s).
  const waiting = await hostPage(browser, server, "waiting card");
  const waitingCard = await mount(waiting.page, html, tools, "propose_note_patch", { path: "x" }, null);
  const waitingSince = Date.now();

  // 1. Apply.
  const target = "z/备份仓库.md";
  const added = "Restore drill, every quarter: copy the backup to a spare disk, then open three notes from it.";
  const first = await proposeAppend(server, target, `\n## Restore drill\n\n${added}\n`, "Add the quarterly restore drill the person asked for");
  const firstId = first.structuredContent.proposal_id;
  const stagedFile = first.structuredContent.files.find((f) => f.endsWith(".new.md"));
  const staged = readFileSync(join(vault, stagedFile));
  const key = first._meta && first._meta["kb-mcp/review"] && first._meta["kb-mcp/review"].token;
  check("the propose result carries the approval key in _meta[\"kb-mcp/review\"].token", typeof key === "string" && key.length > 0, JSON.stringify(first._meta));
  check("the approval key is not in the model's text or structured content",
    typeof key === "string" && !JSON.stringify(first.content).includes(key) && !JSON.stringify(first.structuredContent).includes(key));

  const { page, watch } = await hostPage(browser, server, "card");
  const card = await mount(page, html, tools, "propose_note_patch", { path: target }, first);
  await card.locator("table.diff").first().waitFor({ timeout: 15000 });
  const log = await page.evaluate(() => window.hostLog);
  const initMsg = log[0] || {};
  check("the view's first message is ui/initialize 2026-01-26 with its appInfo and display modes",
    initMsg.method === "ui/initialize" && initMsg.params.protocolVersion === "2026-01-26"
    && initMsg.params.appInfo.name === "kb-mcp-review" && initMsg.params.appInfo.version === "1"
    && JSON.stringify(initMsg.params.appCapabilities.availableDisplayModes) === '["inline","fullscreen"]', JSON.stringify(initMsg));
  check("the view sends ui/notifications/initialized after the answer", log.findIndex((m) => m.method === "ui/notifications/initialized") > 0);
  check("the view reports its height (ui/notifications/size-changed)", log.some((m) => m.method === "ui/notifications/size-changed" && m.params.height > 100));
  const reviewCall = log.find((m) => m.method === "tools/call" && m.params.name === "review_proposal");
  check("the view calls review_proposal with the proposal id and its key",
    reviewCall && reviewCall.params.arguments.proposal_id === firstId && reviewCall.params.arguments.review_token === key, JSON.stringify(reviewCall));

  const text = await diffText(card);
  check("the diff in the card shows the added line", text.includes(added), text.slice(0, 400));
  check("the checks show as words", (await card.locator(".badges").first().innerText()).includes("note unchanged since proposed"));
  check("the file range reads 'files 1–1 of 1'", (await card.locator("#file-range").innerText()) === "files 1–1 of 1");

  await card.locator("#view-split").click();
  const splitText = await card.locator("table.diff.split").innerText();
  check("side by side shows the added line on the right", splitText.includes(added));
  await card.locator("#view-unified").click();

  check("the light theme is the host's", (await card.locator("html").getAttribute("data-theme")) === "light");
  await page.waitForTimeout(200);
  await screenshot(page.locator("#card"), "review-card-light.png");
  const lightBg = await card.locator("body").evaluate((b) => getComputedStyle(b).backgroundColor);
  await page.evaluate(() => window.host.setTheme("dark"));
  await card.locator("html[data-theme=dark]").waitFor({ timeout: 5000 });
  await page.waitForTimeout(200);
  const darkBg = await card.locator("body").evaluate((b) => getComputedStyle(b).backgroundColor);
  check("host-context-changed {theme: dark} re-themes the card", lightBg !== darkBg, `${lightBg} → ${darkBg}`);
  await screenshot(page.locator("#card"), "review-card-dark.png");
  await page.evaluate(() => window.host.setTheme("light"));

  const ping = await page.evaluate(() => window.host.request("ping", {}));
  check("ping is answered {}", ping.result && Object.keys(ping.result).length === 0, JSON.stringify(ping));
  const unknown = await page.evaluate(() => window.host.request("ui/no-such-method", {}));
  check("an unknown request is answered -32601", unknown.error && unknown.error.code === -32601, JSON.stringify(unknown));

  await card.locator("#apply").click();
  await card.locator("#outcome").waitFor({ timeout: 15000 });
  const outcome = await card.locator("#outcome").innerText();
  check("the card shows the outcome 'Applied.'", outcome.startsWith("Applied."), outcome);
  check("the note's bytes on disk are the staged text", Buffer.compare(readFileSync(join(vault, target)), staged) === 0);
  check("the proposal is archived in inbox/applied/", archivedIn(vault, "applied", firstId) && !stillPending(vault, firstId));
  const audit = lastAuditLine(vault);
  check("the audit line says by: mcp, via: review_card", audit.by === "mcp" && audit.via === "review_card" && audit.proposal_id === firstId, JSON.stringify(audit));
  const teardown = await page.evaluate(() => window.host.request("ui/resource-teardown", {}));
  check("ui/resource-teardown is answered {}", teardown.result && Object.keys(teardown.result).length === 0, JSON.stringify(teardown));

  // Markup and a javascript: link in a note's text and in the reason show as text.
  const hostile = await proposeAppend(server, "z/Zettelkasten in practice.md", `\nHostile line ${HOSTILE}\n`, `hostile reason ${HOSTILE}`);
  const cardH = await mount(page, html, tools, "propose_note_patch", {}, hostile);
  await cardH.locator("table.diff").first().waitFor({ timeout: 15000 });
  check("markup in the note shows as text in the diff", (await diffText(cardH)).includes(`Hostile line ${HOSTILE}`));
  check("markup in the reason shows as text", (await cardH.locator("#r-head").innerText()).includes(`hostile reason ${HOSTILE}`));
  await cardH.locator("#view-split").click();
  check("… and in the side-by-side diff", (await cardH.locator("table.diff.split").innerText()).includes(`Hostile line ${HOSTILE}`));
  check("no element came from the markup (no img, no second script, no link)",
    (await cardH.locator("img").count()) === 0 && (await cardH.locator("script").count()) === 1 && (await cardH.locator("a").count()) === 0);

  // 2. Reject with a reason.
  const second = await proposeAppend(server, "z/永久笔记.md", "\nto be rejected\n", "card reject test");
  const secondId = second.structuredContent.proposal_id;
  const card2 = await mount(page, html, tools, "propose_note_patch", {}, second);
  await card2.locator("table.diff").first().waitFor({ timeout: 15000 });
  await card2.locator("#reject").click();
  check("Reject asks for a reason: its confirm button is off while the reason is empty", await card2.locator("#reject-confirm").isDisabled());
  await card2.locator("#reject-reason").fill("   ");
  check("a reason of spaces does not count", await card2.locator("#reject-confirm").isDisabled());
  await card2.locator("#reject-reason").fill("not what I asked for");
  await card2.locator("#reject-confirm").click();
  await card2.locator("#outcome").waitFor({ timeout: 15000 });
  check("the card shows 'Rejected.'", (await card2.locator("#outcome").innerText()).startsWith("Rejected."));
  check("the proposal is in inbox/rejected/", archivedIn(vault, "rejected", secondId) && !stillPending(vault, secondId));

  // 3. Stale: the note changes on disk after the proposal.
  const staleNote = "z/文献笔记.md";
  const third = await proposeAppend(server, staleNote, "\nstale test\n", "card stale test");
  const card3 = await mount(page, html, tools, "propose_note_patch", {}, third);
  await card3.locator("table.diff").first().waitFor({ timeout: 15000 });
  check("a fresh proposal's Apply is enabled", await card3.locator("#apply").isEnabled());
  appendFileSync(join(vault, staleNote), "\nedited by hand after the proposal\n");
  await card3.locator("#check").click();
  await card3.locator("#why", { hasText: "changed" }).waitFor({ timeout: 15000 });
  check("after the note changed on disk, Check again disables Apply", await card3.locator("#apply").isDisabled());
  const why = await card3.locator("#why").innerText();
  check("the words say the note changed", why.includes("the note changed since this was proposed"), why);
  check("the stale check shows as a failing badge", (await card3.locator(".badge.bad").allInnerTexts()).join().includes("the note changed since this was proposed"));

  // 4. A host that does not pass the key: the buttons stay off and say why.
  const fourth = await proposeAppend(server, "z/卡片笔记法.md", "\nno key\n", "card no key test");
  const stripped = { ...fourth, _meta: undefined };
  const card4 = await mount(page, html, tools, "propose_note_patch", {}, stripped);
  await card4.locator("#why").waitFor({ timeout: 15000 });
  const noKeyWhy = await card4.locator("#why").innerText();
  check("without the key Apply and Reject are disabled", (await card4.locator("#apply").isDisabled()) && (await card4.locator("#reject").isDisabled()));
  check("without the key the words name kb-index review", noKeyWhy.includes("did not pass the card its approval key") && noKeyWhy.includes("kb-index review"), noKeyWhy);

  // 5. A tool error shows its message and hint.
  const failed = await server.call("propose_note_patch", { path: "z/卡片笔记法.md", base_hash: "sha256:" + "0".repeat(64), reason: "x", edits: [{ op: "append", content: "x" }] });
  const card5 = await mount(page, html, tools, "propose_note_patch", {}, failed);
  await card5.locator(".notice.error").waitFor({ timeout: 15000 });
  const errText = await card5.locator(".notice.error").innerText();
  check("an isError result shows the error's message", failed.isError && errText.includes(toolError(failed).message), errText);

  // 6. list_proposals: the list, each opening its review.
  const listed = await server.call("list_proposals", { status: "pending" });
  const card6 = await mount(page, html, tools, "list_proposals", {}, listed);
  await card6.locator(".item").first().waitFor({ timeout: 15000 });
  const pendingCount = listed.structuredContent.proposals.length;
  check("list_proposals shows every pending proposal", (await card6.locator(".item").count()) === pendingCount, `${await card6.locator(".item").count()} vs ${pendingCount}`);
  await card6.locator(".item").first().click();
  await card6.locator("#r-head h1").waitFor({ timeout: 15000 });
  check("an entry opens its review", (await card6.locator("#r-head h1").innerText()) === listed.structuredContent.proposals[0].summary);

  // 7. A new note: the whole note as added lines. A delete: the links it breaks.
  const created = await server.call("propose_new_note", { title: "Card test note", body: "A new note for the card.\n", reason: "card new-note test" });
  const card7 = await mount(page, html, tools, "propose_new_note", {}, created);
  await card7.locator("table.diff").first().waitFor({ timeout: 15000 });
  const newSummary = await card7.locator("details.file > summary").first().innerText();
  check("a new note shows as 'new note' with its path", newSummary.includes("new note") && newSummary.includes(created.structuredContent.target), newSummary);
  const newRows = await card7.locator("table.diff tr.add").count();
  check("a new note's every line is an added line", newRows > 0 && (await card7.locator("table.diff tr.del").count()) === 0 && (await diffText(card7)).includes("A new note for the card."));
  const deleted = await server.call("propose_delete", { path: "z/3-2-1 备份原则.md", reason: "card delete test" });
  const card8 = await mount(page, html, tools, "propose_delete", {}, deleted);
  await card8.locator("details.file").first().waitFor({ timeout: 15000 });
  check("a delete shows as 'deleted'", (await card8.locator("details.file > summary").first().innerText()).includes("deleted"));
  const breaks = deleted.structuredContent.breaks || [];
  const head8 = await card8.locator("#r-head").innerText();
  check("a delete lists the links it breaks (review_proposal's breaks)", breaks.length === 0 || head8.includes(`Links that will break (${breaks.length})`),
    `propose_delete found ${breaks.length} breaks; the card shows: ${head8.replace(/\s+/g, " ").slice(0, 200)}`);

  // The waiting card, now that 10 s have passed.
  await sleep(Math.max(0, 10500 - (Date.now() - waitingSince)));
  check("a card with no tool result says 'Waiting for the proposal…' after 10 s",
    (await waitingCard.locator("#status").innerText()) === "Waiting for the proposal…");

  watch.report();
  waiting.watch.report();
  server.close();

  if (process.env.KB_REVIEW_BENCH) await bench(browser, Number(process.env.KB_REVIEW_BENCH) || 10000, html);
  await browser.close();
}

/// Times the card on a move rewriting `links` links: staging, review_proposal, first render.
async function bench(browser, links, html) {
  const { vault } = copyVault();
  mkdirSync(join(vault, "z/bench"), { recursive: true });
  writeFileSync(join(vault, "z/bench/Hub.md"), "# Hub\n\nThe note everyone links.\n");
  for (let i = 0; i < links; i++) writeFileSync(join(vault, `z/bench/n${i}.md`), `# n${i}\n\nSee [[Hub]] for more.\n`);
  spawnSync(bin("kb-index"), ["build", "--vault", vault], { stdio: "ignore" });
  const server = new McpServer(vault, "apply");
  await server.start();
  const tools = (await server.request("tools/list", {})).result.tools;
  let started = Date.now();
  const moved = await server.call("propose_move", { from: "z/bench/Hub.md", to: "z/bench/Hub moved.md", reason: "bench" });
  const stageMs = Date.now() - started;
  if (moved.isError) {
    check(`bench: propose_move of a note linked ${links} times`, false, moved.content[0].text);
    return;
  }
  started = Date.now();
  await server.call("review_proposal", { proposal_id: moved.structuredContent.proposal_id, file_limit: 20 });
  const reviewMs = Date.now() - started;
  const { page, watch, calls } = await hostPage(browser, server, "bench card");
  started = Date.now();
  const card = await mount(page, html, tools, "propose_move", {}, moved);
  await card.locator("table.diff").first().waitFor({ timeout: 120000 });
  await card.locator("#file-range").waitFor();
  const renderMs = Date.now() - started;
  const firstCallMs = calls[0] ? calls[0].ms : 0;
  const range = await card.locator("#file-range").innerText();
  started = Date.now();
  await card.locator("#files-next").click();
  await card.locator("#file-range", { hasText: "files 21–" }).waitFor({ timeout: 120000 });
  const nextMs = Date.now() - started;
  const nextCallMs = calls[1] ? calls[1].ms : 0;
  console.log(`bench: move rewriting ${links} links: propose_move ${stageMs} ms, review_proposal ${reviewMs} ms; ` +
    `card first render ${renderMs} ms (${range}; of which the card's review_proposal call ${firstCallMs} ms, ` +
    `the rest ${renderMs - firstCallMs} ms), next page ${nextMs} ms (call ${nextCallMs} ms)`);
  check(`bench: the card renders a ${links}-link move within 10 s`, renderMs < 10000, `${renderMs} ms`);
  watch.report();
  server.close();
}

main().then(
  () => {
    cleanUp(checks);
    console.log(`card: ${checks.passed} passed, ${checks.failed} failed`);
    process.exit(checks.failed ? 1 : 0);
  },
  (error) => {
    console.log(`FAIL card: ${error && error.stack || error}`);
    process.exit(1);
  },
);
