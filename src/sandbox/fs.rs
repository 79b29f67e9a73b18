//! Real paths, reads, the vault walk and atomic writes.

use std::path::Path;
use std::time::SystemTime;

use super::{NotePath, Policy, Sandbox};
use crate::error::Result;

/// Size and times of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    /// Size in bytes.
    pub size: u64,
    /// Last modification time.
    pub modified: SystemTime,
    /// Birth time, where the platform knows it.
    pub created: Option<SystemTime>,
}

/// One Markdown file found by [`Sandbox::scan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedFile {
    /// Its vault-relative path.
    pub path: NotePath,
    /// Its area (never `Inbox`).
    pub area: super::Area,
    /// Its size and times.
    pub stat: FileStat,
}

/// The result of a vault walk.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// Markdown files in readable areas, sorted by path.
    pub markdown: Vec<ScannedFile>,
    /// Other files in readable areas (attachments links may point at), sorted.
    pub attachments: Vec<NotePath>,
}

/// How [`Sandbox::write_atomic`] treats an existing target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Fail with `target_exists` if the target exists, never overwrite.
    CreateNew,
    /// Replace the target atomically.
    Replace,
}

/// Reads `<root>/kb.toml` (capped at 64 KiB); `None` when absent.
pub fn read_vault_config(root: &Path) -> Result<Option<String>> {
    let _ = root;
    todo!()
}

/// Creates a folder (and its parents) outside the vault's note areas, e.g. the index folder.
pub fn ensure_dir(dir: &Path) -> Result<()> {
    let _ = dir;
    todo!()
}

/// Removes everything inside a folder (the index folder before a full rebuild).
pub fn clear_dir(dir: &Path) -> Result<()> {
    let _ = dir;
    todo!()
}

pub(super) fn open(root: &Path, policy: Policy) -> Result<Sandbox> {
    let _ = (root, policy);
    todo!()
}

pub(super) fn resolve_read(sandbox: &Sandbox, input: &str) -> Result<NotePath> {
    let _ = (sandbox, input);
    todo!()
}

pub(super) fn read(sandbox: &Sandbox, path: &NotePath, max_bytes: u64) -> Result<Vec<u8>> {
    let _ = (sandbox, path, max_bytes);
    todo!()
}

pub(super) fn resolve_note_target(sandbox: &Sandbox, input: &str) -> Result<NotePath> {
    let _ = (sandbox, input);
    todo!()
}

pub(super) fn stat(sandbox: &Sandbox, path: &NotePath) -> Result<Option<FileStat>> {
    let _ = (sandbox, path);
    todo!()
}

pub(super) fn scan(sandbox: &Sandbox) -> Result<Scan> {
    let _ = sandbox;
    todo!()
}

pub(super) fn write_atomic(sandbox: &Sandbox, path: &NotePath, bytes: &[u8], mode: WriteMode) -> Result<()> {
    let _ = (sandbox, path, bytes, mode);
    todo!()
}
