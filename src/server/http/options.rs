//! How the HTTP transport is asked to run, and its defaults: the one place
//! they are written (`kb-mcp`'s flags default to them too).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Requests per second each token may make by default (bursts of twice that).
pub const DEFAULT_RATE: f64 = 20.0;

/// Seconds an idle session lives by default (30 minutes).
pub const DEFAULT_SESSION_IDLE_SECS: u64 = 30 * 60;

/// Seconds one request may run by default (2 minutes).
pub const DEFAULT_REQUEST_TIMEOUT_SECS: u64 = 120;

/// Sessions one token may hold open at once by default.
pub const DEFAULT_SESSIONS_PER_TOKEN: usize = 32;

/// Seconds an OAuth access token lives by default (an hour; the refresh token, 30 days).
pub const DEFAULT_ACCESS_TOKEN_LIFETIME_SECS: u64 = 3600;

/// How the HTTP transport was asked to run.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen (port 0 picks a free port; the `listening` log line says which).
    pub addr: SocketAddr,
    /// The token file.
    pub tokens: PathBuf,
    /// Browser origins allowed besides the loopback ones (`scheme://host[:port|:*]`).
    pub allowed_origins: Vec<String>,
    /// `Host` header values allowed besides the loopback names and the bound address
    /// (a tunnel's or reverse proxy's public host name).
    pub allowed_hosts: Vec<String>,
    /// Requests per second each token may make on average (bursts of twice that);
    /// 0 turns the limit off.
    pub rate: f64,
    /// How long an idle session lives.
    pub session_idle: Duration,
    /// How long one request may run.
    pub request_timeout: Duration,
    /// How many sessions one token may hold open at once.
    pub sessions_per_token: usize,
    /// The URL clients reach the server at (`https://kb.example.com`), the
    /// OAuth issuer; `None`: `http://` and the bound address. Its host is
    /// allowed as a `Host` and its origin as an `Origin`.
    pub public_url: Option<String>,
    /// How long an OAuth access token lives.
    pub access_token_lifetime: Duration,
    /// For tests only (`--testing-cimd-trust`): a PEM certificate trusted
    /// *instead of* the public roots when fetching Client ID Metadata
    /// Documents, loopback addresses allowed. `None` in any real use.
    pub testing_cimd_root: Option<Vec<u8>>,
}

impl HttpOptions {
    /// The defaults ([`DEFAULT_RATE`], [`DEFAULT_SESSION_IDLE_SECS`],
    /// [`DEFAULT_REQUEST_TIMEOUT_SECS`], [`DEFAULT_SESSIONS_PER_TOKEN`],
    /// [`DEFAULT_ACCESS_TOKEN_LIFETIME_SECS`]), which `kb-mcp`'s flags default to as well.
    pub fn new(addr: SocketAddr, tokens: PathBuf) -> Self {
        HttpOptions {
            addr,
            tokens,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            rate: DEFAULT_RATE,
            session_idle: Duration::from_secs(DEFAULT_SESSION_IDLE_SECS),
            request_timeout: Duration::from_secs(DEFAULT_REQUEST_TIMEOUT_SECS),
            sessions_per_token: DEFAULT_SESSIONS_PER_TOKEN,
            public_url: None,
            access_token_lifetime: Duration::from_secs(DEFAULT_ACCESS_TOKEN_LIFETIME_SECS),
            testing_cimd_root: None,
        }
    }
}
