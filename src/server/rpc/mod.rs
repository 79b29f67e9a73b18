//! What both transports need to answer a request themselves, where rmcp
//! would answer it wrongly or not at all: its id exactly as the client sent it,
//! read by a bounded scan that needs neither the whole message in memory nor
//! a parser able to hold the id ([`scan`]); the answer line carrying that id
//! ([`reply`]).

mod reply;
mod scan;

pub(super) use reply::{INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, Reply, unusable_id_message};
pub(super) use scan::{IdField, MessageScan, Scanned, SentId};
