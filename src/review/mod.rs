//! The review: where a person sees a staged proposal whole and approves or
//! rejects it, in two places built on one HTML view (`view.html`, compiled
//! into the binaries). The **card** is an MCP App (`ui://kb-mcp/review`): a
//! host that declares the `io.modelcontextprotocol/ui` extension shows it
//! beside the conversation when an agent proposes, and its Apply and Reject
//! buttons call tools only the view can call (`tools/app.rs`). The **page**
//! (`page.rs`) is the same view served by `kb-index review` on loopback, for
//! any host or none. Both render the engine's one review
//! ([`crate::engine::ReviewPage`]); neither computes a diff or a check.
//!
//! The model never approves: the app-only tools need the **approval key**
//! ([`key`]), which reaches the view in a tool result's `_meta` (hosts hand
//! `_meta` to the view, not to the model) and nowhere else.

pub mod page;

use std::sync::OnceLock;

use subtle::ConstantTimeEq;

/// The view: one self-contained HTML document (inline CSS and script, no
/// network), the card's resource and the page's body alike.
pub const VIEW_HTML: &str = include_str!("view.html");

/// The card's resource.
pub const CARD_URI: &str = "ui://kb-mcp/review";

/// The MIME type of an MCP App's HTML.
pub const CARD_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The MCP Apps extension's id, as clients and servers declare it.
pub const APPS_EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The key under a tool result's `_meta` holding the approval key for the view.
pub const KEY_META: &str = "kb-mcp/review";

/// This process's approval key: 32 random bytes, hex, made on first use.
/// A server restart makes a new one (an open card then asks to be reopened).
pub fn key() -> &'static str {
    static KEY: OnceLock<String> = OnceLock::new();
    // Without randomness no key could be trusted: the card then cannot
    // approve (every token is refused), which is safe.
    KEY.get_or_init(|| random_hex().unwrap_or_default())
}

/// Whether `token` is this process's approval key.
pub fn key_matches(token: &str) -> bool {
    let key = key();
    !key.is_empty() && same_secret(key, token)
}

/// 32 random bytes as hex: the approval key, and the page's secrets.
pub(crate) fn random_hex() -> Option<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(crate::sandbox::hex(&bytes))
}

/// Whether two secrets are equal, compared in constant time.
pub(crate) fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}
