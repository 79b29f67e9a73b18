//! The files a folder move carries besides its notes: attachments, PDFs,
//! images, canvases, hidden files, anything else under the folder.
//!
//! [`Sandbox::folder_contents`] lists everything under a folder, never
//! following a symlink, and says what cannot be carried and why: a file or
//! folder a built-in or `deny` rule names (`.git`, `.env`, a key, the
//! person's own rules), a symbolic link, something that is not a regular file,
//! a name the path checks refuse, a file of a read-only area or the inbox, an
//! interrupted apply's temporary file. A hidden file no rule denies
//! (`.DS_Store`) is carried: moving it reads nothing of it for an agent.
//!
//! A carried file is renamed ([`Sandbox::rename_carried`]), never rewritten
//! unless it is text the plan holds (a canvas), so its bytes and mode go with
//! it; like a note, it is renamed only while it holds what the plan checked
//! (its hash) and never over another file. The multi-file primitives take
//! such files too ([`Sandbox::resolve_plan_target`]).

use std::fs;
use std::io;

use walkdir::WalkDir;

use super::fs::{
    OpenedFile, check_plan_target, file_stat, is_missing, missing, relative, same_file, sync_dir,
    target_exists, walk_write_chain,
};
use super::notes::walk_to_folder;
use super::swap::is_temp_name;
use super::{Area, FileStat, NotePath, Sandbox};
use crate::error::{Error, ErrorCode, Result};

/// What lies under a folder, for a folder move.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FolderContents {
    /// Every regular file that can be carried (notes included), sorted.
    pub files: Vec<NotePath>,
    /// Every folder, the folder itself first, then by path.
    pub folders: Vec<NotePath>,
    /// What cannot be carried, sorted by path.
    pub refused: Vec<RefusedFile>,
}

/// A file or folder a folder move cannot carry, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedFile {
    /// Its vault path (lossy when the name is not UTF-8).
    pub path: String,
    /// Why.
    pub reason: String,
}

impl Sandbox {
    /// Everything under `folder` (a folder of a notes root, reached through
    /// real folders): see the module docs. An empty listing when it does not exist.
    pub(crate) fn folder_contents(&self, folder: &NotePath) -> Result<FolderContents> {
        let disk = walk_to_folder(self, folder)?;
        let mut contents = FolderContents::default();
        match fs::symlink_metadata(&disk) {
            Ok(meta) if meta.is_dir() => contents.folders.push(folder.clone()),
            Ok(_) => return Err(Error::denied(format!("{folder} is not a folder"))),
            Err(err) if is_missing(&err) => return Ok(contents),
            Err(err) => return Err(Error::io(folder, &err)),
        }
        let mut walker = WalkDir::new(&disk).follow_links(false).min_depth(1).sort_by_file_name().into_iter();
        while let Some(entry) = walker.next() {
            let entry = entry.map_err(|err| {
                let err = err.into_io_error().unwrap_or_else(|| io::Error::other("cannot list the folder"));
                Error::io(folder, &err)
            })?;
            let kind = entry.file_type();
            let shown = relative(self.root(), entry.path())
                .unwrap_or_else(|| entry.path().to_string_lossy().into_owned());
            let mut refuse = |reason: &str| {
                contents.refused.push(RefusedFile { path: shown.clone(), reason: reason.to_owned() });
            };
            let path = match NotePath::parse(&shown) {
                Ok(path) => path,
                Err(err) => {
                    refuse(&err.message);
                    if kind.is_dir() {
                        walker.skip_current_dir();
                    }
                    continue;
                }
            };
            let why = match self.policy.carried_area(&path) {
                Some(Area::Note) => None,
                Some(Area::Inbox) => Some("the proposals inbox"),
                Some(Area::Memory) => Some("the agent's memory folder"),
                Some(_) => Some("a read-only folder (standards or read_also)"),
                None => Some("denied: a built-in or `deny` rule names it (internal folders, secrets)"),
            };
            if let Some(why) = why {
                refuse(why);
                if kind.is_dir() {
                    walker.skip_current_dir();
                }
            } else if kind.is_symlink() {
                refuse("a symbolic link (move it, or what it leads to, yourself)");
            } else if kind.is_dir() {
                contents.folders.push(path);
            } else if !kind.is_file() {
                refuse("not a regular file");
            } else if is_temp_name(path.file_name(), None) {
                refuse("a temporary file of an interrupted apply (the next apply or start settles it)");
            } else {
                contents.files.push(path);
            }
        }
        contents.files.sort();
        contents.folders[1..].sort();
        contents.refused.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(contents)
    }

    /// A path a multi-file plan may move or rewrite: a note target
    /// ([`Sandbox::resolve_note_target`]) when it is a visible Markdown file,
    /// else a file a folder move carries (in a notes root, denied by no rule),
    /// reached through real folders either way.
    pub(crate) fn resolve_plan_target(&self, input: &str) -> Result<NotePath> {
        let path = NotePath::parse(input)?;
        check_plan_target(self, &path)?;
        walk_write_chain(self, &path, false)?;
        Ok(path)
    }

    /// Opens a plan's file ([`Sandbox::resolve_plan_target`]) to read it, not
    /// following any symlink; `None` when it does not exist.
    pub(crate) fn open_plan_file(&self, path: &NotePath) -> Result<Option<OpenedFile>> {
        check_plan_target(self, path)?;
        let disk = walk_write_chain(self, path, false)?;
        let file = match fs::File::open(&disk) {
            Ok(file) => file,
            Err(err) if is_missing(&err) => return Ok(None),
            Err(err) => return Err(Error::io(path, &err)),
        };
        let opened = file.metadata().map_err(|err| Error::io(path, &err))?;
        let on_path = fs::symlink_metadata(&disk).map_err(|err| Error::io(path, &err))?;
        if !opened.is_file() || !on_path.is_file() || !same_file(&opened, &on_path) {
            return Err(Error::denied(format!("{path} is not a regular file")));
        }
        Ok(Some(OpenedFile::new(file, &opened, path)))
    }

    /// A plan's file's bytes, up to `max_bytes` (`too_large` beyond): a note as
    /// [`Sandbox::read`] reads it, another file through real folders only.
    /// `not_found` when it does not exist.
    pub(crate) fn read_plan_file(&self, path: &NotePath, max_bytes: u64) -> Result<Vec<u8>> {
        if path.is_note() && self.policy.area_of(path).is_some() {
            return self.read(path, max_bytes);
        }
        let opened = self.open_plan_file(path)?.ok_or_else(|| missing(path))?;
        if opened.len() > max_bytes {
            return Err(Error::new(
                ErrorCode::TooLarge,
                format!("{path} is {} bytes, more than the limit of {max_bytes} bytes", opened.len()),
            ));
        }
        let bytes = opened.read_at(0, usize::try_from(max_bytes.saturating_add(1)).unwrap_or(usize::MAX))?;
        if bytes.len() as u64 > max_bytes {
            return Err(Error::new(ErrorCode::TooLarge, format!("{path} grew past {max_bytes} bytes")));
        }
        Ok(bytes)
    }

    /// Size and times of a plan's file; `None` when it does not exist.
    pub(crate) fn stat_plan_file(&self, path: &NotePath) -> Result<Option<FileStat>> {
        check_plan_target(self, path)?;
        let disk = walk_write_chain(self, path, false)?;
        match fs::symlink_metadata(&disk) {
            Ok(meta) => Ok(Some(file_stat(&meta))),
            Err(err) if is_missing(&err) => Ok(None),
            Err(err) => Err(Error::io(path, &err)),
        }
    }

    /// Renames a carried file to `to`, creating folders as needed and never
    /// replacing a file (as [`Sandbox::rename_note`] does a note): `not_found`
    /// when `from` is gone, `target_exists` when `to` exists, `stale_base` when
    /// `holds` says `from` no longer holds what the plan checked. `flush`:
    /// flush both folders now (else [`Sandbox::flush_files`] does, once).
    pub(crate) fn rename_carried(
        &self,
        from: &NotePath,
        to: &NotePath,
        holds: &mut dyn FnMut(&OpenedFile) -> Result<bool>,
        flush: bool,
    ) -> Result<()> {
        let opened = self.open_plan_file(from)?.ok_or_else(|| missing(from))?;
        if !holds(&opened)? {
            return Err(Error::new(
                ErrorCode::StaleBase,
                format!("{from} has changed since the proposal was checked"),
            )
            .with_hint("nothing was moved; look at the file again and propose the move again"));
        }
        drop(opened);
        check_plan_target(self, to)?;
        let source = walk_write_chain(self, from, false)?;
        let target = walk_write_chain(self, to, true)?;
        match fs::hard_link(&source, &target) {
            Ok(()) => {
                if let Err(err) = fs::remove_file(&source) {
                    let _ = fs::remove_file(&target);
                    return Err(if is_missing(&err) { missing(from) } else { Error::io(from, &err) });
                }
            }
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                let same = fs::symlink_metadata(&target)
                    .ok()
                    .zip(fs::symlink_metadata(&source).ok())
                    .is_some_and(|(a, b)| same_file(&a, &b));
                // The same file under another case: a plain rename changes the name.
                if !same || from.as_str() == to.as_str() {
                    return Err(target_exists(to));
                }
                fs::rename(&source, &target).map_err(|err| Error::io(from, &err))?;
            }
            Err(err) if is_missing(&err) => return Err(missing(from)),
            Err(_) => {
                if fs::symlink_metadata(&target).is_ok() {
                    return Err(target_exists(to));
                }
                fs::rename(&source, &target).map_err(|err| Error::io(from, &err))?;
            }
        }
        if flush {
            sync_dir(target.parent().unwrap_or(self.root()));
            sync_dir(source.parent().unwrap_or(self.root()));
        }
        Ok(())
    }

    /// Makes a folder of a notes root (and the folders leading to it), through
    /// real folders only: where a folder move carries a folder that holds no file.
    pub(crate) fn make_note_folder(&self, folder: &NotePath) -> Result<()> {
        let inside = NotePath::parse(&format!("{folder}/_"))?;
        if !matches!(self.policy.carried_area(&inside), Some(Area::Note)) {
            return Err(Error::denied(format!("{folder}: folders are made only in the notes")));
        }
        walk_write_chain(self, &inside, true)?;
        Ok(())
    }
}
