//! The check of a plan before anything is written: every path a writable
//! target, every source holding its before-bytes, every destination free.

use serde_json::json;

use super::operations::Plan;
use super::stored::{Read, current, file_hash};
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{NotePath, Sandbox};
use crate::vault::content_hash;

/// What [`check`] found wrong with one file.
pub(crate) fn changed(path: &NotePath, expected: &str, now: Option<&[u8]>) -> Error {
    Error::stale_base(path, &content_hash(expected.as_bytes()), now.map(content_hash).as_deref())
}

/// An operation's path as a plan target: a note, a canvas a move rewrites,
/// a file a folder move carries (the plan's form was checked when it was
/// parsed: which operation may act on which kind of file).
fn target(sandbox: &Sandbox, path: &str) -> Result<NotePath> {
    sandbox.resolve_plan_target(path)
}

/// Whether a plan target exists (a note found as reads find it).
fn exists(sandbox: &Sandbox, path: &NotePath) -> Result<bool> {
    if path.is_markdown() && sandbox.area_of(path).is_some() {
        return Ok(sandbox.stat(path)?.is_some());
    }
    Ok(sandbox.stat_plan_file(path)?.is_some())
}

fn target_exists(path: &NotePath) -> Error {
    Error::new(ErrorCode::TargetExists, format!("{path} exists now; the proposal would replace it"))
        .with_hint("reject this proposal, or move that note away first")
        .with_details(json!({ "target": path.as_str() }))
}

/// Checks every operation against the vault before anything is written: every
/// path a writable note target, every source holding its before-bytes, every
/// destination free. Stale files are all listed (`stale_base`, details `files`).
pub(crate) fn check(sandbox: &Sandbox, plan: &Plan) -> Result<()> {
    check_read(sandbox, plan, &[])
}

/// [`check`], taking each note's bytes from `reads` (what loading the plan
/// read of it, nothing having been written since) when they are there. The
/// operations are checked in parallel, and judged in order.
pub(crate) fn check_read(sandbox: &Sandbox, plan: &Plan, reads: &[Read]) -> Result<()> {
    use rayon::prelude::*;
    let judged: Vec<Result<Option<(NotePath, Error)>>> = plan
        .files
        .par_iter()
        .enumerate()
        .map(|(number, op)| {
            let path = target(sandbox, &op.path)?;
            if let Some(to) = &op.to {
                let to = target(sandbox, to)?;
                let case_only = to.as_str() != path.as_str()
                    && to.as_str().to_lowercase() == path.as_str().to_lowercase();
                if !case_only && exists(sandbox, &to)? {
                    return Err(target_exists(&to));
                }
            }
            if let Some(sha256) = &op.sha256 {
                let now = file_hash(sandbox, &path)?;
                if now.as_deref() == Some(sha256.as_str()) {
                    return Ok(None);
                }
                let err = Error::stale_base(&path, sha256, now.as_deref());
                return Ok(Some((path, err)));
            }
            let read;
            let now = match reads.get(number) {
                Some(Some(bytes)) => bytes.as_deref(),
                _ => {
                    read = current(sandbox, &path)?;
                    read.as_deref()
                }
            };
            match (&op.before, now) {
                (None, None) => Ok(None),
                (None, Some(_)) => Err(target_exists(&path)),
                (Some(before), now) if now != Some(before.as_bytes()) => {
                    let err = changed(&path, before, now);
                    Ok(Some((path, err)))
                }
                _ => Ok(None),
            }
        })
        .collect();
    let mut stale: Vec<String> = Vec::new();
    let mut first_stale = None;
    for outcome in judged {
        if let Some((path, err)) = outcome? {
            stale.push(path.as_str().to_owned());
            first_stale.get_or_insert(err);
        }
    }
    match first_stale {
        None => Ok(()),
        Some(mut err) => {
            err.message = format!(
                "{} changed since the proposal was made: {}",
                if stale.len() == 1 { "a file" } else { "files" },
                stale.join(", ")
            );
            err.details = Some(json!({ "files": stale }));
            Err(err)
        }
    }
}
