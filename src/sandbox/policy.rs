//! What may be read, what may be written, what is never touched.
//!
//! The policy is plain data built from `kb.toml` by the vault layer; this module
//! answers, for a validated [`NotePath`], which area it belongs to. The built-in
//! hard-deny list applies whatever the configuration says.

use super::NotePath;

/// The areas of a vault a path can belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Area {
    /// A note: readable, and a target proposals may be applied to.
    Note,
    /// A standard: readable, listed by `list_standards`, never written.
    Standard,
    /// A `read_also` folder: readable, never written.
    ReadAlso,
    /// The proposals inbox: written only by the write layer, never read as a note.
    Inbox,
}

/// The folders of a vault and the extra deny rules, as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Folders whose `*.md` are notes; `""` is the whole vault (no `kb.toml`).
    pub notes: Vec<String>,
    /// Folders whose `*.md` are standards.
    pub standards: Vec<String>,
    /// The inbox folder.
    pub inbox: String,
    /// More folders an agent may read, never write.
    pub read_also: Vec<String>,
    /// More names or globs never readable, on top of the built-in hard-deny list.
    pub deny: Vec<String>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            notes: vec![String::new()],
            standards: vec!["docs".to_owned()],
            inbox: "inbox".to_owned(),
            read_also: Vec::new(),
            deny: Vec::new(),
        }
    }
}

impl Policy {
    /// The area of a path, or `None` when it is denied or outside every area.
    pub fn area_of(&self, path: &NotePath) -> Option<Area> {
        let _ = path;
        todo!()
    }

    /// Whether a vault-relative path (a file or a folder) is denied by the
    /// built-in list or the configuration. Case-insensitive, segment by segment.
    pub fn is_denied(&self, path: &str) -> bool {
        let _ = path;
        todo!()
    }
}
