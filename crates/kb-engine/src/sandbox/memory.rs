//! The agent's memory folder on disk: listing the entries under one of its
//! folders. Entries are written by [`Sandbox::write_atomic`] in create-new
//! mode only (the memory grows, an entry is never replaced) and read with
//! [`Sandbox::read`], both of which check the area and the real path.
//!
//! The listing never follows a symbolic link and lists only Markdown files
//! whose path lies in [`Area::Memory`] by its text; a folder the person made
//! inside it is walked like any other.

use walkdir::WalkDir;

use super::fs::{FileStat, file_stat, is_missing, relative};
use super::{Area, NotePath, Sandbox};
use crate::error::{Error, Result};

/// One entry file of the memory, as listed.
#[derive(Debug, Clone)]
pub struct MemoryFile {
    /// Its vault path.
    pub path: NotePath,
    /// Its size and times when listed.
    pub stat: FileStat,
}

impl Sandbox {
    /// The modification time of a folder of the memory (a real folder, not
    /// a link); `None` when it does not exist. It changes whenever an entry
    /// is added, removed or renamed in it.
    pub fn memory_folder_time(&self, folder: &NotePath) -> Option<std::time::SystemTime> {
        if self.area_of(folder) != Some(Area::Memory) {
            return None;
        }
        let disk =
            folder.as_str().split('/').fold(self.root().to_path_buf(), |disk, segment| disk.join(segment));
        std::fs::symlink_metadata(&disk)
            .ok()
            .filter(|meta| meta.is_dir())
            .and_then(|meta| meta.modified().ok())
    }

    /// The Markdown files under `folder` (a folder of the memory), at any
    /// depth, sorted by path; empty when the folder does not exist. Symbolic
    /// links (to files or folders) are left out, as are names that are not
    /// valid vault paths.
    pub fn list_memory(&self, folder: &NotePath) -> Result<Vec<MemoryFile>> {
        if self.area_of(folder) != Some(Area::Memory) {
            return Err(Error::denied(format!("{folder} is not in the agent's memory folder")));
        }
        let disk =
            folder.as_str().split('/').fold(self.root().to_path_buf(), |disk, segment| disk.join(segment));
        match std::fs::symlink_metadata(&disk) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(Error::denied(format!("{folder} is not a real folder of the memory"))),
            Err(err) if is_missing(&err) => return Ok(Vec::new()),
            Err(err) => return Err(Error::io(folder, &err)),
        }
        let mut found = Vec::new();
        for entry in WalkDir::new(&disk).follow_links(false).min_depth(1) {
            // A folder deleted or unreadable mid-walk holds nothing to list.
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_file() {
                continue;
            }
            let Some(path) = relative(self.root(), entry.path()).and_then(|rel| NotePath::parse(&rel).ok())
            else {
                continue;
            };
            if !path.is_markdown() || self.area_of(&path) != Some(Area::Memory) {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            found.push(MemoryFile { path, stat: file_stat(&meta) });
        }
        found.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(found)
    }
}
