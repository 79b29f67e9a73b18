//! Proposing a change: what each propose tool computes, and staging it.
//!
//! A new note or a patch is built and checked as the note it would write
//! (`note.rs`); a move (`moves/`), a delete (`delete.rs`), a batch of both and
//! of new notes and patches (`batch.rs`) and a revert (`revert.rs`) are
//! planned as a multi-file plan on the vault as the planner sees it
//! (`view.rs`), with the links they break or re-point (`effects.rs`) and the
//! notes linking to what they move or trash (`linkers.rs`); a restore
//! (`restore.rs`) is a patch or a new note of an old text. `stage.rs` writes
//! any of them to the inbox, and nothing else.

mod batch;
mod delete;
mod effects;
mod linkers;
mod moves;
mod note;
mod restore;
mod revert;
mod stage;
pub(crate) mod view;

pub use batch::{BATCH_MAX_ITEMS, BatchItem, BatchPlan, ItemPlanned, links_changed, plan_batch};
pub use delete::plan_delete;
pub use effects::link_effects;
pub use linkers::{Linker, linkers_in};
pub use moves::{LinkEdit, MovePlan, apply_link_edits, plan_move, relink};
pub use note::{NewNote, PatchRequest};
pub use restore::propose_restore;
pub use revert::{RecordedTexts, RevertPlan, plan_revert};
pub use stage::{Staged, StagedPlan, propose_new, propose_patch, required_reason, stage_plan};
pub use view::{Break, VaultView};

pub(crate) use linkers::check as check_linkers;
