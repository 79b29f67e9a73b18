#!/usr/bin/env python3
"""Checks kb-mcp with a client nobody on this project wrote: the official MCP Python SDK.

Starts the server binary over stdio on a copy of the fixture vault, once with the
initialize handshake (mode "legacy") and once with server/discover (mode "auto",
which negotiates 2026-07-28 with kb-mcp), lists the tools and calls every read
tool, reads a resource and gets a prompt; then, at access `propose`, stages a patch
renaming a heading other notes link to and checks the answer lists those links
as `breaks`. In both modes it also loads the skills (issue 33): a client declaring
the skills extension (`advertise`) sees it in the server's capabilities and the
skill files in resources/list, and every file read back has the digest and size
`skills/list` gives (the SDK has no skills/list call of its own: the request is
sent through its generic `send_request`); a client that does not declare it sees
neither. In both modes, at access `apply`, a client that can ask the person has a
decline refused and an accept applied (an elicitation request on the handshake, an
input_required round trip on 2026-07-28). Over HTTP (issue 40), a reader's calls
made through the SDK's Streamable HTTP client are read back from `GET /metrics`
with a token of scope `metrics`, parsed by the Prometheus client library's own
parser (the exposition format as Prometheus reads it). Over HTTP too (issue 41), the
SDK's own OAuth client (`OAuthClientProvider`) finds the metadata from the 401,
registers, is sent to the consent page (answered as a browser would: the page's
form, its cookie, the owner passphrase, granting `read` of the three scopes asked
for), exchanges the code with PKCE and calls tools with the token, seeing only the
read tools. Once more (`[oauth cimd]`) the client identifies itself by a Client ID Metadata
Document (`client_metadata_url`) instead of registering: the document is served over HTTPS by
this script on 127.0.0.1 with a CA made with `cryptography`, which kb-mcp trusts through the tests-only
`--testing-cimd-trust`. In both modes, two vaults behind one server (issue 39): every tool takes
`vault`, `list_vaults` lists them, a search of both names each hit's vault, and an unknown
name is refused, every answer checked by the SDK against its output schema. Prints one line per check
and a final "N passed, N failed" line; exits 1 if anything failed.

    python3 tests/clients/python_sdk_check.py --binary target/debug/kb-mcp --vault fixtures/vault
"""

import argparse
import asyncio
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from typing import Any, Literal

from mcp import Client, types
from mcp.client import advertise
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from prometheus_client.parser import text_string_to_metric_families
from pydantic import TypeAdapter

SKILLS = "io.modelcontextprotocol/skills"
SKILL_URIS = ["skill://kb-mcp/SKILL.md", "skill://vault-conventions/SKILL.md"]


class GetSkillParams(types.RequestParams):
    uri: str


class GetSkillRequest(types.Request[GetSkillParams, Literal["skills/get"]]):
    """`skills/get` (SEP-2640), which the SDK does not model: sent with `send_request`."""

    method: Literal["skills/get"] = "skills/get"
    params: GetSkillParams

READ_CALLS = [
    ("get_vault_overview", {}),
    ("search_knowledge", {"query": "Zettelkasten"}),
    ("search_note_content", {"query": "远程仓库", "limit": 3}),
    ("read_note", {"ref": "备份仓库"}),
    ("list_standards", {}),
    ("list_tags", {"limit": 5}),
    ("get_related_notes", {"path": "z/备份仓库.md"}),
    ("list_recent_notes", {"days": 3650}),
    ("recall_context", {"topic": "同步不等于备份", "budget_tokens": 600}),
    ("list_notes", {"folder": "z", "limit": 5}),
    ("list_history", {"path": "z/备份仓库.md", "limit": 5}),
    ("audit_vault", {"checks": ["broken_link", "orphan"], "limit": 5}),
]

# Calls that fail, at access `read`, and the code each must carry (with a hint).
FAILING_CALLS = [
    ("read_note", {"path": "z/no such note.md"}, "not_found"),
    ("read_note", {"path": "../../etc/passwd"}, "path_denied"),
    ("search_knowledge", {"query": "x", "limit": 99}, "invalid_argument"),
    ("propose_new_note", {"title": "x", "body": "x", "reason": "x"}, "permission_denied"),
]

results = []


def error_of(result):
    """The contract's error: JSON in the text content, and no structured content."""
    if not result.is_error or result.structured_content is not None or not result.content:
        return {}
    try:
        return json.loads(result.content[0].text).get("error", {})
    except (ValueError, AttributeError):
        return {}


def check(name, ok, detail=""):
    results.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)


async def session(binary, vault, mode):
    params = StdioServerParameters(command=binary, args=["--vault", str(vault), "--access", "read"])
    async with Client(params, mode=mode) as client:
        tools = await client.list_tools()
        names = [t.name for t in tools.tools]
        check(f"[{mode}] tools/list has the twelve read tools", names == [c[0] for c in READ_CALLS], str(names))
        for tool in tools.tools:
            check(f"[{mode}] {tool.name} declares title and output schema", bool(tool.title) and tool.output_schema is not None)
        for name, arguments in READ_CALLS:
            result = await client.call_tool(name, arguments)
            ok = not result.is_error and isinstance(result.structured_content, dict)
            check(f"[{mode}] call {name}", ok, "" if ok else str(result)[:300])
        first = await client.call_tool("search_knowledge", {"query": "Zettelkasten"})
        top = first.structured_content["results"][0]["path"] if first.structured_content else None
        check(f"[{mode}] search_knowledge ranks the alias match first", top == "z/卡片笔记法.md", str(top))
        listed = await client.call_tool("list_notes", {"folder": "z", "limit": 2})
        page = listed.structured_content or {}
        paths = [n["path"] for n in page.get("notes", [])]
        ok = len(paths) == 2 and all(p.startswith("z/") for p in paths) and bool(page.get("next_cursor"))
        check(f"[{mode}] list_notes pages a folder", ok, str(paths))
        denied = await client.call_tool("read_note", {"path": "../../etc/passwd"})
        error = error_of(denied)
        ok = error.get("code") == "path_denied" and bool(error.get("hint"))
        check(f"[{mode}] a hostile path is refused with path_denied and a hint", ok, str(denied)[:300])
        for name, arguments, expected in FAILING_CALLS:
            result = await client.call_tool(name, arguments)
            error = error_of(result)
            ok = error.get("code") == expected and bool(error.get("message")) and bool(error.get("hint"))
            check(f"[{mode}] {name} fails as {expected}, its JSON in the text", ok, str(result)[:300])
        resource = await client.read_resource("kb://note/z/备份仓库.md")
        text = resource.contents[0].text if resource.contents else ""
        check(f"[{mode}] kb://note resource returns the note", "同步不等于备份" in text)
        prompt = await client.get_prompt("new_knowledge_note", {"topic": "冷备份"})
        check(f"[{mode}] prompt new_knowledge_note", "冷备份" in prompt.messages[0].content.text)


async def skills(binary, vault, mode):
    params = StdioServerParameters(command=binary, args=["--vault", str(vault), "--access", "read"])
    async with Client(params, mode=mode) as client:
        extensions = client.server_capabilities.extensions or {}
        listed = [r.uri for r in (await client.list_resources()).resources]
        ok = SKILLS not in extensions and not any(uri.startswith("skill://") for uri in listed)
        check(f"[{mode}] without the skills extension, no skills are offered", ok, f"{extensions} {listed}")
    async with Client(params, mode=mode, extensions=[advertise(SKILLS)]) as client:
        extensions = client.server_capabilities.extensions or {}
        check(f"[{mode}] declaring the skills extension, the server declares it", SKILLS in extensions, str(extensions))
        listed = [r.uri for r in (await client.list_resources()).resources]
        ok = [uri for uri in listed if uri.startswith("skill://")] == ["skill://index.json", *SKILL_URIS]
        check(f"[{mode}] resources/list lists the skill files", ok, str(listed))
        answer = TypeAdapter(dict[str, Any])
        entries = (await client.session.send_request(types.Request(method="skills/list", params=None), answer))["skills"]
        check(f"[{mode}] skills/list lists both skills", [e["uri"] for e in entries] == SKILL_URIS, str(entries)[:300])
        for entry in entries:
            for file in entry["resources"]:
                data = (await client.read_resource(file["uri"])).contents[0].text.encode()
                digest = "sha256:" + hashlib.sha256(data).hexdigest()
                ok = file["digest"] == digest and file["size"] == len(data)
                check(f"[{mode}] {file['uri']} reads back with its digest and size", ok, f"{file} {digest} {len(data)}")
            got = await client.session.send_request(GetSkillRequest(params=GetSkillParams(uri=entry["uri"])), answer)
            check(f"[{mode}] skills/get {entry['uri']} gives the listed entry", got.get("skill") == entry, str(got)[:300])


async def proposals(binary, vault):
    params = StdioServerParameters(command=binary, args=["--vault", str(vault), "--access", "propose"])
    async with Client(params, mode="legacy") as client:
        read = await client.call_tool("read_note", {"path": "z/备份仓库.md"})
        base = (read.structured_content or {}).get("hash")
        patch = await client.call_tool(
            "propose_note_patch",
            {
                "path": "z/备份仓库.md",
                "base_hash": base,
                "reason": "shorter heading",
                "edits": [{"op": "find_replace", "find": "## 同步不等于备份", "replace": "## 同步与备份"}],
            },
        )
        staged = patch.structured_content or {}
        breaks = sorted((b["path"], b["link"]) for b in staged.get("breaks", []))
        # z/链接与反向链接.md writes the same link inside a code span: not a link.
        expected = [("z/3-2-1 备份原则.md", "[[备份仓库#同步不等于备份]]")]
        ok = breaks == expected
        check("[propose] a patch renaming a linked heading lists the links it breaks", ok, "" if ok else str(staged)[:400])
        text = patch.content[0].text if patch.content else ""
        ok = "1 link(s) in other notes will break" in text
        check("[propose] its text says so too", ok, "" if ok else text[:300])
        stale = await client.call_tool(
            "propose_note_patch",
            {"path": "z/备份仓库.md", "base_hash": "sha256:" + "0" * 64, "reason": "x",
             "edits": [{"op": "append", "content": "x\n"}]},
        )
        error = error_of(stale)
        ok = error.get("code") == "stale_base" and error.get("current_hash") == base and bool(error.get("hint"))
        check("[propose] a stale base fails as stale_base with the current hash", ok, str(stale)[:300])


async def confirmed_apply(binary, vault, mode):
    """At access `apply`, a client that can ask the person searches, proposes a new note and
    applies it; kb-mcp asks first (an elicitation request on the handshake, an input_required
    result answered by a retry carrying the sealed request state on 2026-07-28), the person
    accepts once, and the note is written. A decline leaves the proposal pending."""
    asked = []

    def answering(accept):
        async def callback(context, params):
            asked.append(params.message)
            return types.ElicitResult(action="accept", content={"apply": accept})

        return callback

    params = StdioServerParameters(command=binary, args=["--vault", str(vault), "--access", "apply"])
    title = f"Confirmed {mode}"
    async with Client(params, mode=mode, elicitation_callback=answering(False)) as client:
        found = await client.call_tool("search_knowledge", {"query": "备份"})
        check(f"[{mode}] apply: the search finds notes", bool((found.structured_content or {}).get("results")))
        staged = await client.call_tool("propose_new_note", {"title": title, "body": "confirmed\n", "reason": "r"})
        proposal = (staged.structured_content or {}).get("proposal_id")
        declined = await client.call_tool("apply_proposal", {"proposal_id": proposal})
        ok = error_of(declined).get("code") == "permission_denied" and not (vault / "z" / f"{title}.md").exists()
        check(f"[{mode}] apply: a decline writes nothing", ok, str(declined)[:300])
    async with Client(params, mode=mode, elicitation_callback=answering(True)) as client:
        applied = await client.call_tool("apply_proposal", {"proposal_id": proposal})
        ok = (applied.structured_content or {}).get("status") == "applied" and (vault / "z" / f"{title}.md").exists()
        check(f"[{mode}] apply: confirmed, the note is written", ok, str(applied)[:300])
    ok = len(asked) == 2 and all(f"z/{title}.md" in message for message in asked)
    check(f"[{mode}] apply: the person was asked each time, the question naming the note", ok, str(asked)[:300])


def token_add(binary, tokens, name, scope):
    out = subprocess.run([binary, "token", "add", name, "--scope", scope, "--tokens", str(tokens)],
                         check=True, capture_output=True, text=True).stdout
    return out.strip().splitlines()[-1]


def get(url, token):
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read().decode()


async def metrics(binary, vault, tmp):
    tokens = Path(tmp) / "tokens.json"
    reader = token_add(binary, tokens, "reader", "read")
    prometheus = token_add(binary, tokens, "prometheus", "metrics")
    server = subprocess.Popen([binary, "--http", "127.0.0.1:0", "--tokens", str(tokens), "--vault", str(vault)],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        addr = None
        for line in server.stderr:
            event = json.loads(line)
            if event.get("event") == "listening":
                addr = event["addr"]
                break
        base = f"http://{addr}"
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {reader}"}) as http:
            async with Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client:
                for query in ["备份", "Zettelkasten", "sync", "卡片笔记", "restore"]:
                    await client.call_tool("search_knowledge", {"query": query})
                await client.call_tool("read_note", {"path": "z/no such note.md"})
        # An HTTP call is counted once its answer is written, a moment after the client has it.
        for _ in range(100):
            status, kind, text = get(f"{base}/metrics", prometheus)
            if status != 200 or 'kb_mcp_tool_calls_total{tool="read_note"} 1' in text:
                break
            await asyncio.sleep(0.05)
        check("[http] GET /metrics with a metrics token", status == 200 and kind.startswith("text/plain"), f"{status} {kind}")
        families = {family.name: family for family in text_string_to_metric_families(text)}

        def value(family, name, **labels):
            found = [s.value for s in families[family].samples if s.name == name and s.labels == labels] if family in families else []
            return found[0] if found else None

        check("[http] the Prometheus parser reads every family",
              {"kb_mcp_tool_calls", "kb_mcp_tool_errors", "kb_mcp_tool_latency_seconds", "kb_mcp_index_documents"} <= set(families),
              str(sorted(families)))
        check("[http] /metrics counted the five searches",
              value("kb_mcp_tool_calls", "kb_mcp_tool_calls_total", tool="search_knowledge") == 5.0)
        check("[http] /metrics counted the missing note as not_found",
              value("kb_mcp_tool_errors", "kb_mcp_tool_errors_total", tool="read_note", code="not_found") == 1.0)
        summary = families.get("kb_mcp_tool_latency_seconds")
        p99 = value("kb_mcp_tool_latency_seconds", "kb_mcp_tool_latency_seconds", tool="search_knowledge", quantile="0.99")
        count = value("kb_mcp_tool_latency_seconds", "kb_mcp_tool_latency_seconds_count", tool="search_knowledge")
        ok = summary is not None and summary.type == "summary" and p99 is not None and 0 < p99 < 60 and count == 5.0
        check("[http] the latency summary has p99 and a count per tool", ok, f"{p99} {count}")
        status, _, _ = get(f"{base}/metrics", reader)
        check("[http] a read token gets 403 at /metrics", status == 403, str(status))
    finally:
        server.terminate()
        server.wait(timeout=30)


PASSPHRASE = "correct horse battery staple"
OAUTH_REDIRECT = "http://127.0.0.1:9/callback"


def write_test_certificates(folder):
    """Writes a CA (`ca.pem`) and a certificate for `localhost` it signed (`leaf.pem`,
    `leaf.key`) into `folder`, with the `cryptography` package the SDK brings (no openssl
    command needed); both valid for two days."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    later = now + datetime.timedelta(days=2)
    ca_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kb-mcp check CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now).not_valid_after(later)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    leaf = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
            .issuer_name(ca_name).public_key(leaf_key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(later)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    (folder / "ca.pem").write_bytes(ca.public_bytes(pem))
    (folder / "leaf.pem").write_bytes(leaf.public_bytes(pem))
    (folder / "leaf.key").write_bytes(leaf_key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                             serialization.NoEncryption()))


def document_server(tmp, name):
    """An HTTPS server on 127.0.0.1 serving a Client ID Metadata Document at /client.json, with a
    CA and a `localhost` certificate (`write_test_certificates`): (its URL, the CA file, its
    request log)."""
    import http.server
    import ssl
    import threading

    write_test_certificates(Path(tmp))
    requests, where = [], {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            requests.append(self.path)
            body = json.dumps({"client_id": where["url"], "client_name": name, "redirect_uris": [OAUTH_REDIRECT],
                               "grant_types": ["authorization_code", "refresh_token"],
                               "response_types": ["code"], "token_endpoint_auth_method": "none"}).encode()
            self.send_response(200 if self.path == "/client.json" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(Path(tmp, "leaf.pem")), str(Path(tmp, "leaf.key")))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    where["url"] = f"https://localhost:{server.server_address[1]}/client.json"
    return where["url"], str(Path(tmp, "ca.pem")), requests


async def oauth(binary, vault, tmp, cimd=False):
    import re
    import urllib.parse

    import httpx2
    from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

    tag = "[oauth cimd]" if cimd else "[oauth]"
    tokens = Path(tmp) / ("oauth-cimd-tokens.json" if cimd else "oauth-tokens.json")
    token_add(binary, tokens, "laptop", "read")
    subprocess.run([binary, "owner", "set", "--tokens", str(tokens)], input=PASSPHRASE + "\n", text=True,
                   check=True, capture_output=True)
    extra, document_url, fetched = [], None, []
    if cimd:
        document_url, ca, fetched = document_server(tmp, "kb-mcp python check (CIMD)")
        extra = ["--testing-cimd-trust", ca]
    server = subprocess.Popen([binary, "--http", "127.0.0.1:0", "--tokens", str(tokens), "--vault", str(vault), *extra],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    class Memory:
        def __init__(self):
            self.tokens, self.client = None, None

        async def get_tokens(self) -> OAuthToken | None:
            return self.tokens

        async def set_tokens(self, tokens: OAuthToken) -> None:
            self.tokens = tokens

        async def get_client_info(self) -> OAuthClientInformationFull | None:
            return self.client

        async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
            self.client = client_info

    try:
        addr = None
        for line in server.stderr:
            if not line.startswith("{"):  # the tests-only flag's warning
                continue
            event = json.loads(line)
            if event.get("event") == "listening":
                addr = event["addr"]
                break
        base = f"http://{addr}"
        answer = {}

        async def redirect_handler(url: str) -> None:
            # The person's browser: the consent page, then its form with the passphrase.
            async with httpx2.AsyncClient() as browser:
                page = await browser.get(url)
                check(f"{tag} the consent page names the client and the vault",
                      page.status_code == 200 and "kb-mcp python check" in page.text and "<b>vault</b>" in page.text,
                      f"{page.status_code}")
                field = lambda name: re.search(f'name="{name}" value="([^"]+)"', page.text).group(1)
                form = {"attempt": field("attempt"), "csrf": field("csrf"), "scope": "read",
                        "passphrase": PASSPHRASE, "decision": "allow"}
                reply = await browser.post(f"{base}/oauth/authorize", data=form, headers={"Origin": base})
                check(f"{tag} the owner's answer redirects back with a code", reply.status_code == 303, str(reply.status_code))
                query = urllib.parse.parse_qs(urllib.parse.urlparse(reply.headers["location"]).query)
                answer.update({name: values[0] for name, values in query.items()})

        async def callback_handler() -> AuthorizationCodeResult:
            return AuthorizationCodeResult(code=answer["code"], state=answer.get("state"), iss=answer.get("iss"))

        metadata = OAuthClientMetadata(client_name="kb-mcp python check", redirect_uris=[OAUTH_REDIRECT],
                                       grant_types=["authorization_code", "refresh_token"], response_types=["code"])
        storage = Memory()
        provider = OAuthClientProvider(server_url=f"{base}/mcp", client_metadata=metadata, storage=storage,
                                       redirect_handler=redirect_handler, callback_handler=callback_handler,
                                       client_metadata_url=document_url)
        async with create_mcp_http_client(auth=provider) as http:
            async with Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                check(f"{tag} the granted read scope lists the read tools only",
                      "search_knowledge" in names and "propose_new_note" not in names, str(names))
                result = await client.call_tool("search_knowledge", {"query": "sync"})
                check(f"{tag} a tool call with the OAuth token", not result.is_error, str(result)[:300])
        issued = storage.tokens
        check(f"{tag} the token is opaque, bound to its scope, and refreshable",
              issued is not None and issued.access_token.startswith("kbo_") and issued.scope == "read"
              and issued.refresh_token is not None, f"scope {issued.scope if issued else None}")
        if cimd:
            check(f"{tag} the client id is the document's URL, fetched once by kb-mcp",
                  storage.client is not None and storage.client.client_id == document_url
                  and fetched == ["/client.json"], f"{storage.client.client_id if storage.client else None} {fetched}")
        status, _, _ = get(f"{base}/metrics", issued.access_token)
        check(f"{tag} an OAuth token gets 403 at /metrics", status == 403, str(status))
    finally:
        server.terminate()
        server.wait(timeout=30)


async def several_vaults(binary, vault, tmp, mode):
    """Two vaults behind one server (issue 39): the `vault` argument, list_vaults, a search of
    both, and a bad name, each answer checked by the SDK against the tool's output schema."""
    home = Path(tmp) / f"home-{mode}"
    shutil.copytree(vault, home, ignore=shutil.ignore_patterns(".kb", "inbox"))
    (home / "z" / "Sourdough starter.md").write_text("# Sourdough starter\n\nFeed the Zettelkasten jar daily.\n")
    args = ["--vault", f"work={vault}", "--vault", f"home={home}", "--access", "read"]
    async with Client(StdioServerParameters(command=binary, args=args), mode=mode) as client:
        tools = (await client.list_tools()).tools
        names = [t.name for t in tools]
        check(f"[{mode} two vaults] list_vaults is listed", "list_vaults" in names, str(names))
        enums = [t.input_schema.get("properties", {}).get("vault", {}).get("enum") for t in tools if t.name != "list_vaults"]
        ok = all(e is not None and e[:2] == ["work", "home"] for e in enums)
        check(f"[{mode} two vaults] every tool takes vault, naming both", ok, str(enums)[:300])
        listed = (await client.call_tool("list_vaults", {})).structured_content or {}
        got = [(v["name"], v["default"]) for v in listed.get("vaults", [])]
        check(f"[{mode} two vaults] list_vaults lists both, work the default", got == [("work", True), ("home", False)], str(listed)[:300])
        every = await client.call_tool("search_knowledge", {"query": "Zettelkasten", "vault": "*"})
        hits = (every.structured_content or {}).get("results", [])
        found = {(h.get("vault"), h["path"]) for h in hits}
        ok = not every.is_error and ("home", "z/Sourdough starter.md") in found and any(v == "work" for v, _ in found)
        check(f"[{mode} two vaults] a search of both names each hit's vault", ok, str(found)[:300])
        one = await client.call_tool("read_note", {"path": "z/Sourdough starter.md", "vault": "home"})
        ok = not one.is_error and (one.structured_content or {}).get("vault") == "home"
        check(f"[{mode} two vaults] an answer names its vault", ok, str(one)[:300])
        bad = error_of(await client.call_tool("search_knowledge", {"query": "x", "vault": "nowhere"}))
        ok = bad.get("code") == "invalid_argument" and "work, home" in bad.get("message", "")
        check(f"[{mode} two vaults] an unknown vault is invalid_argument naming the others", ok, str(bad)[:300])


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--vault", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        shutil.copytree(args.vault, vault)
        for mode in ("legacy", "auto"):
            try:
                await session(str(Path(args.binary).resolve()), vault, mode)
            except Exception as error:  # a crash of the session is a failed check, not a traceback
                check(f"[{mode}] session", False, repr(error))
            try:
                await skills(str(Path(args.binary).resolve()), vault, mode)
            except Exception as error:
                check(f"[{mode}] skills session", False, repr(error))
            try:
                await confirmed_apply(str(Path(args.binary).resolve()), vault, mode)
            except Exception as error:
                check(f"[{mode}] apply session", False, repr(error))
            try:
                await several_vaults(str(Path(args.binary).resolve()), vault, tmp, mode)
            except Exception as error:
                check(f"[{mode}] two-vault session", False, repr(error))
        try:
            await proposals(str(Path(args.binary).resolve()), vault)
        except Exception as error:
            check("[propose] session", False, repr(error))
        try:
            await metrics(str(Path(args.binary).resolve()), vault, tmp)
        except Exception as error:
            check("[http] metrics session", False, repr(error))
        try:
            await oauth(str(Path(args.binary).resolve()), vault, tmp)
        except Exception as error:
            check("[oauth] session", False, repr(error))
        try:
            await oauth(str(Path(args.binary).resolve()), vault, tmp, cimd=True)
        except Exception as error:
            check("[oauth cimd] session", False, repr(error))
    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
