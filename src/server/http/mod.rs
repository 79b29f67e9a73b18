//! The Streamable HTTP transport: the same server as stdio, at `/mcp`, for
//! clients that reach it over a network (ChatGPT through a tunnel, a reverse
//! proxy with TLS, another machine).
//!
//! rmcp's `StreamableHttpService` speaks the protocol; this module puts a gate
//! in front of it and runs the listener. The gate checks every request, in this
//! order, before the service sees it: the server is not shutting down (503); a
//! declared body size within [`MAX_BODY_BYTES`](limits::MAX_BODY_BYTES) (413); the `Host` header and
//! the `Origin` header, when a browser sends one, on their allow-lists (403:
//! DNS-rebinding protection, as the MCP specification requires; the refusal is
//! logged and its body names the host or origin and the flag that allows it,
//! `--allowed-host` or `--allow-origin`); the OAuth endpoints (`/.well-known/*`,
//! `/oauth/*`, see [`crate::server::oauth`]) go on from here without a token, under
//! one shared rate limit; anything else needs an `Authorization: Bearer` token from
//! the token file or an OAuth access token (401 with a `WWW-Authenticate` that names
//! the protected-resource metadata, and nothing about the vault); the token's
//! request rate (429 with `Retry-After`); the body itself, read within a time
//! limit and the size cap (408, 413). The token's scope then rides in the
//! request's extensions, where [`super::KbServer`] reads it for `tools/list` and
//! for every `tools/call`. A request rmcp would answer wrongly or not at all
//! is answered at the gate with a JSON-RPC error: an id rmcp cannot hold
//! (answered as sent), an id in flight in the same session. A request that runs past the request timeout gets 504,
//! or, once its answer has begun streaming, a JSON-RPC timeout error (-32001)
//! that ends the stream. rmcp checks the `Host` header again. Headers must
//! arrive within 10 s; sessions expire when idle. A body of more than 100,000
//! JSON values is answered at the gate before rmcp parses it.
//!
//! Sessions belong to the token that opened them: another token naming a
//! session gets 404, as if it did not exist; one token holds at most
//! `--sessions-per-token` sessions (429 beyond, saying how to end one); a
//! revoked token's sessions, and every event stream it holds open (a request
//! still in flight answered with an error), are closed within about half a
//! second (the token file is checked four times a second).
//! `DELETE /mcp` ends a session with 204 (rmcp says 202, which clients such as
//! the official Python SDK take for a failure).
//!
//! Shutdown (SIGINT, SIGTERM) stops accepting connections, answers new requests
//! with 503, lets the requests in flight finish (for up to [`SHUTDOWN_GRACE`](serve::SHUTDOWN_GRACE),
//! or until a second signal), then ends the sessions and closes the
//! connections. A tool call, apply included, runs on a blocking thread that
//! always completes once started, and the process waits for it; an apply not
//! yet started when the server drains never starts.
//!
//! The files: [`options`] (what the transport is asked to do, and its
//! defaults), [`serve`] (listener, connections, shutdown), [`gate`] (the checks
//! above), [`origin`] (allowed origins and hosts), [`limits`] (body cap, rate
//! limit, timeouts), [`sessions`] (ownership, caps, idle sweep, revocation),
//! [`revocation`] (a revoked token's open streams end), [`in_flight`] (the ids
//! in flight per session).

mod gate;
mod in_flight;
mod limits;
mod options;
mod origin;
mod revocation;
mod serve;
mod sessions;
mod step_up;

pub(crate) use gate::Arrived;
pub use options::{
    DEFAULT_ACCESS_TOKEN_LIFETIME_SECS, DEFAULT_RATE, DEFAULT_REQUEST_TIMEOUT_SECS,
    DEFAULT_SESSION_IDLE_SECS, DEFAULT_SESSIONS_PER_TOKEN, HttpOptions,
};
pub use origin::{is_loopback, is_valid_origin_pattern};
pub use serve::serve_http;
