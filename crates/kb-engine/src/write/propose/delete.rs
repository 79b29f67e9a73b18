//! Planning a delete (`propose_delete`): the note (or canvas, whole, its
//! JSON as it is) goes to the inbox's trash,
//! and every link leading to it is judged on the vault without it: it will
//! stop resolving (a break), or another note of its name, or one with it as
//! an alias, will answer it (it will lead elsewhere). Both are said before
//! anything is applied; no other note is changed.

use std::sync::Arc;

use super::view::{Break, VaultView, read_text, written};
use crate::error::{Error, Result};
use crate::sandbox::Sandbox;
use crate::vault::NoteRecord;
use crate::vault::graph::{Broken, Resolution, Resolver};
use crate::write::plan::{FileOp, FileOpKind, PLAN_SCHEMA, Plan};

/// Plans trashing a note; returns the plan and the links that will break.
pub fn plan_delete(sandbox: &Sandbox, view: &VaultView<'_>, path: &str) -> Result<(Plan, Vec<Break>)> {
    if path.is_empty() {
        return Err(Error::invalid("`path` is empty; give the path of the note to delete"));
    }
    let note = sandbox.resolve_whole_note_target(path)?;
    let Some(index) = view.records.iter().position(|r| r.path == note.as_str()) else {
        return Err(Error::not_found(format!("{note} is not a note of the vault"))
            .with_hint("give the note's exact path (search_knowledge or list_notes shows it)"));
    };
    let text = read_text(sandbox, view, note.as_str())?;
    // The links leading to the note (resolved, or broken only by an anchor it
    // lacks): where each leads once the note is gone.
    let mut links: Vec<(usize, u32, bool)> =
        view.graph.backlinks(index).iter().map(|b| (b.from as usize, b.link, true)).collect();
    for from in 0..view.records.len() {
        for (number, resolution) in view.graph.outlinks(from).iter().enumerate() {
            if matches!(resolution, Resolution::Broken(Broken::MissingHeading(to) | Broken::MissingBlock(to))
                if *to as usize == index)
            {
                links.push((from, u32::try_from(number).unwrap_or(u32::MAX), false));
            }
        }
    }
    links.sort_unstable();
    let rest: Vec<Arc<NoteRecord>> =
        view.records.iter().enumerate().filter(|&(i, _)| i != index).map(|(_, r)| Arc::clone(r)).collect();
    let resolver = (!links.is_empty()).then(|| Resolver::new(&rest, view.attachments));
    let mut breaks = Vec::new();
    for (from, number, was_resolved) in links {
        if from == index {
            // The note's links to itself go with it.
            continue;
        }
        let from = &view.records[from];
        let Some(link) = from.links.get(number as usize) else { continue };
        // Where it leads with its anchor found (a note lacking the anchor
        // leaves it broken).
        let leads_to = match resolver.as_ref().map(|r| r.resolve(&rest, view.attachments, link)) {
            Some(Resolution::Note(to)) => Some(rest[to as usize].path.clone()),
            _ => None,
        };
        if !was_resolved && leads_to.is_none() {
            // Broken before (by its anchor) and broken after: nothing changes.
            continue;
        }
        breaks.push(Break { path: from.path.clone(), line: link.line, link: written(link), leads_to });
    }
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let elsewhere = breaks.iter().filter(|b| b.leads_to.is_some()).count();
    let broken = breaks.len() - elsewhere;
    let mut summary =
        format!("delete {note} (to the inbox's trash), {broken} link{} will break", plural(broken));
    if elsewhere > 0 {
        summary.push_str(&format!(", {elsewhere} link{} will lead to another note", plural(elsewhere)));
    }
    let op = FileOp {
        op: FileOpKind::Trash,
        path: note.as_str().to_owned(),
        to: None,
        before: Some(text),
        after: None,
        kept: None,
        sha256: None,
    };
    Ok((
        Plan {
            schema: PLAN_SCHEMA,
            summary,
            files: vec![op],
            folders: Vec::new(),
            remarks: Vec::new(),
            linkers: None,
        },
        breaks,
    ))
}
