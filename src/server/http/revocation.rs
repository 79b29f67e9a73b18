//! A revoked token's open streams end at revocation.
//!
//! Closing a revoked token's sessions (see [`super::sessions`]) ends their
//! standalone event streams, but not the answer streams of requests still in
//! flight: an apply waiting for the person's confirmation, a call waiting for
//! recovery, kept their stream open for as long as they waited (10 s and
//! more). Every event stream the gate hands out is tied to its token's
//! [`CancellationToken`]; the sweep that notices a revocation cancels it, and
//! the stream ends at once, a request's stream with a JSON-RPC error answering
//! it, so the client is not left waiting.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use serde_json::json;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::server::log;

/// What the request a revoked token's stream was answering is told.
pub(super) const REVOKED_MESSAGE: &str = "the bearer token this request was sent with was revoked, so its \
     stream is closed and it gets no other answer; if it was changing the vault, list_proposals (with a valid \
     token) shows whether it did";

/// One cancellation per token with streams open, by the token's key.
#[derive(Default)]
pub(super) struct Revocations {
    tokens: Mutex<HashMap<[u8; 32], CancellationToken>>,
}

impl Revocations {
    /// The cancellation the streams of the token `key` end with.
    pub(super) fn of(&self, key: [u8; 32]) -> CancellationToken {
        self.tokens.lock().unwrap_or_else(|p| p.into_inner()).entry(key).or_default().clone()
    }

    /// Cancels the streams of every token not among `live` (a token verified
    /// just before its revocation and tied afterwards is cancelled by the next
    /// sweep).
    pub(super) fn end_revoked(&self, live: &[[u8; 32]]) {
        self.tokens.lock().unwrap_or_else(|p| p.into_inner()).retain(|key, token| {
            if live.contains(key) {
                return true;
            }
            token.cancel();
            false
        });
    }
}

/// An event stream that ends when its token is revoked: with `last_event` (a
/// request's error answer) when it has one, else at once.
pub(super) struct EndsAtRevocation {
    inner: Body,
    revoked: Pin<Box<WaitForCancellationFutureOwned>>,
    last_event: Option<Bytes>,
    ended: bool,
}

impl EndsAtRevocation {
    pub(super) fn new(inner: Body, revoked: CancellationToken, last_event: Option<Bytes>) -> Self {
        EndsAtRevocation { inner, revoked: Box::pin(revoked.cancelled_owned()), last_event, ended: false }
    }
}

impl HttpBody for EndsAtRevocation {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        // Revocation first: closing the token's session may end the inner
        // stream too, and the request must still be told why.
        if self.revoked.as_mut().poll(cx).is_ready() {
            log(json!({ "event": "stream_closed", "why": "token revoked" }));
            self.ended = true;
            return match self.last_event.take() {
                Some(event) => Poll::Ready(Some(Ok(http_body::Frame::data(event)))),
                None => Poll::Ready(None),
            };
        }
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
