//! What may be read, what may be written, what is never touched.
//!
//! The policy is plain data built from `kb.toml` by the vault layer; this module
//! answers, for a validated [`NotePath`], which area it belongs to. The built-in
//! hard-deny list applies whatever the configuration says.
//!
//! Two rules of thumb keep it predictable: the allow-list (notes, standards,
//! read_also, inbox) matches whole segments and is case-sensitive, like the file
//! systems vaults live on; the deny rules are case-insensitive, so that a vault on
//! a case-insensitive file system cannot be tricked with `.GIT` or `Node_Modules`.

use super::NotePath;

/// The agent's memory folder when `kb.toml` names none.
pub const DEFAULT_MEMORY_FOLDER: &str = "Agent memory";

/// Exact names (compared case-insensitively) that are never readable or writable.
const HARD_DENIED: [&str; 7] = [".git", ".obsidian", ".trash", ".kb", ".kb-history", "node_modules", ".ssh"];
/// Name prefixes of secrets: environment files and private SSH keys.
const SECRET_PREFIXES: [&str; 5] = [".env", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"];
/// Extensions of key and certificate files.
const SECRET_SUFFIXES: [&str; 4] = [".pem", ".key", ".p12", ".pfx"];

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
    /// The agent's memory folder: written only by `remember`, read only through
    /// the memory (never indexed or served as notes, so that one principal's
    /// memory of the person stays its own).
    Memory,
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
    /// The agent's memory folder (`[memory] folder`); `None` only when a
    /// policy is built without a configuration.
    pub memory: Option<String>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            notes: vec![String::new()],
            standards: vec!["docs".to_owned()],
            inbox: "inbox".to_owned(),
            read_also: Vec::new(),
            deny: Vec::new(),
            memory: Some(DEFAULT_MEMORY_FOLDER.to_owned()),
        }
    }
}

impl Policy {
    /// The area of a path, or `None` when it is denied or outside every area.
    pub fn area_of(&self, path: &NotePath) -> Option<Area> {
        if self.is_denied(path.as_str()) {
            return None;
        }
        self.area_by_folder(path.as_str())
    }

    /// The area of a file a folder move carries along with the notes: its
    /// area, or, for a hidden file that no rule denies (a name starting with
    /// `.`, such as `.DS_Store`), the area its folder gives it. Moving such a
    /// file shows nothing of its bytes. `None` for a path a built-in or `deny`
    /// rule names, or outside every area.
    pub(crate) fn carried_area(&self, path: &NotePath) -> Option<Area> {
        if self.is_denied_by_rule(path.as_str()) {
            return None;
        }
        self.area_by_folder(path.as_str())
    }

    /// The area whose folder holds `path`, denial aside.
    fn area_by_folder(&self, path: &str) -> Option<Area> {
        // Read-only designations win over notes when folders nest, and the inbox
        // and the memory win over everything: neither is ever read as notes.
        if contains(&self.inbox, path) {
            Some(Area::Inbox)
        } else if self.memory.as_deref().is_some_and(|memory| contains(memory, path)) {
            Some(Area::Memory)
        } else if self.standards.iter().any(|folder| contains(folder, path)) {
            Some(Area::Standard)
        } else if self.read_also.iter().any(|folder| contains(folder, path)) {
            Some(Area::ReadAlso)
        } else if self.notes.iter().any(|folder| is_whole_vault(folder) || contains(folder, path)) {
            Some(Area::Note)
        } else {
            None
        }
    }

    /// Whether a vault-relative path (a file or a folder) is denied by the
    /// built-in list or the configuration. Case-insensitive, segment by segment.
    pub fn is_denied(&self, path: &str) -> bool {
        self.is_denied_by_rule(path) || self.is_hidden(path)
    }

    /// Whether the built-in hard-deny list or a `deny` rule names the path
    /// (a hidden name alone is not such a rule).
    pub(crate) fn is_denied_by_rule(&self, path: &str) -> bool {
        let path = path.trim_matches('/');
        if path.is_empty() {
            return false;
        }
        let folded: Vec<String> = path.split('/').map(fold).collect();
        folded.iter().any(|segment| is_hard_denied(segment))
            || self.deny.iter().any(|pattern| deny_matches(pattern, &folded))
    }

    /// Whether a segment of the path is hidden (starts with `.`) and no
    /// configured folder names it.
    fn is_hidden(&self, path: &str) -> bool {
        let path = path.trim_matches('/');
        let segments: Vec<&str> = path.split('/').collect();
        segments
            .iter()
            .enumerate()
            .any(|(i, segment)| fold(segment).starts_with('.') && !self.names_folder(&segments[..=i]))
    }

    /// Whether a folder that is outside every area may still hold readable
    /// folders below it (`z` when notes are `z/notes`), so a walk must enter it.
    pub(super) fn has_readable_below(&self, folder: &str) -> bool {
        self.notes.iter().chain(&self.standards).chain(&self.read_also).any(|configured| {
            let configured = configured.trim_matches('/');
            is_whole_vault(configured)
                || configured.strip_prefix(folder).is_some_and(|rest| rest.starts_with('/'))
        })
    }

    /// Whether a configured folder names this exact leading run of segments, which
    /// is what lets a dot-folder such as `.notes` be used on purpose.
    fn names_folder(&self, leading: &[&str]) -> bool {
        let configured = self.notes.iter().chain(&self.standards).chain(&self.read_also);
        configured.chain(std::iter::once(&self.inbox)).chain(&self.memory).any(|folder| {
            let mut names = folder.trim_matches('/').split('/');
            leading.iter().all(|&segment| names.next() == Some(segment))
        })
    }
}

/// The built-in hard-deny list for one case-folded segment; no configuration
/// overrides it.
fn is_hard_denied(segment: &str) -> bool {
    HARD_DENIED.contains(&segment)
        || SECRET_PREFIXES.iter().any(|prefix| segment.starts_with(prefix))
        || SECRET_SUFFIXES.iter().any(|suffix| segment.ends_with(suffix))
}

/// Case-folds a segment and drops what Windows would ignore when opening it
/// (trailing dots and spaces, a `:stream` suffix), so `.GIT.` still reads `.git`.
fn fold(segment: &str) -> String {
    let name = segment.split(':').next().unwrap_or(segment);
    name.trim_end_matches(['.', ' ']).to_lowercase()
}

/// `""` (or `/`) as a notes folder means the whole vault.
fn is_whole_vault(folder: &str) -> bool {
    folder.trim_matches('/').is_empty()
}

/// Whether `path` is `folder` or lies below it, by whole segments. An empty
/// folder contains nothing here; only notes give it the whole-vault meaning.
fn contains(folder: &str, path: &str) -> bool {
    let folder = folder.trim_matches('/');
    !folder.is_empty()
        && (path == folder || path.strip_prefix(folder).is_some_and(|rest| rest.starts_with('/')))
}

/// One `deny` entry against a case-folded path. A single segment (a name or a
/// glob such as `*.secret.md`) matches any segment; an entry with a slash is
/// anchored at the vault root and denies everything below what it matches
/// (`z/private`, `drafts/*`). `**` stands for any number of segments.
fn deny_matches(pattern: &str, segments: &[String]) -> bool {
    let pattern = pattern.trim_matches('/');
    if pattern.is_empty() {
        return false;
    }
    let pattern: Vec<String> = pattern.split('/').map(str::to_lowercase).collect();
    let pattern: Vec<&str> = pattern.iter().map(String::as_str).collect();
    if let [single] = pattern.as_slice()
        && *single != "**"
    {
        return segments.iter().any(|segment| glob(single, segment));
    }
    matches_prefix(&pattern, segments)
}

/// Whether the pattern segments match a leading run of the path's segments.
fn matches_prefix(pattern: &[&str], segments: &[String]) -> bool {
    match pattern.split_first() {
        None => true,
        Some((&"**", rest)) => (0..=segments.len()).any(|skip| matches_prefix(rest, &segments[skip..])),
        Some((first, rest)) => match segments.split_first() {
            Some((segment, more)) => glob(first, segment) && matches_prefix(rest, more),
            None => false,
        },
    }
}

/// `*` (any run of characters) and `?` (one character) within one segment.
fn glob(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                backtrack = Some((p, t));
                p += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match backtrack {
                Some((star, consumed)) => {
                    p = star + 1;
                    t = consumed + 1;
                    backtrack = Some((star, consumed + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}
