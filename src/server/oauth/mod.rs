//! OAuth 2.1 over the HTTP transport, with kb-mcp as its own authorization
//! server, so that hosts which speak only OAuth (ChatGPT, claude.ai, the
//! phone apps) can connect without a pasted token.
//!
//! The resource is `<public URL>/mcp`; its metadata (RFC 9728) and the
//! authorization server's (RFC 8414) are served under `/.well-known/`, and a
//! 401 points at them. Clients register themselves (RFC 7591; public clients,
//! no secret), send the person to the consent page with an S256 PKCE
//! challenge, and exchange the code for an opaque access token bound to the
//! resource (one hour by default) and a refresh token that is rotated at each
//! use. The person proves they own the server with the passphrase set by
//! `kb-mcp owner set`, and may grant less than was asked; a grant's scope is
//! an access level, exactly a static token's scope. Granted clients are listed
//! and revoked with `kb-mcp clients`; static tokens keep working beside them.
//!
//! The files: [`state`] (the private state file: clients, grants, token
//! hashes, the passphrase hash), [`flow`] (consent attempts and codes, in
//! memory, single-use), [`passphrase`] (Argon2id), [`consent`] (the pages a
//! person sees), [`endpoints`] (the handlers and the gate's hooks),
//! [`challenge`] (the `WWW-Authenticate` values of 401s and 403s),
//! [`redirect`] (which redirect URIs a client may use).
//!
//! A client may also identify itself by the URL of its Client ID Metadata
//! Document instead of registering: [`client_metadata`] fetches, checks and
//! caches that document, from public addresses only ([`public_address`]).

mod challenge;
mod client_metadata;
mod consent;
mod endpoints;
mod flow;
mod passphrase;
mod public_address;
mod redirect;
mod state;

pub(super) use endpoints::{OAuth, is_oauth_path};
pub use state::{ClientSummary, OAuthFile, oauth_state_path};
