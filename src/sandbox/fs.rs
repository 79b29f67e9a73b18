//! Real paths, reads, the vault walk and atomic writes.
//!
//! A [`NotePath`] says only what a path looks like; this module finds out where it
//! really leads. Reads canonicalise the path (following every symlink) and check
//! the result again: inside the root, not denied, in an area the caller may use,
//! a regular file; then, once the file is open, that the open handle is still
//! that file, so a symlink swapped in between check and use is caught. Writes
//! refuse any symlink on the way instead of following it, and land atomically
//! (temporary file, fsync, rename or link), so a note is never seen half written.
//! The walk never follows symlinked folders and prunes denied ones before
//! entering them.

use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

use walkdir::WalkDir;

use super::{Area, NotePath, Policy, Sandbox, ends_in_md, hex};
use crate::error::{Error, ErrorCode, Result};

/// Largest `kb.toml` read, in bytes.
const CONFIG_MAX_BYTES: u64 = 64 * 1024;
/// The configuration file at the vault root.
const CONFIG_FILE: &str = "kb.toml";

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
    /// Markdown files left out because their names are refused, templates,
    /// and symlinks (to folders, or `.md` ones) that serve no note, sorted.
    pub skipped: Vec<SkippedFile>,
    /// How many Markdown files were reached through a symlink: such a note
    /// changes when its target does, under another name.
    pub linked: usize,
}

/// A Markdown file the walk found but cannot serve, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedFile {
    /// Its path as found (lossy for names that are not UTF-8).
    pub path: String,
    /// Why it is left out.
    pub reason: String,
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
    let file_path = root.join(CONFIG_FILE);
    let shown = file_path.display();
    let before = match fs::symlink_metadata(&file_path) {
        Ok(meta) => meta,
        Err(err) if is_missing(&err) => return Ok(None),
        Err(err) => return Err(Error::io(&shown, &err)),
    };
    if !before.is_file() {
        return Err(Error::invalid(format!(
            "{shown} is not a regular file (symbolic links are not followed for {CONFIG_FILE})"
        )));
    }
    let file = File::open(&file_path).map_err(|err| Error::io(&shown, &err))?;
    let opened = file.metadata().map_err(|err| Error::io(&shown, &err))?;
    if !opened.is_file() || !same_file(&before, &opened) {
        return Err(Error::invalid(format!("{shown} changed while it was being opened; try again")));
    }
    let bytes = read_capped(&file, CONFIG_MAX_BYTES).map_err(|err| Error::io(&shown, &err))?;
    if bytes.len() as u64 > CONFIG_MAX_BYTES || opened.len() > CONFIG_MAX_BYTES {
        return Err(too_large(&shown, opened.len().max(bytes.len() as u64), CONFIG_MAX_BYTES)
            .with_hint(format!("{CONFIG_FILE} holds a few settings; keep it under 64 KiB")));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| Error::invalid(format!("{shown} is not valid UTF-8; save {CONFIG_FILE} as UTF-8")))
}

/// Obsidian's settings files that name a templates folder, in the order read:
/// the core Templates plugin's and the Templater plugin's.
pub const TEMPLATE_SETTINGS: [&str; 2] =
    [".obsidian/templates.json", ".obsidian/plugins/templater-obsidian/data.json"];

/// Reads the Obsidian settings files that name a templates folder
/// (`.obsidian/templates.json`, then Templater's `data.json`), each `None` when
/// absent, not a regular file (symlinks are not followed), over 64 KiB or not
/// UTF-8: they are optional hints, never a reason to fail. kb-mcp never writes them.
pub fn read_template_settings(root: &Path) -> [Option<String>; 2] {
    TEMPLATE_SETTINGS.map(|rel| {
        let path = root.join(rel);
        let before = fs::symlink_metadata(&path).ok().filter(Metadata::is_file)?;
        let file = File::open(&path).ok()?;
        let opened = file.metadata().ok()?;
        if !same_file(&before, &opened) || opened.len() > CONFIG_MAX_BYTES {
            return None;
        }
        String::from_utf8(read_capped(&file, CONFIG_MAX_BYTES).ok()?).ok()
    })
}

/// Creates a folder (and its parents) outside the vault's note areas, e.g. the index folder.
pub fn ensure_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).map_err(|err| Error::io(dir.display(), &err))
}

pub(super) fn open(root: &Path, policy: Policy) -> Result<Sandbox> {
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

pub(super) fn resolve_read(sandbox: &Sandbox, input: &str) -> Result<NotePath> {
    let path = NotePath::parse(input)?;
    let area = logical_area(sandbox, &path, Use::ReadNote)?;
    match real_file(sandbox, &path, area)? {
        Some(_) => Ok(path),
        None => Err(missing(&path)),
    }
}

/// A readable file, opened and checked like [`Sandbox::read`], to be read in
/// parts: a note too large to hold in memory is served a window at a time.
#[derive(Debug)]
pub struct OpenedFile {
    file: File,
    len: u64,
    path: NotePath,
}

/// Bytes read from the file per step of [`OpenedFile::for_each_chunk`].
const CHUNK_BYTES: usize = 64 * 1024;

impl OpenedFile {
    /// The file's size when it was opened.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file was empty when it was opened.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Up to `max` bytes from `offset` (fewer at the end of the file).
    pub fn read_at(&self, offset: u64, max: usize) -> Result<Vec<u8>> {
        let mut file = &self.file;
        let mut bytes = Vec::with_capacity(max.min(usize::try_from(self.len).unwrap_or(usize::MAX)));
        file.seek(SeekFrom::Start(offset))
            .and_then(|_| file.take(max as u64).read_to_end(&mut bytes))
            .map_err(|err| Error::io(&self.path, &err))?;
        Ok(bytes)
    }

    /// Streams the file from its start, [`CHUNK_BYTES`] at a time, calling
    /// `visit(offset, chunk)`; stops early when `visit` returns false. Returns the
    /// bytes visited.
    pub fn for_each_chunk(&self, mut visit: impl FnMut(u64, &[u8]) -> bool) -> Result<u64> {
        let mut file = &self.file;
        file.seek(SeekFrom::Start(0)).map_err(|err| Error::io(&self.path, &err))?;
        let mut buffer = vec![0u8; CHUNK_BYTES];
        let mut offset = 0u64;
        loop {
            let read = match file.read(&mut buffer) {
                Ok(0) => return Ok(offset),
                Ok(read) => read,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(Error::io(&self.path, &err)),
            };
            if !visit(offset, &buffer[..read]) {
                return Ok(offset + read as u64);
            }
            offset += read as u64;
        }
    }
}

pub(super) fn open_read(sandbox: &Sandbox, path: &NotePath) -> Result<OpenedFile> {
    let area = logical_area(sandbox, path, Use::Internal)?;
    let real = real_file(sandbox, path, area)?.ok_or_else(|| missing(path))?;
    let file = File::open(&real.canonical).map_err(|err| Error::io(path, &err))?;
    let opened = file.metadata().map_err(|err| Error::io(path, &err))?;
    if !opened.is_file() {
        return Err(Error::denied(format!("{path} is not a regular file")));
    }
    verify_opened(sandbox, path, area, &real, &file, &opened)?;
    Ok(OpenedFile { file, len: opened.len(), path: path.clone() })
}

pub(super) fn read(sandbox: &Sandbox, path: &NotePath, max_bytes: u64) -> Result<Vec<u8>> {
    let opened = open_read(sandbox, path)?;
    if opened.len() > max_bytes {
        return Err(too_large(path, opened.len(), max_bytes));
    }
    let file = &opened.file;
    let bytes = read_capped(file, max_bytes).map_err(|err| Error::io(path, &err))?;
    if bytes.len() as u64 > max_bytes {
        // The file grew after it was opened.
        return Err(too_large(path, bytes.len() as u64, max_bytes));
    }
    Ok(bytes)
}

pub(super) fn vault_path(sandbox: &Sandbox, disk: &Path) -> Option<String> {
    relative(&sandbox.root, disk)
}

pub(super) fn is_attachment(sandbox: &Sandbox, path: &NotePath) -> bool {
    !path.is_markdown()
        && sandbox.policy.area_of(path).is_some_and(is_readable)
        && symlink_target(sandbox, &on_disk(&sandbox.root, path.as_str())).is_some()
}

pub(super) fn is_folder(sandbox: &Sandbox, path: &NotePath) -> bool {
    fs::symlink_metadata(on_disk(&sandbox.root, path.as_str())).is_ok_and(|meta| meta.is_dir())
}

pub(super) fn resolve_folder(sandbox: &Sandbox, input: &str) -> Result<Option<NotePath>> {
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

pub(super) fn resolve_note_target(sandbox: &Sandbox, input: &str) -> Result<NotePath> {
    let path = NotePath::parse(input)?;
    check_note_target(sandbox, &path)?;
    walk_write_chain(sandbox, &path, false)?;
    Ok(path)
}

pub(super) fn stat(sandbox: &Sandbox, path: &NotePath) -> Result<Option<FileStat>> {
    let area = logical_area(sandbox, path, Use::Internal)?;
    Ok(real_file(sandbox, path, area)?.map(|real| file_stat(&real.meta)))
}

pub(super) fn scan(sandbox: &Sandbox) -> Result<Scan> {
    let root = &sandbox.root;
    let policy = &sandbox.policy;
    let walker = WalkDir::new(root).follow_links(false).into_iter().filter_entry(|entry| {
        entry.depth() == 0 || !entry.file_type().is_dir() || enters(policy, root, entry.path())
    });
    let mut scan = Scan::default();
    for entry in walker {
        let entry = match entry {
            Ok(entry) => entry,
            Err(err) if err.depth() == 0 => {
                let err = err.into_io_error().unwrap_or_else(|| io::Error::other("cannot walk the vault"));
                return Err(Error::io(root.display(), &err));
            }
            // A folder we may not read or a file deleted mid-walk: not ours to report.
            Err(_) => continue,
        };
        let file_type = entry.file_type();
        if file_type.is_dir() {
            continue;
        }
        let path = match relative(root, entry.path()).map(|rel| (NotePath::parse(&rel), rel)) {
            Some((Ok(path), _)) => path,
            Some((Err(err), rel)) => {
                // A Markdown file whose name we refuse is reported, never silently lost.
                if ends_in_md(&rel) {
                    scan.skipped.push(SkippedFile { path: rel, reason: err.message });
                }
                continue;
            }
            None => {
                let shown = entry.path().to_string_lossy().into_owned();
                if ends_in_md(&shown) {
                    scan.skipped
                        .push(SkippedFile { path: shown, reason: "the name is not valid UTF-8".to_owned() });
                }
                continue;
            }
        };
        let Some(area) = policy.area_of(&path).filter(|&area| is_readable(area)) else {
            continue;
        };
        if path.is_markdown()
            && let Some(folder) = sandbox.templates_folder_of(&path)
        {
            scan.skipped.push(SkippedFile {
                path: path.as_str().to_owned(),
                reason: format!(
                    "a template in Obsidian's templates folder `{folder}`: left out of search, tags and \
                     counts (read_note still reads it)"
                ),
            });
            continue;
        }
        if file_type.is_file() {
            if !path.is_markdown() {
                scan.attachments.push(path);
            } else if let Ok(meta) = entry.metadata() {
                scan.markdown.push(ScannedFile { path, area, stat: file_stat(&meta) });
            }
        } else if file_type.is_symlink() {
            match symlink_target(sandbox, entry.path()) {
                Some(_) if !path.is_markdown() => scan.attachments.push(path),
                Some((target, meta)) if target.is_markdown() => {
                    scan.markdown.push(ScannedFile { path, area, stat: file_stat(&meta) });
                    scan.linked += 1;
                }
                served => {
                    if let Some(reason) = unserved_symlink(sandbox, &path, entry.path(), served.is_some()) {
                        scan.skipped.push(SkippedFile { path: path.as_str().to_owned(), reason });
                    }
                }
            }
        }
    }
    scan.markdown.sort_by(|a, b| a.path.cmp(&b.path));
    scan.attachments.sort();
    scan.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(scan)
}

pub(super) fn write_atomic(
    sandbox: &Sandbox,
    path: &NotePath,
    bytes: &[u8],
    mode: WriteMode,
    like: Option<&NotePath>,
) -> Result<()> {
    match sandbox.policy.area_of(path) {
        Some(Area::Inbox) => {}
        Some(Area::Note) => check_note_target(sandbox, path)?,
        _ => return Err(not_writable(sandbox, path)),
    }
    let target = walk_write_chain(sandbox, path, true)?;
    let parent = target.parent().unwrap_or(&sandbox.root);
    if mode == WriteMode::CreateNew && fs::symlink_metadata(&target).is_ok() {
        return Err(target_exists(path));
    }
    let source = match like {
        Some(like) => {
            let disk = walk_write_chain(sandbox, like, false)?;
            Some(fs::metadata(&disk).map_err(|err| Error::io(like, &err))?)
        }
        None => None,
    };
    let access = source.as_ref().map_or(Access::Default, Access::AtMost);
    let temp = TempFile::create(parent, path.file_name()).map_err(|err| Error::io(path, &err))?;
    temp.fill(bytes, access).map_err(|err| Error::io(path, &err))?;
    match mode {
        WriteMode::Replace => fs::rename(&temp.path, &target).map_err(|err| Error::io(path, &err))?,
        WriteMode::CreateNew => match fs::hard_link(&temp.path, &target) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => return Err(target_exists(path)),
            // No hard links here (some network and FAT file systems): create the
            // target itself exclusively; it is briefly visible while written.
            Err(_) => create_new_direct(path, &target, bytes)?,
        },
    }
    drop(temp);
    sync_dir(parent);
    Ok(())
}

/// Who is asking for a file, which decides the areas and extensions allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    /// An agent reading a note: Markdown in notes, standards or read_also folders.
    ReadNote,
    /// The library itself: the same, plus any file of the inbox (proposals, audit log).
    Internal,
}

/// A file whose real path passed every check.
struct RealFile {
    /// The canonical path, free of symlinks.
    canonical: PathBuf,
    /// Its metadata at the time of the check.
    meta: Metadata,
}

/// The area of a path by its text, refused when `used` may not touch it.
fn logical_area(sandbox: &Sandbox, path: &NotePath, used: Use) -> Result<Area> {
    match sandbox.policy.area_of(path) {
        Some(Area::Inbox) if used == Use::Internal => Ok(Area::Inbox),
        Some(Area::Inbox) => {
            Err(Error::denied(format!("{path} is in the proposals inbox, which is not readable as notes")))
        }
        Some(area) if path.is_markdown() => Ok(area),
        Some(_) => Err(Error::denied(format!("{path}: only Markdown notes (.md) can be read"))),
        None => Err(outside_areas(sandbox, path)),
    }
}

/// Canonicalises a path and checks where it really is. `None` when it does not exist.
fn real_file(sandbox: &Sandbox, path: &NotePath, area: Area) -> Result<Option<RealFile>> {
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
        _ => real_area.is_some_and(is_readable) && real.is_markdown(),
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
fn verify_opened(
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
pub(super) fn same_file(a: &Metadata, b: &Metadata) -> bool {
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
pub(super) fn check_note_target(sandbox: &Sandbox, path: &NotePath) -> Result<()> {
    if !path.is_markdown() {
        return Err(Error::denied(format!("{path}: only Markdown notes (.md) can be written")));
    }
    match sandbox.policy.area_of(path) {
        Some(Area::Note) => Ok(()),
        _ => Err(not_writable(sandbox, path)),
    }
}

/// Walks the path from the root without following anything: every existing
/// component must be a real folder (the last one a regular file), never a
/// symlink. With `create`, missing folders are created one by one and checked
/// again. Returns the target's path on disk.
pub(super) fn walk_write_chain(sandbox: &Sandbox, path: &NotePath, create: bool) -> Result<PathBuf> {
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
        Some(rel) if !rel.is_empty() && sandbox.policy.is_denied(&rel) => {
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

/// The fallback of [`WriteMode::CreateNew`] where hard links are unsupported.
fn create_new_direct(path: &NotePath, target: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = match OpenOptions::new().write(true).create_new(true).open(target) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => return Err(target_exists(path)),
        Err(err) => return Err(Error::io(path, &err)),
    };
    if let Err(err) = file.write_all(bytes).and_then(|()| file.sync_all()) {
        drop(file);
        let _ = fs::remove_file(target);
        return Err(Error::io(path, &err));
    }
    Ok(())
}

/// A temporary file beside the target, removed when dropped unless renamed away.
pub(super) struct TempFile {
    pub(super) path: PathBuf,
    file: File,
}

/// Whose permissions a file written by [`TempFile::fill`] takes.
#[derive(Clone, Copy)]
pub(super) enum Access<'a> {
    /// The default for a new file (the process's umask decides).
    Default,
    /// Exactly those of the file it replaces: mode, and owner where the process may.
    Same(&'a Metadata),
    /// No more than those of the file it comes from (a staged copy of a note):
    /// the default mode with the source's missing permission bits taken away.
    AtMost(&'a Metadata),
}

impl TempFile {
    /// What every temporary file name holds: `.<name>.kb-tmp-<16 hex digits>`.
    pub(super) const MARK: &'static str = ".kb-tmp-";

    /// Creates `.<name>.kb-tmp-<random>` in `dir`, exclusively. The leading dot
    /// keeps it out of every walk.
    pub(super) fn create(dir: &Path, name: &str) -> io::Result<TempFile> {
        let mut cut = name.len().min(200);
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        let mut random = [0u8; 8];
        getrandom::fill(&mut random).map_err(|err| io::Error::other(err.to_string()))?;
        let suffix = hex(&random);
        let path = dir.join(format!(".{}{}{suffix}", &name[..cut], TempFile::MARK));
        let file = OpenOptions::new().write(true).create_new(true).open(&path)?;
        Ok(TempFile { path, file })
    }

    /// Writes the bytes, gives the file its permissions (after writing, so a
    /// read-only mode does not stop the write) and flushes it to disk.
    pub(super) fn fill(&self, bytes: &[u8], access: Access<'_>) -> io::Result<()> {
        (&self.file).write_all(bytes)?;
        set_access(&self.file, access)?;
        self.file.sync_all()
    }

    /// Leaves the file on disk (its bytes may be a person's) and returns its path.
    pub(super) fn keep(self) -> PathBuf {
        let path = self.path.clone();
        std::mem::forget(self);
        path
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        // After a successful rename the name is gone and this fails harmlessly.
        let _ = fs::remove_file(&self.path);
    }
}

/// Gives an open file the permissions [`Access`] asks for. Changing the owner
/// needs privileges most processes lack: then the file stays ours, with the mode.
#[cfg(unix)]
fn set_access(file: &File, access: Access<'_>) -> io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let own = file.metadata()?;
    let mode = match access {
        Access::Default => return Ok(()),
        Access::Same(like) => like.mode() & 0o7777,
        Access::AtMost(like) => own.mode() & like.mode() & 0o777,
    };
    if own.mode() & 0o7777 != mode {
        file.set_permissions(fs::Permissions::from_mode(mode))?;
    }
    if let Access::Same(like) = access
        && (like.uid() != own.uid() || like.gid() != own.gid())
    {
        // Without the privilege to give the file away, at least keep its group.
        if std::os::unix::fs::fchown(file, Some(like.uid()), Some(like.gid())).is_err() {
            let _ = std::os::unix::fs::fchown(file, None, Some(like.gid()));
        }
    }
    Ok(())
}

#[cfg(not(unix))]
fn set_access(file: &File, access: Access<'_>) -> io::Result<()> {
    if let Access::Same(like) | Access::AtMost(like) = access
        && like.permissions().readonly()
    {
        file.set_permissions(like.permissions())?;
    }
    Ok(())
}

/// Flushes a folder's entries (the rename or link) to disk, where the platform can.
pub(super) fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    {
        let _ = File::open(dir).and_then(|folder| folder.sync_all());
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// Whether the walk enters a folder: not denied, not the inbox, and inside or
/// above a readable folder.
fn enters(policy: &Policy, root: &Path, dir: &Path) -> bool {
    let Some(rel) = relative(root, dir) else { return false };
    NotePath::parse(&rel).is_ok_and(|path| holds_readable(policy, &path))
}

/// Whether a folder lies in a readable area or holds one (`z` when notes are
/// `z/notes`): the folders the walk enters and a search may be limited to.
fn holds_readable(policy: &Policy, folder: &NotePath) -> bool {
    match policy.area_of(folder) {
        Some(area) => is_readable(area),
        None => !policy.is_denied(folder.as_str()) && policy.has_readable_below(folder.as_str()),
    }
}

/// Where a symlink met by the walk (or any path) leads, if that is a regular file
/// in a readable area of the vault.
fn symlink_target(sandbox: &Sandbox, link: &Path) -> Option<(NotePath, Metadata)> {
    let target = canonical(link).ok()?;
    let target_path = NotePath::parse(&relative(&sandbox.root, &target)?).ok()?;
    sandbox.policy.area_of(&target_path).filter(|&area| is_readable(area))?;
    let meta = fs::metadata(&target).ok()?;
    meta.is_file().then_some((target_path, meta))
}

/// Why a symlink the walk met in a readable folder serves no note, when that is
/// worth reporting: a symlinked folder (never followed: one that leads out of
/// the vault is a common multi-vault setup whose notes would otherwise vanish
/// without a word) or a `.md` link that leads nowhere readable. `to_file` says
/// the link leads to a readable regular file that is not Markdown. Links to
/// other kinds of files (attachments) that lead nowhere are not reported. The
/// reason never names a target outside the readable folders.
fn unserved_symlink(sandbox: &Sandbox, path: &NotePath, link: &Path, to_file: bool) -> Option<String> {
    let markdown = path.is_markdown();
    if to_file {
        return markdown.then(|| "a symbolic link to a file that is not Markdown: not a note".to_owned());
    }
    let Ok(target) = canonical(link) else {
        return markdown.then(|| "a broken symbolic link (its target does not exist)".to_owned());
    };
    let is_dir = fs::metadata(&target).is_ok_and(|meta| meta.is_dir());
    if !is_dir && !markdown {
        return None;
    }
    let what = if is_dir { "a symbolic link to a folder" } else { "a symbolic link" };
    let inside = relative(&sandbox.root, &target).and_then(|rel| NotePath::parse(&rel).ok());
    Some(match inside {
        None => format!(
            "{what} leading outside the vault: not followed (kb-mcp serves only files inside the vault; \
             index the other folder as a vault of its own, or move its notes into this one)"
        ),
        Some(real) if is_dir && holds_readable(&sandbox.policy, &real) => format!(
            "{what} inside the vault (`{real}`): not followed; its notes are served under their own paths"
        ),
        Some(_) if is_dir => {
            format!("{what} that leads to a folder that is denied or not readable: not followed")
        }
        Some(_) => format!("{what} to a file that is denied, not readable or not a regular file"),
    })
}

/// Notes, standards and read_also files are readable; the inbox is not.
fn is_readable(area: Area) -> bool {
    matches!(area, Area::Note | Area::Standard | Area::ReadAlso)
}

/// Reads at most `limit + 1` bytes, so growth past the limit shows.
fn read_capped(file: &File, limit: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok(bytes)
}

fn file_stat(meta: &Metadata) -> FileStat {
    FileStat {
        size: meta.len(),
        modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        created: meta.created().ok(),
    }
}

/// The vault path `rel` on disk under `root`, pushed segment by segment so that
/// it also works under a Windows verbatim (`\\?\`) root.
fn on_disk(root: &Path, rel: &str) -> PathBuf {
    let mut disk = root.to_path_buf();
    disk.extend(rel.split('/'));
    disk
}

/// `path` relative to `root` with forward slashes; `""` for the root itself,
/// `None` when it is not below the root or not UTF-8.
fn relative(root: &Path, path: &Path) -> Option<String> {
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
fn canonical(path: &Path) -> io::Result<PathBuf> {
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

/// Missing, or a file where a folder was expected (`a.md/b.md`).
pub(super) fn is_missing(err: &io::Error) -> bool {
    matches!(err.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory)
}

pub(super) fn missing(path: &NotePath) -> Error {
    Error::not_found(format!("{path} does not exist"))
}

pub(super) fn target_exists(path: &NotePath) -> Error {
    Error::new(ErrorCode::TargetExists, format!("{path} already exists"))
        .with_hint("choose another title or folder, or propose a patch to the existing note")
}

fn too_large(what: &dyn std::fmt::Display, size: u64, limit: u64) -> Error {
    Error::new(ErrorCode::TooLarge, format!("{what} is {size} bytes, more than the limit of {limit} bytes"))
        .with_hint("read it in parts with offset and max_bytes, or raise [limits] read_max_bytes in kb.toml")
}

/// Why a path's text puts it outside every area it could be used in.
fn outside_areas(sandbox: &Sandbox, path: &NotePath) -> Error {
    if sandbox.policy.is_denied(path.as_str()) {
        Error::denied(format!(
            "{path} is denied: internal folders (.git, .obsidian, .kb, dot-files), secrets and kb.toml deny rules are never readable"
        ))
    } else {
        Error::denied(format!("{path} is outside the notes, standards and read_also folders"))
    }
}

/// Why a path may not be written.
fn not_writable(sandbox: &Sandbox, path: &NotePath) -> Error {
    match sandbox.policy.area_of(path) {
        Some(Area::Standard) => Error::denied(format!("{path} is a standard; standards are read-only")),
        Some(Area::ReadAlso) => Error::denied(format!("{path} is in a read_also folder, which is read-only")),
        Some(Area::Inbox) => {
            Error::denied(format!("{path} is in the proposals inbox, not in a notes folder"))
        }
        Some(Area::Note) => Error::denied(format!("{path} may not be written")),
        None => outside_areas(sandbox, path),
    }
}
