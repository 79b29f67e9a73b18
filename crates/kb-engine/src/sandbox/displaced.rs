//! Files an apply moved away from a note's name, and the saves that land in
//! them late.
//!
//! A swap leaves the file that was at the note's name under a temporary name
//! beside it; a delete moves the note into the trash. Either was checked to
//! hold exactly the bytes the proposal expected, yet a person's editor may
//! have opened the note just before and write to it just after (open, append,
//! close, as an autosave does): those bytes land in the displaced file, not in
//! the note, and removing that file would lose them. So an apply keeps every
//! displaced file ([`Discards`]) and, before its commit point, waits until
//! [`LATE_SAVE_GRACE`] has passed since its last swap and (on Linux) until no
//! process holds one open any more, then looks at each file again
//! ([`Discards::late_saves`]): one that changed holds a late save, which
//! goes back to the note's name ([`Sandbox::put_back_late_save`]) while the
//! apply is rolled back. A crash during the wait leaves the files under
//! kb-mcp's temporary names, where recovery's sweep finds them. The files
//! that held what was expected are not removed then either, but parked in the
//! inbox (`parked.rs`), where a save landing later still is not lost.
//!
//! A file that may hold a person's save and cannot go back to its note is kept
//! apart as a conflict copy in the inbox, never among the notes
//! ([`Sandbox::keep_conflict_copy`]), where the overview and the review list it.

use std::collections::HashSet;
use std::fs::{self, Metadata};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::fs::sync_dir;
use super::parked::Seal;
use super::trash::rename_no_replace;
use super::{NotePath, Sandbox};
use crate::error::{Error, Result};

/// How long after an apply's last swap the files it displaced are looked at
/// again for a late save, before the apply commits. An editor's append lands
/// microseconds after its open unless the machine stalls it; this covers a
/// stall of a tenth of a second.
pub const LATE_SAVE_GRACE: Duration = Duration::from_millis(100);

/// The longest an apply waits for another process to close a file it displaced.
const HELD_OPEN_WAIT: Duration = Duration::from_secs(5);

/// Threads parking discarded files: the waits are the journal's, not the CPU's.
const DISCARD_THREADS: usize = 8;

/// How a file came away from its note's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Displacement {
    /// A swap replaced it: it lies under a temporary name beside the note.
    Swapped,
    /// A delete moved it into the trash, where it stays.
    Trashed,
}

/// What changes when anything writes to a file: its size, modification and
/// status-change times, and which file it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    size: u64,
    modified: Option<SystemTime>,
    changed: (i64, i64),
    file: u64,
}

impl Stamp {
    fn of(meta: &Metadata) -> Stamp {
        #[cfg(unix)]
        let (changed, file) = {
            use std::os::unix::fs::MetadataExt;
            ((meta.ctime(), meta.ctime_nsec()), meta.ino())
        };
        #[cfg(not(unix))]
        let (changed, file) = ((0, 0), 0);
        Stamp { size: meta.len(), modified: meta.modified().ok(), changed, file }
    }
}

/// One displaced file, watched for a late save.
#[derive(Debug)]
struct Displaced {
    /// Where it is now.
    file: PathBuf,
    /// The note's name on disk, where a late save goes back to.
    note_disk: PathBuf,
    /// The note.
    note: NotePath,
    how: Displacement,
    /// The file as it was when it was checked to hold the expected bytes.
    stamp: Stamp,
    /// What its parked name records of it (`parked.rs`).
    seal: Seal,
}

/// The files an apply displaced, each checked to hold the bytes it expected.
/// Those a swap replaced are parked in the inbox together at the end
/// ([`Discards::park`], or when dropped; see `parked.rs`), from several
/// threads: a file system may make each rename wait on its journal. Until
/// then each is a temporary file beside its note holding bytes the note had,
/// which recovery's sweep settles after a crash. Trashed notes are watched
/// the same way and stay in the trash.
#[derive(Debug)]
pub struct Discards {
    /// The vault, whose inbox the files are parked in.
    sandbox: Sandbox,
    files: Vec<Displaced>,
    /// When the last file was displaced.
    last: Option<Instant>,
}

/// A save that landed in a displaced file after it was checked: see
/// `Sandbox::put_back_late_save`.
#[derive(Debug)]
pub struct LateSave {
    displaced: Displaced,
}

impl LateSave {
    /// A note that was trashed with a save already in it: it goes back.
    pub(super) fn trashed(file: PathBuf, note_disk: PathBuf, note: &NotePath) -> LateSave {
        let stamp = Stamp { size: 0, modified: None, changed: (0, 0), file: 0 };
        let seal = Seal::unknown();
        let how = Displacement::Trashed;
        let displaced = Displaced { file, note_disk, note: note.clone(), how, stamp, seal };
        LateSave { displaced }
    }

    /// The note the save was made to.
    pub fn note(&self) -> &NotePath {
        &self.displaced.note
    }
}

impl Discards {
    /// None yet, for an apply to the vault `sandbox` is.
    pub fn new(sandbox: &Sandbox) -> Discards {
        Discards { sandbox: sandbox.clone(), files: Vec::new(), last: None }
    }

    /// How many files are watched.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    fn watch(&mut self, file: &Path, note_disk: &Path, note: &NotePath, how: Displacement, checked: Checked) {
        let (meta, bytes) = checked;
        self.files.push(Displaced {
            file: file.to_path_buf(),
            note_disk: note_disk.to_path_buf(),
            note: note.clone(),
            how,
            stamp: Stamp::of(meta),
            seal: Seal::of(meta, bytes),
        });
        self.last = Some(Instant::now());
    }

    /// Watches a trashed note, which held the expected bytes when checked
    /// (metadata taken before the read, as for [`Discards::watch_swapped`]).
    pub(super) fn watch_trashed(&mut self, file: &Path, note_disk: &Path, note: &NotePath, checked: Checked) {
        self.watch(file, note_disk, note, Displacement::Trashed, checked);
    }

    /// Watches a file a swap replaced, which held the base when checked:
    /// `checked` is its metadata as taken *before* its bytes were read
    /// ([`read_stamped`]), so that a write landing between the read and now
    /// still shows as a change, and those bytes.
    pub(super) fn watch_swapped(&mut self, file: &Path, note_disk: &Path, note: &NotePath, checked: Checked) {
        self.watch(file, note_disk, note, Displacement::Swapped, checked);
    }

    /// Waits until [`LATE_SAVE_GRACE`] has passed since the last file was
    /// displaced, and, where the system tells, until no process holds one of
    /// them open any more (at most `HELD_OPEN_WAIT`): an editor stalled
    /// between its open and its write still writes after. Then takes out and
    /// returns those written to since they were checked. The rest stay, to be
    /// removed (or, trashed, kept).
    pub(crate) fn late_saves(&mut self) -> Vec<LateSave> {
        let Some(last) = self.last else { return Vec::new() };
        let files: HashSet<&Path> = self.files.iter().map(|displaced| displaced.file.as_path()).collect();
        wait_for_writers(last, &files);
        let (late, kept): (Vec<Displaced>, Vec<Displaced>) =
            std::mem::take(&mut self.files).into_iter().partition(|displaced| {
                fs::symlink_metadata(&displaced.file).is_ok_and(|meta| Stamp::of(&meta) != displaced.stamp)
            });
        self.files = kept;
        late.into_iter().map(|displaced| LateSave { displaced }).collect()
    }

    /// Parks the files swaps replaced in the inbox (`parked.rs`), from
    /// several threads. Best effort, as the removal of a replaced file always
    /// was: one left behind is a hidden temporary file holding bytes the note had.
    pub fn park(mut self) {
        park_all(&self.sandbox, std::mem::take(&mut self.files));
    }

    /// Leaves them on disk, as a crash would (recovery sweeps them).
    pub fn forget(mut self) {
        self.files.clear();
    }
}

impl Drop for Discards {
    fn drop(&mut self) {
        park_all(&self.sandbox, std::mem::take(&mut self.files));
    }
}

/// A file's metadata taken before its bytes were read, and those bytes.
pub(super) type Checked<'a> = (&'a Metadata, &'a [u8]);

/// A file's bytes and its metadata taken just before they were read, through
/// one handle: any write after the metadata was taken changes what a later
/// look finds (size, times), even one landing between this read and that look.
pub(super) fn read_stamped(file: &Path) -> io::Result<(Vec<u8>, Metadata)> {
    use std::io::Read as _;
    let mut handle = fs::File::open(file)?;
    let meta = handle.metadata()?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    handle.read_to_end(&mut bytes)?;
    Ok((bytes, meta))
}

/// Waits out [`LATE_SAVE_GRACE`] from `since` and then (where the system
/// tells) until no process holds one of `files` open, at most `HELD_OPEN_WAIT`.
fn wait_for_writers(since: Instant, files: &HashSet<&Path>) {
    if let Some(wait) = LATE_SAVE_GRACE.checked_sub(since.elapsed()) {
        std::thread::sleep(wait);
    }
    let started = Instant::now();
    while held_open(files) && started.elapsed() < HELD_OPEN_WAIT {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Parks `file` (one of kb-mcp's temporary files, just exchanged away from
/// `note`'s name) when it holds exactly `ours`: an editor that opened the note
/// just before the exchange may still write into it, which the parked file
/// keeps (`parked.rs`). Returns whether it was parked; a file that was not
/// holds (or may hold) a person's save.
pub(super) fn park_if_ours(sandbox: &Sandbox, file: &Path, note: &NotePath, ours: &[u8]) -> io::Result<bool> {
    let (bytes, meta) = read_stamped(file)?;
    if bytes != ours {
        return Ok(false);
    }
    sandbox.park(file, note, &Seal::of(&meta, &bytes));
    Ok(true)
}

fn park_all(sandbox: &Sandbox, files: Vec<Displaced>) {
    let files: Vec<Displaced> =
        files.into_iter().filter(|displaced| displaced.how == Displacement::Swapped).collect();
    let park = |displaced: &Displaced| sandbox.park(&displaced.file, &displaced.note, &displaced.seal);
    if files.len() < 2 * DISCARD_THREADS {
        files.iter().for_each(park);
        return;
    }
    let share = files.len().div_ceil(DISCARD_THREADS);
    std::thread::scope(|scope| {
        for chunk in files.chunks(share) {
            scope.spawn(move || chunk.iter().for_each(park));
        }
    });
}

/// Whether any process holds one of `files` open, where the system tells;
/// elsewhere `false`, and only the grace protects.
fn held_open(files: &HashSet<&Path>) -> bool {
    !files_held_open(files).is_empty()
}

/// Which of `files` a process holds open, where the system tells (Linux: the
/// open files each process lists under `/proc`, those of the same user at
/// least); elsewhere none.
#[cfg(target_os = "linux")]
pub(super) fn files_held_open(files: &HashSet<&Path>) -> HashSet<PathBuf> {
    let mut held = HashSet::new();
    if files.is_empty() {
        return held;
    }
    let Ok(processes) = fs::read_dir("/proc") else { return held };
    for process in processes.flatten() {
        let numbered =
            process.file_name().to_str().is_some_and(|name| name.bytes().all(|b| b.is_ascii_digit()));
        if !numbered {
            continue;
        }
        let Ok(open) = fs::read_dir(process.path().join("fd")) else { continue };
        for fd in open.flatten() {
            if let Ok(target) = fs::read_link(fd.path())
                && files.contains(target.as_path())
            {
                held.insert(target);
            }
        }
    }
    held
}

#[cfg(not(target_os = "linux"))]
pub(super) fn files_held_open(_: &HashSet<&Path>) -> HashSet<PathBuf> {
    HashSet::new()
}

impl Sandbox {
    /// Puts a late save back at its note's name. A swapped file is exchanged
    /// back with what the swap put there (`ours`: removed when it still holds
    /// exactly those bytes, kept as `conflict_copy` otherwise); a trashed note
    /// goes back to its name, or, if a new file took the name meanwhile, is
    /// kept as `conflict_copy`. Returns the conflict copy made, if any.
    pub(crate) fn put_back_late_save(
        &self,
        late: LateSave,
        ours: &[u8],
        conflict_copy: &NotePath,
    ) -> Result<Option<NotePath>> {
        let Displaced { file, note_disk, note, how, .. } = late.displaced;
        let kept_at = |err: &io::Error| {
            Error::io(&note, err).with_hint(format!(
                "a save made during the apply is kept in {}; compare it with {note}",
                file.display()
            ))
        };
        match how {
            Displacement::Swapped => {
                super::swap::exchange(&file, &note_disk).map_err(|err| kept_at(&err))?;
                if park_if_ours(self, &file, &note, ours).map_err(|err| kept_at(&err))? {
                    sync_dir(note_disk.parent().unwrap_or(self.root()));
                    return Ok(None);
                }
            }
            Displacement::Trashed => match fs::hard_link(&file, &note_disk) {
                Ok(()) => {
                    fs::remove_file(&file).map_err(|err| kept_at(&err))?;
                    sync_dir(note_disk.parent().unwrap_or(self.root()));
                    return Ok(None);
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
                Err(_) => match rename_no_replace(&file, &note_disk) {
                    Ok(()) => return Ok(None),
                    Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(err) => return Err(kept_at(&err)),
                },
            },
        }
        self.keep_conflict_copy(&file, conflict_copy).map(Some).map_err(|err| {
            let hint =
                format!("a save made during the apply is kept in {}; compare it with {note}", file.display());
            err.with_hint(hint)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::Policy;

    /// A vault in a temporary folder, with its notes in `z/`.
    fn vault() -> (tempfile::TempDir, Sandbox) {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("z")).unwrap();
        let sandbox = Sandbox::open(dir.path(), Policy::default()).unwrap();
        (dir, sandbox)
    }

    fn watched(sandbox: &Sandbox, count: usize) -> (Discards, Vec<PathBuf>) {
        let mut discards = Discards::new(sandbox);
        let note = NotePath::parse("z/note.md").unwrap();
        let dir = sandbox.root().join("z");
        let files: Vec<PathBuf> = (0..count)
            .map(|n| {
                let file = dir.join(format!(".note-{n}.md.kb-tmp-0123456789abcdef"));
                fs::write(&file, b"before").unwrap();
                let meta = fs::symlink_metadata(&file).unwrap();
                discards.watch_swapped(&file, &dir.join("note.md"), &note, (&meta, b"before"));
                file
            })
            .collect();
        (discards, files)
    }

    /// The files parked for `z/note.md`.
    fn parked(sandbox: &Sandbox) -> Vec<PathBuf> {
        let folder = sandbox.root().join("inbox/displaced/z");
        let mut found: Vec<PathBuf> = fs::read_dir(folder)
            .map(|entries| entries.flatten().map(|entry| entry.path()).collect())
            .unwrap_or_default();
        found.sort();
        found
    }

    #[test]
    fn discarded_files_stay_until_parked_together_and_a_crash_leaves_them() {
        let (_dir, sandbox) = vault();
        // More than one thread's share, and fewer.
        let mut parked_so_far = 0;
        for count in [3, 5 * DISCARD_THREADS + 1] {
            let (discards, kept) = watched(&sandbox, count);
            assert_eq!(discards.len(), count);
            assert!(kept.iter().all(|file| file.exists()), "nothing is parked before `park`");
            discards.park();
            assert!(kept.iter().all(|file| !file.exists()), "`park` takes every one away from the notes");
            parked_so_far += count;
            assert_eq!(parked(&sandbox).len(), parked_so_far, "each is parked in the inbox, none removed");

            let (discards, kept) = watched(&sandbox, count);
            drop(discards);
            assert!(kept.iter().all(|file| !file.exists()), "dropping parks them too");
            parked_so_far += count;
            assert_eq!(parked(&sandbox).len(), parked_so_far);

            let (discards, kept) = watched(&sandbox, count);
            discards.forget();
            assert!(kept.iter().all(|file| file.exists()), "a crash leaves them for recovery");
            for file in kept {
                fs::remove_file(file).unwrap();
            }
        }
        assert!(parked(&sandbox).iter().all(|file| fs::read(file).unwrap() == b"before"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_writer_stalled_past_the_grace_is_waited_for() {
        use std::io::Write as _;
        let (_dir, sandbox) = vault();
        let (mut discards, files) = watched(&sandbox, 2);
        // Opened before the check, written well after the grace.
        let mut editor = fs::OpenOptions::new().append(true).open(&files[0]).unwrap();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(LATE_SAVE_GRACE * 3);
            editor.write_all(b"the person's line\n").unwrap();
        });
        let late = discards.late_saves();
        writer.join().unwrap();
        assert_eq!(late.len(), 1, "the stalled writer's save was not waited for");
        assert_eq!(late[0].displaced.file, files[0]);
    }

    #[test]
    fn a_write_after_the_check_is_a_late_save_and_only_after_the_grace() {
        use std::io::Write as _;
        let (_dir, sandbox) = vault();
        let (mut discards, files) = watched(&sandbox, 3);
        let started = Instant::now();
        // An editor that opened the note before the swap appends after it.
        let mut editor = fs::OpenOptions::new().append(true).open(&files[1]).unwrap();
        editor.write_all(b"the person's line\n").unwrap();
        drop(editor);
        let late = discards.late_saves();
        assert!(started.elapsed() >= LATE_SAVE_GRACE, "looked before the grace had passed");
        assert_eq!(late.len(), 1);
        assert_eq!(late[0].displaced.file, files[1]);
        assert_eq!(discards.len(), 2, "the untouched ones stay to be parked");
        discards.park();
        assert!(files[1].exists(), "a late save is never parked with the discards");
        assert!(!files[0].exists() && !files[2].exists());
        assert_eq!(parked(&sandbox).len(), 2);
    }

    #[test]
    fn a_write_between_the_read_and_the_watch_is_a_late_save() {
        let (_dir, sandbox) = vault();
        let file = sandbox.root().join("z/.note.md.kb-tmp-0123456789abcdef");
        fs::write(&file, b"# Race\n\nsave 1849\n").unwrap();
        let (bytes, meta) = read_stamped(&file).unwrap();
        assert_eq!(bytes, b"# Race\n\nsave 1849\n");
        // An editor that opened the note before the exchange writes right
        // after the swap read it, before the watch began: same size, new bytes.
        std::thread::sleep(Duration::from_millis(20));
        fs::write(&file, b"# Race\n\nsave 1850\n").unwrap();
        let mut discards = Discards::new(&sandbox);
        let note = NotePath::parse("z/note.md").unwrap();
        discards.watch_swapped(&file, &sandbox.root().join("z/note.md"), &note, (&meta, &bytes));
        let late = discards.late_saves();
        assert_eq!(late.len(), 1, "the save between the read and the watch was missed");
    }

    #[test]
    fn a_file_exchanged_away_is_parked_only_when_it_holds_ours() {
        let (_dir, sandbox) = vault();
        let file = sandbox.root().join("z/.note.md.kb-tmp-0123456789abcdef");
        let note = NotePath::parse("z/note.md").unwrap();
        fs::write(&file, b"ours").unwrap();
        assert!(!park_if_ours(&sandbox, &file, &note, b"theirs").unwrap(), "bytes not ours are never parked");
        assert!(file.exists());
        assert!(park_if_ours(&sandbox, &file, &note, b"ours").unwrap());
        assert!(!file.exists());
        assert_eq!(parked(&sandbox).len(), 1);
    }
}
