// The review page in a real browser, against the real `kb-index review`: it opens the one-time
// link the command prints, lists the pending proposals, opens one, applies it and rejects
// another by clicking (checked on disk), sees a proposal staged meanwhile appear without a
// reload, and says so when the open one is decided elsewhere. The server's defences are
// checked from outside the browser: a POST without the page's token, one from another
// origin, and the one-time link opened again in a fresh browser are all refused.
// Screenshot: review-page.png.
//
//   node tests/clients/review/page.mjs      (run.sh builds the binaries and installs the tools)
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import http from "node:http";
import { join } from "node:path";
import readline from "node:readline";
import {
  Checks, cleanUp, McpServer, bin, copyVault, lastAuditLine, launchBrowser, proposeAppend, screenshot, watchPage,
} from "./common.mjs";

const checks = new Checks("page");
const check = checks.check.bind(checks);

/// Whether a proposal's metadata lies under inbox/<where>/.
function archivedIn(vault, where, proposalId) {
  const short = proposalId.replace(/^p_/, "").slice(0, 8);
  const folder = join(vault, "inbox", where);
  return existsSync(folder) && readdirSync(folder, { recursive: true }).map(String)
    .some((f) => f.includes(short) && f.endsWith(".proposal.json"));
}

/// Starts `kb-index review --port 0`; resolves with the process and the URL it prints.
function startReview(vault) {
  const child = spawn(bin("kb-index"), ["review", "--vault", vault, "--port", "0"], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk) => { stderr += chunk; });
  return new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error("kb-index review printed no URL in 60 s: " + stderr)), 60000);
    readline.createInterface({ input: child.stdout }).on("line", (line) => {
      const match = /^Review page: (http:\/\/127\.0\.0\.1:(\d+)\/#secret=([0-9a-f]+))$/.exec(line.trim());
      if (match) {
        clearTimeout(timer);
        done({ child, url: match[1], port: Number(match[2]), secret: match[3] });
      }
    });
    child.on("exit", (code) => fail(new Error(`kb-index review exited ${code}: ${stderr}`)));
  });
}

/// One raw HTTP request (headers exactly as given); resolves {status, body}.
function request(port, method, path, headers = {}, body = undefined) {
  return new Promise((done, fail) => {
    const req = http.request({ host: "127.0.0.1", port, method, path, headers }, (res) => {
      let text = "";
      res.on("data", (chunk) => { text += chunk; });
      res.on("end", () => done({ status: res.statusCode, body: text }));
    });
    req.on("error", fail);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

async function main() {
  const { vault } = copyVault();
  const mcp = new McpServer(vault, "propose");
  await mcp.start();
  const applyNote = "z/备份仓库.md";
  const applyLine = "Review page test line <b>bold?</b>";
  const first = await proposeAppend(mcp, applyNote, `\n${applyLine}\n`, "page apply test");
  const firstId = first.structuredContent.proposal_id;
  const staged = readFileSync(join(vault, first.structuredContent.files.find((f) => f.endsWith(".new.md"))));
  const second = await proposeAppend(mcp, "z/永久笔记.md", "\npage reject test\n", "page reject test");
  const secondId = second.structuredContent.proposal_id;
  const moveFrom = "z/tech/git/冲突处理.md";
  const moveTo = "z/tech/git/合并冲突.md";
  const move = await mcp.call("propose_move", { from: moveFrom, to: moveTo, reason: "a clearer name for the note" });
  if (move.isError) throw new Error("propose_move: " + move.content[0].text);

  const review = await startReview(vault);
  const origin = `http://127.0.0.1:${review.port}`;
  const browser = await launchBrowser();
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const watch = watchPage(page, checks, "page");
    await page.goto(review.url);
    await page.locator(".item").nth(2).waitFor({ timeout: 15000 });
    check("the list shows the three pending proposals", (await page.locator(".item").count()) === 3);
    check("the secret is dropped from the address bar", !page.url().includes("secret"), page.url());

    // The move: a rename, and its link rewrites as the other files' diffs.
    await page.locator(".item", { hasText: moveTo }).first().click();
    await page.locator("table.diff").first().waitFor({ timeout: 15000 });
    const files = await page.locator("details.file > summary").allInnerTexts();
    check("the move shows as a rename 'from → to'", files.some((f) => f.includes(`${moveFrom} → ${moveTo}`)), files.join(" | "));
    check("the move's link rewrites are the other files' diffs", files.length === 3
      && (await page.locator("table.diff").allInnerTexts()).join("\n").includes("[[合并冲突]]"), files.join(" | "));
    check("the file range reads 'files 1–3 of 3'", (await page.locator("#file-range").innerText()) === "files 1–3 of 3");
    await page.waitForTimeout(200);
    await screenshot(page, "review-page.png");

    // Open the first, look at its diff, apply it.
    await page.locator(".item", { hasText: first.structuredContent.target }).first().click();
    await page.locator("table.diff").first().waitFor({ timeout: 15000 });
    const diff = (await page.locator("table.diff").allInnerTexts()).join("\n");
    check("the open proposal's diff shows the added line, markup as text", diff.includes(applyLine), diff.slice(0, 300));
    check("the open proposal is marked in the list", (await page.locator('.item[aria-current="true"]').count()) === 1);
    await page.locator("#apply").click();
    await page.locator("#outcome").waitFor({ timeout: 15000 });
    check("the page shows 'Applied.'", (await page.locator("#outcome").innerText()).startsWith("Applied."));
    check("the note's bytes on disk are the staged text", Buffer.compare(readFileSync(join(vault, applyNote)), staged) === 0);
    check("the proposal is archived in inbox/applied/", archivedIn(vault, "applied", firstId));
    const audit = lastAuditLine(vault);
    check("the audit line says by: cli, via: review_page", audit.by === "cli" && audit.via === "review_page" && audit.proposal_id === firstId, JSON.stringify(audit));
    await page.waitForFunction(() => document.querySelectorAll(".item").length === 2, null, { timeout: 5000 }).catch(() => {});
    check("the applied proposal leaves the list", (await page.locator(".item").count()) === 2);
    check("the outcome stays (not 'no longer pending')", !(await page.locator("#r-head").innerText()).includes("no longer pending"));

    // Reject the second with a reason.
    await page.locator(".item", { hasText: second.structuredContent.target }).first().click();
    await page.locator("table.diff").first().waitFor({ timeout: 15000 });
    await page.locator("#reject").click();
    check("the reject button is off until a reason is typed", await page.locator("#reject-confirm").isDisabled());
    await page.locator("#reject-reason").fill("duplicate of another note");
    await page.locator("#reject-confirm").click();
    await page.locator("#outcome").waitFor({ timeout: 15000 });
    check("the page shows 'Rejected.'", (await page.locator("#outcome").innerText()).startsWith("Rejected."));
    check("the proposal is in inbox/rejected/", archivedIn(vault, "rejected", secondId));

    // A proposal staged from outside appears without a reload.
    const stagedAt = Date.now();
    const third = await proposeAppend(mcp, "z/文献笔记.md", "\nstaged while the page is open\n", "page live test");
    const thirdId = third.structuredContent.proposal_id;
    let appeared = true;
    await page.locator(".item", { hasText: "z/文献笔记.md" }).waitFor({ timeout: 5000 }).catch(() => { appeared = false; });
    check("a proposal staged meanwhile appears within 5 s, without reload", appeared, `${Date.now() - stagedAt} ms`);
    console.log(`page: the new proposal appeared after ${Date.now() - stagedAt} ms`);

    // The open proposal decided elsewhere: the page says so.
    await page.locator(".item", { hasText: "z/文献笔记.md" }).click();
    await page.locator("table.diff").first().waitFor({ timeout: 15000 });
    const cli = spawnSync(bin("kb-index"), ["inbox", "reject", thirdId, "--reason", "decided elsewhere", "--vault", vault], { encoding: "utf8" });
    check("kb-index inbox reject works beside the page", cli.status === 0, cli.stderr);
    let gone = true;
    await page.locator("#r-head", { hasText: "no longer pending" }).waitFor({ timeout: 5000 }).catch(() => { gone = false; });
    check("the open proposal decided elsewhere shows 'no longer pending'", gone);
    check("… and its Apply is disabled", await page.locator("#apply").isDisabled());

    // The server's defences, from outside the browser.
    const fourth = await proposeAppend(mcp, "z/卡片笔记法.md", "\nforgery target\n", "page forgery test");
    const fourthId = fourth.structuredContent.proposal_id;
    const noteBefore = readFileSync(join(vault, "z/卡片笔记法.md"));
    const cookie = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join("; ");
    check("the session is a cookie", cookie.includes("="), cookie);
    const applyPath = `/api/proposals/${fourthId}/apply`;
    const json = { "Content-Type": "application/json" };
    const forged = await request(review.port, "POST", applyPath, { ...json, Cookie: cookie, Origin: origin }, "{}");
    check("a POST with the cookie but without X-KB-Token is refused 403", forged.status === 403, `${forged.status} ${forged.body}`);
    const token = JSON.parse((await request(review.port, "POST", "/api/session", { ...json, Cookie: cookie, Origin: origin }, "{}")).body).token;
    check("the session cookie gets the page a token", typeof token === "string" && token.length > 0);
    const evil = await request(review.port, "POST", applyPath, { ...json, Cookie: cookie, Origin: "http://evil.example", "X-KB-Token": token }, "{}");
    check("a POST from Origin http://evil.example is refused 403 (even with cookie and token)", evil.status === 403, `${evil.status} ${evil.body}`);
    const noOrigin = await request(review.port, "POST", applyPath, { ...json, Cookie: cookie, "X-KB-Token": token }, "{}");
    check("a POST without Origin is refused 403", noOrigin.status === 403, `${noOrigin.status} ${noOrigin.body}`);
    const noCookie = await request(review.port, "POST", applyPath, { ...json, Origin: origin, "X-KB-Token": token }, "{}");
    check("a POST without the session cookie is refused", noCookie.status === 401 || noCookie.status === 403, `${noCookie.status}`);
    const rebound = await request(review.port, "GET", "/api/proposals", { Host: "attacker.example:" + review.port, Cookie: cookie });
    check("a request naming another Host is refused 403", rebound.status === 403, `${rebound.status}`);
    const readNoCookie = await request(review.port, "GET", "/api/proposals", {});
    check("reading the list without the session cookie is refused", readNoCookie.status === 401 || readNoCookie.status === 403, `${readNoCookie.status}`);
    check("after the refused requests the note is unchanged and the proposal pending",
      Buffer.compare(readFileSync(join(vault, "z/卡片笔记法.md")), noteBefore) === 0
      && !archivedIn(vault, "applied", fourthId) && !archivedIn(vault, "rejected", fourthId));

    // The one-time link again, in a fresh browser context.
    const fresh = await browser.newContext();
    const again = await fresh.newPage();
    const watchAgain = watchPage(again, checks, "reused link");
    await again.goto(review.url);
    let refused = true;
    await again.locator("#list", { hasText: "already used or has expired" }).waitFor({ timeout: 10000 }).catch(() => { refused = false; });
    check("the link opened again in a fresh browser is refused, and says so", refused);
    check("… and shows no proposal", (await again.locator(".item").count()) === 0);
    // The refused session is a 401 the browser logs as a failed resource: expected here.
    watchAgain.problems.splice(0, watchAgain.problems.length, ...watchAgain.problems.filter((p) => !/401|Unauthorized/.test(p)));
    watchAgain.report();
    watch.report();
  } finally {
    await browser.close();
    review.child.kill();
    mcp.close();
  }
}

main().then(
  () => {
    cleanUp(checks);
    console.log(`page: ${checks.passed} passed, ${checks.failed} failed`);
    process.exit(checks.failed ? 1 : 0);
  },
  (error) => {
    console.log(`FAIL page: ${error && error.stack || error}`);
    process.exit(1);
  },
);
