//! Where a vault path really leads: opening the sandbox, resolving read paths,
//! folders and note targets to real locations, and checking them again against
//! the root, the deny list and the areas (symlinks included).

use std::fs::{self, File, Metadata};
use std::io;
use std::path::{Path, PathBuf};

use super::errors::{is_missing, missing, not_writable, outside_areas};
use super::forms::{canonical, on_disk, relative};
use super::walk::{holds_readable, is_readable, symlink_target};
use crate::error::{Error, Result};
use crate::sandbox::{Area, NotePath, Policy, Sandbox};

pub(in crate::sandbox) fn open(root: &Path, policy: Policy) -> Result<Sandbox> {
    let root = canonical(root).map_err(|err| {
        if is_missing(&err) {
            Error::not_found(format!("vault folder {} does not exist", root.display()))
        } else {
            Error::io(root.display(), &err)
        }
    })?;
    let meta = fs::metadata(&root).map_err(|err| Error::io(root.display(), &err))?;
    if !meta.is_dir() {
        return Err(Error::invalid(format!("vault {} is not a folder", root.display())));
    }
    Ok(Sandbox { root, policy, templates: Vec::new() })
}

pub(in crate::sandbox) fn resolve_read(sandbox: &Sandbox, input: &str) -> Result<NotePath> {
    let path = NotePath::parse(input)?;
    let area = logical_area(sandbox, &path, Use::ReadNote)?;
    match real_file(sandbox, &path, area)? {
        Some(_) => Ok(path),
        None => Err(missing(&path)),
    }
}

pub(in crate::sandbox) fn vault_path(sandbox: &Sandbox, disk: &Path) -> Option<String> {
    relative(&sandbox.root, disk)
}

pub(in crate::sandbox) fn is_attachment(sandbox: &Sandbox, path: &NotePath) -> bool {
    !path.is_markdown()
        && sandbox.policy.area_of(path).is_some_and(is_readable)
        && symlink_target(sandbox, &on_disk(&sandbox.root, path.as_str())).is_some()
}

pub(in crate::sandbox) fn is_folder(sandbox: &Sandbox, path: &NotePath) -> bool {
    fs::symlink_metadata(on_disk(&sandbox.root, path.as_str())).is_ok_and(|meta| meta.is_dir())
}

pub(in crate::sandbox) fn resolve_folder(sandbox: &Sandbox, input: &str) -> Result<Option<NotePath>> {
    let Some(folder) = NotePath::parse_folder(input)? else { return Ok(None) };
    check_folder_area(sandbox, &folder, &folder)?;
    let canonical = match canonical(&on_disk(&sandbox.root, folder.as_str())) {
        Ok(canonical) => canonical,
        Err(err) if is_missing(&err) => return Ok(Some(folder)),
        Err(err) => return Err(Error::io(&folder, &err)),
    };
    let real = relative(&sandbox.root, &canonical)
        .filter(|rel| !rel.is_empty())
        .and_then(|rel| NotePath::parse(&rel).ok())
        .ok_or_else(|| Error::denied(format!("the folder {folder} resolves outside the vault's folders")))?;
    check_folder_area(sandbox, &folder, &real)?;
    let meta = fs::metadata(&canonical).map_err(|err| Error::io(&folder, &err))?;
    if !meta.is_dir() {
        return Err(Error::denied(format!("`folder` {folder} is a file, not a folder")).with_hint(format!(
            "pass the folder that holds it (`{}`), or read the file with read_note",
            folder.parent()
        )));
    }
    Ok(Some(folder))
}

/// A folder may be searched when the walk would enter it ([`holds_readable`]);
/// `shown` names it in the error, `path` is the text or the real path being checked.
fn check_folder_area(sandbox: &Sandbox, shown: &NotePath, path: &NotePath) -> Result<()> {
    let policy = &sandbox.policy;
    if holds_readable(policy, path) {
        return Ok(());
    }
    let what = if shown == path { String::new() } else { format!(" (it resolves to {path})") };
    Err(match policy.area_of(path) {
        Some(Area::Memory) => Error::denied(format!(
            "the folder {shown} is the agent's memory{what}, which is not searched as notes"
        ))
        .with_hint("search without `folder`: the searches bring the memory this connection may read"),
        Some(_) => Error::denied(format!(
            "the folder {shown} is the proposals inbox{what}, which is not readable as notes"
        )),
        None if policy.is_denied(path.as_str()) => {
            Error::denied(format!("the folder {shown} is denied{what}"))
        }
        None => Error::denied(format!(
            "the folder {shown}{what} is outside the notes, standards and read_also folders"
        ))
        .with_hint("search without `folder`, or name a folder inside the notes"),
    })
}

pub(in crate::sandbox) fn resolve_note_target(sandbox: &Sandbox, input: &str) -> Result<NotePath> {
    let path = NotePath::parse(input)?;
    check_note_target(sandbox, &path)?;
    walk_write_chain(sandbox, &path, false)?;
    Ok(path)
}

/// Who is asking for a file, which decides the areas and extensions allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Use {
    /// An agent reading a note: Markdown in notes, standards or read_also folders.
    ReadNote,
    /// The library itself: the same, plus any file of the inbox (proposals, audit log).
    Internal,
}

/// A file whose real path passed every check.
pub(super) struct RealFile {
    /// The canonical path, free of symlinks.
    pub(super) canonical: PathBuf,
    /// Its metadata at the time of the check.
    pub(super) meta: Metadata,
}

/// The area of a path by its text, refused when `used` may not touch it.
pub(super) fn logical_area(sandbox: &Sandbox, path: &NotePath, used: Use) -> Result<Area> {
    match sandbox.policy.area_of(path) {
        Some(Area::Inbox) if used == Use::Internal => Ok(Area::Inbox),
        Some(Area::Inbox) => {
            Err(Error::denied(format!("{path} is in the proposals inbox, which is not readable as notes")))
        }
        Some(Area::Memory) if used == Use::Internal => Ok(Area::Memory),
        Some(Area::Memory) => Err(Error::denied(format!(
            "{path} is in the agent's memory folder, which is not readable as notes"
        ))
        .with_hint("recall_context and the searches bring the memory this connection may read")),
        Some(area) if path.is_note() => Ok(area),
        Some(_) => {
            Err(Error::denied(format!("{path}: only Markdown notes (.md), canvases and PDFs can be read")))
        }
        None => Err(outside_areas(sandbox, path)),
    }
}

/// Canonicalises a path and checks where it really is. `None` when it does not exist.
pub(super) fn real_file(sandbox: &Sandbox, path: &NotePath, area: Area) -> Result<Option<RealFile>> {
    let canonical = match canonical(&on_disk(&sandbox.root, path.as_str())) {
        Ok(canonical) => canonical,
        Err(err) if is_missing(&err) => return Ok(None),
        Err(err) => return Err(Error::io(path, &err)),
    };
    check_real(sandbox, path, area, &canonical)?;
    let meta = match fs::metadata(&canonical) {
        Ok(meta) => meta,
        Err(err) if is_missing(&err) => return Ok(None),
        Err(err) => return Err(Error::io(path, &err)),
    };
    if !meta.is_file() {
        return Err(Error::denied(format!("{path} is not a regular file")));
    }
    Ok(Some(RealFile { canonical, meta }))
}

/// Checks a canonical path found for `path`: inside the root, not denied, in an
/// area compatible with `area`, Markdown unless it is an inbox file.
fn check_real(sandbox: &Sandbox, path: &NotePath, area: Area, canonical: &Path) -> Result<()> {
    let Some(rel) = relative(&sandbox.root, canonical) else {
        return Err(Error::denied(format!("{path} resolves outside the vault")));
    };
    if rel.is_empty() || sandbox.policy.is_denied(&rel) {
        return Err(Error::denied(format!("{path} resolves into a denied folder")));
    }
    let Ok(real) = NotePath::parse(&rel) else {
        return Err(Error::denied(format!("{path} resolves to {rel:?}, which is not an allowed vault path")));
    };
    let real_area = sandbox.policy.area_of(&real);
    let allowed = match area {
        Area::Inbox => real_area == Some(Area::Inbox),
        Area::Memory => real_area == Some(Area::Memory) && real.is_markdown(),
        _ => real_area.is_some_and(is_readable) && real.is_note(),
    };
    if !allowed {
        return Err(Error::denied(format!(
            "{path} resolves to {real}, which is outside the folders it may be read from"
        )));
    }
    Ok(())
}

/// After opening: the handle must still be the file that was checked, and the
/// path must still resolve to the same place. Catches a file or folder swapped
/// for a symlink between the check and the open.
pub(super) fn verify_opened(
    sandbox: &Sandbox,
    path: &NotePath,
    area: Area,
    real: &RealFile,
    file: &File,
    opened: &Metadata,
) -> Result<()> {
    let changed = || Error::denied(format!("{path} changed while it was being opened; nothing was read"));
    let fresh = fs::metadata(&real.canonical).map_err(|_| changed())?;
    if !same_file(&real.meta, opened) || !same_file(&fresh, opened) {
        return Err(changed());
    }
    // Where the open handle really points, straight from the kernel (Linux).
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        if let Ok(actual) = fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) {
            check_real(sandbox, path, area, &actual).map_err(|_| changed())?;
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
    let again = canonical(&real.canonical).map_err(|_| changed())?;
    if again != real.canonical {
        return Err(changed());
    }
    check_real(sandbox, path, area, &again)
}

/// Whether two metadata describe the same file (device and inode on Unix; on
/// other platforms the check is left to the re-canonicalisation).
pub(in crate::sandbox) fn same_file(a: &Metadata, b: &Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        a.dev() == b.dev() && a.ino() == b.ino()
    }
    #[cfg(not(unix))]
    {
        a.is_file() == b.is_file()
    }
}

/// A note target must be a `.md` file in a notes folder.
pub(in crate::sandbox) fn check_note_target(sandbox: &Sandbox, path: &NotePath) -> Result<()> {
    if path.is_pdf() {
        return Err(Error::denied(format!(
            "{path} is a PDF: attachments are read-only, no proposal writes, moves or deletes one"
        )));
    }
    if !path.is_markdown() {
        return Err(Error::denied(format!("{path}: only Markdown notes (.md) can be written")));
    }
    match sandbox.policy.area_of(path) {
        Some(Area::Note) => Ok(()),
        _ => Err(not_writable(sandbox, path)),
    }
}

/// A file a plan may create, trash or bring back whole: a note target, or a
/// canvas of a notes root (deleted and restored like a note, never written
/// as Markdown: a new note or a patch takes [`check_note_target`]).
pub(in crate::sandbox) fn check_whole_note_target(sandbox: &Sandbox, path: &NotePath) -> Result<()> {
    if !path.is_canvas() {
        return check_note_target(sandbox, path);
    }
    match sandbox.policy.area_of(path) {
        Some(Area::Note) => Ok(()),
        _ => Err(not_writable(sandbox, path)),
    }
}

/// [`check_whole_note_target`], reached through real folders.
pub(in crate::sandbox) fn resolve_whole_note_target(sandbox: &Sandbox, input: &str) -> Result<NotePath> {
    let path = NotePath::parse(input)?;
    check_whole_note_target(sandbox, &path)?;
    walk_write_chain(sandbox, &path, false)?;
    Ok(path)
}

/// A file a multi-file plan may move or rewrite: a note target when it is a
/// visible Markdown file, else a file of a notes root that no rule denies
/// (an attachment, a canvas, a hidden file a folder move carries).
pub(in crate::sandbox) fn check_plan_target(sandbox: &Sandbox, path: &NotePath) -> Result<()> {
    if path.is_markdown() && sandbox.policy.area_of(path).is_some() {
        return check_note_target(sandbox, path);
    }
    match sandbox.policy.carried_area(path) {
        Some(Area::Note) => Ok(()),
        _ => Err(not_writable(sandbox, path)),
    }
}

/// Walks the path from the root without following anything: every existing
/// component must be a real folder (the last one a regular file), never a
/// symlink. With `create`, missing folders are created one by one and checked
/// again. Returns the target's path on disk.
pub(in crate::sandbox) fn walk_write_chain(
    sandbox: &Sandbox,
    path: &NotePath,
    create: bool,
) -> Result<PathBuf> {
    let segments: Vec<&str> = path.as_str().split('/').collect();
    let mut current = sandbox.root.clone();
    let mut deepest = sandbox.root.clone();
    let mut deepest_rel = String::new();
    let mut exists = true;
    for (i, segment) in segments.iter().enumerate() {
        current.push(segment);
        let is_last = i + 1 == segments.len();
        let shown = segments[..=i].join("/");
        if exists {
            exists = check_component(&current, &shown, path, is_last)?;
        }
        if !exists && !is_last && create {
            match fs::create_dir(&current) {
                Ok(()) => {}
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
                Err(err) => return Err(Error::io(&shown, &err)),
            }
            // Whoever created it, it must be a real folder now.
            check_component(&current, &shown, path, false)?;
        }
        if !is_last && (exists || create) {
            deepest.clone_from(&current);
            deepest_rel = shown;
        }
    }
    // No component is a symlink, so the deepest folder's real path must be the
    // very folder named; anything else (a bind mount, a case-folding file system
    // that resolved to another name) is refused rather than guessed about.
    let real = canonical(&deepest).map_err(|err| Error::io(path, &err))?;
    match relative(&sandbox.root, &real) {
        None => Err(Error::denied(format!("{path} resolves outside the vault"))),
        // A hidden folder a folder move carries is checked by the caller's area.
        Some(rel) if !rel.is_empty() && sandbox.policy.is_denied_by_rule(&rel) => {
            Err(Error::denied(format!("{path} resolves into a denied folder")))
        }
        Some(rel) if rel != deepest_rel => {
            Err(Error::denied(format!("{path} does not lead through real folders of the vault")))
        }
        Some(_) => Ok(current),
    }
}

/// Checks one component on the way to a write target; `Ok(false)` when it is missing.
fn check_component(disk: &Path, shown: &str, path: &NotePath, is_last: bool) -> Result<bool> {
    match fs::symlink_metadata(disk) {
        Ok(meta) if meta.file_type().is_symlink() => Err(Error::denied(format!(
            "{path}: {shown} is a symbolic link; notes are written only through real folders"
        ))),
        Ok(meta) if !is_last && !meta.is_dir() => {
            Err(Error::denied(format!("{path}: {shown} is not a folder")))
        }
        Ok(meta) if is_last && !meta.is_file() => {
            Err(Error::denied(format!("{path} exists and is not a regular file")))
        }
        Ok(_) => Ok(true),
        Err(err) if is_missing(&err) => Ok(false),
        Err(err) => Err(Error::io(shown, &err)),
    }
}
