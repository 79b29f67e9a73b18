//! tantivy's errors said plainly: a full disk and a folder that cannot be
//! written name the folder and what to do.

use std::path::Path;

use tantivy::TantivyError;

use crate::error::{Error, ErrorCode};
use crate::sandbox;

pub(super) fn tantivy_error(context: &str, err: TantivyError) -> Error {
    Error::index(format!("{context}: {err}"))
}

/// A tantivy error on the index folder: a full disk and a folder that cannot be
/// written are said plainly, naming the folder.
pub(super) fn folder_error(dir: &Path, context: &str, err: TantivyError) -> Error {
    if tantivy_disk_full(&err) {
        return sandbox::disk_full(dir);
    }
    if tantivy_read_only(&err) {
        return Error::new(
            ErrorCode::IndexUnavailable,
            format!("{context}: the index folder {} cannot be written ({err})", dir.display()),
        )
        .with_hint("searches keep using the index as it is; make the folder writable, or pass --index-dir with a folder you can write, to bring it up to date");
    }
    tantivy_error(context, err)
}

/// Whether a tantivy error comes from a full disk.
fn tantivy_disk_full(err: &TantivyError) -> bool {
    if let TantivyError::IoError(io) = err
        && sandbox::is_disk_full(io)
    {
        return true;
    }
    let text = format!("{err:?}");
    text.contains("StorageFull") || text.contains("QuotaExceeded") || text.contains("No space left on device")
}

/// Whether a tantivy error comes from a folder that cannot be written.
pub(super) fn tantivy_read_only(err: &TantivyError) -> bool {
    let text = format!("{err:?}");
    text.contains("PermissionDenied")
        || text.contains("ReadOnlyFilesystem")
        || text.contains("Read-only file system")
}
