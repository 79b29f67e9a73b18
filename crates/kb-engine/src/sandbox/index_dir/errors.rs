//! Disk errors about the index folder said plainly: a full disk, a folder that
//! cannot be written.

use std::io;
use std::path::Path;

pub use crate::error::is_disk_full;
use crate::error::{Error, ErrorCode};

/// An I/O error on the index folder, with a full disk and a read-only folder
/// said plainly.
pub(in crate::sandbox) fn io_error(path: &Path, err: &io::Error) -> Error {
    if is_disk_full(err) {
        return disk_full(path);
    }
    Error::io(path.display(), err)
}

/// The error for a full disk, naming the folder.
pub fn disk_full(path: &Path) -> Error {
    Error::new(
        ErrorCode::IndexUnavailable,
        format!("the disk holding {} is full (no space left on device)", path.display()),
    )
    .with_hint("free some space on that disk; kb-mcp tries again on the next call (no restart needed)")
}

/// Whether an I/O error means the place cannot be written (permissions or a
/// read-only file system).
pub fn is_read_only(err: &io::Error) -> bool {
    matches!(err.kind(), io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem)
}
