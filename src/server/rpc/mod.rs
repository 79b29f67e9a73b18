//! What both transports need to answer a request themselves, where rmcp
//! would answer it wrongly or not at all: its id exactly as the client sent it,
//! read by a bounded scan that needs neither the whole message in memory nor
//! a parser able to hold the id ([`scan`]); the answer line carrying that id
//! ([`reply`]); and the refusal of a second request with an id still in flight
//! (rmcp keeps one pending answer per id: of two, one went unanswered or got
//! the other's answer). The stdio transport and the HTTP gate each keep the
//! ids their connection or session has in flight.

mod reply;
mod scan;

pub(super) use reply::{
    INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, Reply, duplicate_id, unusable_id_message,
};
pub(super) use scan::{IdField, MessageScan, Scanned, SentId};
