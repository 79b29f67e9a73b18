//! The ids of the requests in flight in each session. rmcp routes one answer
//! per id and session: of several requests with one id, the answer went to the
//! last and the others waited for the request timeout (120 s). So a request
//! whose id is in flight in its session is refused at the gate, and the first
//! is served. An id is in flight from the moment its request passes the gate
//! until its answer is on its way: the event of the response carrying it
//! (each event is scanned as it streams past, before the client can see it,
//! so a client reusing the id at once is never refused), or the end of the
//! response, whichever comes first.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::model::RequestId;

use crate::server::rpc::{IdField, MessageScan};

/// A session id and a request id.
type Key = (Arc<str>, RequestId);

/// The ids in flight, per session.
#[derive(Default)]
pub(super) struct IdsInFlight(Arc<Mutex<HashSet<Key>>>);

impl IdsInFlight {
    /// Claims `id` in `session` for a request until its answer goes out; `None`
    /// when a request with that id is in flight there.
    pub(super) fn claim(&self, session: &str, id: RequestId) -> Option<IdClaim> {
        let key = (Arc::<str>::from(session), id);
        lock(&self.0).insert(key.clone()).then(|| IdClaim { ids: self.0.clone(), key: Some(key) })
    }
}

/// One request's id, in flight until [`IdClaim::see`] finds its answer or the claim is dropped.
pub(super) struct IdClaim {
    ids: Arc<Mutex<HashSet<Key>>>,
    /// `None` once released.
    key: Option<Key>,
}

impl IdClaim {
    /// Looks at one piece of the response: a server-sent event whose data is
    /// the answer to the request (its id, no method) frees the id.
    pub(super) fn see(&mut self, piece: &[u8]) {
        let Some((_, id)) = &self.key else { return };
        let answers =
            piece.split(|&b| b == b'\n').filter_map(|line| line.strip_prefix(b"data:")).any(|data| {
                let scanned = MessageScan::of(data);
                let answered = match &scanned.id {
                    IdField::Sent(sent) => sent.request_id().as_ref() == Some(id),
                    _ => false,
                };
                answered && !scanned.method && scanned.response
            });
        if answers {
            self.release();
        }
    }

    fn release(&mut self) {
        if let Some(key) = self.key.take() {
            lock(&self.ids).remove(&key);
        }
    }
}

impl Drop for IdClaim {
    fn drop(&mut self) {
        self.release();
    }
}

fn lock(ids: &Mutex<HashSet<Key>>) -> MutexGuard<'_, HashSet<Key>> {
    ids.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use rmcp::model::NumberOrString;

    use super::*;

    #[test]
    fn an_id_is_in_flight_until_its_answer_streams_past_or_the_response_ends() {
        let ids = IdsInFlight::default();
        let mut first = ids.claim("s1", NumberOrString::Number(7)).unwrap();
        assert!(ids.claim("s1", NumberOrString::Number(7)).is_none(), "a second request with the id");
        assert!(ids.claim("s2", NumberOrString::Number(7)).is_some(), "another session");
        assert!(ids.claim("s1", NumberOrString::String("7".into())).is_some(), "another id");
        first.see(b"data:\nid: 0\n\n");
        first.see(br#"data: {"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{}}"#);
        first.see(br#"data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"id":7}}"#);
        first.see(br#"data: {"jsonrpc":"2.0","id":8,"result":{}}"#);
        assert!(ids.claim("s1", NumberOrString::Number(7)).is_none(), "not answered yet");
        first.see(b"id: 0/3\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n");
        let again = ids.claim("s1", NumberOrString::Number(7));
        assert!(again.is_some(), "answered: the id is free before the client sees the answer");
        drop(again);
        let unanswered = ids.claim("s1", NumberOrString::Number(9)).unwrap();
        drop(unanswered);
        assert!(ids.claim("s1", NumberOrString::Number(9)).is_some(), "a response that ended frees its id");
    }
}
