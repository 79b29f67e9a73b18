//! The errors the filesystem modules share: missing files, existing targets,
//! files too large, paths outside the allowed areas or not writable.

use std::io;

use crate::error::{Error, ErrorCode};
use crate::sandbox::{Area, NotePath, Sandbox};

/// Missing, or a file where a folder was expected (`a.md/b.md`).
pub(in crate::sandbox) fn is_missing(err: &io::Error) -> bool {
    matches!(err.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory)
}

pub(in crate::sandbox) fn missing(path: &NotePath) -> Error {
    Error::not_found(format!("{path} does not exist"))
        .with_hint("check the path: search_knowledge or list_notes shows the notes that exist")
}

pub(in crate::sandbox) fn target_exists(path: &NotePath) -> Error {
    Error::new(ErrorCode::TargetExists, format!("{path} already exists"))
        .with_hint("choose another title or folder, or propose a patch to the existing note")
}

pub(super) fn too_large(what: &dyn std::fmt::Display, size: u64, limit: u64) -> Error {
    Error::new(ErrorCode::TooLarge, format!("{what} is {size} bytes, more than the limit of {limit} bytes"))
        .with_hint("read it in parts with offset and max_bytes, or raise [limits] read_max_bytes in kb.toml")
}

/// Why a path's text puts it outside every area it could be used in.
pub(super) fn outside_areas(sandbox: &Sandbox, path: &NotePath) -> Error {
    if sandbox.policy.is_denied(path.as_str()) {
        Error::denied(format!(
            "{path} is denied: internal folders (.git, .obsidian, .kb, dot-files), secrets and kb.toml deny rules are never readable"
        ))
    } else {
        Error::denied(format!("{path} is outside the notes, standards and read_also folders"))
    }
}

/// Why a path may not be written.
pub(super) fn not_writable(sandbox: &Sandbox, path: &NotePath) -> Error {
    match sandbox.policy.area_of(path) {
        Some(Area::Standard) => Error::denied(format!("{path} is a standard; standards are read-only")),
        Some(Area::ReadAlso) => Error::denied(format!("{path} is in a read_also folder, which is read-only")),
        Some(Area::Inbox) => {
            Error::denied(format!("{path} is in the proposals inbox, not in a notes folder"))
        }
        Some(Area::Memory) => Error::denied(format!(
            "{path} is in the agent's memory folder, which only `remember` adds to (the person edits it in their editor)"
        )),
        Some(Area::Note) => Error::denied(format!("{path} may not be written")),
        None => outside_areas(sandbox, path),
    }
}
