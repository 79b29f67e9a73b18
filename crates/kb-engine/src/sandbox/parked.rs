//! Files an apply took away from a note's name, parked in the inbox until no
//! late save can reach them any more.
//!
//! An editor saving in place opens the note's name and truncates what it
//! finds, in one call, and the file system may hold that call between the two
//! for as long as it likes (a truncate waits for the journal, which a busy
//! disk can keep for a good part of a second). An editor that found the note's
//! old file just before a swap may therefore truncate it and write its save
//! into it after the apply's watch for late saves (`displaced.rs`) has ended,
//! and before any process is seen holding it open. Removing that file then
//! would send the save into a file with no name: lost. So a file that was at a
//! note's name is never removed on the spot: it is renamed (the same file,
//! which a late write still reaches) into `<inbox>/displaced/`, under the
//! note's path followed by [`MARK`], when it was parked, a random tag, its
//! size, its modification time and the first 16 hex digits of its bytes' SHA-256
//! ([`Sandbox::park`]). Each apply and each server start sweeps that folder
//! ([`Sandbox::sweep_displaced`]): a parked file whose bytes changed holds a
//! person's save and is kept as a conflict copy; one unchanged for
//! [`PARK_AGE`] that no process holds open is removed.

use std::fs::{self, Metadata};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use super::displaced::files_held_open;
use super::encoding::hex;
use super::fs::walk_write_chain;
use super::trash::rename_no_replace;
use super::{NotePath, Sandbox};
use crate::error::{Error, Result};

/// How long a parked file stays when nothing writes to it: far longer than
/// any stall of an editor's open, short enough that the inbox holds at most a
/// minute of replaced files.
pub const PARK_AGE: Duration = Duration::from_secs(60);

/// The inbox folder parked files go to.
pub const FOLDER: &str = "displaced";

/// What separates the note's file name from the seal in a parked file's name.
const MARK: &str = ".kb-parked-";

/// The longest file name most file systems take, in bytes.
const NAME_MAX: usize = 255;

/// What a parked file's name records of it: enough to tell, without the
/// apply that parked it, whether anything wrote to it since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Seal {
    /// Its size when its bytes were checked.
    size: u64,
    /// Its modification time then, in nanoseconds since 1970 (0: unknown).
    modified: u128,
    /// The first 16 hex digits of its bytes' SHA-256.
    hash: String,
}

impl Seal {
    /// The seal of a file whose metadata `meta` was taken before `bytes` were
    /// read from it (`displaced::read_stamped`).
    pub(super) fn of(meta: &Metadata, bytes: &[u8]) -> Seal {
        Seal { size: meta.len(), modified: nanos(meta), hash: short_hash(bytes) }
    }

    /// The seal of a file nothing was checked of (a trashed note that held a
    /// save already: it goes back, never to the parking).
    pub(super) fn unknown() -> Seal {
        Seal { size: 0, modified: 0, hash: String::new() }
    }

    /// Whether `meta` shows no write since: same size and modification time.
    /// (A clock too coarse to tell two writes apart is why the bytes are
    /// compared too before a parked file is removed.)
    fn stamp_holds(&self, meta: &Metadata) -> bool {
        meta.len() == self.size && nanos(meta) == self.modified
    }
}

fn nanos(meta: &Metadata) -> u128 {
    meta.modified().ok().and_then(|at| at.duration_since(UNIX_EPOCH).ok()).map_or(0, |at| at.as_nanos())
}

fn short_hash(bytes: &[u8]) -> String {
    let mut digest = hex(&Sha256::digest(bytes));
    digest.truncate(16);
    digest
}

fn now_millis() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |at| at.as_millis())
}

/// `<note file name>.kb-parked-<parked at, ms>-<tag>-<size>-<modified, ns>-<hash>`,
/// the note's file name shortened (at a character) when the whole would be
/// too long; `tag` tells apart files of one note parked at once.
fn parked_name(note_name: &str, at: u128, tag: &str, seal: &Seal) -> String {
    let suffix = format!("{MARK}{at}-{tag}-{}-{}-{}", seal.size, seal.modified, seal.hash);
    let mut keep = NAME_MAX.saturating_sub(suffix.len()).min(note_name.len());
    while !note_name.is_char_boundary(keep) {
        keep -= 1;
    }
    format!("{}{suffix}", &note_name[..keep])
}

/// The note file name, the time it was parked and the seal a parked name holds.
fn parse_parked(name: &str) -> Option<(&str, u128, Seal)> {
    let (note, suffix) = name.rsplit_once(MARK)?;
    let mut fields = suffix.splitn(5, '-');
    let at = fields.next()?.parse().ok()?;
    let _tag = fields.next()?;
    let size = fields.next()?.parse().ok()?;
    let modified = fields.next()?.parse().ok()?;
    let hash = fields.next()?;
    let hex16 = hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    (!note.is_empty() && hex16).then(|| (note, at, Seal { size, modified, hash: hash.to_owned() }))
}

impl Sandbox {
    /// The inbox folder of parked files.
    fn displaced_folder(&self) -> Result<NotePath> {
        NotePath::parse(&format!("{}/{FOLDER}", self.policy().inbox))
    }

    /// Parks `file` (a file just taken away from `note`'s name, whose bytes
    /// and metadata gave `seal`) in the inbox: see the module docs. Where it
    /// cannot be parked (the inbox on another file system), it is removed, as
    /// such files always were.
    pub(super) fn park(&self, file: &Path, note: &NotePath, seal: &Seal) {
        if self.park_in_inbox(file, note, seal, now_millis()).is_err() {
            let _ = fs::remove_file(file);
        }
    }

    /// Parks `file` as if at `at` (ms since 1970).
    fn park_in_inbox(&self, file: &Path, note: &NotePath, seal: &Seal, at: u128) -> Result<()> {
        let folder = self.displaced_folder()?;
        let parent = match note.as_str().rsplit_once('/') {
            Some((parent, _)) => format!("{folder}/{parent}"),
            None => folder.as_str().to_owned(),
        };
        for _ in 0..8 {
            let mut tag = [0u8; 4];
            getrandom::fill(&mut tag).map_err(|err| Error::internal(format!("no randomness: {err}")))?;
            let name = parked_name(note.file_name(), at, &hex(&tag), seal);
            let parked = NotePath::parse(&format!("{parent}/{name}"))?;
            let disk = walk_write_chain(self, &parked, true)?;
            match rename_no_replace(file, &disk) {
                Ok(()) => return Ok(()),
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
                Err(err) => return Err(Error::io(&parked, &err)),
            }
        }
        Err(Error::internal(format!("no free name to park a file of {note}")))
    }

    /// Settles the parked files (see the module docs): each whose bytes
    /// changed goes to the conflict copy `conflict_copy(note, hash)` names,
    /// `hash` being 16 hex digits of the bytes it held when parked; each
    /// unchanged for [`PARK_AGE`] that no process holds open is removed;
    /// the rest wait. Returns a line for each conflict copy kept.
    pub(crate) fn sweep_displaced(
        &self,
        conflict_copy: &mut dyn FnMut(&NotePath, &str) -> Result<NotePath>,
    ) -> Vec<String> {
        let mut done = Vec::new();
        let Ok(folder) = self.displaced_folder() else { return done };
        let Ok(inside) = NotePath::parse(&format!("{folder}/_")) else { return done };
        let Ok(probe) = walk_write_chain(self, &inside, false) else { return done };
        let Some(root) = probe.parent().map(Path::to_path_buf) else { return done };
        // Only a file whose stamp moved, or that is old enough to go, is read again.
        let looked: Vec<Parked> = parked_files(&root)
            .into_iter()
            .filter_map(|(file, rel)| Parked::of(file, &rel))
            .filter(|parked| parked.aged || !parked.stamp_held)
            .collect();
        let verdicts = in_parallel(&looked, |parked| {
            fs::read(&parked.file).ok().map(|bytes| short_hash(&bytes) == parked.seal.hash)
        });
        let mut old = Vec::new();
        for (parked, unchanged) in looked.iter().zip(verdicts) {
            match unchanged {
                None => {}
                Some(true) if parked.aged => old.push(parked.file.as_path()),
                Some(true) => {}
                Some(false) => {
                    let (note, file) = (&parked.note, &parked.file);
                    let kept = conflict_copy(note, &parked.seal.hash)
                        .and_then(|copy| self.keep_conflict_copy(file, &copy));
                    done.push(match kept {
                        Ok(copy) => {
                            format!(
                                "kept a save made to {note} after an apply had replaced its file, as {copy}"
                            )
                        }
                        Err(err) => {
                            format!("left a save made to {note} after an apply in {}: {err}", file.display())
                        }
                    });
                }
            }
        }
        let held = files_held_open(&old.iter().copied().collect());
        old.retain(|file| !held.contains(*file));
        // Removing is what frees a file's blocks: a wait on the journal each.
        in_parallel(&old, |file| fs::remove_file(file).is_ok());
        remove_empty_folders(&root);
        done
    }
}

/// A parked file as its name and metadata describe it.
struct Parked {
    file: PathBuf,
    note: NotePath,
    seal: Seal,
    /// Parked [`PARK_AGE`] ago or longer.
    aged: bool,
    /// Its size and modification time are still those its name records.
    stamp_held: bool,
}

impl Parked {
    /// `file`, at `rel` under the folder of parked files; `None` for a name
    /// kb-mcp did not give or a file gone meanwhile.
    fn of(file: PathBuf, rel: &str) -> Option<Parked> {
        let (note_name, at, seal) = parse_parked(file.file_name()?.to_str()?)?;
        let note = match rel.rsplit_once('/') {
            Some((parent, _)) => format!("{parent}/{note_name}"),
            None => note_name.to_owned(),
        };
        let note = NotePath::parse(&note).ok()?;
        let meta = fs::symlink_metadata(&file).ok()?;
        let aged = now_millis().saturating_sub(at) >= PARK_AGE.as_millis();
        let stamp_held = seal.stamp_holds(&meta);
        Some(Parked { file, note, seal, aged, stamp_held })
    }
}

/// Threads sharing a sweep's reads and removals, which wait on the disk.
const SWEEP_THREADS: usize = 8;

/// `work` on each item, from several threads when there are many; the
/// answers in the items' order (a thread that panicked answers `R::default()`
/// for each of its items: for the sweep, "do nothing").
fn in_parallel<T: Sync, R: Send + Default>(items: &[T], work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if items.len() < 2 * SWEEP_THREADS {
        return items.iter().map(&work).collect();
    }
    let share = items.len().div_ceil(SWEEP_THREADS);
    std::thread::scope(|scope| {
        let work = &work;
        let handles: Vec<_> = items
            .chunks(share)
            .map(|chunk| (chunk.len(), scope.spawn(move || chunk.iter().map(work).collect::<Vec<R>>())))
            .collect();
        handles
            .into_iter()
            .flat_map(|(len, handle)| {
                handle.join().unwrap_or_else(|_| (0..len).map(|_| R::default()).collect())
            })
            .collect()
    })
}

/// Every regular file under `root` (real folders only, never a symlink) with
/// its path relative to `root`.
fn parked_files(root: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut folders = vec![(root.to_path_buf(), String::new())];
    while let Some((folder, rel)) = folders.pop() {
        // A folder gone meanwhile (or unreadable) is left for the next sweep.
        let Ok(entries) = fs::read_dir(&folder) else { continue };
        for entry in entries.flatten() {
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
            let rel = if rel.is_empty() { name } else { format!("{rel}/{name}") };
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => folders.push((entry.path(), rel)),
                Ok(kind) if kind.is_file() => out.push((entry.path(), rel)),
                _ => {}
            }
        }
    }
    out
}

/// Removes the folders under `root` left empty (never `root` itself).
fn remove_empty_folders(root: &Path) {
    fn walk(folder: &Path) {
        let Ok(entries) = fs::read_dir(folder) else { return };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                let path = entry.path();
                walk(&path);
                // Fails, as it should, when anything is left inside.
                let _ = fs::remove_dir(&path);
            }
        }
    }
    walk(root);
}

#[cfg(test)]
mod tests {
    use std::io::{Seek, Write as _};

    use super::*;
    use crate::sandbox::Policy;
    use crate::sandbox::displaced::read_stamped;

    /// A vault in a temporary folder and a file just exchanged away from `z/note.md`.
    fn displaced(text: &[u8]) -> (tempfile::TempDir, Sandbox, PathBuf, NotePath) {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("z")).unwrap();
        let sandbox = Sandbox::open(dir.path(), Policy::default()).unwrap();
        let file = sandbox.root().join("z/.note.md.kb-tmp-0123456789abcdef");
        fs::write(&file, text).unwrap();
        (dir, sandbox, file, NotePath::parse("z/note.md").unwrap())
    }

    fn seal(file: &Path) -> Seal {
        let (bytes, meta) = read_stamped(file).unwrap();
        Seal::of(&meta, &bytes)
    }

    fn sweep(sandbox: &Sandbox) -> Vec<String> {
        sandbox.sweep_displaced(&mut |note, hash| {
            let stem = note.as_str().strip_suffix(".md").unwrap();
            NotePath::parse(&format!("inbox/conflicts/{stem}.conflict-{}.md", &hash[..8]))
        })
    }

    /// Every file left under `inbox/displaced/`.
    fn parked(sandbox: &Sandbox) -> Vec<PathBuf> {
        parked_files(&sandbox.root().join("inbox/displaced")).into_iter().map(|(file, _)| file).collect()
    }

    fn long_ago() -> u128 {
        now_millis() - PARK_AGE.as_millis() - 1_000
    }

    #[test]
    fn a_save_reaching_a_parked_file_is_kept_as_a_conflict_copy() {
        let (_dir, sandbox, file, note) = displaced(b"# Note\n\nbefore\n");
        // An editor whose open found the note's file just before the swap,
        // and whose truncate and write come after the apply has finished.
        let mut editor = fs::OpenOptions::new().write(true).open(&file).unwrap();
        sandbox.park(&file, &note, &seal(&file));
        assert!(!file.exists(), "the file left the note's folder");
        assert_eq!(parked(&sandbox).len(), 1);
        assert!(sweep(&sandbox).is_empty(), "an unchanged file is left to age");
        assert_eq!(parked(&sandbox).len(), 1);

        editor.set_len(0).unwrap();
        editor.rewind().unwrap();
        editor.write_all(b"# Note\n\nthe person's save\n").unwrap();
        let lines = sweep(&sandbox);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("z/note.md"), "{lines:?}");
        let copies = parked_files(&sandbox.root().join("inbox/conflicts"));
        assert_eq!(copies.len(), 1);
        assert_eq!(fs::read(&copies[0].0).unwrap(), b"# Note\n\nthe person's save\n");
        assert!(copies[0].1.starts_with("z/note.conflict-"), "{:?}", copies[0].1);
        assert!(parked(&sandbox).is_empty());
        assert!(!sandbox.root().join("inbox/displaced/z").exists(), "emptied folders are removed");
        // The editor's handle still reaches the kept copy: a later write is there too.
        editor.write_all(b"more\n").unwrap();
        assert!(fs::read_to_string(&copies[0].0).unwrap().ends_with("more\n"));
    }

    #[test]
    fn an_unchanged_parked_file_goes_once_old_and_closed() {
        let (_dir, sandbox, file, note) = displaced(b"before");
        sandbox.park_in_inbox(&file, &note, &seal(&file), long_ago()).unwrap();
        let young = sandbox.root().join("z/.note.md.kb-tmp-fedcba9876543210");
        fs::write(&young, b"before").unwrap();
        sandbox.park(&young, &note, &seal(&young));
        assert_eq!(parked(&sandbox).len(), 2);
        #[cfg(target_os = "linux")]
        {
            let old = parked(&sandbox).into_iter().find(|file| {
                parse_parked(&file.file_name().unwrap().to_string_lossy())
                    .is_some_and(|(_, at, _)| at < now_millis() - 30_000)
            });
            let held = fs::File::open(old.unwrap()).unwrap();
            assert!(sweep(&sandbox).is_empty());
            assert_eq!(parked(&sandbox).len(), 2, "a file a process holds open stays");
            drop(held);
        }
        assert!(sweep(&sandbox).is_empty());
        let left = parked(&sandbox);
        assert_eq!(left.len(), 1, "the old one goes, the young one stays");
        assert!(parse_parked(&left[0].file_name().unwrap().to_string_lossy()).unwrap().1 > long_ago());
    }

    #[test]
    fn a_rewrite_the_clock_cannot_tell_is_caught_by_its_bytes() {
        let (_dir, sandbox, file, note) = displaced(b"save 1376\n");
        let sealed = seal(&file);
        let modified = fs::symlink_metadata(&file).unwrap().modified().unwrap();
        let mut editor = fs::OpenOptions::new().write(true).open(&file).unwrap();
        sandbox.park_in_inbox(&file, &note, &sealed, long_ago()).unwrap();
        // Same size, and a modification time a coarse clock would give again.
        editor.write_all(b"save 1377\n").unwrap();
        editor.set_modified(modified).unwrap();
        drop(editor);
        let lines = sweep(&sandbox);
        assert_eq!(lines.len(), 1, "the save was removed as unchanged: {lines:?}");
        let copies = parked_files(&sandbox.root().join("inbox/conflicts"));
        assert_eq!(fs::read(&copies[0].0).unwrap(), b"save 1377\n");
    }

    #[test]
    fn many_parked_files_are_each_settled_by_their_own_bytes() {
        let (_dir, sandbox, _, _) = displaced(b"");
        let count = 5 * SWEEP_THREADS + 3;
        let mut editors = Vec::new();
        for n in 0..count {
            let note = NotePath::parse(&format!("z/note {n}.md")).unwrap();
            let file = sandbox.root().join(format!("z/.note {n}.md.kb-tmp-0123456789abcdef"));
            fs::write(&file, format!("before {n}\n")).unwrap();
            if n % 5 == 0 {
                editors.push((n, fs::OpenOptions::new().append(true).open(&file).unwrap()));
            }
            sandbox.park_in_inbox(&file, &note, &seal(&file), long_ago()).unwrap();
        }
        for (n, editor) in &mut editors {
            editor.write_all(format!("late save {n}\n").as_bytes()).unwrap();
        }
        drop(editors);
        let lines = sweep(&sandbox);
        assert_eq!(lines.len(), count.div_ceil(5), "{lines:?}");
        let mut kept: Vec<String> = parked_files(&sandbox.root().join("inbox/conflicts"))
            .into_iter()
            .map(|(file, _)| fs::read_to_string(file).unwrap())
            .collect();
        kept.sort();
        let mut expected: Vec<String> =
            (0..count).filter(|n| n % 5 == 0).map(|n| format!("before {n}\nlate save {n}\n")).collect();
        expected.sort();
        assert_eq!(kept, expected);
        assert!(parked(&sandbox).is_empty(), "the unchanged old ones are removed");
    }

    #[test]
    fn a_parked_name_reads_back_and_fits_a_file_system() {
        let seal =
            Seal { size: 20, modified: 1_796_571_769_259_101_594, hash: "ae0bec9e9d33c563".to_owned() };
        let name = parked_name("备份仓库.md", 1_796_571_769_264, "0a1b2c3d", &seal);
        let (note, at, read) = parse_parked(&name).unwrap();
        assert_eq!((note, at, &read), ("备份仓库.md", 1_796_571_769_264, &seal));
        let long = "长".repeat(80) + ".md";
        let name = parked_name(&long, 1, "0a1b2c3d", &seal);
        assert!(name.len() <= NAME_MAX, "{}", name.len());
        assert!(long.starts_with(parse_parked(&name).unwrap().0));
        assert_eq!(parse_parked("note.md"), None);
        assert_eq!(parse_parked("note.md.kb-parked-1-t-2-3-nothex"), None);
    }
}
