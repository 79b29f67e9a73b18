//! The plan of a multi-file proposal: its file operations
//! (`operations.rs`), each as a person reviews it (`change.rs`), the form its
//! file holds and loading it back (`stored.rs`), the check before anything is
//! written (`check.rs`), and running each operation forward or backward
//! (`run.rs`), the one rule an apply, a recovery and a revert share.

mod change;
mod check;
mod operations;
mod run;
mod stored;

pub use change::FileChange;
pub use operations::{FileOp, FileOpKind, Linkers, Plan};

pub(crate) use change::op_change;
pub(crate) use check::{check, check_read};
pub(crate) use operations::{FolderMove, PLAN_SCHEMA, is_unknown_text};
pub(crate) use run::{backward, forward, prepare, trash_paths};
pub(crate) use stored::{PlanFile, current, file_hash, read_plan, read_plan_file};
