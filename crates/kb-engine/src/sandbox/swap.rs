//! Replacing a note that a person may be saving at the same moment.
//!
//! An apply checks a note's hash, then replaces the note; an editor's save can
//! land in between, in place (the same file truncated and rewritten) or by
//! rename (a new file renamed over the note). A plain rename would silently
//! destroy that save. So the swap re-checks the note right before it, and then
//! verifies what it actually replaced: on Linux the new file and the note are
//! *exchanged* (`renameat2(RENAME_EXCHANGE)`), which leaves exactly the file that
//! was at the note's name, whichever save put it there, under the temporary
//! name, where its bytes are compared with the base. Anything other than the
//! base is a person's save: it is exchanged back into place (and should another
//! save have landed in the new file meanwhile, that file is kept apart as a
//! conflict copy in the inbox). The replaced file is watched a little longer
//! for a save landing late (`displaced.rs`). Where exchange is not available, the note is held open
//! across a plain rename and its bytes are compared afterwards: an in-place save
//! is still caught (and written back), a rename-save in the instant between the
//! re-check and the rename is not.

use std::fs::{self, File};
use std::io::{self, Read, Seek};
use std::path::Path;

use super::displaced::{Discards, park_if_ours, read_stamped};
use super::fs::{
    Access, FileStat, TempFile, check_plan_target, file_stat, is_missing, same_file, sync_dir,
    walk_write_chain,
};
use super::parked::Seal;
use super::{NotePath, Sandbox};
use crate::error::{Error, Result};

/// How `Sandbox::replace_note` ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replaced {
    /// The note held exactly the base when it was swapped: it holds the new bytes now.
    Clean,
    /// Right before the swap the note no longer held the base (`None`: it is
    /// gone); nothing was changed.
    Changed(Option<Vec<u8>>),
    /// A save landed during the swap. The note holds the person's file again and
    /// not the new bytes; `kept` names a conflict copy in the inbox holding a save
    /// that landed in the new file meanwhile, when one did.
    Conflict {
        /// The conflict copy, when one was needed.
        kept: Option<NotePath>,
    },
}

pub(super) fn replace_note(
    sandbox: &Sandbox,
    path: &NotePath,
    bytes: &[u8],
    base: &[u8],
    conflict_copy: &NotePath,
    before_swap: &mut dyn FnMut() -> Result<()>,
    discards: Option<&mut Discards>,
) -> Result<Replaced> {
    check_plan_target(sandbox, path)?;
    let target = walk_write_chain(sandbox, path, false)?;
    let parent = target.parent().unwrap_or(sandbox.root()).to_path_buf();
    let io_err = |err: io::Error| Error::io(path, &err);
    let meta = match fs::symlink_metadata(&target) {
        Ok(meta) if meta.is_file() => meta,
        Ok(_) => return Err(Error::denied(format!("{path} exists and is not a regular file"))),
        Err(err) if is_missing(&err) => return Ok(Replaced::Changed(None)),
        Err(err) => return Err(io_err(err)),
    };
    let temp = TempFile::create(&parent, path.file_name()).map_err(io_err)?;
    temp.fill(bytes, Access::Same(&meta)).map_err(io_err)?;
    swap_in(sandbox, path, &target, temp, bytes, base, conflict_copy, before_swap, true, discards)
}

/// The swap of [`replace_note`] once the new bytes are in `temp` beside the
/// note: re-check, exchange, settle. `sync`: flush the folder after each step
/// (otherwise the caller flushes the file system once, after many swaps).
/// `discards`: where the replaced file goes when it held the base, instead of
/// being removed on the spot (see [`Discards`]).
#[expect(
    clippy::too_many_arguments,
    reason = "replace_note's arguments plus the file, the flush choice and where replaced files go"
)]
fn swap_in(
    sandbox: &Sandbox,
    path: &NotePath,
    target: &Path,
    temp: TempFile,
    bytes: &[u8],
    base: &[u8],
    conflict_copy: &NotePath,
    before_swap: &mut dyn FnMut() -> Result<()>,
    sync: bool,
    discards: Option<&mut Discards>,
) -> Result<Replaced> {
    let parent = target.parent().unwrap_or(sandbox.root()).to_path_buf();
    let io_err = |err: io::Error| Error::io(path, &err);
    let sync_dir = |dir: &Path| {
        if sync {
            sync_dir(dir);
        }
    };

    // Re-check right before the swap, holding the note open.
    let Some(mut held) = open_note(target).map_err(io_err)? else { return Ok(Replaced::Changed(None)) };
    let now = read_all(&mut held).map_err(io_err)?;
    if now != base {
        return Ok(Replaced::Changed(Some(now)));
    }
    before_swap()?;

    match exchange(&temp.path, target) {
        Ok(()) => {
            let replaced = temp.keep();
            let outcome = settle(sandbox, path, target, &replaced, bytes, base, conflict_copy, discards);
            sync_dir(&parent);
            return outcome;
        }
        // The file system cannot exchange (some network and FUSE ones): rename.
        Err(err) if matches!(err.kind(), io::ErrorKind::Unsupported | io::ErrorKind::InvalidInput) => {}
        Err(err) => return Err(io_err(err)),
    }

    fs::rename(&temp.path, target).map_err(io_err)?;
    drop(temp);
    sync_dir(&parent);
    held.rewind().map_err(io_err)?;
    let after = read_all(&mut held).map_err(io_err)?;
    if after == base {
        return Ok(Replaced::Clean);
    }
    // An in-place save landed in the file just replaced: write it back.
    let meta = held.metadata().map_err(io_err)?;
    let back = TempFile::create(&parent, path.file_name()).map_err(io_err)?;
    back.fill(&after, Access::Same(&meta)).map_err(io_err)?;
    fs::rename(&back.path, target).map_err(io_err)?;
    sync_dir(&parent);
    Ok(Replaced::Conflict { kept: None })
}

/// Whether [`Sandbox::flush_files`] flushes the file system in one call
/// (`syncfs`); elsewhere each prepared file and folder is flushed on its own.
const ONE_FLUSH: bool = cfg!(target_os = "linux");

/// A note's new bytes, written beside it (or beside where a move takes it)
/// ahead of the swap that puts them in place: a multi-file apply writes all
/// its files first and flushes them to disk at once
/// (`Sandbox::flush_files`), so that no note's name ever leads to bytes not
/// yet on disk, at the cost of two flushes instead of two per note. Dropped
/// unused, the file is removed.
#[derive(Debug)]
pub struct Prepared {
    path: NotePath,
    temp: Option<std::path::PathBuf>,
    stat: FileStat,
}

impl Prepared {
    /// The prepared file's size and times once written: the note's after its
    /// swap (which moves this file to the note's name, times unchanged), until
    /// anything writes to it again.
    pub fn stat(&self) -> FileStat {
        self.stat
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = fs::remove_file(temp);
        }
    }
}

/// After the exchange: `replaced` (the temporary name) holds what was at the
/// note's name. Removed when it is the base (or handed to `discards`);
/// otherwise exchanged back. Never removes a file whose bytes could be a person's.
#[expect(clippy::too_many_arguments, reason = "the swap's state, passed on whole")]
fn settle(
    sandbox: &Sandbox,
    path: &NotePath,
    target: &Path,
    replaced: &Path,
    bytes: &[u8],
    base: &[u8],
    conflict_copy: &NotePath,
    discards: Option<&mut Discards>,
) -> Result<Replaced> {
    let kept_at = |err: &io::Error| {
        Error::io(path, err).with_hint(format!(
            "a save made during the apply is kept in {}; compare it with {path}",
            replaced.display()
        ))
    };
    // The metadata is taken before the bytes are read: a write landing after
    // the read still shows as a change to whoever looks again.
    let (was, meta) = read_stamped(replaced).map_err(|err| kept_at(&err))?;
    if was == base {
        match discards {
            Some(discards) => discards.watch_swapped(replaced, target, path, (&meta, &was)),
            None => sandbox.park(replaced, path, &Seal::of(&meta, &was)),
        }
        return Ok(Replaced::Clean);
    }
    // A person's save: put it back where it was.
    exchange(replaced, target).map_err(|err| kept_at(&err))?;
    if park_if_ours(sandbox, replaced, path, bytes).map_err(|err| kept_at(&err))? {
        return Ok(Replaced::Conflict { kept: None });
    }
    // Another save landed in the new file while it was in place: keep it too.
    let kept = sandbox.keep_conflict_copy(replaced, conflict_copy)?;
    Ok(Replaced::Conflict { kept: Some(kept) })
}

/// Opens the note for reading; `None` when it is gone. Refuses anything that is
/// not the regular file on the path. A save by rename landing between the open
/// and the check is an editor at work, not an attack: the note is opened again
/// (a few times) and the caller compares whatever it holds then.
fn open_note(target: &Path) -> io::Result<Option<File>> {
    for _ in 0..8 {
        let file = match File::open(target) {
            Ok(file) => file,
            Err(err) if is_missing(&err) => return Ok(None),
            Err(err) => return Err(err),
        };
        let opened = file.metadata()?;
        let on_path = match fs::symlink_metadata(target) {
            Ok(meta) => meta,
            Err(err) if is_missing(&err) => return Ok(None),
            Err(err) => return Err(err),
        };
        if !opened.is_file() || !on_path.is_file() {
            return Err(io::Error::other("the note is not a regular file"));
        }
        if same_file(&opened, &on_path) {
            return Ok(Some(file));
        }
    }
    Err(io::Error::other("the note kept changing while it was being opened"))
}

fn read_all(file: &mut File) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Swaps two names atomically: each then names the other's file.
#[cfg(target_os = "linux")]
pub(super) fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).map_err(io::Error::from)
}

#[cfg(not(target_os = "linux"))]
pub(super) fn exchange(_: &Path, _: &Path) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Whether a file name is one of our temporary files: `.<name>.kb-tmp-<16 hex>`
/// (for `for_name`, exactly that name's).
pub(super) fn is_temp_name(file: &str, for_name: Option<&str>) -> bool {
    let Some((head, random)) = file.rsplit_once(TempFile::MARK) else { return false };
    let ours = random.len() == 16 && random.bytes().all(|b| b.is_ascii_hexdigit()) && head.starts_with('.');
    ours && for_name.is_none_or(|name| head[1..] == *name)
}

/// The regular files among `dir`'s entries whose names pass `wanted`.
fn files_named(dir: &Path, wanted: impl Fn(&str) -> bool) -> io::Result<Vec<std::path::PathBuf>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if is_missing(&err) => return Ok(Vec::new()),
        Err(err) => return Err(err),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry?;
        let is_file = entry.file_type().is_ok_and(|kind| kind.is_file());
        if is_file && entry.file_name().to_str().is_some_and(&wanted) {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

impl Sandbox {
    /// Writes `bytes` as a temporary file beside the note `path` (creating its
    /// folders: a move's destination may not exist yet), with the permissions of
    /// the existing note `like`, without flushing it: see [`Prepared`].
    pub(crate) fn prepare_note(&self, path: &NotePath, like: &NotePath, bytes: &[u8]) -> Result<Prepared> {
        check_plan_target(self, path)?;
        check_plan_target(self, like)?;
        let like_disk = walk_write_chain(self, like, false)?;
        let meta = match fs::symlink_metadata(&like_disk) {
            Ok(meta) if meta.is_file() => meta,
            Ok(_) => return Err(Error::denied(format!("{like} exists and is not a regular file"))),
            Err(err) => return Err(Error::io(like, &err)),
        };
        // A rewrite in place: the chain to the note was just walked (and exists).
        let target = if path == like { like_disk } else { walk_write_chain(self, path, true)? };
        let parent = target.parent().unwrap_or(self.root());
        let io_err = |err: io::Error| Error::io(path, &err);
        let temp = TempFile::create(parent, path.file_name()).map_err(io_err)?;
        if ONE_FLUSH {
            temp.fill_unflushed(bytes, Access::Same(&meta)).map_err(io_err)?;
        } else {
            temp.fill(bytes, Access::Same(&meta)).map_err(io_err)?;
        }
        let stat = file_stat(&fs::symlink_metadata(&temp.path).map_err(io_err)?);
        Ok(Prepared { path: path.clone(), temp: Some(temp.keep()), stat })
    }

    /// Flushes what was written to the vault's file system to disk: the
    /// prepared files before their swaps, the swaps and renames before an
    /// apply's commit point. One `syncfs` on Linux; elsewhere each step flushed
    /// its own file and folder already.
    pub(crate) fn flush_files(&self) -> Result<()> {
        #[cfg(target_os = "linux")]
        {
            let root = File::open(self.root()).map_err(|err| Error::io(self.root().display(), &err))?;
            rustix::fs::syncfs(&root)
                .map_err(|err| Error::io(self.root().display(), &io::Error::from(err)))?;
        }
        Ok(())
    }

    /// [`Sandbox::replace_note`] with bytes prepared beside the note
    /// ([`Sandbox::prepare_note`]), leaving the flush to [`Sandbox::flush_files`]
    /// and the removal of the replaced file to `discards`.
    pub(crate) fn replace_prepared(
        &self,
        mut prepared: Prepared,
        bytes: &[u8],
        base: &[u8],
        conflict_copy: &NotePath,
        before_swap: &mut dyn FnMut() -> Result<()>,
        discards: &mut Discards,
    ) -> Result<Replaced> {
        let path = prepared.path.clone();
        check_plan_target(self, &path)?;
        let target = walk_write_chain(self, &path, false)?;
        let Some(temp) = prepared.temp.take() else {
            return Err(Error::internal(format!("the prepared bytes of {path} were used already")));
        };
        if temp.parent() != target.parent() {
            let _ = fs::remove_file(&temp);
            return Err(Error::internal(format!("the prepared bytes of {path} are not beside it")));
        }
        let temp = TempFile::adopt(temp).map_err(|err| Error::io(&path, &err))?;
        swap_in(
            self,
            &path,
            &target,
            temp,
            bytes,
            base,
            conflict_copy,
            before_swap,
            !ONE_FLUSH,
            Some(discards),
        )
    }

    /// Removes the temporary files a killed write left in an inbox folder (only
    /// `.<name>.kb-tmp-<16 hex>`, never anything else) last written more than
    /// `older_than` ago (a write under way is left alone). Returns what it removed.
    pub(crate) fn sweep_inbox_temps(
        &self,
        folder: &NotePath,
        older_than: std::time::Duration,
    ) -> Result<Vec<String>> {
        super::inbox::require_inbox(self, folder)?;
        // Walk to a name inside the folder: every component on the way is checked.
        let inside = NotePath::parse(&format!("{folder}/_"))?;
        let probe = walk_write_chain(self, &inside, false)?;
        let dir = probe.parent().unwrap_or(self.root()).to_path_buf();
        let mut removed = Vec::new();
        for file in
            files_named(&dir, |name| is_temp_name(name, None)).map_err(|err| Error::io(folder, &err))?
        {
            let old = fs::symlink_metadata(&file)
                .and_then(|meta| meta.modified())
                .is_ok_and(|at| at.elapsed().is_ok_and(|age| age > older_than));
            if old && fs::remove_file(&file).is_ok() {
                removed.push(format!("{folder}/{}", file.file_name().unwrap_or_default().to_string_lossy()));
            }
        }
        Ok(removed)
    }

    /// Settles the temporary files a killed apply left beside a note
    /// (`.<note name>.kb-tmp-<16 hex>`): each is removed when `ours` says its bytes
    /// are ours (the proposal's text, or the base it replaced), and otherwise kept
    /// beside the note as `conflict_copy`, since it may hold a person's save.
    /// Returns what it did, one line each.
    pub(crate) fn sweep_note_temps(
        &self,
        note: &NotePath,
        ours: &mut dyn FnMut(&[u8]) -> bool,
        conflict_copy: &NotePath,
    ) -> Result<Vec<String>> {
        check_plan_target(self, note)?;
        let disk = walk_write_chain(self, note, false)?;
        let dir = disk.parent().unwrap_or(self.root());
        let mut done = Vec::new();
        let found = files_named(dir, |name| is_temp_name(name, Some(note.file_name())));
        for file in found.map_err(|err| Error::io(note, &err))? {
            let shown = file.file_name().unwrap_or_default().to_string_lossy().into_owned();
            let Ok(bytes) = fs::read(&file) else { continue };
            if ours(&bytes) {
                if fs::remove_file(&file).is_ok() {
                    done.push(format!("removed {shown} beside {note}"));
                }
            } else {
                match self.keep_conflict_copy(&file, conflict_copy) {
                    Ok(kept) => {
                        done.push(format!("kept {shown} (beside {note}) as {kept}: it may hold a save"))
                    }
                    Err(err) => done.push(format!("left {shown} beside {note}: {err}")),
                }
            }
        }
        sync_dir(dir);
        Ok(done)
    }
}
