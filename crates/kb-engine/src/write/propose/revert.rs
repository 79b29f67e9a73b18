//! Planning a revert (`revert_proposal`): the exact inverse of an applied
//! proposal, as a multi-file plan staged like any other proposal.
//!
//! The inverse comes from what the archive keeps, never from the vault: a
//! multi-file proposal's plan holds every file's bytes before and after; a new
//! note's staged file is what was written (its inverse moves it to the inbox's
//! trash, never erasing it); a patch's staged note is what was written and its
//! diff, read backwards, gives the bytes before (checked against the base hash
//! the metadata recorded). Every operation is inverted and their order
//! reversed: writes swap their before and after, moves move back, trashed notes
//! are created again from their kept bytes (the trash copy stays, and the note
//! gets back its permissions from it: [`FileOp::kept`]), created notes go to
//! the trash.
//!
//! A revert never overwrites later work. A note the apply wrote that has
//! changed since is merged: the inverse's change is carried onto the note as
//! it is now, three-way (what the apply left as the base), when the later
//! edits lie on other lines; the revert then expects the note as it is now.
//! A move's rewrite of a linking note is archived as spans, which only that
//! note's texts of the time rebuild: once it changed, the history gives them.
//! Where they collide, or the note is gone, or a note would be created or
//! trashed over later work, or a path a note would return to is taken, the
//! revert is `stale_base`, naming every such file and the colliding lines.

use serde_json::json;

use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{NotePath, Sandbox};
use crate::vault::content_hash;
use crate::write::inbox::{
    AuditLog, FILE_MAX_BYTES, Inbox, ProposalKind, find_applied, intact, journal, tampered,
};
use crate::write::plan::{
    FileOp, FileOpKind, FolderMove, PLAN_SCHEMA, Plan, PlanFile, file_hash, is_unknown_text, trash_paths,
};
use crate::write::text::{Merged, merge, undo_diff};

/// A planned revert.
#[derive(Debug, Clone)]
pub struct RevertPlan {
    /// The applied proposal it undoes.
    pub reverts: String,
    /// What that proposal was about (its target), the revert's target too.
    pub target: String,
    /// The file operations.
    pub plan: Plan,
    /// The notes changed since the apply whose later edits the revert keeps (merged).
    pub merged: Vec<String>,
}

/// A note's texts before and after an apply, from elsewhere than the
/// archive (the history): what a compactly stored rewrite of a note changed
/// since no longer lets the plan rebuild.
pub type RecordedTexts<'a> = &'a dyn Fn(&str) -> Option<(String, String)>;

/// Plans the inverse of the applied proposal `id` (see the module docs);
/// `recorded` gives a rewritten note's texts when the plan cannot.
pub fn plan_revert(sandbox: &Sandbox, id: &str, recorded: RecordedTexts<'_>) -> Result<RevertPlan> {
    let id = id.trim();
    let inbox = Inbox::of(sandbox);
    let located = find_applied(sandbox, &inbox, id)?;
    if let Ok(Some(journal)) = journal::read(sandbox, &inbox)
        && journal.proposal_id == id
        && AuditLog::open(sandbox, &inbox).ok().and_then(|log| log.last_id().map(str::to_owned)).as_deref()
            != Some(id)
    {
        return Err(Error::new(
            ErrorCode::Conflict,
            format!("the apply of proposal {id} was interrupted and is not complete yet"),
        )
        .with_hint("the next apply or server start completes it; then revert it"));
    }
    let content = intact(sandbox, &inbox, &located).map_err(|err| tampered(id, &err.message))?;
    let text = |bytes: Vec<u8>| {
        String::from_utf8(bytes).map_err(|_| tampered(id, "its archived files are not UTF-8 text"))
    };
    let meta = &located.meta;
    let (ops, folders, what) = match meta.kind {
        ProposalKind::New => {
            let written = text(content)?;
            let op = FileOp {
                op: FileOpKind::Trash,
                path: meta.target.clone(),
                to: None,
                before: Some(written),
                after: None,
                kept: None,
                sha256: None,
            };
            (vec![op], Vec::new(), format!("new {}", meta.target))
        }
        ProposalKind::Patch => {
            let written = text(content)?;
            let diff_path = located.diff_path()?.ok_or_else(|| tampered(id, "its diff is missing"))?;
            let diff = text(sandbox.read(&diff_path, FILE_MAX_BYTES)?)?;
            let base = meta.base_sha256.as_deref().unwrap_or_default();
            let before = undo_diff(&written, &diff)
                .filter(|before| content_hash(before.as_bytes()) == base)
                .ok_or_else(|| {
                    tampered(id, &format!("its archived diff does not lead back to the base {base}"))
                })?;
            let op = FileOp {
                op: FileOpKind::Write,
                path: meta.target.clone(),
                to: None,
                before: Some(written),
                after: Some(before),
                kept: None,
                sha256: None,
            };
            (vec![op], Vec::new(), format!("patch {}", meta.target))
        }
        _ => {
            let plan =
                PlanFile::parse(&content).map_err(|err| tampered(id, &err.message))?.hydrate(sandbox)?;
            // Where each trashed note was kept: its copy, or this archived plan once the trash is emptied.
            let mut kept = Vec::new();
            for trash in trash_paths(&inbox, &located.dir, id, &plan)? {
                kept.push(match trash {
                    Some(copy) if sandbox.stat(&copy)?.is_some() => Some(copy),
                    Some(_) => Some(located.content_path()?),
                    None => None,
                });
            }
            let ops = plan.files.iter().zip(kept).rev().map(|(op, kept)| inverse(op, kept)).collect();
            // A folder move's folders go back too: made again, and the new ones removed once emptied.
            let folders =
                plan.folders.iter().map(|f| FolderMove { from: f.to.clone(), to: f.from.clone() }).collect();
            (ops, folders, plan.summary)
        }
    };
    let mut ops = ops;
    let merged = merge_later_edits(sandbox, id, &mut ops, recorded)?;
    let mut summary = format!("revert {id} ({what})");
    if !merged.is_empty() {
        summary.push_str(&format!(", keeping the later edits of {}", merged.join(", ")));
    }
    Ok(RevertPlan {
        reverts: id.to_owned(),
        target: meta.target.clone(),
        plan: Plan { schema: PLAN_SCHEMA, summary, files: ops, folders, remarks: Vec::new(), linkers: None },
        merged,
    })
}

/// The operation that undoes `op`; `kept`: where a note it trashed was kept.
fn inverse(op: &FileOp, kept: Option<NotePath>) -> FileOp {
    match op.op {
        FileOpKind::Create => FileOp {
            op: FileOpKind::Trash,
            path: op.path.clone(),
            to: None,
            before: op.after.clone(),
            after: None,
            kept: None,
            sha256: None,
        },
        FileOpKind::Write => FileOp {
            op: FileOpKind::Write,
            path: op.path.clone(),
            to: None,
            before: op.after.clone(),
            after: op.before.clone(),
            kept: None,
            sha256: None,
        },
        FileOpKind::Move => FileOp {
            op: FileOpKind::Move,
            path: op.to.clone().unwrap_or_default(),
            to: Some(op.path.clone()),
            before: op.after.clone(),
            after: op.before.clone(),
            kept: None,
            sha256: None,
        },
        FileOpKind::MoveFile => FileOp {
            op: FileOpKind::MoveFile,
            path: op.to.clone().unwrap_or_default(),
            to: Some(op.path.clone()),
            before: None,
            after: None,
            kept: None,
            sha256: op.sha256.clone(),
        },
        FileOpKind::Trash => FileOp {
            op: FileOpKind::Create,
            path: op.path.clone(),
            to: None,
            before: None,
            after: op.before.clone(),
            kept: kept.map(|kept| kept.as_str().to_owned()),
            sha256: None,
        },
    }
}

/// Checks every file the revert acts on against what the apply left there,
/// merging later edits into the inverse where they allow it (see the module
/// docs): returns the notes merged so; `stale_base` naming every file that
/// changed beyond a merge (with the colliding lines) and every path a note
/// would return to that is taken; `path_denied` when a path is no longer a
/// note target.
fn merge_later_edits(
    sandbox: &Sandbox,
    id: &str,
    ops: &mut [FileOp],
    recorded: RecordedTexts<'_>,
) -> Result<Vec<String>> {
    let mut stale: Vec<String> = Vec::new();
    let mut collisions: Vec<(String, Vec<(u32, u32)>)> = Vec::new();
    let mut merged: Vec<String> = Vec::new();
    for op in ops.iter_mut() {
        let path = sandbox.resolve_plan_target(&op.path)?;
        match &op.sha256 {
            Some(sha256) => {
                if file_hash(sandbox, &path)?.as_deref() != Some(sha256.as_str()) {
                    stale.push(op.path.clone());
                }
            }
            None => {
                let now = match sandbox.read_plan_file(&path, FILE_MAX_BYTES) {
                    Ok(bytes) => Some(bytes),
                    Err(err) if err.code == ErrorCode::NotFound => None,
                    Err(err) => return Err(err),
                };
                if now.as_deref() != op.before.as_deref().map(str::as_bytes) {
                    let now = now.and_then(|bytes| String::from_utf8(bytes).ok());
                    // What the apply left and what was there before it.
                    let texts = match (&op.before, &op.after) {
                        (Some(left), Some(_)) if is_unknown_text(left) => {
                            recorded(&op.path).map(|(before, after)| (after, before))
                        }
                        (Some(left), Some(back)) => Some((left.clone(), back.clone())),
                        _ => None,
                    };
                    match (now, texts) {
                        (Some(now), Some((left, back))) if now == left => {
                            op.before = Some(now);
                            op.after = Some(back);
                        }
                        (Some(now), Some((left, back))) => match merge(&left, &now, &back)? {
                            Merged::Clean(text) => {
                                op.before = Some(now);
                                op.after = Some(text);
                                merged.push(op.path.clone());
                            }
                            Merged::Overlap(lines) => {
                                stale.push(op.path.clone());
                                collisions.push((op.path.clone(), lines));
                            }
                        },
                        _ => stale.push(op.path.clone()),
                    }
                }
            }
        }
        if let Some(to) = &op.to {
            let to_path = sandbox.resolve_plan_target(to)?;
            let case_only = to.to_lowercase() == op.path.to_lowercase();
            if !case_only && sandbox.stat_plan_file(&to_path)?.is_some() {
                stale.push(to.clone());
            }
        }
    }
    if stale.is_empty() {
        return Ok(merged);
    }
    let lines = |spans: &[(u32, u32)]| {
        spans
            .iter()
            .map(|(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let overlap = collisions
        .iter()
        .map(|(path, spans)| format!("{path} (lines {})", lines(spans)))
        .collect::<Vec<_>>()
        .join("; ");
    let message = if collisions.is_empty() {
        format!(
            "{} changed since proposal {id} was applied: {}; reverting would overwrite that, so nothing was staged",
            if stale.len() == 1 { "a file" } else { "files" },
            stale.join(", ")
        )
    } else {
        format!(
            "{} changed since proposal {id} was applied, on lines the revert would change too: {overlap}; \
             reverting would overwrite them, so nothing was staged{}",
            if stale.len() == 1 { "a file" } else { "files" },
            if stale.len() > collisions.len() {
                format!(" (changed too: {})", stale.join(", "))
            } else {
                String::new()
            }
        )
    };
    let conflicts: Vec<_> = collisions
        .iter()
        .map(|(path, spans)| json!({ "path": path, "lines": spans.iter().map(|(a, b)| [a, b]).collect::<Vec<_>>() }))
        .collect();
    Err(Error::new(ErrorCode::StaleBase, message)
        .with_hint("read those notes again and propose the changes you want as patches, moves or deletes")
        .with_details(json!({ "files": stale, "conflicts": conflicts })))
}
