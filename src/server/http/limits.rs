//! Limits on what a client may send: the body cap and its read timeout, the
//! per-token rate limiter (a token bucket), and the answer to a request that
//! ran out of time.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes, HttpBody};
use serde_json::json;

use super::in_flight::IdClaim;
use super::serve::InFlight;
use crate::error::Result;
use crate::server::log;
use crate::server::metrics::{Metrics, PendingCount};

/// The largest request body accepted (a proposal's content is capped at 2 MiB by
/// default; JSON around it needs a little more).
pub(super) const MAX_BODY_BYTES: usize = 4 << 20;

/// How long a client may take to send a request's body.
pub(super) const BODY_TIMEOUT: Duration = Duration::from_secs(30);

pub(super) enum BodyError {
    TooLarge,
    Broken,
}

/// Reads a whole body, stopping as soon as it passes `limit` bytes.
pub(super) async fn read_capped(mut body: Body, limit: usize) -> Result<Bytes, BodyError> {
    let mut collected: Vec<u8> = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        let frame = frame.map_err(|_| BodyError::Broken)?;
        if let Ok(data) = frame.into_data() {
            if collected.len() + data.len() > limit {
                return Err(BodyError::TooLarge);
            }
            collected.extend_from_slice(&data);
        }
    }
    Ok(Bytes::from(collected))
}

/// For a JSON-RPC request, the server-sent event that ends its stream when it
/// runs out of time: an error response with the request's id, so the client
/// gets an answer instead of a broken stream (-32001, "request timed out", as
/// MCP SDKs call it).
pub(super) fn timeout_event(body: &[u8]) -> Option<Bytes> {
    ending_event(body, -32001, "the request timed out on the server; it may still complete")
}

/// For a JSON-RPC request, a server-sent event answering it with the error
/// `code` and `message`: what a stream cut short carries last.
pub(super) fn ending_event(body: &[u8], code: i64, message: &str) -> Option<Bytes> {
    let request: serde_json::Value = serde_json::from_slice(body).ok()?;
    let id = request.get("id").filter(|_| request.get("method").is_some())?;
    let error = json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
    Some(Bytes::from(format!("event: message\ndata: {error}\n\n")))
}

/// A response body that counts as in flight until it ends, and ends at the
/// deadline: with a timeout error event when it is a stream answering a request,
/// else by breaking off.
pub(super) struct Watched {
    pub(super) inner: Body,
    pub(super) deadline: Pin<Box<tokio::time::Sleep>>,
    pub(super) last_event: Option<Bytes>,
    pub(super) ended: bool,
    pub(super) _in_flight: InFlight,
    /// The request's id, in flight until its answer streams past (or the body ends).
    pub(super) claim: Option<IdClaim>,
    /// A tool call's count, recorded when the body ends: the latency its client sees.
    pub(super) count: Option<(PendingCount, Arc<Metrics>, Instant)>,
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Some((pending, metrics, arrived)) = self.count.take() {
            pending.close(&metrics, arrived.elapsed());
        }
    }
}

impl HttpBody for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Pending => {
                if self.deadline.as_mut().poll(cx).is_ready() {
                    log(json!({ "event": "http_timeout", "while": "streaming" }));
                    self.ended = true;
                    match self.last_event.take() {
                        Some(event) => Poll::Ready(Some(Ok(http_body::Frame::data(event)))),
                        None => Poll::Ready(Some(Err(axum::Error::new("the request took too long")))),
                    }
                } else {
                    Poll::Pending
                }
            }
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(claim), Some(data)) = (self.claim.as_mut(), frame.data_ref()) {
                    claim.see(data);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            ready => ready,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// A token bucket per token name.
pub(super) struct RateLimiter {
    /// Tokens added per second by default (0: no limit).
    pub(super) rate: f64,
    buckets: Mutex<HashMap<Arc<str>, Bucket>>,
}

struct Bucket {
    level: f64,
    updated: Instant,
}

/// A rate as given (NaN, infinite or not above 0: no limit).
fn usable(rate: f64) -> f64 {
    if rate.is_finite() && rate > 0.0 { rate } else { 0.0 }
}

impl RateLimiter {
    pub(super) fn new(rate: f64) -> Self {
        RateLimiter { rate: usable(rate), buckets: Mutex::new(HashMap::new()) }
    }

    /// Admits one request by `name`, at its own `rate` where the token has
    /// one (else the server's), in bursts of twice the rate; or says how long
    /// to wait.
    pub(super) fn admit(&self, name: &Arc<str>, rate: Option<f64>) -> Result<(), Duration> {
        let rate = rate.map_or(self.rate, usable);
        if rate == 0.0 {
            return Ok(());
        }
        let burst = (2.0 * rate).max(1.0);
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let bucket = buckets.entry(name.clone()).or_insert(Bucket { level: burst, updated: now });
        let refill = now.duration_since(bucket.updated).as_secs_f64() * rate;
        bucket.level = (bucket.level + refill).min(burst);
        bucket.updated = now;
        if bucket.level >= 1.0 {
            bucket.level -= 1.0;
            Ok(())
        } else {
            // A wait too long to represent (a tiny rate from a library caller) is capped at a day.
            Err(Duration::try_from_secs_f64((1.0 - bucket.level) / rate)
                .unwrap_or(Duration::from_secs(86_400))
                .min(Duration::from_secs(86_400)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_allows_a_burst_then_asks_to_wait() {
        let limiter = RateLimiter::new(1.0);
        let name: Arc<str> = Arc::from("t");
        assert!(limiter.admit(&name, None).is_ok());
        assert!(limiter.admit(&name, None).is_ok());
        let wait = limiter.admit(&name, None).unwrap_err();
        assert!(wait > Duration::ZERO && wait <= Duration::from_secs(1));
        assert!(limiter.admit(&Arc::from("other"), None).is_ok(), "buckets are per token");
        assert!(RateLimiter::new(0.0).admit(&name, None).is_ok());
        // A token's own rate: 0 lifts the limit, a higher one allows a bigger burst.
        assert!((0..100).all(|_| limiter.admit(&Arc::from("free"), Some(0.0)).is_ok()));
        let fast: Arc<str> = Arc::from("fast");
        assert_eq!((0..30).filter(|_| limiter.admit(&fast, Some(10.0)).is_ok()).count(), 20);
        // …and a token's own rate holds where the server has none.
        let unlimited = RateLimiter::new(0.0);
        assert_eq!((0..3).filter(|_| unlimited.admit(&name, Some(1.0)).is_ok()).count(), 2);
    }
}
