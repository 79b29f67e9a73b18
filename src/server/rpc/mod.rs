//! What both transports need to answer a request themselves, where rmcp
//! would answer it wrongly or not at all: its id exactly as the client sent it,
//! read by a bounded scan that needs neither the whole message in memory nor
//! a parser able to hold the id ([`scan`]); the answer line carrying that id
//! ([`reply`]); and the refusal of a second request with an id still in flight
//! (rmcp keeps one pending answer per id: of two, one went unanswered or got
//! the other's answer). The stdio transport and the HTTP gate each keep the
//! ids their connection or session has in flight. Both also count a message's
//! JSON values before anything builds a tree of it ([`values`]).

mod reply;
mod scan;
mod values;

pub(super) use reply::{
    INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, Reply, duplicate_id, unusable_id_message,
};
pub(super) use scan::{IdField, MessageScan, Scanned, SentId};
pub(super) use values::{Count, MAX_VALUES, count_values};

/// The refusal of a message holding more than [`MAX_VALUES`] JSON values,
/// with the request's id as sent (read by the scan, which needs no tree), or
/// `None` for a message that needs no answer (a notification or a response).
pub(super) fn too_many_values(message: &[u8]) -> Option<Result<Reply, &'static str>> {
    if count_values(message, MAX_VALUES) != Count::TooMany {
        return None;
    }
    let scanned = MessageScan::of(message);
    if scanned.needs_no_answer() {
        return Some(Err("notification_or_response_with_too_many_values"));
    }
    let id = match scanned.id {
        IdField::Sent(id) => Some(id),
        _ => None,
    };
    let text = format!(
        "the message holds more than {MAX_VALUES} JSON values (keys, strings, numbers, lists and objects each \
         count one), the most one message may hold; nothing was done. Send less at a time: a propose_batch \
         as several smaller batches, frontmatter with fewer keys"
    );
    let data = serde_json::json!({ "limit_values": MAX_VALUES });
    Some(Ok(Reply::error(id, INVALID_REQUEST, &text).with_data(data)))
}
