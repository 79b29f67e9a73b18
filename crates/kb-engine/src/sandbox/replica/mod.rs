//! A replica (issue 38): the vault as one clone among several of a git
//! repository, kept in agreement through a remote. This module is the git
//! side of it: fetching the remote's branch, pushing a commit **fast-forward
//! only**, counting how far the clone is ahead or behind, and building a
//! commit from a set of files without touching the work tree. `worktree.rs`
//! moves the clone's work tree, index and branch from one commit to another
//! without ever overwriting a person's uncommitted change.
//!
//! The remote is the compare-and-swap: a push that is not a fast-forward of
//! what the remote holds is refused by the remote itself, so of two clones
//! pushing from the same commit exactly one lands, whatever the clocks and
//! without any lock shared between machines. The engine (`engine/replica.rs`)
//! decides what to commit and when.
//!
//! The remote is a configured remote's name (`origin`) or a path to a
//! repository (a bare repository on a shared drive, a NAS, a USB disk);
//! libgit2 is built here without TLS or SSH, so `https://` and `ssh://`
//! remotes are refused with a clear error when the replica is opened.

mod worktree;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use git2::{
    AutotagOption, ErrorCode as GitCode, FetchOptions, FileMode, Oid, Repository, Signature, Sort,
    build::TreeUpdateBuilder,
};

pub use worktree::Moved;

use crate::error::{Error, ErrorCode, Result};

/// The ref a commit is pushed from (a push names a ref, not a commit).
const OUTGOING_REF: &str = "refs/kb-mcp/outgoing";

/// What a push of a commit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pushed {
    /// The remote's branch is the commit now.
    Accepted,
    /// The remote's branch moved on since: the commit is not a fast-forward of it.
    Rejected,
    /// The remote could not be reached (why); nothing changed there.
    Unreachable(String),
}

/// Writes a file the clone moves (`path`, its new bytes) provided it still
/// holds the bytes given third, never losing a save that lands meanwhile.
pub type CarefulWrite<'a> = dyn Fn(&str, &[u8], &[u8]) -> Result<Written> + 'a;

/// What a [`CarefulWrite`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// The file holds the new bytes.
    Done,
    /// The file no longer held what was expected (a save landed): it is as
    /// the person left it.
    Raced,
    /// Not a file the caller writes (not a note, not kb-mcp's audit log):
    /// libgit2 brings it as `git` would.
    NotMine,
}

/// One commit of the branch, as the replica reads it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchCommit {
    /// Its id.
    pub id: String,
    /// The proposal it applied (`Kb-Proposal:`), when kb-mcp made it.
    pub proposal: Option<String>,
    /// The clone that made it (`Kb-Replica:`), when kb-mcp made it.
    pub replica: Option<String>,
}

/// A clone of the vault's repository and the remote it agrees with.
pub struct Replica {
    repo: Mutex<Repository>,
    remote: String,
    /// The remote repository's folder.
    place: PathBuf,
    branch: String,
    /// Where a fetch leaves the remote's branch.
    tracking: String,
    /// This clone's id (`Kb-Replica:` of the commits it makes).
    id: String,
}

fn git_error(what: &str) -> impl Fn(git2::Error) -> Error + '_ {
    move |e| Error::internal(format!("replica: {what}: {}", e.message()))
}

impl Replica {
    /// The replica of the vault at `vault`, which must be the root of a git
    /// clone on a branch; `remote` is a remote's name or a repository's path,
    /// `branch` the branch to keep (default: the one checked out).
    pub fn open(vault: &Path, remote: &str, branch: Option<&str>) -> Result<Replica> {
        let not_a_clone = || {
            Error::new(ErrorCode::InvalidArgument, "[replica] needs the vault folder to be the root of a git clone")
                .with_hint("clone the vault's repository (git clone REMOTE VAULT) and serve that folder, or remove [replica] from kb.toml")
        };
        let repo = Repository::open(vault).map_err(|_| not_a_clone())?;
        let root = |p: &Path| p.canonicalize().ok();
        if repo.is_bare() || repo.workdir().and_then(root) != root(vault) {
            return Err(not_a_clone());
        }
        let branch = match branch {
            Some(branch) => branch.to_owned(),
            None => {
                let head = repo.head().map_err(|_| not_a_clone())?;
                if !head.is_branch() {
                    return Err(Error::new(
                        ErrorCode::InvalidArgument,
                        "[replica]: the clone is not on a branch (a detached HEAD)",
                    )
                    .with_hint("check out the branch to keep (git switch main), or name it: [replica] branch = \"main\""));
                }
                head.shorthand().unwrap_or("main").to_owned()
            }
        };
        if git2::Branch::name_is_valid(&branch).ok() != Some(true) {
            return Err(Error::invalid(format!("[replica] branch `{branch}` is not a branch name")));
        }
        let named = repo.find_remote(remote).ok().map(|r| r.url().map(str::to_owned));
        let url = match &named {
            Some(Ok(url)) => url.clone(),
            Some(Err(_)) => {
                return Err(Error::invalid(format!(
                    "[replica] remote `{remote}` has no URL the clone can read"
                )));
            }
            None => remote.to_owned(),
        };
        let Some(place) = local_path(&url, vault) else {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                format!("[replica] remote `{remote}` ({url}) is not a repository on this machine's disks: only a path (or file://) can be a remote here"),
            )
            .with_hint("put a bare repository on a shared or mounted drive (git init --bare) and name its path, or a remote of the clone that points there"));
        };
        if let Ok(there) = Repository::open(&place)
            && !there.is_bare()
            && there.head().ok().and_then(|h| h.name().ok().map(str::to_owned))
                == Some(format!("refs/heads/{branch}"))
        {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                format!("[replica] remote `{remote}` is a work tree with {branch} checked out: moving that branch would leave its files behind"),
            )
            .with_hint("make the remote a bare repository (git clone --bare), and clone every machine's vault from it"));
        }
        let tracking = match named {
            Some(_) => format!("refs/remotes/{remote}/{branch}"),
            None => format!("refs/kb-mcp/replica/{branch}"),
        };
        let id = clone_id(&repo)?;
        Ok(Replica { repo: Mutex::new(repo), remote: remote.to_owned(), place, branch, tracking, id })
    }

    fn repo(&self) -> MutexGuard<'_, Repository> {
        self.repo.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The branch kept.
    pub fn branch(&self) -> &str {
        &self.branch
    }

    /// The remote, as configured.
    pub fn remote(&self) -> &str {
        &self.remote
    }

    /// This clone's id, written in the commits it makes.
    pub fn id(&self) -> &str {
        &self.id
    }

    fn branch_ref(&self) -> String {
        format!("refs/heads/{}", self.branch)
    }

    /// The branch's commit here (`None` on an unborn branch).
    pub fn head(&self) -> Option<String> {
        self.repo().refname_to_id(&self.branch_ref()).ok().map(|id| id.to_string())
    }

    /// The remote's branch as last fetched (`None` before a fetch found it).
    pub fn remote_head(&self) -> Option<String> {
        self.repo().refname_to_id(&self.tracking).ok().map(|id| id.to_string())
    }

    /// Fetches the remote's branch. `Err(why)` inside when the remote cannot
    /// be reached.
    pub fn fetch(&self) -> Result<std::result::Result<(), String>> {
        let repo = self.repo();
        let mut remote = match repo.find_remote(&self.remote) {
            Ok(remote) => remote,
            Err(_) => repo.remote_anonymous(&self.remote).map_err(git_error("naming the remote"))?,
        };
        let mut options = FetchOptions::new();
        options.download_tags(AutotagOption::None);
        let refspec = format!("+refs/heads/{}:{}", self.branch, self.tracking);
        Ok(remote
            .fetch(&[refspec.as_str()], Some(&mut options), Some("kb-mcp: fetch"))
            .map_err(|e| e.message().to_owned()))
    }

    /// Pushes `commit` to the remote's branch, fast-forward only, as a
    /// compare-and-swap: its objects travel first (to a ref of this clone's
    /// own there), then the branch moves, under git's lock on it, only from
    /// the commit it held when `commit` was found to descend from it. libgit2's
    /// own push to a path checks the fast-forward but then overwrites the ref,
    /// which would let two clones' pushes race; this never does.
    pub fn push(&self, commit: &str) -> Result<Pushed> {
        let repo = self.repo();
        let commit = Oid::from_str(commit).map_err(git_error("a commit id"))?;
        repo.reference(OUTGOING_REF, commit, true, "kb-mcp: push")
            .map_err(git_error("naming the commit to push"))?;
        let incoming = format!("refs/kb-mcp/incoming/{}", self.id);
        let mut remote = match repo.find_remote(&self.remote) {
            Ok(remote) => remote,
            Err(_) => repo.remote_anonymous(&self.remote).map_err(git_error("naming the remote"))?,
        };
        let refspec = format!("+{OUTGOING_REF}:{incoming}");
        if let Err(e) = remote.push(&[refspec.as_str()], None) {
            return Ok(Pushed::Unreachable(e.message().to_owned()));
        }
        let there = match Repository::open(&self.place) {
            Ok(there) => there,
            Err(e) => return Ok(Pushed::Unreachable(e.message().to_owned())),
        };
        let branch = self.branch_ref();
        let now = there.refname_to_id(&branch).ok();
        let fast_forward = match now {
            None => true,
            Some(now) => now == commit || repo.graph_descendant_of(commit, now).unwrap_or(false),
        };
        let moved = if !fast_forward {
            Err(None)
        } else {
            match now {
                Some(now) => there.reference_matching(&branch, commit, true, now, "kb-mcp: push"),
                None => there.reference(&branch, commit, false, "kb-mcp: push"),
            }
            .map(|_| ())
            .map_err(Some)
        };
        if let Ok(mut incoming) = there.find_reference(&incoming) {
            let _ = incoming.delete();
        }
        match moved {
            Ok(()) => {
                repo.reference(&self.tracking, commit, true, "kb-mcp: pushed")
                    .map_err(git_error("noting the push"))?;
                Ok(Pushed::Accepted)
            }
            Err(None) => Ok(Pushed::Rejected),
            Err(Some(e)) if matches!(e.code(), GitCode::Modified | GitCode::Exists | GitCode::Locked) => {
                Ok(Pushed::Rejected)
            }
            Err(Some(e)) => Ok(Pushed::Unreachable(e.message().to_owned())),
        }
    }

    /// How many commits the branch here has that the remote's (as last
    /// fetched) has not, and the other way round.
    pub fn ahead_behind(&self) -> Result<(usize, usize)> {
        let repo = self.repo();
        let local = repo.refname_to_id(&self.branch_ref()).ok();
        let remote = repo.refname_to_id(&self.tracking).ok();
        match (local, remote) {
            (Some(local), Some(remote)) => {
                repo.graph_ahead_behind(local, remote).map_err(git_error("comparing with the remote"))
            }
            (Some(local), None) => Ok((count_commits(&repo, local, None)?, 0)),
            (None, Some(remote)) => Ok((0, count_commits(&repo, remote, None)?)),
            (None, None) => Ok((0, 0)),
        }
    }

    /// The commits reachable from `to` but not from `from`, oldest first.
    pub fn commits_between(&self, from: Option<&str>, to: &str) -> Result<Vec<BranchCommit>> {
        let repo = self.repo();
        let mut walk = repo.revwalk().map_err(git_error("walking commits"))?;
        walk.set_sorting(Sort::TOPOLOGICAL | Sort::REVERSE).map_err(git_error("walking commits"))?;
        walk.push(oid(to)?).map_err(git_error("walking commits"))?;
        if let Some(from) = from {
            walk.hide(oid(from)?).map_err(git_error("walking commits"))?;
        }
        let mut out = Vec::new();
        for id in walk {
            let id = id.map_err(git_error("walking commits"))?;
            let commit = repo.find_commit(id).map_err(git_error("reading a commit"))?;
            let message = commit.message().unwrap_or_default();
            out.push(BranchCommit {
                id: id.to_string(),
                proposal: trailer(message, "Kb-Proposal"),
                replica: trailer(message, "Kb-Replica"),
            });
        }
        Ok(out)
    }

    /// The newest commit both have (`None`: none).
    pub fn merge_base(&self, a: &str, b: &str) -> Result<Option<String>> {
        match self.repo().merge_base(oid(a)?, oid(b)?) {
            Ok(base) => Ok(Some(base.to_string())),
            Err(e) if e.code() == GitCode::NotFound => Ok(None),
            Err(e) => Err(git_error("finding the common commit")(e)),
        }
    }

    /// A commit's first parent (`None`: it has none).
    pub fn parent(&self, commit: &str) -> Result<Option<String>> {
        let repo = self.repo();
        let commit = repo.find_commit(oid(commit)?).map_err(git_error("reading a commit"))?;
        Ok(commit.parent_id(0).ok().map(|id| id.to_string()))
    }

    /// Whether `ancestor` is `commit` or one of its ancestors.
    pub fn contains(&self, commit: &str, ancestor: &str) -> Result<bool> {
        let (commit, ancestor) = (oid(commit)?, oid(ancestor)?);
        if commit == ancestor {
            return Ok(true);
        }
        self.repo().graph_descendant_of(commit, ancestor).map_err(git_error("comparing commits"))
    }

    /// The paths whose bytes or mode differ between two commits (`None`: the
    /// empty tree), both sides of a rename.
    pub fn changed_paths(&self, from: Option<&str>, to: &str) -> Result<Vec<String>> {
        let repo = self.repo();
        worktree::changed_paths(&repo, from.map(oid).transpose()?, oid(to)?)
    }

    /// A commit on `parent` (`None`: the first) whose tree is the parent's
    /// with `files` put (bytes) or removed (`None`), with `message` and this
    /// clone's id as a trailer. No ref moves, no file is touched: [`Replica::push`]
    /// publishes it, [`Replica::move_to`] makes it the clone's.
    pub fn commit_files(
        &self,
        parent: Option<&str>,
        files: &[(String, Option<Vec<u8>>)],
        message: &str,
    ) -> Result<String> {
        let repo = self.repo();
        let parent = parent
            .map(oid)
            .transpose()?
            .map(|id| repo.find_commit(id))
            .transpose()
            .map_err(git_error("reading the branch"))?;
        let base = match &parent {
            Some(commit) => commit.tree().map_err(git_error("reading the branch's tree"))?,
            None => {
                let empty =
                    repo.treebuilder(None).and_then(|b| b.write()).map_err(git_error("an empty tree"))?;
                repo.find_tree(empty).map_err(git_error("an empty tree"))?
            }
        };
        let mut update = TreeUpdateBuilder::new();
        for (path, bytes) in files {
            match bytes {
                Some(bytes) => {
                    let blob = repo.blob(bytes).map_err(git_error("keeping a file's bytes"))?;
                    let mode = match base.get_path(Path::new(path)).ok().map(|e| e.filemode()) {
                        Some(mode) if mode == i32::from(FileMode::BlobExecutable) => FileMode::BlobExecutable,
                        _ => FileMode::Blob,
                    };
                    update.upsert(path.as_str(), blob, mode);
                }
                None => {
                    update.remove(path.as_str());
                }
            }
        }
        let tree = update.create_updated(&repo, &base).map_err(git_error("building the tree"))?;
        let tree = repo.find_tree(tree).map_err(git_error("building the tree"))?;
        let me = signature(&repo)?;
        let message = format!("{}\nKb-Replica: {}\n", message.trim_end(), self.id);
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let commit = repo
            .commit(None, &me, &me, &message, &tree, &parents)
            .map_err(git_error("writing the commit"))?;
        Ok(commit.to_string())
    }

    /// The same changes as `commit` (each path it changed from its parent, as
    /// it has it) made again on `onto`: a rebase of one commit whose paths the
    /// commits since did not touch. The audit log, which every clone appends
    /// to, is merged as a union of lines.
    pub fn replay(&self, commit: &str, onto: &str, union: &dyn Fn(&str) -> bool) -> Result<String> {
        let repo = self.repo();
        worktree::replay(&repo, oid(commit)?, oid(onto)?, union).map(|id| id.to_string())
    }

    /// Moves the clone from the branch's commit to `to` (see [`Moved`]).
    /// `union` names the files merged as a union of lines; `write` writes
    /// each file whose new bytes are brought or merged, when it is the
    /// caller's (a note, swapped so that a racing save is never lost), else
    /// libgit2 does.
    pub fn move_to(&self, to: &str, union: &dyn Fn(&str) -> bool, write: &CarefulWrite<'_>) -> Result<Moved> {
        let repo = self.repo();
        worktree::move_to(&repo, &self.branch_ref(), oid(to)?, union, write)
    }

    /// The files under `folder` that differ from the branch's commit (new,
    /// changed, removed; never an ignored one), less those `skip` names, as
    /// they are in the work tree now.
    pub fn changed_under(
        &self,
        folder: &str,
        skip: &dyn Fn(&str) -> bool,
    ) -> Result<Vec<(String, Option<Vec<u8>>)>> {
        let repo = self.repo();
        worktree::changed_under(&repo, folder, skip)
    }
}

fn oid(id: &str) -> Result<Oid> {
    Oid::from_str(id).map_err(git_error("a commit id"))
}

fn count_commits(repo: &Repository, to: Oid, from: Option<Oid>) -> Result<usize> {
    let mut walk = repo.revwalk().map_err(git_error("walking commits"))?;
    walk.push(to).map_err(git_error("walking commits"))?;
    if let Some(from) = from {
        walk.hide(from).map_err(git_error("walking commits"))?;
    }
    Ok(walk.count())
}

/// Where the repository at `url` is when it is on this machine's disks (a
/// path, absolute or relative to the vault, or `file://`); `None` for a
/// remote reached over a network. It need not be there now (a drive not
/// mounted): the replica is then unreachable until it is.
fn local_path(url: &str, vault: &Path) -> Option<PathBuf> {
    let path = match url.strip_prefix("file://") {
        Some(path) => PathBuf::from(path),
        // `https://…`, `ssh://…`, and scp-like `host:path` or `user@host:path`.
        None if url.contains("://") => return None,
        None if url.split_once(':').is_some_and(|(host, _)| host.len() > 1 && !host.contains('/')) => {
            return None;
        }
        None => PathBuf::from(url),
    };
    Some(if path.is_relative() { vault.join(path) } else { path })
}

/// The value of a trailer line `name: value` in a commit message.
fn trailer(message: &str, name: &str) -> Option<String> {
    message
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(": ").map(|v| v.trim().to_owned()))
}

/// Who commits: the person, as their git configuration names them, else kb-mcp.
fn signature(repo: &Repository) -> Result<Signature<'static>> {
    repo.signature()
        .or_else(|_| Signature::now("kb-mcp", "kb-mcp@kb-mcp.invalid"))
        .map(|s| s.to_owned())
        .map_err(git_error("a signature"))
}

/// This clone's id: made once, kept in `<git folder>/kb-mcp/replica-id`
/// (never in the work tree, never in the repository's config).
fn clone_id(repo: &Repository) -> Result<String> {
    let folder: PathBuf = repo.path().join("kb-mcp");
    let file = folder.join("replica-id");
    if let Ok(id) = std::fs::read_to_string(&file) {
        let id = id.trim();
        if !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Ok(id.to_owned());
        }
    }
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).map_err(|err| Error::internal(format!("no randomness: {err}")))?;
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .map(|h| {
            h.trim().chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').take(32).collect::<String>()
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "clone".to_owned());
    let id = format!("{host}-{}", super::hex(&random));
    std::fs::create_dir_all(&folder)
        .map_err(|e| Error::internal(format!("replica: keeping this clone's id: {e}")))?;
    std::fs::write(&file, format!("{id}\n"))
        .map_err(|e| Error::internal(format!("replica: keeping this clone's id: {e}")))?;
    Ok(id)
}
