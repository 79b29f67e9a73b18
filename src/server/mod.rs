//! The MCP server: rmcp's `ServerHandler` over the tools, resources and prompts.
//!
//! The server answers `initialize` at once and brings the index up to date in
//! the background: a vault that already has an index is served immediately
//! while it catches up (its overview says `fresh: false` until then); a vault
//! indexed for the first time makes tool calls wait, with progress
//! notifications, until the build is done. While running, a debounced file
//! watcher re-syncs the index within about a second of an edit, rename or
//! delete; if watching is impossible, calls re-check the files themselves at
//! most every two seconds. Stdout carries JSON-RPC only; logs are JSON lines on
//! stderr and never contain note text. At the debug level (`--log-level debug`
//! or `KB_LOG=debug`) each request also gets a line saying where its time went
//! (`timing`).

mod blocking;
mod call;
mod confirm;
#[cfg(feature = "conformance-fixtures")]
mod fixtures;
mod guide;
mod http;
mod metrics;
mod oauth;
mod published;
mod resources;
mod rpc;
mod skills;
mod stdio;
mod timing;
mod tokens;
mod watch;

pub use http::{
    DEFAULT_ACCESS_TOKEN_LIFETIME_SECS, DEFAULT_RATE, DEFAULT_REQUEST_TIMEOUT_SECS,
    DEFAULT_SESSION_IDLE_SECS, DEFAULT_SESSIONS_PER_TOKEN, HttpOptions, is_loopback, is_valid_origin_pattern,
    serve_http,
};
pub use oauth::{ClientSummary, OAuthFile, oauth_state_path};
pub use published::{PublishedServer, running_servers};
pub use tokens::{Scope, TokenFile, TokenLimits, TokenRecord, is_plain_name};

mod handler;
mod shared;
mod vaults;

pub use guide::instructions;
pub use handler::KbServer;
pub use shared::Shared;
pub use vaults::{VaultSpec, Vaults, is_vault_name};

use crate::engine::types::Access;
use rmcp::ServiceExt;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How the server was asked to run.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// The vaults, the default first (see [`VaultSpec`]).
    pub vaults: Vec<VaultSpec>,
    /// The access level of stdio connections.
    pub access: Access,
    /// How PDFs' text is extracted (the binaries: themselves, as a child).
    pub pdf_extractor: crate::engine::PdfExtractor,
}

/// Whether debug lines are written (see [`set_debug_log`]).
static DEBUG_LOG: AtomicBool = AtomicBool::new(false);

/// Turns the debug log on or off for this process: per-request timing lines
/// (event `timing`) beside the usual ones.
pub fn set_debug_log(on: bool) {
    DEBUG_LOG.store(on, Ordering::Relaxed);
}

/// Whether the debug log is on.
pub fn debug_log() -> bool {
    DEBUG_LOG.load(Ordering::Relaxed)
}

/// Writes one JSON log line to stderr.
pub fn log(event: Value) {
    let mut line = json!({ "ts": jiff::Timestamp::now().to_string() });
    if let (Value::Object(line), Value::Object(event)) = (&mut line, event) {
        line.extend(event);
    }
    eprintln!("{line}");
}

/// Serves MCP on stdin/stdout until stdin closes.
pub async fn serve_stdio(options: ServerOptions) -> crate::error::Result<()> {
    let vaults = Vaults::start(&options);
    published::spawn(&vaults, "stdio", None);
    let timings = vaults.timings();
    let server = KbServer::new(vaults, options.access);
    log(
        json!({ "event": "start", "transport": "stdio", "access": options.access.as_str(), "version": env!("CARGO_PKG_VERSION") }),
    );
    let (transport, writer) = stdio::transport(tokio::io::stdin(), tokio::io::stdout(), timings);
    let reason = match server.serve(transport).await {
        Ok(running) => format!("{:?}", running.waiting().await),
        // stdin closed before a session began (or the client spoke out of turn): not a crash.
        Err(error) => error.to_string(),
    };
    // The transport is gone: the writer ends once the last answers are on stdout.
    let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
    log(json!({ "event": "stop", "reason": reason }));
    Ok(())
}
