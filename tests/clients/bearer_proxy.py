#!/usr/bin/env python3
"""A loopback reverse proxy that adds `Authorization: Bearer <token>` to every request.

The MCP conformance suite and the Inspector cannot send a bearer token, and kb-mcp's
HTTP transport refuses every request without one. This proxy lets those tools test
the real, authenticated server: it forwards each request to the upstream unchanged
(method, path, headers including Host and Origin, body) plus the token, and streams
the response back (Server-Sent Events included). Loopback only; stdlib only.

    python3 tests/clients/bearer_proxy.py --listen 8801 --upstream 127.0.0.1:8800 --token kb_...
"""

import argparse
import http.client
import http.server
import sys

HOP = {"connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection", "te", "trailer"}


def handler(upstream, token):
    class Proxy(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def forward(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP and k.lower() != "authorization"}
            headers["Authorization"] = f"Bearer {token}"
            host, port = upstream.rsplit(":", 1)
            conn = http.client.HTTPConnection(host, int(port), timeout=120)
            conn.request(self.command, self.path, body=body, headers=headers)
            response = conn.getresponse()
            self.send_response(response.status, response.reason)
            for key, value in response.getheaders():
                if key.lower() not in HOP and key.lower() != "content-length":
                    self.send_header(key, value)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            while True:
                chunk = response.read1(65536)
                if not chunk:
                    break
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            conn.close()

        do_GET = do_POST = do_DELETE = do_PUT = do_OPTIONS = forward

    return Proxy


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--token", required=True)
    args = parser.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.listen), handler(args.upstream, args.token))
    server.daemon_threads = True
    print(f"proxy on 127.0.0.1:{args.listen} -> {args.upstream}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
