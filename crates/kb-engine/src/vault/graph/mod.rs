//! Link resolution and the link graph.
//!
//! Targets resolve as Obsidian resolves them: an exact vault path first (with or
//! without `.md`), then a path suffix or a bare file name, case-insensitively,
//! the shortest path winning when several notes share the name; heading and
//! block anchors are then checked against the target's headings and block ids.
//! Where Obsidian would leave a link unresolved, an alias that exactly one note
//! carries still resolves it (the contract's order for `ref`), so a link written
//! as `[[backup repo]]` is not reported broken when the note says it has that name.
//! A `ref` argument resolves the same way and then by alias, but there a tie is
//! an `ambiguous_ref` error listing the candidates instead of a silent pick.
//!
//! The [`Graph`] is computed from all records at once and is immutable; after
//! the vault changes, the engine makes the next one lazily from the last one
//! built ([`Graph::updated`]), or builds it whole when much changed.

mod after_change;
mod links;
mod resolver;
mod updated;

pub use after_change::{AfterChange, MovedAttachments};
pub use links::{Backlink, Graph};
pub use resolver::{Broken, Resolution, Resolver};
