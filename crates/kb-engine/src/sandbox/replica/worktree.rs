//! Moving a clone's work tree, index and branch from the commit it is on to
//! another (a fast-forward to what the remote holds, or a replayed commit of
//! its own), the way a careful `git pull` would, and never over a person's
//! uncommitted change: each file the commits change is either brought as the
//! new commit has it (its bytes here are the old commit's), left as it is
//! (they are already the new commit's), merged with the person's change when
//! the two do not overlap, or the whole move is refused, naming the files.
//!
//! libgit2 writes the brought files (its safe checkout, which re-checks each
//! against the old commit); a merged file is written by the caller's `write`,
//! which never loses a save landing meanwhile. The index follows, path by
//! path, so the person's staged changes elsewhere stay staged.

use std::collections::BTreeSet;
use std::path::Path;

use git2::{
    FileFavor, IndexEntry, IndexTime, MergeFileInput, MergeFileOptions, Oid, Repository, StatusOptions, Tree,
    build::{CheckoutBuilder, TreeUpdateBuilder},
    merge_file,
};

use super::{CarefulWrite, Written, git_error};
use crate::error::{Error, ErrorCode, Result};

/// What moving the clone did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Moved {
    /// The commit the branch was on.
    pub from: Option<String>,
    /// The commit it is on now (unchanged when `blocked` is not empty).
    pub to: Option<String>,
    /// Every path the commits changed.
    pub changed: Vec<String>,
    /// Files whose bytes in the work tree changed (brought or merged).
    pub written: Vec<String>,
    /// Of those, the files merged with a change of the person's not yet committed.
    pub merged: Vec<String>,
    /// Files the person changed here that the new commits change too, in
    /// ways that overlap: when any is named, nothing moved.
    pub blocked: Vec<String>,
}

pub(super) fn changed_paths(repo: &Repository, from: Option<Oid>, to: Oid) -> Result<Vec<String>> {
    let old = from.map(|id| tree_of(repo, id)).transpose()?;
    let new = tree_of(repo, to)?;
    let diff =
        repo.diff_tree_to_tree(old.as_ref(), Some(&new), None).map_err(git_error("comparing commits"))?;
    let mut paths = BTreeSet::new();
    for delta in diff.deltas() {
        for file in [delta.old_file(), delta.new_file()] {
            if let Some(path) = file.path().and_then(Path::to_str) {
                paths.insert(path.to_owned());
            }
        }
    }
    Ok(paths.into_iter().collect())
}

fn tree_of(repo: &Repository, commit: Oid) -> Result<Tree<'_>> {
    repo.find_commit(commit).and_then(|c| c.tree()).map_err(git_error("reading a commit's tree"))
}

/// A file's bytes in a tree (`None`: not there, or not a file).
fn bytes_in(repo: &Repository, tree: Option<&Tree<'_>>, path: &str) -> Option<Vec<u8>> {
    let entry = tree?.get_path(Path::new(path)).ok()?;
    let blob = repo.find_blob(entry.id()).ok()?;
    Some(blob.content().to_vec())
}

/// A file's bytes in the work tree (`None`: not there). A folder, a link or
/// an unreadable file is `Err`: never merged, never overwritten.
fn bytes_here(repo: &Repository, path: &str) -> std::result::Result<Option<Vec<u8>>, ()> {
    let workdir = repo.workdir().ok_or(())?;
    let file = workdir.join(path);
    match std::fs::symlink_metadata(&file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Ok(meta) if meta.is_file() => std::fs::read(&file).map(Some).map_err(|_| ()),
        _ => Err(()),
    }
}

/// A three-way merge of one file's bytes; `None` when the sides overlap.
fn merge3(base: &[u8], ours: &[u8], theirs: &[u8], union: bool) -> Result<Option<Vec<u8>>> {
    fn input(bytes: &[u8]) -> MergeFileInput<'_> {
        let mut input = MergeFileInput::new();
        input.content(bytes);
        input
    }
    // git2's file merge does not start libgit2 itself: any call that does, once.
    let _ = Oid::from_str("0");
    let mut options = MergeFileOptions::new();
    if union {
        options.favor(FileFavor::Union);
    }
    let merged = merge_file(&input(base), &input(ours), &input(theirs), Some(&mut options))
        .map_err(git_error("merging a file"))?;
    Ok(merged.is_automergeable().then(|| merged.content().to_vec()))
}

pub(super) fn move_to(
    repo: &Repository,
    branch_ref: &str,
    to: Oid,
    union: &dyn Fn(&str) -> bool,
    write: &CarefulWrite<'_>,
) -> Result<Moved> {
    let head = repo.head().ok();
    if head.as_ref().is_some_and(|h| h.name().ok() != Some(branch_ref)) {
        return Err(Error::new(
            ErrorCode::Conflict,
            format!("the clone is not on {branch_ref} any more: kb-mcp keeps that branch"),
        )
        .with_hint("switch back to it (git switch), or name the branch checked out in [replica] branch"));
    }
    let from = repo.refname_to_id(branch_ref).ok();
    let mut moved =
        Moved { from: from.map(|id| id.to_string()), to: Some(to.to_string()), ..Moved::default() };
    // Never backwards: a commit the branch already holds is no move.
    if let Some(from) = from
        && (from == to || repo.graph_descendant_of(from, to).map_err(git_error("comparing commits"))?)
    {
        moved.to = moved.from.clone();
        return Ok(moved);
    }
    let old = from.map(|id| tree_of(repo, id)).transpose()?;
    let new = tree_of(repo, to)?;
    moved.changed = changed_paths(repo, from, to)?;
    let mut bring = Vec::new();
    let mut merged = Vec::new();
    for path in &moved.changed {
        let then = bytes_in(repo, old.as_ref(), path);
        let next = bytes_in(repo, Some(&new), path);
        let Ok(here) = bytes_here(repo, path) else {
            moved.blocked.push(path.clone());
            continue;
        };
        if here == next {
            continue;
        }
        if here == then {
            bring.push((path.clone(), then, next));
            continue;
        }
        // The person changed it here, and the commits change it too.
        let joined = match (&then, &here, &next) {
            (Some(base), Some(ours), Some(theirs)) => merge3(base, ours, theirs, union(path))?,
            _ => None,
        };
        match joined {
            Some(bytes) => merged.push((path.clone(), here.unwrap_or_default(), bytes)),
            None => moved.blocked.push(path.clone()),
        }
    }
    if !moved.blocked.is_empty() {
        moved.to = moved.from.clone();
        return Ok(moved);
    }
    // The caller writes what is its own (notes, through a swap that never
    // loses a racing save); libgit2 brings the rest, as `git` would.
    let mut by_git = Vec::new();
    for (path, then, next) in bring {
        let written = match (&then, &next) {
            (Some(then), Some(next)) => write(&path, next, then)?,
            _ => Written::NotMine,
        };
        match written {
            Written::Done => moved.written.push(path),
            Written::Raced => moved.blocked.push(path),
            Written::NotMine => by_git.push(path),
        }
    }
    if !by_git.is_empty() {
        let commit = repo.find_commit(to).map_err(git_error("reading the commit"))?;
        let mut checkout = CheckoutBuilder::new();
        checkout.safe().disable_pathspec_match(true);
        for path in &by_git {
            checkout.path(path.as_str());
        }
        repo.checkout_tree(commit.as_object(), Some(&mut checkout)).map_err(|e| {
            Error::new(ErrorCode::Conflict, format!("bringing the remote's files: {}", e.message()))
        })?;
        moved.written.extend(by_git);
    }
    for (path, ours, bytes) in &merged {
        match write(path, bytes, ours)? {
            Written::Done => {
                moved.written.push(path.clone());
                moved.merged.push(path.clone());
            }
            // A save landed meanwhile (what is there is the person's), or a
            // file the caller does not write: left as it is.
            Written::Raced | Written::NotMine => moved.blocked.push(path.clone()),
        }
    }
    if !moved.blocked.is_empty() {
        // What was written stays (it is the new commit's, and a later move
        // finds it already there); the branch does not move.
        moved.to = moved.from.clone();
        return Ok(moved);
    }
    let mut index = repo.index().map_err(git_error("reading the index"))?;
    index.read(true).map_err(git_error("reading the index"))?;
    for path in &moved.changed {
        match new.get_path(Path::new(path)) {
            Ok(entry) if merged.iter().any(|(p, _, _)| p == path) => index
                .add(&entry_of(path, entry.id(), entry.filemode()))
                .map_err(git_error("updating the index"))?,
            Ok(_) => index.add_path(Path::new(path)).map_err(git_error("updating the index"))?,
            Err(_) => {
                let _ = index.remove_path(Path::new(path));
            }
        }
    }
    index.write().map_err(git_error("writing the index"))?;
    match from {
        Some(from) => repo.reference_matching(branch_ref, to, true, from, "kb-mcp: replica"),
        None => repo.reference(branch_ref, to, false, "kb-mcp: replica"),
    }
    .map_err(git_error("moving the branch"))?;
    Ok(moved)
}

/// An index entry naming a blob, without the file's stat: git compares the
/// work tree's bytes with it, as for a file it has never seen.
fn entry_of(path: &str, id: Oid, mode: i32) -> IndexEntry {
    IndexEntry {
        ctime: IndexTime::new(0, 0),
        mtime: IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode: mode as u32,
        uid: 0,
        gid: 0,
        file_size: 0,
        id,
        flags: 0,
        flags_extended: 0,
        path: path.as_bytes().to_vec(),
    }
}

pub(super) fn replay(repo: &Repository, commit: Oid, onto: Oid, union: &dyn Fn(&str) -> bool) -> Result<Oid> {
    let original = repo.find_commit(commit).map_err(git_error("reading the commit"))?;
    let parent = original.parent_id(0).ok();
    let paths = changed_paths(repo, parent, commit)?;
    let then = parent.map(|id| tree_of(repo, id)).transpose()?;
    let mine = tree_of(repo, commit)?;
    let base = tree_of(repo, onto)?;
    let mut update = TreeUpdateBuilder::new();
    for path in &paths {
        let theirs = bytes_in(repo, Some(&base), path);
        let before = bytes_in(repo, then.as_ref(), path);
        match mine.get_path(Path::new(path)) {
            Ok(entry) => {
                let id = match (union(path), &before, &theirs) {
                    (true, Some(before), Some(theirs)) if before != theirs => {
                        let ours = bytes_in(repo, Some(&mine), path).unwrap_or_default();
                        let joined = merge3(before, theirs, &ours, true)?.ok_or_else(|| {
                            Error::internal(format!(
                                "replica: {path} could not be merged as a union of lines"
                            ))
                        })?;
                        repo.blob(&joined).map_err(git_error("keeping a file's bytes"))?
                    }
                    _ => entry.id(),
                };
                let mode = if entry.filemode() == i32::from(git2::FileMode::BlobExecutable) {
                    git2::FileMode::BlobExecutable
                } else {
                    git2::FileMode::Blob
                };
                update.upsert(path.as_str(), id, mode);
            }
            Err(_) => {
                update.remove(path.as_str());
            }
        }
    }
    let tree = update.create_updated(repo, &base).map_err(git_error("building the tree"))?;
    let tree = repo.find_tree(tree).map_err(git_error("building the tree"))?;
    let onto = repo.find_commit(onto).map_err(git_error("reading the remote's commit"))?;
    let committer = super::signature(repo)?;
    let message = original.message().unwrap_or_default();
    repo.commit(None, &original.author(), &committer, message, &tree, &[&onto])
        .map_err(git_error("writing the commit"))
}

pub(super) fn changed_under(
    repo: &Repository,
    folder: &str,
    skip: &dyn Fn(&str) -> bool,
) -> Result<Vec<(String, Option<Vec<u8>>)>> {
    let mut options = StatusOptions::new();
    options
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .pathspec(format!("{}/", folder.trim_end_matches('/')))
        .disable_pathspec_match(false);
    let statuses = repo.statuses(Some(&mut options)).map_err(git_error("reading what changed"))?;
    let mut out = Vec::new();
    for entry in statuses.iter() {
        let Ok(path) = entry.path() else { continue };
        if skip(path) || entry.status().is_ignored() {
            continue;
        }
        match bytes_here(repo, path) {
            Ok(bytes) => out.push((path.to_owned(), bytes)),
            Err(()) => continue,
        }
    }
    Ok(out)
}
