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

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use sha2::Digest;

use super::fs::is_missing;
use super::{NotePath, Sandbox};
use crate::error::{Error, ErrorCode, Result};

/// The ownership marker's file name.
pub const INDEX_MARKER: &str = "kb-mcp-index.json";
/// What the marker says (a person who finds the folder learns what it is).
const MARKER_TEXT: &str = "{\"kb_mcp_index\": 1, \"note\": \"This folder holds kb-mcp's search index: derived data, rebuilt from the notes. kb-mcp deletes only its own files here.\"}\n";
/// The index folder's name inside the vault.
pub const DEFAULT_INDEX_DIR: &str = ".kb";
/// tantivy's segment file extensions (after `<32 hex>.`).
const SEGMENT_EXTENSIONS: [&str; 7] = ["idx", "pos", "term", "store", "store.temp", "fast", "fieldnorm"];
/// tantivy's own files besides the segments; the lock files are never deleted
/// (another process may hold them).
const TANTIVY_FILES: [&str; 2] = ["meta.json", ".managed.json"];
const TANTIVY_LOCKS: [&str; 2] = [".tantivy-meta.lock", ".tantivy-writer.lock"];

/// Bytes used by the files below a folder (symlinks not followed).
pub fn folder_size(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .filter_map(Result::ok)
        .filter_map(|entry| entry.metadata().ok())
        .filter(|meta| meta.is_file())
        .map(|meta| meta.len())
        .sum()
}

/// The real path of a folder, or the path as given when it cannot be resolved.
pub fn canonical_or_same(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned())
}

/// Whether a file name is one the index writes: tantivy's files, its segments,
/// its temporary files, and the marker.
pub fn is_index_file_name(name: &str) -> bool {
    if TANTIVY_FILES.contains(&name) || TANTIVY_LOCKS.contains(&name) || name == INDEX_MARKER {
        return true;
    }
    // tantivy's atomic writes: `tempfile`'s `.tmp` plus six letters or digits.
    if let Some(rest) = name.strip_prefix(".tmp") {
        return rest.len() == 6 && rest.bytes().all(|b| b.is_ascii_alphanumeric());
    }
    let Some((id, extension)) = name.split_once('.') else { return false };
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()) {
        return false;
    }
    if SEGMENT_EXTENSIONS.contains(&extension) {
        return true;
    }
    // Deletes: `<id>.<opstamp>.del`.
    extension
        .strip_suffix(".del")
        .is_some_and(|opstamp| !opstamp.is_empty() && opstamp.bytes().all(|b| b.is_ascii_digit()))
}

/// How an index folder is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexAccess {
    /// Create the folder (and the marker) when missing.
    Create,
    /// Create nothing: a missing folder is reported as absent (`kb-index status`).
    Existing,
}

/// An index folder that passed the checks of this module.
#[derive(Debug, Clone)]
pub struct IndexFolder {
    path: PathBuf,
    exists: bool,
    owned: bool,
    access: IndexAccess,
    /// Why the folder is not the one asked for (the per-user cache folder).
    moved: Option<String>,
}

impl IndexFolder {
    /// Its path (real, free of symlinks, when it exists).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the folder exists (only [`IndexAccess::Existing`] leaves it absent).
    pub fn exists(&self) -> bool {
        self.exists
    }

    /// How the folder was claimed: with [`IndexAccess::Existing`] nothing may be written.
    pub fn access(&self) -> IndexAccess {
        self.access
    }

    /// Whether kb-mcp can prove the folder is its own (the marker, or the
    /// vault's own `.kb/`), and so may delete the index's files in it.
    pub fn owned(&self) -> bool {
        self.owned
    }

    /// Why the index lives somewhere other than the vault's `.kb/` (the vault
    /// cannot hold it), when it does.
    pub fn moved(&self) -> Option<&str> {
        self.moved.as_deref()
    }

    /// Whether the folder holds any of the index's files besides the marker and
    /// the lock files (a `meta.json` or segments).
    pub fn holds_index_files(&self) -> Result<bool> {
        Ok(index_entries(&self.path)?.iter().any(|name| {
            name != INDEX_MARKER && !TANTIVY_LOCKS.contains(&name.as_str()) && is_index_file_name(name)
        }))
    }

    /// Writes the marker into a folder that holds a working index kb-mcp did not
    /// mark (one built before markers existed). Best effort: a folder that
    /// cannot be written is served as it is.
    pub fn adopt(&mut self) {
        if !self.owned && self.access == IndexAccess::Create && write_marker(&self.path).is_ok() {
            self.owned = true;
        }
    }

    /// Deletes the index's files (not the marker, not the lock files) before a
    /// rebuild. Refused unless the folder is proven the index's own and still
    /// holds nothing else; only regular files are removed, never through a link.
    pub fn clear(&self) -> Result<()> {
        let shown = self.path.display();
        if !self.owned {
            return Err(Error::new(
                ErrorCode::IndexUnavailable,
                format!(
                    "the index in {shown} cannot be opened, and kb-mcp will not delete it: the folder has no \
                     {INDEX_MARKER} marker, so kb-mcp cannot prove it wrote those files"
                ),
            )
            .with_hint(format!(
                "if {shown} holds only an old kb-mcp index, delete the folder yourself; otherwise pass \
                 --index-dir with a new or empty folder"
            )));
        }
        check_entries(&self.path)?;
        let names = index_entries(&self.path)?;
        for name in names {
            if name == INDEX_MARKER || TANTIVY_LOCKS.contains(&name.as_str()) {
                continue;
            }
            let file = self.path.join(&name);
            let meta = match fs::symlink_metadata(&file) {
                Ok(meta) => meta,
                Err(err) if is_missing(&err) => continue,
                Err(err) => return Err(io_error(&file, &err)),
            };
            if !meta.is_file() {
                return Err(foreign(&self.path, &[name]));
            }
            match fs::remove_file(&file) {
                Ok(()) => {}
                Err(err) if is_missing(&err) => {}
                Err(err) => return Err(io_error(&file, &err)),
            }
        }
        super::fs::sync_dir(&self.path);
        Ok(())
    }
}

/// An I/O error on the index folder, with a full disk and a read-only folder
/// said plainly.
pub(super) fn io_error(path: &Path, err: &io::Error) -> Error {
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

/// Whether an I/O error means the disk is full (or the user's quota is used up).
pub fn is_disk_full(err: &io::Error) -> bool {
    matches!(err.kind(), io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded)
        || (cfg!(unix) && err.raw_os_error() == Some(28))
}

/// Whether an I/O error means the place cannot be written (permissions or a
/// read-only file system).
pub fn is_read_only(err: &io::Error) -> bool {
    matches!(err.kind(), io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem)
}

/// Finds, checks and (with [`IndexAccess::Create`]) creates the index folder
/// of a vault: `requested` (`--index-dir`), else `<vault>/.kb`, else, when the
/// vault cannot hold `.kb/`, the per-user cache folder.
pub(super) fn claim(sandbox: &Sandbox, requested: Option<&Path>, access: IndexAccess) -> Result<IndexFolder> {
    if let Some(requested) = requested {
        let requested = std::path::absolute(requested).map_err(|err| Error::io(requested.display(), &err))?;
        return claim_at(sandbox, &requested, access, false)
            .map_err(|refusal| refusal.into_error(&requested));
    }
    let default = sandbox.root().join(DEFAULT_INDEX_DIR);
    match claim_at(sandbox, &default, access, true) {
        Ok(folder) if !folder.exists => {
            // Nothing in the vault: an index kept in the cache folder (the vault
            // could not hold one when it was built) is the vault's index.
            match cache_folder(sandbox.root()).filter(|cache| cache.is_dir()) {
                Some(cache) => {
                    let mut cached = claim_at(sandbox, &cache, access, false)
                        .map_err(|refusal| refusal.into_error(&cache))?;
                    cached.moved = Some(format!(
                        "the vault has no {}, so its index is the one in the cache folder",
                        default.display()
                    ));
                    Ok(cached)
                }
                None => Ok(folder),
            }
        }
        Ok(folder) => Ok(folder),
        Err(Refusal::Io(err)) if is_read_only(&err) => {
            let cache = cache_folder(sandbox.root()).ok_or_else(|| {
                Error::new(
                    ErrorCode::IndexUnavailable,
                    format!("the vault cannot hold its index folder {} ({err})", default.display()),
                )
                .with_hint("pass --index-dir with a folder you can write")
            })?;
            let mut folder =
                claim_at(sandbox, &cache, access, false).map_err(|refusal| refusal.into_error(&cache))?;
            folder.moved = Some(format!(
                "the vault cannot hold {} ({err}), so the index lives in the cache folder",
                default.display()
            ));
            Ok(folder)
        }
        Err(refusal) => Err(refusal.into_error(&default)),
    }
}

/// Why a folder was not claimed: a rule's error, or the I/O error of creating it.
enum Refusal {
    Rule(Error),
    Io(io::Error),
}

impl From<Error> for Refusal {
    fn from(error: Error) -> Self {
        Refusal::Rule(error)
    }
}

impl Refusal {
    fn into_error(self, path: &Path) -> Error {
        match self {
            Refusal::Rule(error) => error,
            Refusal::Io(err) => io_error(path, &err),
        }
    }
}

fn claim_at(
    sandbox: &Sandbox,
    path: &Path,
    access: IndexAccess,
    vault_default: bool,
) -> std::result::Result<IndexFolder, Refusal> {
    let shown = path.display();
    let pass_instead =
        "pass --index-dir with a new or empty folder outside the notes (or leave it out to use <vault>/.kb)";
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            let target =
                fs::read_link(path).map(|t| format!(" (it points to {})", t.display())).unwrap_or_default();
            return Err(Refusal::Rule(
                Error::invalid(format!(
                    "the index folder {shown} is a symbolic link{target}: kb-mcp never writes or deletes through a link"
                ))
                .with_hint(format!("remove the link, or pass the real folder as --index-dir; {pass_instead}")),
            ));
        }
        Ok(meta) if !meta.is_dir() => {
            return Err(Refusal::Rule(
                Error::invalid(format!("the index folder {shown} is a file, not a folder"))
                    .with_hint(pass_instead),
            ));
        }
        Ok(_) => {}
        Err(err) if is_missing(&err) => {
            // Check where it would be before creating anything.
            check_location(sandbox, path, path)?;
            if access == IndexAccess::Existing {
                return Ok(IndexFolder {
                    path: path.to_owned(),
                    exists: false,
                    owned: false,
                    access,
                    moved: None,
                });
            }
            fs::create_dir_all(path).map_err(Refusal::Io)?;
            let real = fs::canonicalize(path).map_err(Refusal::Io)?;
            write_marker(&real).map_err(|err| Refusal::Rule(io_error(&real, &err)))?;
            return Ok(IndexFolder { path: real, exists: true, owned: true, access, moved: None });
        }
        Err(err) => return Err(Refusal::Rule(io_error(path, &err))),
    }
    let real = fs::canonicalize(path).map_err(|err| Refusal::Rule(io_error(path, &err)))?;
    check_location(sandbox, path, &real)?;
    check_entries(&real)?;
    let marker = fs::symlink_metadata(real.join(INDEX_MARKER)).is_ok_and(|meta| meta.is_file());
    let names = index_entries(&real).map_err(Refusal::Rule)?;
    let mut owned = marker || (vault_default && real.parent() == Some(sandbox.root()));
    if !owned && names.is_empty() && access == IndexAccess::Create {
        // An empty folder: the index starts here, marked as kb-mcp's.
        write_marker(&real).map_err(|err| Refusal::Rule(io_error(&real, &err)))?;
        owned = true;
    } else if owned && !marker && access == IndexAccess::Create {
        // The vault's own `.kb/` from before markers: mark it (best effort).
        let _ = write_marker(&real);
    }
    Ok(IndexFolder { path: real, exists: true, owned, access, moved: None })
}

/// Refuses an index folder that is the vault, holds it, or lies inside a
/// notes, standards or `read_also` folder or the inbox.
fn check_location(sandbox: &Sandbox, shown: &Path, real: &Path) -> Result<()> {
    let root = sandbox.root();
    let shown = shown.display();
    let pass_instead =
        "pass --index-dir with a new or empty folder outside the notes (or leave it out to use <vault>/.kb)";
    if real == root {
        return Err(Error::invalid(format!(
            "the index folder {shown} is the vault itself: rebuilding the index there could delete notes"
        ))
        .with_hint(pass_instead));
    }
    if root.starts_with(real) {
        return Err(Error::invalid(format!("the index folder {shown} holds the vault {}", root.display()))
            .with_hint(pass_instead));
    }
    // A folder that does not exist yet: judge it by its nearest existing ancestor's real path.
    let mut resolved = real.to_owned();
    let mut rest = Vec::new();
    while !resolved.exists() {
        match (resolved.parent(), resolved.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                resolved = parent.to_owned();
            }
            _ => break,
        }
    }
    let mut resolved = fs::canonicalize(&resolved).unwrap_or(resolved);
    for name in rest.iter().rev() {
        resolved.push(name);
    }
    let Ok(relative) = resolved.strip_prefix(root) else { return Ok(()) };
    let relative = relative.to_string_lossy().replace('\\', "/");
    if relative.is_empty() {
        return Err(
            Error::invalid(format!("the index folder {shown} is the vault itself")).with_hint(pass_instead)
        );
    }
    // A file in the folder would belong to this area (a name that fails the
    // path rules cannot be a note, so is outside every area).
    let probe = NotePath::parse(&format!("{relative}/index.md")).ok();
    if let Some(area) = probe.and_then(|probe| sandbox.policy().area_of(&probe)) {
        let what = match area {
            super::Area::Note => "the notes",
            super::Area::Standard => "a standards folder",
            super::Area::ReadAlso => "a read_also folder",
            super::Area::Inbox => "the proposals inbox",
        };
        return Err(Error::invalid(format!(
            "the index folder {shown} lies inside {what} of the vault ({relative}): the index must not mix with notes"
        ))
        .with_hint(pass_instead));
    }
    Ok(())
}

/// Refuses a folder holding anything that is not one of the index's files (a
/// regular file with one of its names).
fn check_entries(dir: &Path) -> Result<()> {
    let mut strangers = Vec::new();
    let entries = fs::read_dir(dir).map_err(|err| io_error(dir, &err))?;
    for entry in entries {
        let entry = entry.map_err(|err| io_error(dir, &err))?;
        let name = entry.file_name();
        let is_file = entry.file_type().is_ok_and(|kind| kind.is_file());
        if !is_file || !name.to_str().is_some_and(is_index_file_name) {
            strangers.push(name.to_string_lossy().into_owned());
        }
    }
    if strangers.is_empty() {
        return Ok(());
    }
    strangers.sort();
    Err(foreign(dir, &strangers))
}

fn foreign(dir: &Path, strangers: &[String]) -> Error {
    let shown: Vec<&str> = strangers.iter().take(5).map(String::as_str).collect();
    let more = if strangers.len() > 5 { format!(" and {} more", strangers.len() - 5) } else { String::new() };
    Error::invalid(format!(
        "the index folder {} holds files that are not kb-mcp's index ({}{more}): kb-mcp deletes and rewrites \
         its index folder, so it uses only a folder of its own",
        dir.display(),
        shown.join(", ")
    ))
    .with_hint("pass --index-dir with a new or empty folder (or leave it out to use <vault>/.kb)")
}

/// The names of the index's files in a folder (everything, when it was checked).
fn index_entries(dir: &Path) -> Result<Vec<String>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if is_missing(&err) => return Ok(Vec::new()),
        Err(err) => return Err(io_error(dir, &err)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|err| io_error(dir, &err))?;
        if let Some(name) = entry.file_name().to_str().filter(|name| is_index_file_name(name)) {
            names.push(name.to_owned());
        }
    }
    names.sort();
    Ok(names)
}

fn write_marker(dir: &Path) -> io::Result<()> {
    let temp = dir.join(format!(".tmp{}", marker_suffix()));
    let result = (|| {
        let mut file = fs::OpenOptions::new().write(true).create_new(true).open(&temp)?;
        io::Write::write_all(&mut file, MARKER_TEXT.as_bytes())?;
        file.sync_all()?;
        fs::rename(&temp, dir.join(INDEX_MARKER))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    super::fs::sync_dir(dir);
    result
}

/// Six letters for the marker's temporary file (the `.tmp??????` pattern the index owns).
fn marker_suffix() -> String {
    let mut bytes = [0u8; 6];
    let _ = getrandom::fill(&mut bytes);
    bytes.iter().map(|b| char::from(b'a' + b % 26)).collect()
}

/// The per-user cache folder for a vault that cannot hold `.kb/`:
/// `$XDG_CACHE_HOME/kb-mcp/<name>-<hash of the vault's real path>` (else
/// `~/.cache` on Linux, `~/Library/Caches` on macOS, `%LOCALAPPDATA%` on Windows).
pub fn cache_folder(vault: &Path) -> Option<PathBuf> {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let base = if cfg!(windows) {
        env("LOCALAPPDATA")
    } else if cfg!(target_os = "macos") {
        env("XDG_CACHE_HOME").or_else(|| env("HOME").map(|home| home.join("Library/Caches")))
    } else {
        env("XDG_CACHE_HOME").or_else(|| env("HOME").map(|home| home.join(".cache")))
    }?;
    if !base.is_absolute() {
        return None;
    }
    let name: String = vault
        .file_name()
        .and_then(OsStr::to_str)
        .unwrap_or("vault")
        .chars()
        .map(|c| if c.is_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .take(40)
        .collect();
    let digest = sha2::Sha256::digest(vault.as_os_str().as_encoded_bytes());
    let digest = super::hex(&digest[..8]);
    Some(base.join("kb-mcp").join(format!("{name}-{digest}")))
}
