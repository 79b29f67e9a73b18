//! The index folder: where it may be, whose it is, and what may be deleted in it.
//!
//! The index is derived data, so kb-mcp rebuilds it freely; that makes the
//! folder it lives in the one place where kb-mcp deletes files, and the one
//! place where a mistyped `--index-dir` could cost a person their notes. The
//! rules here keep deletion to what kb-mcp can prove it wrote: a folder is the
//! index's only when it lies outside the vault's readable areas and the inbox,
//! is a real folder (not a symbolic link, not a file), holds nothing but the
//! index's own file names, and carries the ownership marker written when the
//! index was created. Clearing removes only those names, as regular files, and
//! never follows a link. A folder that fails a rule is refused with an error
//! naming it and saying what to pass instead. When the vault itself cannot hold
//! `.kb/`, a per-user cache folder keyed by the vault's real path is used.

mod claim;
mod embeddings;
mod errors;
mod folder;
mod pdf_texts;
mod servers;

pub use claim::cache_folder;
pub(super) use claim::claim;
pub use embeddings::{EMBEDDINGS_DIR, read_model_folder};
pub use errors::{disk_full, is_disk_full, is_read_only};
pub use folder::{
    DEFAULT_INDEX_DIR, INDEX_MARKER, IndexAccess, IndexFolder, MENTIONS_CACHE, SERVERS_DIR,
    canonical_or_same, folder_size, is_index_file_name,
};
pub use pdf_texts::PDF_TEXTS_DIR;
pub use servers::{ServerSlot, running_servers};
