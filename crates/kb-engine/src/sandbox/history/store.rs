//! The repository the history is kept in, and its commits: recording a
//! change (blobs, the trees along its paths, a commit, the ref moved only from
//! the commit it was built on), and walking a note's versions back.
//!
//! Where: a vault whose folder is itself a git work tree (its `.git` at the
//! vault's root) keeps history in that repository, on [`HISTORY_REF`]. Any
//! other vault (none, or a vault inside a larger repository, which kb-mcp
//! leaves alone) gets a bare repository of kb-mcp's own at
//! `<index folder>-history` beside the index folder (`<vault>/.kb-history/` for
//! the default `.kb/`): not inside it, since the index may be deleted at any
//! time, and denied to agents like every hidden folder.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use git2::{
    Commit, ErrorCode as GitCode, FileMode, ObjectType, Oid, Repository, RepositoryInitOptions, Signature,
    Time, build::TreeUpdateBuilder,
};

use super::HISTORY_REF;
use super::message::{Change, ChangeBy};
use crate::error::{Error, Result};

/// Times a record starts again when another process moved the ref meanwhile.
const RACE_RETRIES: usize = 5;

/// Which repository holds the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// The vault's own git repository, on its private ref.
    Vault,
    /// kb-mcp's bare repository beside the index folder.
    Own,
}

/// The history's repository.
pub struct HistoryStore {
    repo: Mutex<Repository>,
    kind: StoreKind,
    place: PathBuf,
}

impl std::fmt::Debug for HistoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HistoryStore").field("kind", &self.kind).field("place", &self.place).finish()
    }
}

/// One version of a note, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredVersion {
    /// The commit that made it (40 hex digits).
    pub commit: String,
    /// When, in seconds since the epoch.
    pub time: i64,
    /// Who made it and why; `None` for a commit kb-mcp did not write.
    pub change: Option<Change>,
    /// The note's path in this version (an older name before a move).
    pub path: String,
    /// Its bytes; `None` when this version deleted it (or moved it away).
    pub bytes: Option<Vec<u8>>,
    /// Its bytes in the version before; `None` when it did not exist.
    pub before: Option<Vec<u8>>,
}

/// Where a page of versions goes on: a commit and the note's path there.
pub type Cursor = (String, String);

/// A note's bytes at a past commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PastVersion {
    /// The commit.
    pub commit: String,
    /// Its time, in seconds since the epoch.
    pub time: i64,
    /// Who made it.
    pub change: Option<Change>,
    /// The bytes; `None` when the note did not exist then.
    pub bytes: Option<Vec<u8>>,
}

fn git_error(what: &str) -> impl Fn(git2::Error) -> Error + '_ {
    move |e| Error::internal(format!("history: {what}: {}", e.message()))
}

/// The id git gives `bytes` as a file.
pub fn blob_id(bytes: &[u8]) -> Result<String> {
    Oid::hash_object(ObjectType::Blob, bytes).map(|id| id.to_string()).map_err(git_error("hashing a file"))
}

impl HistoryStore {
    /// The store of the vault at `vault` (its own repository when its folder
    /// is a work tree's root), else kb-mcp's bare repository at `own`,
    /// created when missing.
    pub fn open(vault: &Path, own: &Path) -> Result<HistoryStore> {
        if let Ok(repo) = Repository::open(vault) {
            let root = |p: &Path| p.canonicalize().ok();
            if !repo.is_bare() && repo.workdir().and_then(root) == root(vault) {
                let place = repo.path().to_owned();
                return Ok(HistoryStore { repo: Mutex::new(repo), kind: StoreKind::Vault, place });
            }
        }
        let repo = match Repository::open_bare(own) {
            Ok(repo) => repo,
            Err(_) => Repository::init_opts(
                own,
                RepositoryInitOptions::new().bare(true).mkpath(true).external_template(false),
            )
            .map_err(git_error("creating the history repository"))?,
        };
        Ok(HistoryStore { repo: Mutex::new(repo), kind: StoreKind::Own, place: own.to_owned() })
    }

    /// Which repository it is.
    pub fn kind(&self) -> StoreKind {
        self.kind
    }

    /// The repository's git folder.
    pub fn place(&self) -> &Path {
        &self.place
    }

    fn repo(&self) -> std::sync::MutexGuard<'_, Repository> {
        self.repo.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The newest commit, `None` before the first.
    pub fn head(&self) -> Option<String> {
        self.repo().refname_to_id(HISTORY_REF).ok().map(|id| id.to_string())
    }

    /// Every file of the newest commit and its blob id (see [`blob_id`]).
    pub fn files(&self) -> Result<HashMap<String, String>> {
        let repo = self.repo();
        let mut files = HashMap::new();
        let Ok(head) = repo.refname_to_id(HISTORY_REF) else { return Ok(files) };
        let tree =
            repo.find_commit(head).and_then(|c| c.tree()).map_err(git_error("reading the newest commit"))?;
        tree.walk(git2::TreeWalkMode::PreOrder, |folder, entry| {
            if entry.kind() == Some(ObjectType::Blob)
                && let Ok(name) = entry.name()
            {
                files.insert(format!("{folder}{name}"), entry.id().to_string());
            }
            git2::TreeWalkResult::Ok
        })
        .map_err(git_error("reading the newest commit's files"))?;
        Ok(files)
    }

    /// Keeps `bytes` as a file's contents; its blob id (see [`blob_id`]) for
    /// [`HistoryStore::record`].
    pub fn write_file(&self, bytes: &[u8]) -> Result<String> {
        self.repo().blob(bytes).map(|id| id.to_string()).map_err(git_error("writing a file's bytes"))
    }

    /// Keeps many files' contents at once, as [`HistoryStore::write_file`]
    /// does one: in parallel, each worker through a handle of its own on the
    /// repository (writing loose objects is safe from several at once).
    /// Their blob ids, in order.
    pub fn write_files(&self, files: &[&[u8]]) -> Result<Vec<String>> {
        use rayon::prelude::*;
        files
            .par_iter()
            .map_init(
                || Repository::open(&self.place),
                |repo, bytes| {
                    let repo = repo.as_ref().map_err(|e| {
                        Error::internal(format!("history: opening the repository: {}", e.message()))
                    })?;
                    repo.blob(bytes).map(|id| id.to_string()).map_err(git_error("writing a file's bytes"))
                },
            )
            .collect()
    }

    /// Records `files` (each path's blob from [`HistoryStore::write_file`],
    /// `None` when it is gone) as one commit of `change` at `time` (seconds
    /// since the epoch). Nothing is committed when the files are as the
    /// newest commit has them: `None`. Another process recording meanwhile
    /// makes this one start again on top of it, so no change is lost and none
    /// is recorded twice.
    pub fn record(
        &self,
        files: &[(String, Option<String>)],
        change: &Change,
        time: i64,
    ) -> Result<Option<String>> {
        let repo = self.repo();
        let mut blobs = Vec::with_capacity(files.len());
        for (path, blob) in files {
            let blob = blob.as_deref().map(Oid::from_str).transpose().map_err(git_error("a blob id"))?;
            blobs.push((path.as_str(), blob));
        }
        for _ in 0..RACE_RETRIES {
            let parent = repo.refname_to_id(HISTORY_REF).ok();
            let parent_commit =
                parent.map(|id| repo.find_commit(id)).transpose().map_err(git_error("reading"))?;
            let base = match &parent_commit {
                Some(commit) => commit.tree().map_err(git_error("reading the newest tree"))?,
                None => {
                    let empty =
                        repo.treebuilder(None).and_then(|b| b.write()).map_err(git_error("an empty tree"))?;
                    repo.find_tree(empty).map_err(git_error("an empty tree"))?
                }
            };
            let mut update = TreeUpdateBuilder::new();
            let mut changed = 0;
            for (path, blob) in &blobs {
                let now = base.get_path(Path::new(path)).ok().map(|e| e.id());
                if now == *blob {
                    continue;
                }
                changed += 1;
                match blob {
                    Some(id) => update.upsert(*path, *id, FileMode::Blob),
                    None => update.remove(*path),
                };
            }
            if changed == 0 {
                return Ok(None);
            }
            let tree = update.create_updated(&repo, &base).map_err(git_error("building the tree"))?;
            let tree = repo.find_tree(tree).map_err(git_error("building the tree"))?;
            let (name, email) = match change.by {
                ChangeBy::OnDisk => ("on disk", "on-disk@kb-mcp.invalid"),
                ChangeBy::Proposal { .. } => ("kb-mcp", "kb-mcp@kb-mcp.invalid"),
            };
            let signature =
                Signature::new(name, email, &Time::new(time, 0)).map_err(git_error("a signature"))?;
            let parents: Vec<&Commit<'_>> = parent_commit.iter().collect();
            let commit = repo
                .commit(None, &signature, &signature, &change.message(changed), &tree, &parents)
                .map_err(git_error("writing the commit"))?;
            // The ref moves only from the commit this one was built on.
            let moved = match parent {
                Some(old) => repo.reference_matching(HISTORY_REF, commit, true, old, "kb-mcp: record"),
                None => repo.reference(HISTORY_REF, commit, false, "kb-mcp: record"),
            };
            match moved {
                Ok(_) => return Ok(Some(commit.to_string())),
                Err(e) if matches!(e.code(), GitCode::Modified | GitCode::Exists) => continue,
                Err(e) => return Err(git_error("moving the history ref")(e)),
            }
        }
        Err(Error::internal("history: another process kept recording at the same time; try again"))
    }

    /// Up to `limit` versions of the note at `path`, newest first, starting
    /// after `from` (a cursor [`HistoryStore::versions`] gave: the commit and
    /// the note's path there) or at the newest commit. A version is a commit
    /// that changed the note's bytes; a move recorded by kb-mcp is followed
    /// back to the old path. The second value is the cursor of the next page.
    pub fn versions(
        &self,
        path: &str,
        from: Option<(&str, &str)>,
        limit: usize,
    ) -> Result<(Vec<StoredVersion>, Option<Cursor>)> {
        let repo = self.repo();
        let (mut at, mut path) = match from {
            Some((commit, path)) => {
                (Some(Oid::from_str(commit).map_err(git_error("reading the cursor"))?), path.to_owned())
            }
            None => (repo.refname_to_id(HISTORY_REF).ok(), path.to_owned()),
        };
        let blob_at = |commit: &Commit<'_>, path: &str| -> Option<Oid> {
            let entry = commit.tree().ok()?.get_path(Path::new(path)).ok()?;
            (entry.kind() == Some(ObjectType::Blob)).then(|| entry.id())
        };
        let bytes_of = |id: Option<Oid>| -> Result<Option<Vec<u8>>> {
            id.map(|id| {
                repo.find_blob(id).map(|b| b.content().to_vec()).map_err(git_error("reading a version"))
            })
            .transpose()
        };
        let mut versions = Vec::new();
        while let Some(id) = at {
            if versions.len() == limit {
                return Ok((versions, Some((id.to_string(), path))));
            }
            let commit = repo.find_commit(id).map_err(git_error("reading a commit"))?;
            let parent = commit.parent(0).ok();
            let now = blob_at(&commit, &path);
            let before = parent.as_ref().and_then(|p| blob_at(p, &path));
            at = parent.as_ref().map(Commit::id);
            if now == before {
                continue;
            }
            let change = commit.message_raw().ok().and_then(Change::parse);
            versions.push(StoredVersion {
                commit: id.to_string(),
                time: commit.time().seconds(),
                change: change.clone(),
                path: path.clone(),
                bytes: bytes_of(now)?,
                before: bytes_of(before)?,
            });
            // Created here by a move: older versions are under its old name.
            if before.is_none()
                && let Some((old, _)) = change.iter().flat_map(|c| &c.moves).find(|(_, to)| *to == path)
            {
                path = old.clone();
                if let (Some(last), Some(parent)) = (versions.last_mut(), &parent) {
                    last.before = bytes_of(blob_at(parent, &path))?;
                }
            }
        }
        Ok((versions, None))
    }

    /// The bytes of `path` at the commit `commit` (an id or a unique prefix of
    /// one, of this history only).
    pub fn read_at(&self, path: &str, commit: &str) -> Result<PastVersion> {
        let repo = self.repo();
        let not_found = || {
            Error::not_found(format!("no version `{commit}` in this vault's history"))
                .with_hint("take a `commit` from list_history for this note")
        };
        let found = repo.find_commit_by_prefix(commit).map_err(|_| not_found())?;
        let head = repo.refname_to_id(HISTORY_REF).map_err(|_| not_found())?;
        let ours = found.id() == head || repo.graph_descendant_of(head, found.id()).unwrap_or(false);
        if !ours {
            return Err(not_found());
        }
        Ok(self.past(&repo, &found, path))
    }

    /// The name the note now at `path` had at the commit `commit` (its path
    /// in the newest of its versions at or before that commit: moves recorded
    /// by kb-mcp are followed back); `path` itself when it had no other.
    pub fn path_at(&self, path: &str, commit: &str) -> Result<String> {
        let (versions, _) = self.versions(path, None, usize::MAX)?;
        let repo = self.repo();
        let Ok(target) = repo.find_commit_by_prefix(commit).map(|c| c.id()) else {
            return Ok(path.to_owned());
        };
        for version in &versions {
            let Ok(id) = Oid::from_str(&version.commit) else { continue };
            if id == target || repo.graph_descendant_of(target, id).unwrap_or(false) {
                return Ok(version.path.clone());
            }
        }
        Ok(path.to_owned())
    }

    /// The bytes of `path` in the newest commit made at or before `time`
    /// (seconds since the epoch); `None` when the history starts later.
    pub fn read_as_of(&self, path: &str, time: i64) -> Result<Option<PastVersion>> {
        let repo = self.repo();
        let mut at = repo.refname_to_id(HISTORY_REF).ok();
        while let Some(id) = at {
            let commit = repo.find_commit(id).map_err(git_error("reading a commit"))?;
            if commit.time().seconds() <= time {
                return Ok(Some(self.past(&repo, &commit, path)));
            }
            at = commit.parent_id(0).ok();
        }
        Ok(None)
    }

    /// The bytes of `path` before and after the applied proposal `id`, as
    /// its commit recorded them (`None` on a side where the file did not
    /// exist); `None` when no commit of this history records that proposal.
    /// Walks the history from the newest commit back.
    pub fn proposal_files(&self, id: &str, path: &str) -> Result<Option<(PastVersion, PastVersion)>> {
        let repo = self.repo();
        let mut at = repo.refname_to_id(HISTORY_REF).ok();
        while let Some(oid) = at {
            let commit = repo.find_commit(oid).map_err(git_error("reading a commit"))?;
            let by_it =
                commit.message_raw().ok().and_then(Change::parse).is_some_and(
                    |change| matches!(&change.by, ChangeBy::Proposal { id: of, .. } if of == id),
                );
            if by_it {
                let before = match commit.parent(0) {
                    Ok(parent) => self.past(&repo, &parent, path),
                    Err(_) => PastVersion { commit: String::new(), time: 0, change: None, bytes: None },
                };
                return Ok(Some((before, self.past(&repo, &commit, path))));
            }
            at = commit.parent_id(0).ok();
        }
        Ok(None)
    }

    fn past(&self, repo: &Repository, commit: &Commit<'_>, path: &str) -> PastVersion {
        let bytes = commit
            .tree()
            .ok()
            .and_then(|tree| tree.get_path(Path::new(path)).ok())
            .filter(|entry| entry.kind() == Some(ObjectType::Blob))
            .and_then(|entry| repo.find_blob(entry.id()).ok())
            .map(|blob| blob.content().to_vec());
        PastVersion {
            commit: commit.id().to_string(),
            time: commit.time().seconds(),
            change: commit.message_raw().ok().and_then(Change::parse),
            bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proposal(id: &str, moves: Vec<(String, String)>) -> Change {
        Change {
            by: ChangeBy::Proposal { id: id.into(), kind: "move".into(), approved_by: "cli".into() },
            reason: "because".into(),
            moves,
        }
    }

    #[test]
    fn versions_follow_a_note_through_edits_moves_and_deletion() {
        let tmp = tempfile::tempdir().unwrap();
        let vault = tmp.path().join("vault");
        std::fs::create_dir(&vault).unwrap();
        let store = HistoryStore::open(&vault, &tmp.path().join("own")).unwrap();
        assert_eq!(store.kind(), StoreKind::Own);
        let file = |p: &str, b: &str| (p.to_owned(), Some(store.write_file(b.as_bytes()).unwrap()));
        let first =
            store.record(&[file("a.md", "one\n"), file("b.md", "x\n")], &Change::on_disk(), 100).unwrap();
        assert!(first.is_some());
        assert_eq!(store.record(&[file("a.md", "one\n")], &Change::on_disk(), 101).unwrap(), None);
        store.record(&[file("a.md", "one\ntwo\n")], &Change::on_disk(), 102).unwrap().unwrap();
        store
            .record(
                &[("a.md".into(), None), file("笔记/a.md", "one\ntwo\n")],
                &proposal("p1", vec![("a.md".into(), "笔记/a.md".into())]),
                103,
            )
            .unwrap()
            .unwrap();
        store.record(&[file("b.md", "y\n")], &Change::on_disk(), 104).unwrap().unwrap();
        let (versions, next) = store.versions("笔记/a.md", None, 10).unwrap();
        assert_eq!(next, None);
        let seen: Vec<(&str, i64, Option<&[u8]>)> =
            versions.iter().map(|v| (v.path.as_str(), v.time, v.bytes.as_deref())).collect();
        assert_eq!(
            seen,
            [
                ("笔记/a.md", 103, Some(&b"one\ntwo\n"[..])),
                ("a.md", 102, Some(&b"one\ntwo\n"[..])),
                ("a.md", 100, Some(&b"one\n"[..])),
            ]
        );
        assert_eq!(
            versions[0].before.as_deref(),
            Some(&b"one\ntwo\n"[..]),
            "a move's before is the old file"
        );
        assert_eq!(versions[2].before, None);
        // The old path's history: its deletion by the move, then its edits.
        let (old, _) = store.versions("a.md", None, 10).unwrap();
        assert_eq!(old.iter().map(|v| v.time).collect::<Vec<_>>(), [103, 102, 100]);
        assert_eq!(old[0].bytes, None);
        // Paging.
        let (page, next) = store.versions("笔记/a.md", None, 2).unwrap();
        assert_eq!(page.len(), 2);
        let (cursor_commit, cursor_path) = next.unwrap();
        assert_eq!(cursor_path, "a.md");
        let (rest, end) = store.versions("笔记/a.md", Some((&cursor_commit, &cursor_path)), 2).unwrap();
        assert_eq!((rest.len(), rest[0].time, end), (1, 100, None));
        // Reading back.
        let past = store.read_at("a.md", &versions[2].commit[..10]).unwrap();
        assert_eq!(past.bytes.as_deref(), Some(&b"one\n"[..]));
        assert_eq!(store.read_as_of("a.md", 101).unwrap().unwrap().bytes.as_deref(), Some(&b"one\n"[..]));
        assert_eq!(store.read_as_of("a.md", 99).unwrap(), None);
        assert!(store.read_at("a.md", "0000000").is_err());
        assert_eq!(store.files().unwrap().len(), 2);
        assert_eq!(store.files().unwrap()["b.md"], blob_id(b"y\n").unwrap());
    }

    #[test]
    fn a_vault_that_is_a_work_tree_keeps_history_on_its_private_ref_only() {
        let tmp = tempfile::tempdir().unwrap();
        let vault = tmp.path().join("vault");
        let repo = Repository::init(&vault).unwrap();
        std::fs::write(vault.join("a.md"), "mine\n").unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(Path::new("a.md")).unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let me = Signature::now("Person", "p@example.com").unwrap();
        repo.commit(Some("HEAD"), &me, &me, "mine", &tree, &[]).unwrap();
        let head_before = repo.head().unwrap().target();
        let index_before = std::fs::read(vault.join(".git/index")).unwrap();

        let store = HistoryStore::open(&vault, &tmp.path().join("own")).unwrap();
        assert_eq!(store.kind(), StoreKind::Vault);
        let blob = store.write_file(b"changed\n").unwrap();
        store.record(&[("a.md".into(), Some(blob))], &Change::on_disk(), 5).unwrap().unwrap();
        assert!(!tmp.path().join("own").exists());
        assert_eq!(repo.head().unwrap().target(), head_before);
        assert_eq!(std::fs::read(vault.join(".git/index")).unwrap(), index_before);
        assert_eq!(std::fs::read_to_string(vault.join("a.md")).unwrap(), "mine\n");
        let branches: Vec<String> =
            repo.branches(None).unwrap().map(|b| b.unwrap().0.name().unwrap().unwrap().to_owned()).collect();
        assert_eq!(branches.len(), 1);
        assert!(repo.statuses(None).unwrap().is_empty());

        // A vault inside a larger repository gets a repository of its own.
        let inner = vault.join("notes");
        std::fs::create_dir(&inner).unwrap();
        assert_eq!(HistoryStore::open(&inner, &tmp.path().join("own2")).unwrap().kind(), StoreKind::Own);
    }
}
