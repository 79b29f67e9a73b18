//! What a person sees before approving a proposal: every file it would change,
//! as a unified diff (a new note shown whole, as added lines).
//!
//! A patch's diff is computed afresh from the note as it is now and the staged
//! note, so it shows exactly what an apply would write, whatever the `.diff`
//! file beside the proposal says (that file is plain text anyone can edit). Only
//! when the note changed since the proposal was made (the apply would refuse)
//! is the stored diff shown, with a note saying so.
//!
//! A review also names the other pending proposals that touch a file this one
//! touches (a patch of a note a move renames, two patches of one note): once
//! either is applied, the other fails its checks, so the person sees the two
//! side by side and chooses which goes first.

use std::collections::BTreeSet;

use crate::error::Result;
use crate::sandbox::Sandbox;
use crate::vault::content_hash;
use crate::write::inbox::{
    FILE_MAX_BYTES, Inbox, Located, ProposalKind, ProposalStatus, find, locate, looks_intact, pending_files,
};
use crate::write::list::{NoteHashes, ProposalView, plan_checks, view_of, view_with};
use crate::write::plan::{FileChange, op_change, read_plan_file};
use crate::write::text::unified_diff;

/// A pending proposal with its live checks and the change of every file it touches.
#[derive(Debug, Clone, PartialEq)]
pub struct Review {
    /// The proposal and its checks.
    pub view: ProposalView,
    /// The files it would write, in order (those asked for: see [`review`]).
    pub files: Vec<FileChange>,
    /// How many files it writes in all.
    pub files_total: usize,
    /// Why the diff shown is not what an apply would write now (the note changed
    /// since), or `None`.
    pub caveat: Option<String>,
    /// A new note or a patch: the note it would write, whole (`None` for a
    /// multi-file proposal).
    pub staged_note: Option<String>,
    /// The other pending proposals touching a file this one touches.
    pub overlaps: Vec<Overlap>,
    /// A multi-file plan's remarks (the links a move makes ambiguous).
    pub remarks: Vec<String>,
}

/// Another pending proposal touching some of the files a proposal touches:
/// once either is applied, the other fails its checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    /// The other proposal's id.
    pub proposal_id: String,
    /// The vault paths both touch, sorted.
    pub paths: Vec<String>,
}

/// The review of the pending proposal with exactly this id (errors as [`super::apply`]'s
/// lookup: not found, not pending, tampered), with the diffs of the files in
/// `files` (all of them when `None`): a page of a move rewriting ten thousand
/// notes computes twenty diffs, not ten thousand. Its checks are of every file.
pub fn review(sandbox: &Sandbox, id: &str, files: Option<std::ops::Range<usize>>) -> Result<Review> {
    let inbox = Inbox::of(sandbox);
    let located = find(sandbox, &inbox, id)?;
    if located.meta.kind.is_multi() {
        // Each note is read once: for the plan's texts, its checks and its diffs.
        let (plan, reads) = read_plan_file(sandbox, &located)?.hydrate_reading(sandbox)?;
        let failure = crate::write::plan::check_read(sandbox, &plan, &reads).err();
        drop(reads);
        let intact = looks_intact(sandbox, &inbox, &located);
        let checks = plan_checks(intact, failure.as_ref().map(|err| err.code));
        let caveat = failure.map(|err| format!("applying it now would be refused: {}", err.message));
        let range = files.unwrap_or(0..plan.files.len());
        let page = plan.files.get(range.start.min(plan.files.len())..range.end.min(plan.files.len()));
        let changes = page.unwrap_or_default().iter().map(|op| op_change(op, None)).collect();
        let touched = plan.files.iter().flat_map(|op| op.touched()).map(str::to_owned).collect();
        return Ok(Review {
            view: view_with(sandbox, &located, checks),
            files: changes,
            files_total: plan.files.len(),
            caveat,
            staged_note: None,
            overlaps: overlaps(sandbox, &inbox, &located, &touched)?,
            remarks: plan.remarks,
        });
    }
    let staged_bytes = sandbox.read(&located.content_path()?, FILE_MAX_BYTES)?;
    let staged = String::from_utf8_lossy(&staged_bytes);
    let target = located.meta.target.clone();
    let mut caveat = None;
    let change = match located.meta.kind {
        ProposalKind::New => {
            let (diff, added, removed) = unified_diff(&target, "", &staged);
            let diff = diff.replacen(&format!("--- a/{target}\n"), "--- /dev/null\n", 1);
            FileChange { path: target.clone(), op: "create", diff, added, removed }
        }
        _ => {
            let current = sandbox
                .resolve_note_target(&target)
                .ok()
                .and_then(|path| sandbox.read(&path, FILE_MAX_BYTES).ok());
            match current {
                Some(bytes) if Some(content_hash(&bytes)) == located.meta.base_sha256 => {
                    let (diff, added, removed) =
                        unified_diff(&target, &String::from_utf8_lossy(&bytes), &staged);
                    FileChange { path: target.clone(), op: "change", diff, added, removed }
                }
                current => {
                    caveat = Some(if current.is_some() {
                        format!(
                            "{target} changed after this proposal was made; this is the change as proposed against its older text, and applying it will be refused"
                        )
                    } else {
                        format!(
                            "{target} no longer exists; this is the change as proposed, and applying it will be refused"
                        )
                    });
                    let stored = match located.diff_path()? {
                        Some(path) => {
                            String::from_utf8_lossy(&sandbox.read(&path, FILE_MAX_BYTES)?).into_owned()
                        }
                        None => String::new(),
                    };
                    let count = |sign: char, header: &str| {
                        stored.lines().filter(|l| l.starts_with(sign) && !l.starts_with(header)).count()
                            as u32
                    };
                    let (added, removed) = (count('+', "+++"), count('-', "---"));
                    FileChange { path: target.clone(), op: "change", diff: stored, added, removed }
                }
            }
        }
    };
    let touched = BTreeSet::from([target]);
    let shown = files.is_none_or(|range| range.contains(&0));
    Ok(Review {
        view: view_of(sandbox, &inbox, &located, &mut NoteHashes::new()),
        files: if shown { vec![change] } else { Vec::new() },
        files_total: 1,
        caveat,
        staged_note: Some(staged.into_owned()),
        overlaps: overlaps(sandbox, &inbox, &located, &touched)?,
        remarks: Vec::new(),
    })
}

/// The other pending proposals touching a file the pending proposal `id`
/// touches, without computing its diffs (what `kb-index mv` says right after
/// staging a move that may rewrite thousands of notes).
pub fn overlaps_of(sandbox: &Sandbox, id: &str) -> Result<Vec<Overlap>> {
    let inbox = Inbox::of(sandbox);
    let located = find(sandbox, &inbox, id)?;
    overlaps(sandbox, &inbox, &located, &touched(sandbox, &located))
}

/// Every vault path a pending proposal touches (`touched`), lowercased as
/// `overlaps` compares them: a new proposal changing one of them from the
/// same base would go stale when the other is applied.
pub fn pending_paths(sandbox: &Sandbox) -> Result<BTreeSet<String>> {
    let inbox = Inbox::of(sandbox);
    let mut paths = BTreeSet::new();
    for file in pending_files(sandbox, &inbox)? {
        let Ok(located) = locate(sandbox, &file, ProposalStatus::Pending) else { continue };
        paths.extend(touched(sandbox, &located).into_iter().map(|path| path.to_lowercase()));
    }
    Ok(paths)
}

/// The vault paths a pending proposal touches: its note, or every path its plan
/// moves, writes or trashes, from the plan file alone (a move's rewrites are
/// not rebuilt from the thousands of notes a hub's move may rewrite). A plan
/// that cannot be read touches nothing known.
fn touched(sandbox: &Sandbox, located: &Located) -> BTreeSet<String> {
    if !located.meta.kind.is_multi() {
        return BTreeSet::from([located.meta.target.clone()]);
    }
    read_plan_file(sandbox, located)
        .map_or_else(|_| BTreeSet::new(), |plan| plan.touched().map(str::to_owned).collect())
}

/// The other pending proposals touching any of `paths` (the ones `located`
/// touches), by id. Paths are compared without case: on a case-insensitive
/// file system `a.md` and `A.md` are one file, and elsewhere flagging both is
/// the cautious side.
fn overlaps(
    sandbox: &Sandbox,
    inbox: &Inbox,
    located: &Located,
    paths: &BTreeSet<String>,
) -> Result<Vec<Overlap>> {
    let folded: BTreeSet<String> = paths.iter().map(|path| path.to_lowercase()).collect();
    let mut found = Vec::new();
    for file in pending_files(sandbox, inbox)? {
        let Ok(other) = locate(sandbox, &file, ProposalStatus::Pending) else { continue };
        if other.id() == located.id() {
            continue;
        }
        let shared: Vec<String> = touched(sandbox, &other)
            .into_iter()
            .filter(|path| folded.contains(&path.to_lowercase()))
            .collect();
        if !shared.is_empty() {
            found.push(Overlap { proposal_id: other.meta.proposal_id.clone(), paths: shared });
        }
    }
    found.sort_by(|a, b| a.proposal_id.cmp(&b.proposal_id));
    Ok(found)
}
