//! Per-request timing for the debug log: where each request's time went, from
//! its line read on stdin to its answer written on stdout, in one `timing` line.
//!
//! The stdio transport notes when a request arrives; the handler adds what it
//! measured for a tool call (the hand-off from the transport to the handler,
//! the wait for start-up and what it waited for, the hand-off to a blocking
//! thread, the configuration and file checks, the engine's stages from
//! [`crate::engine::timing`], rendering, the hand-back); the transport adds
//! the serialisation and, once the answer is on stdout, the write, and logs
//! the line. Over HTTP, where no transport of ours sees the request, the
//! handler logs its part alone. Nothing is kept unless the debug log is on.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::RequestId;
use serde_json::{Map, Value, json};

use super::{debug_log, log};

/// Requests kept at most; beyond it (answers that never came) the oldest go.
const OPEN_MAX: usize = 1024;

/// Requests in flight, by id.
#[derive(Default)]
pub(crate) struct Timings {
    open: Mutex<HashMap<RequestId, Open>>,
}

/// One request in flight: when it arrived and what was measured so far.
pub(crate) struct Open {
    method: String,
    arrived: Instant,
    fields: Map<String, Value>,
}

/// Milliseconds, rounded to microseconds.
pub(crate) fn ms(took: Duration) -> Value {
    json!((took.as_secs_f64() * 1e6).round() / 1e3)
}

impl Timings {
    pub(crate) fn new() -> Arc<Timings> {
        Arc::new(Timings::default())
    }

    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Open>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A request was read from stdin.
    pub(crate) fn arrived(&self, id: &RequestId, method: &str) {
        if !debug_log() {
            return;
        }
        let mut open = self.open();
        if open.len() >= OPEN_MAX {
            let oldest = open.iter().min_by_key(|(_, o)| o.arrived).map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                open.remove(&oldest);
            }
        }
        let fields = Map::new();
        open.insert(id.clone(), Open { method: method.to_owned(), arrived: Instant::now(), fields });
    }

    /// When the request `id` arrived, if the transport saw it.
    pub(crate) fn arrival(&self, id: &RequestId) -> Option<Instant> {
        self.open().get(id).map(|o| o.arrived)
    }

    /// The handler's measurements of request `id`: kept for the transport's
    /// line when the transport saw the request, logged at once otherwise.
    pub(crate) fn handled(&self, id: &RequestId, fields: Map<String, Value>) {
        if !debug_log() {
            return;
        }
        if let Some(open) = self.open().get_mut(id) {
            open.fields.extend(fields);
            return;
        }
        let mut line = Map::new();
        line.insert("event".to_owned(), json!("timing"));
        line.insert("level".to_owned(), json!("debug"));
        line.extend(fields);
        log(Value::Object(line));
    }

    /// The answer to `id` is being sent: what is known of it.
    pub(crate) fn answered(&self, id: &RequestId) -> Option<Open> {
        if !debug_log() {
            return None;
        }
        self.open().remove(id)
    }
}

/// An answer on its way to stdout, with its request's timing.
pub(crate) struct Sending {
    open: Open,
    serialize: Duration,
    bytes: usize,
    queued: Instant,
}

impl Sending {
    pub(crate) fn new(open: Open, serialize: Duration, bytes: usize) -> Sending {
        Sending { open, serialize, bytes, queued: Instant::now() }
    }

    /// Logs the request's `timing` line once its answer is written.
    pub(crate) fn written(self) {
        let Sending { open, serialize, bytes, queued } = self;
        let mut line = Map::new();
        line.insert("event".to_owned(), json!("timing"));
        line.insert("level".to_owned(), json!("debug"));
        line.insert("method".to_owned(), json!(open.method));
        line.insert("total_ms".to_owned(), ms(open.arrived.elapsed()));
        line.extend(open.fields);
        line.insert("serialize_ms".to_owned(), ms(serialize));
        line.insert("write_ms".to_owned(), ms(queued.elapsed()));
        line.insert("bytes".to_owned(), json!(bytes));
        log(Value::Object(line));
    }
}
