//! The read tools, a file per family: the searches (`search.rs`), reading a
//! note (`note.rs`), a note's links (`related.rs`), the catalog's lists
//! (`lists.rs`) and the vault overview (`overview.rs`).
//!
//! Every result is bounded so that it fits an agent's context: searches return
//! snippets and never whole notes, `read_note` pages by bytes, lists are capped.

mod lists;
mod note;
mod overview;
mod pdf;
mod related;
mod search;

pub(super) use lists::{created_nanos, created_rfc3339};
