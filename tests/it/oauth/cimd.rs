//! Client ID Metadata Documents against the real `kb-mcp --http`, the
//! documents served by a local HTTPS server with a certificate made here
//! (`rcgen`), trusted through the tests-only `--testing-cimd-trust`: a whole
//! flow with a client identified by its document (cached, not fetched
//! twice), and the refusals: a host that resolves to loopback without the
//! switch (never contacted), a private address even with it, an oversized
//! document, a slow one, a redirect, a `client_id` that is not the URL, a
//! `redirect_uri` the document does not list.

use super::*;

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A local HTTPS server answering a few fixed paths, counting its requests.
struct DocumentServer {
    /// `https://localhost:PORT`.
    base: String,
    /// The CA certificate that issued the server's, as a PEM file.
    ca: PathBuf,
    requests: Arc<AtomicUsize>,
    _tmp: tempfile::TempDir,
}

impl DocumentServer {
    fn start() -> DocumentServer {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let leaf_params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        let leaf = leaf_params.signed_by(&leaf_key, &issuer).unwrap();
        let config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone(), ca_cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
            )
            .unwrap();
        let config = Arc::new(config);
        let tmp = tempfile::tempdir().unwrap();
        let ca = tmp.path().join("ca.pem");
        std::fs::write(&ca, ca_cert.pem()).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("https://localhost:{}", listener.local_addr().unwrap().port());
        let requests = Arc::new(AtomicUsize::new(0));
        let (counted, at) = (requests.clone(), base.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let (config, counted, at) = (config.clone(), counted.clone(), at.clone());
                std::thread::spawn(move || {
                    let connection = rustls::ServerConnection::new(config).unwrap();
                    let mut tls = rustls::StreamOwned::new(connection, stream);
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        match tls.read(&mut byte) {
                            Ok(1) => head.push(byte[0]),
                            _ => return,
                        }
                    }
                    counted.fetch_add(1, Ordering::SeqCst);
                    let head = String::from_utf8_lossy(&head).into_owned();
                    let path = head.split(' ').nth(1).unwrap_or("/").to_owned();
                    answer(&mut tls, &at, &path);
                    let _ = tls.flush();
                    tls.conn.send_close_notify();
                    let _ = tls.flush();
                });
            }
        });
        DocumentServer { base, ca, requests, _tmp: tmp }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

/// What each path answers.
fn answer(tls: &mut impl Write, base: &str, path: &str) {
    let document = |client_id: &str| {
        json!({
            "client_id": client_id,
            "client_name": "Doc App",
            "client_uri": base,
            "redirect_uris": [REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        })
        .to_string()
    };
    let ok = |body: &str, extra: &str| {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
            body.len()
        )
    };
    match path {
        "/good.json" => {
            let _ = tls.write_all(
                ok(&document(&format!("{base}/good.json")), "Cache-Control: max-age=600\r\n").as_bytes(),
            );
        }
        "/mismatch.json" => {
            let _ = tls.write_all(ok(&document(&format!("{base}/other.json")), "").as_bytes());
        }
        "/html.json" => {
            let body = document(&format!("{base}/html.json"));
            let _ = tls.write_all(ok(&body, "").replace("application/json", "text/html").as_bytes());
        }
        "/together.json" => {
            // Slow enough that requests sent at once all arrive before it answers.
            std::thread::sleep(Duration::from_millis(500));
            let _ = tls.write_all(
                ok(&document(&format!("{base}/together.json")), "Cache-Control: max-age=600\r\n").as_bytes(),
            );
        }
        "/redirect.json" => {
            let _ = tls.write_all(
                format!("HTTP/1.1 302 Found\r\nLocation: {base}/good.json\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
            );
        }
        "/big.json" => {
            // No Content-Length: the cap must hold while the body streams in.
            let _ = tls
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n");
            let _ = tls.write_all(format!("{{\"client_id\":\"{base}/big.json\",\"pad\":\"").as_bytes());
            for _ in 0..64 {
                if tls.write_all(&[b'x'; 1024]).is_err() {
                    return;
                }
            }
            let _ = tls.write_all(b"\"}");
        }
        "/slow.json" => {
            let body = document(&format!("{base}/slow.json"));
            let _ = tls.write_all(
                format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len())
                    .as_bytes(),
            );
            let _ = tls.flush();
            std::thread::sleep(Duration::from_secs(8));
            let _ = tls.write_all(body.as_bytes());
        }
        _ => {
            let _ =
                tls.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    }
}

impl Server {
    /// `GET /oauth/authorize` for `client` with `redirect` (a valid request otherwise).
    fn authorize_as(&self, client: &str, redirect: &str) -> Reply {
        let query = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs([
                ("response_type", "code"),
                ("client_id", client),
                ("redirect_uri", redirect),
                ("code_challenge", &challenge(VERIFIER)),
                ("code_challenge_method", "S256"),
                ("state", "xyz"),
                ("scope", "read"),
            ])
            .finish();
        self.get(&format!("/oauth/authorize?{query}"))
    }
}

/// A refusal page: 400, nothing redirected, `expected` in its text.
fn assert_refused(reply: &Reply, expected: &str) {
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert!(reply.header("location").is_none(), "nothing is redirected: {:?}", reply.headers);
    assert!(reply.body.contains(expected), "`{expected}` not in {}", reply.body);
}

#[test]
fn a_client_identified_by_its_metadata_document_gets_consent_and_calls_tools() {
    let documents = DocumentServer::start();
    let server = Server::start(&["--testing-cimd-trust", documents.ca.to_str().unwrap()]);
    let metadata = server.get("/.well-known/oauth-authorization-server").json();
    assert_eq!(metadata["client_id_metadata_document_supported"], true);

    let client = documents.url("/good.json");
    let (page, _, _) = server.consent_page(&client, "read propose apply");
    assert!(page.body.contains("Doc App") && page.body.contains(&client), "{}", page.body);
    let (access, refresh) = server.tokens_for(&client, "propose");
    let tools = server.tool_names(&access);
    assert!(tools.iter().any(|t| t == "propose_new_note"), "{tools:?}");
    assert!(!tools.iter().any(|t| t == "apply_proposal"), "{tools:?}");
    assert_eq!(documents.requests(), 1, "the document is cached for its max-age");

    let refreshed = server.form(
        "/oauth/token",
        &[("grant_type", "refresh_token"), ("client_id", &client), ("refresh_token", &refresh)],
        &[],
    );
    assert_eq!(refreshed.status, 200, "{}", refreshed.body);
    let (code, listed) = server.kb_mcp(&["clients", "list"]);
    assert_eq!(code, 0);
    assert!(listed.contains("Doc App") && listed.contains(&client), "{listed}");
    let (code, said) = server.kb_mcp(&["clients", "revoke", &client]);
    assert_eq!(code, 0, "{said}");
    assert_eq!(server.initialize(&access).status, 401);

    // The redirect URI must be one the document lists.
    assert_refused(&server.authorize_as(&client, "http://127.0.0.1:9/elsewhere"), "Wrong return address");
}

#[test]
fn metadata_documents_that_break_the_limits_are_refused() {
    let documents = DocumentServer::start();
    let server = Server::start(&["--testing-cimd-trust", documents.ca.to_str().unwrap()]);
    let refused = |path: &str, expected: &str| {
        assert_refused(&server.authorize_as(&documents.url(path), REDIRECT), expected);
    };
    refused("/mismatch.json", "names another client_id than its own URL");
    refused("/redirect.json", "redirect");
    refused("/html.json", "served as `text/html`, not application/json");
    refused("/big.json", "larger than 32768 bytes");
    let started = std::time::Instant::now();
    refused("/slow.json", "took longer than 5s");
    assert!(started.elapsed() < Duration::from_secs(8), "the time cap holds: {:?}", started.elapsed());
    refused("/missing.json", "404");
    // The switch allows loopback, nothing else: a private address is refused unfetched.
    refused("/", "must have a path");
    assert_refused(&server.authorize_as("https://10.0.0.1/client.json", REDIRECT), "not a public address");
    assert_refused(&server.authorize_as("http://localhost/client.json", REDIRECT), "Unknown app");
}

#[test]
fn requests_for_one_document_at_once_fetch_it_once() {
    let documents = DocumentServer::start();
    let server = Server::start(&["--testing-cimd-trust", documents.ca.to_str().unwrap()]);
    let client = documents.url("/together.json");
    std::thread::scope(|scope| {
        let pages: Vec<_> =
            (0..8).map(|_| scope.spawn(|| server.authorize_as(&client, REDIRECT).status)).collect();
        for page in pages {
            assert_eq!(page.join().unwrap(), 200);
        }
    });
    assert_eq!(documents.requests(), 1, "the others waited for the first fetch");
}

#[test]
fn without_the_testing_switch_a_document_on_loopback_is_never_fetched() {
    let documents = DocumentServer::start();
    let server = Server::start(&[]);
    assert_refused(&server.authorize_as(&documents.url("/good.json"), REDIRECT), "public addresses");
    let literal = documents.url("/good.json").replace("localhost", "127.0.0.1");
    assert_refused(&server.authorize_as(&literal, REDIRECT), "not a public address");
    assert_eq!(documents.requests(), 0, "refused before connecting");
}
