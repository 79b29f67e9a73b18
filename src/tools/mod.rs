//! The tools of the contract: names, titles, descriptions, annotations,
//! schemas, access levels, and the mapping from a call to one engine method.
//!
//! This layer and `server` are the only ones that know rmcp and JSON Schema.
//! Every tool is declared once in `TOOLS`; `tools/list` and `tools/call` both
//! read that table, so a tool not granted to the caller's access level is absent
//! from the list and refused when called anyway. Arguments are validated
//! against the very schema the tool publishes: a mismatch is an `isError` result
//! with code `invalid_argument` naming each argument and the rule it broke, so
//! the model can read and correct it (only an unknown tool is a JSON-RPC error);
//! failures the agent can act on come back as `isError` results carrying the
//! contract's error object. Descriptions are static text: no note content ever
//! reaches a tool's name, title or description.

mod render;

mod admit;
mod app;
mod invoke;
mod reference;
mod schema;
mod table;
mod vaults;

pub use admit::admit;
pub use app::{ApproveArgs, RejectArgs, ReviewArgs};
pub use invoke::{CallContext, error_code, error_of, error_result, invoke};
pub use reference::reference;
pub use table::{exists, level, list, shown_in_card};
pub use vaults::{
    EVERY_VAULT, LIST_VAULTS, VaultList, VaultSummary, list_for, listed, named, search_every,
    searches_every_vault, summarize, unknown_vault,
};
