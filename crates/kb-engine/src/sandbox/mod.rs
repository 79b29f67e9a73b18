//! The sandbox: the only code that touches the filesystem.
//!
//! Outside strings (tool arguments, link targets, proposal metadata) become a
//! [`NotePath`] here, once, at the edge: a vault-relative, forward-slash path that
//! has passed every lexical check of the contract ("Paths and references").
//! Before any byte is read or written, the path is resolved to its real location
//! (following symlinks) and checked again against the vault root, the allowed
//! areas and the hard-deny list, because a text check alone says nothing about
//! where a symlink points. Atomic writes live here too, so that no other module
//! needs `std::fs`.
//!
//! `clippy.toml` bans the filesystem calls everywhere; this module alone lifts
//! the ban, so the compiler keeps the disk behind these checks.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the sandbox is the one module that touches the filesystem"
)]

mod carried;
mod conflict_copy;
mod displaced;
mod encoding;
mod fs;
mod history;
mod inbox;
mod inbox_owner;
mod index_dir;
mod lock;
mod machine;
mod memory;
mod names;
mod notes;
mod parked;
mod path;
mod pdf_child;
mod policy;
mod replica;
mod secrets;
mod swap;
mod trash;
mod vault_dir;

pub use carried::{FolderContents, RefusedFile};
pub use displaced::{Discards, LATE_SAVE_GRACE, LateSave};
pub use encoding::{Zone, file_time, hex, percent_decode, rfc3339, unhex};
pub use fs::{
    FileStat, NotePermissions, OpenedFile, Scan, ScannedFile, SkippedFile, TEMPLATE_SETTINGS, WriteMode,
    ensure_dir, read_template_settings, read_vault_config,
};
pub use history::{
    Change, ChangeBy, Cursor, HISTORY_REF, HistoryStore, PastVersion, StoreKind, StoredVersion, blob_id,
};
pub use inbox_owner::ForeignInbox;
pub use index_dir::{
    DEFAULT_INDEX_DIR, EMBEDDINGS_DIR, INDEX_MARKER, IndexAccess, IndexFolder, MENTIONS_CACHE, PDF_TEXTS_DIR,
    SERVERS_DIR, ServerSlot, cache_folder, canonical_or_same, disk_full, folder_size, is_disk_full,
    is_index_file_name, is_read_only, read_model_folder, running_servers,
};
pub use lock::InboxLock;
pub use machine::spare_cores;
pub use memory::MemoryFile;
pub use names::{is_zero_width, name_key, new_name_refusal, stray_zero_width, twin_among, twin_key};
pub use parked::{FOLDER as DISPLACED_FOLDER, PARK_AGE};
pub use path::{NotePath, ends_in_md, forbidden_char, is_device_name, is_invisible, strip_md};
pub(crate) use pdf_child::run_pdf_extractor;
pub use policy::{Area, DEFAULT_MEMORY_FOLDER, Policy};
pub use replica::{BranchCommit, CarefulWrite, Moved, Pushed, Replica, Written};
pub use secrets::{
    FileStamp, PrivateFile, PrivateLock, lock_private_file, private_file_stamp, read_private_file,
    read_user_file, replace_user_file, write_private_file,
};
pub use swap::{Prepared, Replaced};
pub use vault_dir::current_folder_vault;

use std::path::{Path, PathBuf};

use crate::error::Result;

/// A vault root plus the policy that says what inside it may be read or written.
#[derive(Debug, Clone)]
pub struct Sandbox {
    root: PathBuf,
    policy: Policy,
    /// Obsidian's templates folders: their notes are readable but left out of the walk.
    templates: Vec<String>,
}

impl Sandbox {
    /// Opens a vault folder. The root is canonicalised once; `not_found` when it is
    /// missing, `invalid_argument` when it is not a directory.
    pub fn open(root: &Path, policy: Policy) -> Result<Self> {
        fs::open(root, policy)
    }

    /// The canonical vault root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The policy in force.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Leaves the notes (Markdown files and canvases) of these folders (Obsidian's templates folders,
    /// vault-relative) out of [`Sandbox::scan`]: they are listed as skipped, and
    /// still readable by path.
    pub(crate) fn with_templates(mut self, folders: Vec<String>) -> Sandbox {
        self.templates = folders;
        self
    }

    /// The templates folder (as configured) a path lies in, compared
    /// case-insensitively segment by segment (`Templates` is `templates` on macOS
    /// and Windows).
    pub(crate) fn templates_folder_of(&self, path: &NotePath) -> Option<&str> {
        self.templates.iter().map(String::as_str).find(|folder| {
            let mut segments = path.as_str().split('/');
            folder
                .split('/')
                .all(|name| segments.next().is_some_and(|s| s.to_lowercase() == name.to_lowercase()))
        })
    }

    /// The area a path lies in, by its text alone; `None` when it is denied or
    /// outside every allowed folder.
    pub fn area_of(&self, path: &NotePath) -> Option<Area> {
        self.policy.area_of(path)
    }

    /// The read resolver: validates an outside string as a readable Markdown file
    /// (a note, a standard or a `read_also` file, ending in `.md`), resolves its real
    /// path and re-checks it. `path_denied` for anything hostile or outside the
    /// readable areas, `not_found` when it does not exist.
    pub fn resolve_read(&self, input: &str) -> Result<NotePath> {
        fs::resolve_read(self, input)
    }

    /// Reads a readable file's bytes after re-resolving it (so a symlink swapped in
    /// since [`Sandbox::resolve_read`] is caught). `too_large` above `max_bytes`.
    pub fn read(&self, path: &NotePath, max_bytes: u64) -> Result<Vec<u8>> {
        fs::read(self, path, max_bytes)
    }

    /// Opens a readable file after the same checks as [`Sandbox::read`], to read it
    /// in parts whatever its size.
    pub(crate) fn open_read(&self, path: &NotePath) -> Result<OpenedFile> {
        fs::open_read(self, path)
    }

    /// The vault-relative text of a path on disk (as a file watcher reports it),
    /// `""` for the root; `None` when it lies outside the vault or is not UTF-8.
    /// The text is not checked: parse it as a [`NotePath`] before using it.
    pub(crate) fn vault_path(&self, disk: &Path) -> Option<String> {
        fs::vault_path(self, disk)
    }

    /// Whether a path is an attachment the walk would list: a file that is not
    /// Markdown, in a readable area, leading (through symlinks) to a regular file
    /// in a readable area.
    pub(crate) fn is_attachment(&self, path: &NotePath) -> bool {
        fs::is_attachment(self, path)
    }

    /// Whether a vault path is a folder on disk (not following a final symlink).
    pub(crate) fn is_folder(&self, path: &NotePath) -> bool {
        fs::is_folder(self, path)
    }

    /// The folder resolver for `folder` arguments of reads: `None` (the whole
    /// vault) for an empty one; otherwise a folder that is, or holds, a readable
    /// area (notes, standards, read_also), both by its text and by its real path,
    /// and is not a file. `path_denied` for the inbox, denied or outside folders,
    /// files and symlinks leading out; a folder that does not exist is accepted (it
    /// holds nothing).
    pub fn resolve_folder(&self, input: &str) -> Result<Option<NotePath>> {
        fs::resolve_folder(self, input)
    }

    /// The approved-note-target resolver: a `.md` path inside a notes root (not a
    /// standard, not the inbox), whose parent's real path lies inside the vault, with
    /// no symlink on the way. The file itself may or may not exist.
    pub fn resolve_note_target(&self, input: &str) -> Result<NotePath> {
        fs::resolve_note_target(self, input)
    }

    /// [`Sandbox::resolve_note_target`], or a canvas of a notes root: what a
    /// delete trashes and a revert brings back whole (never written as Markdown).
    pub(crate) fn resolve_whole_note_target(&self, input: &str) -> Result<NotePath> {
        fs::resolve_whole_note_target(self, input)
    }

    /// Size and times of a file inside the vault; `None` when it does not exist.
    pub fn stat(&self, path: &NotePath) -> Result<Option<FileStat>> {
        fs::stat(self, path)
    }

    /// Walks the vault: every Markdown file in a readable area (skipping denied and
    /// internal folders, and symlinks that lead outside), plus the other files that
    /// links may point at (attachments). Sorted by path.
    pub fn scan(&self) -> Result<Scan> {
        fs::scan(self)
    }

    /// Finds, checks and (with [`IndexAccess::Create`]) creates the index
    /// folder: `requested` (`--index-dir`), else `<vault>/.kb`, else (when the
    /// vault cannot hold `.kb/`) the per-user cache folder. Refuses a folder that
    /// is the vault, holds it, lies inside a readable area or the inbox, is a
    /// symbolic link or a file, or holds files that are not the index's.
    pub(crate) fn claim_index_folder(
        &self,
        requested: Option<&Path>,
        access: IndexAccess,
    ) -> Result<IndexFolder> {
        index_dir::claim(self, requested, access)
    }

    /// Writes a file atomically: a temporary file in the same folder, fsync, then a
    /// rename (or, for [`WriteMode::CreateNew`], a link that fails when the target
    /// exists), then fsync of the folder. Only notes-root targets and inbox files
    /// may be written; the caller resolves the path first.
    pub fn write_atomic(&self, path: &NotePath, bytes: &[u8], mode: WriteMode) -> Result<()> {
        fs::write_atomic(self, path, bytes, mode, None)
    }

    /// What a file holding the text of all these files (notes, or their copies
    /// in the inbox: a trashed note, an archived plan) may allow: the
    /// permission bits every one of them has. With no file, the default mode
    /// stands.
    pub(crate) fn permissions_of(&self, files: &[NotePath]) -> Result<NotePermissions> {
        fs::permissions_of(self, files)
    }

    /// [`Sandbox::write_atomic`] for a file made from notes (a staged copy or
    /// plan, a note's copy in the trash, a note a revert brings back): it is
    /// never more readable than those notes, `notes` being what they all allow
    /// ([`Sandbox::permissions_of`]); the default mode loses every bit they lack.
    /// Its target may also be a canvas a revert brings back.
    pub(crate) fn write_atomic_from(
        &self,
        path: &NotePath,
        bytes: &[u8],
        mode: WriteMode,
        notes: &NotePermissions,
    ) -> Result<()> {
        fs::write_atomic(self, path, bytes, mode, Some(notes))
    }

    /// Replaces a note with `bytes` provided it still holds exactly `base`,
    /// without ever losing a save a person makes meanwhile; see [`Replaced`].
    /// The new file keeps the note's mode (and owner, where the process may).
    /// `conflict_copy` is the inbox path under which a save caught in the swap
    /// is kept. `before_swap` runs after the last re-check, right before the
    /// swap (an error from it stops there, changing nothing): the instant a
    /// person's save races, which tests use to land one there. The replaced
    /// file goes to `discards` (watched for a late save, see [`Discards`]),
    /// or, without, is removed at once.
    pub(crate) fn replace_note(
        &self,
        path: &NotePath,
        bytes: &[u8],
        base: &[u8],
        conflict_copy: &NotePath,
        before_swap: &mut dyn FnMut() -> Result<()>,
        discards: Option<&mut Discards>,
    ) -> Result<Replaced> {
        swap::replace_note(self, path, bytes, base, conflict_copy, before_swap, discards)
    }
}
