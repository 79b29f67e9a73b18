//! The vault walk: every readable Markdown file and attachment, never through a
//! symlinked folder, denied folders pruned before they are entered, refused
//! Markdown names reported as skipped rather than lost.

use std::fs::{self, Metadata};
use std::io;
use std::path::Path;

use walkdir::WalkDir;

use super::forms::{canonical, relative};
use super::read::{FileStat, file_stat};
use crate::error::{Error, Result};
use crate::sandbox::{Area, NotePath, Policy, Sandbox, ends_in_md};

/// One Markdown file found by [`Sandbox::scan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedFile {
    /// Its vault-relative path.
    pub path: NotePath,
    /// Its area (never `Inbox`).
    pub area: crate::sandbox::Area,
    /// Its size and times.
    pub stat: FileStat,
}

/// The result of a vault walk.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// Markdown files, canvases and PDFs in readable areas, sorted by path.
    pub markdown: Vec<ScannedFile>,
    /// Other files in readable areas (attachments links may point at, canvases
    /// and PDFs too), sorted.
    pub attachments: Vec<NotePath>,
    /// Markdown files left out because their names are refused, templates
    /// (canvases of a templates folder too),
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

pub(in crate::sandbox) fn scan(sandbox: &Sandbox) -> Result<Scan> {
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
        if path.is_note()
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
            if (path.is_canvas() || path.is_pdf())
                && let Ok(meta) = entry.metadata()
            {
                // A canvas is a note (searched, read, linking) and stays an
                // attachment (what moves carry and rewrite as JSON); a PDF is
                // searched and read by its text and stays an attachment too.
                scan.markdown.push(ScannedFile { path: path.clone(), area, stat: file_stat(&meta) });
            }
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

/// Whether the walk enters a folder: not denied, not the inbox, and inside or
/// above a readable folder.
fn enters(policy: &Policy, root: &Path, dir: &Path) -> bool {
    let Some(rel) = relative(root, dir) else { return false };
    NotePath::parse(&rel).is_ok_and(|path| holds_readable(policy, &path))
}

/// Whether a folder lies in a readable area or holds one (`z` when notes are
/// `z/notes`): the folders the walk enters and a search may be limited to.
pub(super) fn holds_readable(policy: &Policy, folder: &NotePath) -> bool {
    match policy.area_of(folder) {
        Some(area) => is_readable(area),
        None => !policy.is_denied(folder.as_str()) && policy.has_readable_below(folder.as_str()),
    }
}

/// Where a symlink met by the walk (or any path) leads, if that is a regular file
/// in a readable area of the vault.
pub(super) fn symlink_target(sandbox: &Sandbox, link: &Path) -> Option<(NotePath, Metadata)> {
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
pub(super) fn is_readable(area: Area) -> bool {
    matches!(area, Area::Note | Area::Standard | Area::ReadAlso)
}
