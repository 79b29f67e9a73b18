//! Whose folder the inbox is: kb-mcp stages proposals in a folder of the vault,
//! and `Inbox` is one of the most common folder names people use for their own
//! notes (on macOS and Windows `Inbox/` and `inbox/` are one folder). Before the
//! write layer puts anything there, the server asks this module whether a folder
//! matching the configured inbox name, compared case-insensitively segment by
//! segment, holds entries kb-mcp does not create.

use std::fs;
use std::path::Path;

use super::Sandbox;
use super::swap::is_temp_name;

/// The top-level names kb-mcp creates in its inbox (compared case-insensitively):
/// the pending folders, the archives, the trash, the conflict copies kept
/// apart (`write/inbox/conflicts.rs`) and the files applies parked
/// (`parked.rs`); names starting with `_` are its own files too
/// (the audit log, the lock, the journal), and so are the temporary files
/// atomic writes of these leave for an instant.
const OWN_NAMES: [&str; 11] = [
    "new",
    "patch",
    "move",
    "delete",
    "batch",
    "revert",
    "applied",
    "rejected",
    "trash",
    "conflicts",
    super::parked::FOLDER,
];
/// Files the operating system leaves in any folder.
const SYSTEM_NAMES: [&str; 3] = [".ds_store", "desktop.ini", "thumbs.db"];

/// A folder on disk that matches the configured inbox and holds other files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignInbox {
    /// The folder as it is spelt on disk, vault-relative (`Inbox`).
    pub folder: String,
    /// How many entries in it kb-mcp did not create.
    pub count: usize,
    /// The first of them (sorted, at most five), vault-relative.
    pub first: Vec<String>,
}

impl Sandbox {
    /// The folders that match the configured inbox case-insensitively and hold
    /// entries kb-mcp does not create (notes of the person's own), sorted. Reads
    /// folder listings only; never creates anything.
    pub fn foreign_inboxes(&self) -> Vec<ForeignInbox> {
        let inbox = self.policy().inbox.trim_matches('/');
        if inbox.is_empty() {
            return Vec::new();
        }
        let mut found = vec![(self.root().to_path_buf(), String::new())];
        for segment in inbox.split('/') {
            let wanted = segment.to_lowercase();
            let mut next = Vec::new();
            for (dir, rel) in &found {
                for name in names(dir) {
                    let path = dir.join(&name);
                    let is_dir = fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
                    if is_dir && name.to_lowercase() == wanted {
                        let rel = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
                        next.push((path, rel));
                    }
                }
            }
            found = next;
        }
        let mut out: Vec<ForeignInbox> = found
            .into_iter()
            .filter_map(|(dir, rel)| {
                let foreign: Vec<String> = names(&dir)
                    .into_iter()
                    .filter(|name| {
                        let lower = name.to_lowercase();
                        // The temporary file of an atomic write of its own files (the journal).
                        let own_temp = lower.starts_with("._") && is_temp_name(name, None);
                        !(lower.starts_with('_')
                            || own_temp
                            || OWN_NAMES.contains(&lower.as_str())
                            || SYSTEM_NAMES.contains(&lower.as_str()))
                    })
                    .collect();
                (!foreign.is_empty()).then(|| ForeignInbox {
                    first: foreign.iter().take(5).map(|name| format!("{rel}/{name}")).collect(),
                    count: foreign.len(),
                    folder: rel,
                })
            })
            .collect();
        out.sort_by(|a, b| a.folder.cmp(&b.folder));
        out
    }
}

/// The entry names of a folder (lossy), sorted; empty when it cannot be listed.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|entries| {
            entries.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}
