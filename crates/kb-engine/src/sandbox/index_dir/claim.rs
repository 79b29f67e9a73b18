//! Claiming a folder for the index: where it may lie, that it holds nothing
//! but the index's own files and carries the ownership marker, and the
//! per-user cache folder used when the vault cannot hold `.kb/`.

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use sha2::Digest;

use super::errors::{io_error, is_read_only};
use super::folder::{
    DEFAULT_INDEX_DIR, INDEX_MARKER, IndexAccess, IndexFolder, MARKER_TEXT, SERVERS_DIR, is_index_file_name,
};
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::fs::is_missing;
use crate::sandbox::{NotePath, Sandbox};

/// Finds, checks and (with [`IndexAccess::Create`]) creates the index folder
/// of a vault: `requested` (`--index-dir`), else `<vault>/.kb`, else, when the
/// vault cannot hold `.kb/`, the per-user cache folder.
pub(in crate::sandbox) fn claim(
    sandbox: &Sandbox,
    requested: Option<&Path>,
    access: IndexAccess,
) -> Result<IndexFolder> {
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
            crate::sandbox::Area::Note => "the notes",
            crate::sandbox::Area::Standard => "a standards folder",
            crate::sandbox::Area::ReadAlso => "a read_also folder",
            crate::sandbox::Area::Inbox => "the proposals inbox",
            crate::sandbox::Area::Memory => "the agent's memory folder",
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
pub(super) fn check_entries(dir: &Path) -> Result<()> {
    let mut strangers = Vec::new();
    let entries = fs::read_dir(dir).map_err(|err| io_error(dir, &err))?;
    for entry in entries {
        let entry = entry.map_err(|err| io_error(dir, &err))?;
        let name = entry.file_name();
        let kind = entry.file_type().ok();
        let ours = if name == SERVERS_DIR || name == super::PDF_TEXTS_DIR || name == super::EMBEDDINGS_DIR {
            kind.is_some_and(|kind| kind.is_dir())
        } else {
            kind.is_some_and(|kind| kind.is_file()) && name.to_str().is_some_and(is_index_file_name)
        };
        if !ours {
            strangers.push(name.to_string_lossy().into_owned());
        }
    }
    if strangers.is_empty() {
        return Ok(());
    }
    strangers.sort();
    Err(foreign(dir, &strangers))
}

pub(super) fn foreign(dir: &Path, strangers: &[String]) -> Error {
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
pub(super) fn index_entries(dir: &Path) -> Result<Vec<String>> {
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

pub(super) fn write_marker(dir: &Path) -> io::Result<()> {
    let temp = dir.join(format!(".tmp{}", temp_suffix()));
    let result = (|| {
        let mut file = fs::OpenOptions::new().write(true).create_new(true).open(&temp)?;
        io::Write::write_all(&mut file, MARKER_TEXT.as_bytes())?;
        file.sync_all()?;
        fs::rename(&temp, dir.join(INDEX_MARKER))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    crate::sandbox::fs::sync_dir(dir);
    result
}

/// Six letters for a temporary file of the index's (the `.tmp??????` pattern the index owns).
pub(super) fn temp_suffix() -> String {
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
    let digest = crate::sandbox::hex(&digest[..8]);
    Some(base.join("kb-mcp").join(format!("{name}-{digest}")))
}
