//! Conflict copies on disk: a file that may hold a person's save, moved
//! (the same file, where the file system allows) into the inbox under a name
//! the write layer chose (`write/inbox/conflicts.rs`), never replacing
//! anything. A writer that still holds the file open goes on writing into
//! the copy.

use std::fs;
use std::io;
use std::path::Path;

use super::fs::{WriteMode, sync_dir, walk_write_chain, write_atomic};
use super::inbox::require_inbox;
use super::{NotePath, Sandbox};
use crate::error::{Error, ErrorCode, Result};

impl Sandbox {
    /// Moves `file` (one of kb-mcp's temporary files, which may hold a
    /// person's save) to `copy` in the inbox, or to `copy` with `-2`, `-3`, …
    /// before `.md` when that name is taken; never replaces anything. The file
    /// keeps its mode (the note's). Returns where it went.
    pub(super) fn keep_conflict_copy(&self, file: &Path, copy: &NotePath) -> Result<NotePath> {
        require_inbox(self, copy)?;
        let stem = copy.as_str().strip_suffix(".md").unwrap_or(copy.as_str());
        for n in 1..100 {
            let name = if n == 1 { format!("{stem}.md") } else { format!("{stem}-{n}.md") };
            let copy = NotePath::parse(&name)?;
            let disk = walk_write_chain(self, &copy, true)?;
            match fs::hard_link(file, &disk) {
                Ok(()) => {
                    fs::remove_file(file).map_err(|err| Error::io(&copy, &err))?;
                    sync_dir(disk.parent().unwrap_or(self.root()));
                    return Ok(copy);
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
                // No hard links here, or another file system: copy, then remove.
                Err(_) => {
                    let bytes = fs::read(file).map_err(|err| Error::io(&copy, &err))?;
                    match write_atomic(self, &copy, &bytes, WriteMode::CreateNew, None) {
                        Ok(()) => {
                            fs::remove_file(file).map_err(|err| Error::io(&copy, &err))?;
                            return Ok(copy);
                        }
                        Err(err) if err.code == ErrorCode::TargetExists => {}
                        Err(err) => return Err(err),
                    }
                }
            }
        }
        Err(Error::internal(format!("no free name for a conflict copy near {copy}")))
    }
}
