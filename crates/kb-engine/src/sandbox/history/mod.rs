//! The vault's history (issue 38): every change to a note, kept as git
//! commits on a ref of its own, so a person can see who changed what and read
//! any past version. This is the only code naming `git2` (the sandbox owns
//! it as it owns the index folder: git reads and writes files).
//!
//! Each commit's tree is the whole vault as kb-mcp serves it (Markdown notes
//! and canvases, never a denied file), edited path by path from the one before,
//! so a change costs the trees along its paths, not a walk. A commit is made
//! by an applied proposal (its message names the proposal, its kind, its
//! reason and who approved it) or by what kb-mcp found changed on disk that it
//! did not write (the person's edits, a sync's writes: author `on disk`).
//!
//! Where the vault is a git work tree the commits go on `refs/kb-mcp/history`
//! of that repository: objects and that one ref, never `HEAD`, a branch, the
//! staging area, the work tree, hooks or config (libgit2 runs no hooks).
//! Elsewhere they go in a bare repository of kb-mcp's own beside the index
//! folder (`store.rs` says where). `message.rs` writes and reads what a commit
//! says about its change.

mod message;
mod store;

pub use message::{Change, ChangeBy};
pub use store::{Cursor, HistoryStore, PastVersion, StoreKind, StoredVersion, blob_id};

/// The ref the history is kept on, in either repository.
pub const HISTORY_REF: &str = "refs/kb-mcp/history";
