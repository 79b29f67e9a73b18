//! Path forms: a vault path on disk, a disk path back to a vault path, and
//! canonical paths without Windows' verbatim `\\?\` prefix where dropping it
//! is harmless.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

/// The vault path `rel` on disk under `root`, pushed segment by segment so that
/// it also works under a Windows verbatim (`\\?\`) root.
pub(super) fn on_disk(root: &Path, rel: &str) -> PathBuf {
    let mut disk = root.to_path_buf();
    disk.extend(rel.split('/'));
    disk
}

/// `path` relative to `root` with forward slashes; `""` for the root itself,
/// `None` when it is not below the root or not UTF-8.
pub(in crate::sandbox) fn relative(root: &Path, path: &Path) -> Option<String> {
    let rest = match path.strip_prefix(root) {
        Ok(rest) => rest,
        Err(_) => return relative_unverbatim(root, path),
    };
    let mut rel = String::with_capacity(rest.as_os_str().len());
    for component in rest.components() {
        let Component::Normal(name) = component else { return None };
        if !rel.is_empty() {
            rel.push('/');
        }
        rel.push_str(name.to_str()?);
    }
    Some(rel)
}

/// On Windows, a canonical path may keep its `\\?\` prefix where the root lost
/// it (or the other way round); compare both without it.
#[cfg(windows)]
fn relative_unverbatim(root: &Path, path: &Path) -> Option<String> {
    let (root, path) = (simplify(root.to_path_buf()), simplify(path.to_path_buf()));
    let rest = path.strip_prefix(&root).ok()?;
    let mut rel = Vec::new();
    for component in rest.components() {
        let Component::Normal(name) = component else { return None };
        rel.push(name.to_str()?);
    }
    Some(rel.join("/"))
}

#[cfg(not(windows))]
fn relative_unverbatim(_root: &Path, _path: &Path) -> Option<String> {
    None
}

/// `fs::canonicalize`, without the Windows verbatim prefix where dropping it is
/// harmless.
pub(super) fn canonical(path: &Path) -> io::Result<PathBuf> {
    fs::canonicalize(path).map(simplify)
}

/// Drops `\\?\` from `\\?\C:\...` when the rest is an ordinary short drive path.
#[cfg(windows)]
fn simplify(path: PathBuf) -> PathBuf {
    let Some(text) = path.to_str() else { return path };
    let Some(rest) = text.strip_prefix(r"\\?\") else { return path };
    let bytes = rest.as_bytes();
    let drive = bytes.len() >= 3 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' && bytes[2] == b'\\';
    let plain = rest.len() < 260
        && rest[3..]
            .split('\\')
            .all(|part| !part.is_empty() && part != "." && part != ".." && !part.ends_with(['.', ' ']));
    if drive && (plain || rest.len() == 3) { PathBuf::from(rest) } else { path }
}

#[cfg(not(windows))]
fn simplify(path: PathBuf) -> PathBuf {
    path
}
