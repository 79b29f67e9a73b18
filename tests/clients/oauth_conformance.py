#!/usr/bin/env python3
"""The official MCP conformance suite's authorization-server scenarios against kb-mcp.

Suite 0.2.0-alpha.12 has two scenarios for authorization servers (`conformance authorization`;
0.1.16 has none): `authorization-server-metadata-endpoint` (RFC 8414 metadata, and
client_id_metadata_document_supported) and `authorization-code-grant` (a whole code flow with
PKCE, as a public client, through a callback server of its own). The second one prints an
authorization URL for a person to open; here that person is this script: it opens the consent
page, answers it with the owner's passphrase (with the page's CSRF field and cookie, as a browser
would), and follows the redirect to the suite's callback.

    python3 oauth_conformance.py --binary target/debug/kb-mcp --vault fixtures/vault \
        --node node --suite node_modules/conformance-next/dist/index.js --work /tmp/dir

Prints one line per scenario ("ok   …" or "FAIL …"; a WARNING is a SHOULD the suite reports, not
a failure) and exits 1 if any failed. Standard library only.
"""

import argparse
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse

PASSPHRASE = "conformance passphrase, not a secret"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(method, url, headers=None, body=None):
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    connection.request(method, path, body=body, headers=headers or {})
    response = connection.getresponse()
    answer = (response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode())
    connection.close()
    return answer


def consent(base, url, log):
    """Answers the consent page at `url` as its owner, and follows the redirect to the callback."""
    status, headers, page = request("GET", url)
    if status != 200:
        log.write(f"consent page: {status} {page[:300]}\n")
        return
    field = lambda name: re.search(rf'name="{name}" value="([^"]*)"', page).group(1)
    cookie = headers["set-cookie"].split(";")[0]
    form = urllib.parse.urlencode({"attempt": field("attempt"), "csrf": field("csrf"), "scope": "read",
                                   "passphrase": PASSPHRASE, "decision": "allow"})
    status, headers, page = request("POST", f"{base}/oauth/authorize", body=form, headers={
        "Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie, "Origin": base})
    log.write(f"consent answer: {status} {headers.get('location')}\n")
    if "location" in headers:
        request("GET", headers["location"])


def main():
    parser = argparse.ArgumentParser()
    for name in ("--binary", "--vault", "--node", "--suite", "--work"):
        parser.add_argument(name, required=True)
    args = parser.parse_args()
    work = args.work
    os.makedirs(work, exist_ok=True)
    vault = os.path.join(work, "vault-oauth")
    shutil.copytree(args.vault, vault)
    tokens = os.path.join(work, "tokens-oauth.json")
    # kb-mcp --http needs a token file; the suite uses OAuth only.
    subprocess.run([args.binary, "token", "add", "unused", "--scope", "read", "--tokens", tokens], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([args.binary, "owner", "set", "--tokens", tokens], input=PASSPHRASE + "\n", text=True,
                   check=True, stdout=subprocess.DEVNULL)
    port, callback = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    server_log = open(os.path.join(work, "server-oauth.log"), "w")
    server = subprocess.Popen([args.binary, "--vault", vault, "--http", f"127.0.0.1:{port}", "--tokens", tokens],
                              stdout=subprocess.DEVNULL, stderr=server_log)
    log = open(os.path.join(work, "authorization.log"), "w")
    failed = 0
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        metadata = json.dumps({"client_name": "MCP conformance suite",
                               "redirect_uris": [f"http://127.0.0.1:{callback}/callback"]})
        status, _, body = request("POST", f"{base}/oauth/register", body=metadata,
                                  headers={"Content-Type": "application/json"})
        assert status == 201, body
        client_id = json.loads(body)["client_id"]
        results = os.path.join(work, "results", "authorization")
        suite = subprocess.Popen(
            [args.node, args.suite, "authorization", "--url", base, "--client-id", client_id,
             "--resource", f"{base}/mcp", "-p", str(callback), "-o", results],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in suite.stdout:
            log.write(line)
            if line.startswith(f"{base}/oauth/authorize?"):
                threading.Thread(target=consent, args=(base, line.strip(), log), daemon=True).start()
        suite.wait(timeout=600)
        ran = 0
        for entry in sorted(os.listdir(results)) if os.path.isdir(results) else []:
            name = re.sub(r"^authorization-server-|-\d{4}-\d{2}-\d{2}T[\dT-]+Z$", "", entry, count=2)
            checks = json.load(open(os.path.join(results, entry, "checks.json")))
            failures = [c for c in checks if c["status"] == "FAILURE"]
            warnings = [c["id"] for c in checks if c["status"] == "WARNING"]
            ran += 1
            if failures:
                failed += 1
                print(f"FAIL conformance authorization {name}: {failures[0]['id']}: "
                      f"{(failures[0].get('errorMessage') or '')[:200]} (see {work}/authorization.log)")
            else:
                note = f" (warnings: {', '.join(warnings)})" if warnings else ""
                print(f"ok   conformance authorization {name}{note}")
        if ran < 2:
            failed += 1
            print(f"FAIL conformance authorization: {ran} of 2 scenarios left results (see {work}/authorization.log)")
    finally:
        server.terminate()
        server.wait(timeout=30)
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
