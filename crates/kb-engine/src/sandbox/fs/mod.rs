//! Real paths, reads, the vault walk and atomic writes: where a [`NotePath`]
//! really leads, and every way the sandbox touches the disk.
//!
//! A [`NotePath`] says only what a path looks like; this folder finds out where it
//! really leads. [`resolve`] canonicalises a path (following every symlink) and
//! checks the result again: inside the root, not denied, in an area the caller may
//! use, a regular file; [`read`] then checks that the open handle is still that
//! file, so a symlink swapped in between check and use is caught. [`write`]
//! refuses any symlink on the way instead of following it and lands atomically
//! (temporary file, fsync, rename or link), so a note is never seen half written.
//! [`walk`] never follows symlinked folders and prunes denied ones before entering
//! them. [`forms`] holds the platform's path forms (Windows verbatim prefixes),
//! [`config`] the vault's own settings files, [`errors`] the errors they share.
//!
//! [`NotePath`]: super::NotePath

mod config;
mod errors;
mod forms;
mod read;
mod resolve;
mod walk;
mod write;

pub use config::{TEMPLATE_SETTINGS, read_template_settings, read_vault_config};
pub(super) use errors::{is_missing, missing, target_exists};
pub(super) use forms::relative;
pub use read::{FileStat, OpenedFile};
pub(super) use read::{file_stat, open_read, read, stat};
pub(super) use resolve::{
    check_plan_target, check_whole_note_target, is_attachment, is_folder, open, resolve_folder,
    resolve_note_target, resolve_read, resolve_whole_note_target, same_file, vault_path, walk_write_chain,
};
pub(super) use walk::scan;
pub use walk::{Scan, ScannedFile, SkippedFile};
pub(super) use write::{Access, TempFile, permissions_of, sync_dir, write_atomic};
pub use write::{NotePermissions, WriteMode, ensure_dir};
