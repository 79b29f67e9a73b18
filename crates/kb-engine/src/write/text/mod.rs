//! Pure functions on a note's text, no inbox and no files: the edits a patch
//! is made of (`edit.rs`), line diffs for people and for undoing a patch
//! (`diff.rs`), three-way merges (`merge.rs`), YAML values as frontmatter
//! lines (`yaml.rs`), and file names from titles (`slug.rs`).

mod diff;
mod edit;
mod merge;
pub(crate) mod slug;
pub(crate) mod yaml;

pub use edit::{Edit, apply_edits};

pub(crate) use diff::{LineDiff, undo_diff};
pub use diff::{line_changes, unified_diff};
pub(crate) use merge::{Merged, merge};
