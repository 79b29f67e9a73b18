//! The links a move makes ambiguous: a note moved to a name another note
//! has leaves that note's bare links (`[[dup]]`) leading where they led, so
//! no rewrite is due and no link breaks, but the name now names two notes,
//! and which one opens is the editor's guess. Such a move is not refused
//! (moving a note beside its namesake is common); the links are listed, as
//! the plan's remarks under its summary, for the person approving it.

use std::collections::HashSet;
use std::sync::Arc;

use rayon::prelude::*;

use crate::sandbox::{name_key, strip_md};
use crate::vault::graph::{Resolution, Resolver};
use crate::vault::{LinkKind, NoteRecord};
use crate::write::propose::view::{Break, VaultView, written};

/// Most links a move's remarks name (its summary counts them all).
const NAMED: usize = 100;

/// The links of the vault after a move (`records`, `resolver`,
/// `attachments`) that still lead where they led but whose bare name the
/// move gives a second note (a note moved to a name another note has): one
/// name then names several notes, and which one it opens is Obsidian's
/// guess. Only targets naming a name a moved note takes on are looked at.
pub(crate) fn newly_ambiguous(
    view: &VaultView<'_>,
    moves: &[(String, String)],
    records: &[Arc<NoteRecord>],
    resolver: &Resolver,
    attachments: &[String],
) -> Vec<Break> {
    let stem = |path: &str| name_key(strip_md(path.rsplit('/').next().unwrap_or(path)));
    let taken: HashSet<String> =
        moves.iter().filter(|(old, new)| stem(old) != stem(new)).map(|(_, new)| stem(new)).collect();
    if taken.is_empty() {
        return Vec::new();
    }
    let mut found: Vec<Break> = records
        .par_iter()
        .flat_map_iter(|record| {
            record
                .links
                .iter()
                .filter(|link| {
                    let target = link.target.trim();
                    link.kind != LinkKind::Markdown
                        && !target.is_empty()
                        && !target.contains('/')
                        && taken.contains(&name_key(strip_md(target)))
                })
                .filter_map(|link| {
                    let Resolution::Note(to) = resolver.lead(records, attachments, link) else { return None };
                    let now = resolver.notes_named(records, attachments, link.target).len();
                    let before = view.graph.candidates(view.records, view.attachments, link.target).len();
                    (now > 1 && before <= 1).then(|| Break {
                        path: record.path.clone(),
                        line: link.line,
                        link: written(link),
                        leads_to: Some(records[to as usize].path.clone()),
                    })
                })
                .collect::<Vec<_>>()
        })
        .collect();
    found.sort_by(|a, b| (&a.path, a.line, &a.link).cmp(&(&b.path, b.line, &b.link)));
    found
}

/// The plan's remarks naming the links made ambiguous (the first [`NAMED`]).
pub(crate) fn remarks(ambiguous: &[Break]) -> Vec<String> {
    let mut remarks: Vec<String> = ambiguous
        .iter()
        .take(NAMED)
        .map(|link| {
            let to = link.leads_to.as_deref().unwrap_or_default();
            format!(
                "ambiguous after the move: {}:{} {} (still leads to {to})",
                link.path, link.line, link.link
            )
        })
        .collect();
    if ambiguous.len() > NAMED {
        remarks.push(format!("… and {} more ambiguous link(s)", ambiguous.len() - NAMED));
    }
    remarks
}
