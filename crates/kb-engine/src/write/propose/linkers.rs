//! The notes linking to what a multi-file proposal moves or trashes, as its
//! plan was judged on them, and the check at apply that no link to those
//! notes was written since.
//!
//! A move's plan rewrites every link that would stop leading where it leads,
//! judged on the vault when it was proposed; a delete lists the links that
//! will break. A note outside the plan that links to a moved or trashed note
//! was judged too: its links still lead there after the move (a bare name
//! still unique), or are the delete's listed breaks. But a note that starts
//! linking to one between propose and apply (a new note, a link added to an
//! old one) was never judged, and the apply checks only the files in its plan:
//! applied, that link would break or lead elsewhere while the proposal said
//! nothing of it.
//!
//! So staging records in the plan ([`Linkers`]) the notes watched (every note
//! it moves, at its old path, or trashes, and every note named like a moved
//! note's new name, whose bare links the moved note could take) and, for each
//! note outside the plan linking to one of them, a fingerprint of those links
//! (each link's target note, kind, target and anchor as written: not its line,
//! so an edit elsewhere in the note changes nothing). At apply the engine says
//! which notes link to them now ([`ApplyIndex::linkers`](super::ApplyIndex::linkers):
//! the write layer knows no index), and a note outside the plan whose links to
//! them are not the ones recorded refuses the apply with `stale_base` naming
//! it, before anything is written; the proposal stays pending, to be proposed
//! again (and its links rewritten or listed) or rejected. Refusing rather than
//! planning those links afresh keeps what is applied what the person reviewed.
//! A plan staged before linkers were recorded carries none and is not checked.

use std::collections::{BTreeMap, HashSet};

use serde_json::json;

use super::view::{VaultView, written};
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::strip_md;
use crate::vault::graph::{Broken, Resolution};
use crate::vault::{LinkRef, content_hash};
use crate::write::plan::{FileOpKind, Linkers, Plan};

/// Most notes the refusal names in its message (its details name them all).
const NAMED_MAX: usize = 5;

/// A note (or standard) linking to watched notes, as found at staging by the
/// planner or at apply by the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Linker {
    /// Its path.
    pub path: String,
    /// The fingerprint of its links to the watched notes: a hash over each
    /// link's target note, kind, target and anchor as written, in any order.
    pub links: String,
    /// Its first such link: the line and the link as written (for messages).
    pub first: (u32, String),
}

impl Linker {
    /// The linker at `path` holding `links`, each with the path of the watched
    /// note it leads to; `None` without links.
    pub fn new<'a>(path: &str, links: impl IntoIterator<Item = (&'a str, LinkRef<'a>)>) -> Option<Linker> {
        let mut first: Option<(u32, String)> = None;
        let mut lines: Vec<String> = Vec::new();
        for (target, link) in links {
            let shown = written(link);
            lines.push(format!("{target}\u{1f}{}\u{1f}{shown}", link.kind.name()));
            if first.as_ref().is_none_or(|(line, _)| link.line < *line) {
                first = Some((link.line, shown));
            }
        }
        lines.sort_unstable();
        Some(Linker {
            path: path.to_owned(),
            links: content_hash(lines.join("\n").as_bytes()),
            first: first?,
        })
    }
}

/// The notes a plan watches in `view`: those it moves (old paths) or trashes,
/// and those named (file name or alias) like a moved note's new name; as
/// indexes into `view.records`, sorted.
fn watched(view: &VaultView<'_>, plan: &Plan) -> Vec<usize> {
    let position = |path: &str| view.records.binary_search_by(|r| r.path.as_str().cmp(path)).ok();
    let mut out: Vec<usize> = Vec::new();
    let mut new_names: HashSet<String> = HashSet::new();
    for op in &plan.files {
        match op.op {
            FileOpKind::Move => {
                out.extend(position(&op.path));
                if let Some(to) = &op.to {
                    new_names.insert(strip_md(to.rsplit('/').next().unwrap_or(to)).to_lowercase());
                }
            }
            FileOpKind::Trash => out.extend(position(&op.path)),
            // A file carried as bytes is no note: links to it (embeds) are
            // rewritten by the plan, and a record is found only for a note.
            FileOpKind::MoveFile => out.extend(position(&op.path)),
            FileOpKind::Create | FileOpKind::Write => {}
        }
    }
    if !new_names.is_empty() {
        let named = |name: &str| new_names.contains(&name.trim().to_lowercase());
        out.extend(
            (0..view.records.len()).filter(|&i| {
                named(view.records[i].stem()) || view.records[i].aliases.iter().any(|a| named(a))
            }),
        );
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The linkers of the notes at `targets` (indexes into `view.records`) in
/// `view`'s graph: every note holding a link that leads to one (resolved, or
/// broken only by an anchor the note lacks), but those `skip` says to leave out.
pub fn linkers_in(view: &VaultView<'_>, targets: &[usize], skip: &dyn Fn(&str) -> bool) -> Vec<Linker> {
    let target_set: HashSet<u32> = targets.iter().map(|&t| u32::try_from(t).unwrap_or(u32::MAX)).collect();
    let mut by_note: BTreeMap<usize, Vec<(u32, usize)>> = BTreeMap::new();
    for &target in targets {
        for backlink in view.graph.backlinks(target) {
            by_note.entry(backlink.from as usize).or_default().push((target as u32, backlink.link as usize));
        }
    }
    for from in 0..view.records.len() {
        for (number, resolution) in view.graph.outlinks(from).iter().enumerate() {
            if let Resolution::Broken(Broken::MissingHeading(to) | Broken::MissingBlock(to)) = *resolution
                && target_set.contains(&to)
                && to as usize != from
            {
                by_note.entry(from).or_default().push((to, number));
            }
        }
    }
    by_note
        .into_iter()
        .filter(|(from, _)| !skip(&view.records[*from].path))
        .filter_map(|(from, links)| {
            let record = &view.records[from];
            let links = links.into_iter().filter_map(|(to, number)| {
                Some((view.records[to as usize].path.as_str(), record.links.get(number)?))
            });
            Linker::new(&record.path, links)
        })
        .collect()
}

/// What `plan` is judged on in `view` (the catalog it was planned on): the
/// notes it watches and their linkers outside it.
pub(super) fn linkers_of(view: &VaultView<'_>, plan: &Plan) -> Linkers {
    let in_plan: HashSet<&str> = plan.files.iter().flat_map(|op| op.touched()).collect();
    let targets = watched(view, plan);
    let notes = linkers_in(view, &targets, &|path| in_plan.contains(path))
        .into_iter()
        .map(|linker| (linker.path, linker.links))
        .collect();
    Linkers { targets: targets.into_iter().map(|t| view.records[t].path.clone()).collect(), notes }
}

/// Refuses (`stale_base`) when a note outside `plan` links to a note it
/// watches otherwise than `linkers` recorded at staging: `now` are the linkers
/// as they are (the engine's answer).
pub(crate) fn check(plan: &Plan, linkers: &Linkers, now: &[Linker]) -> Result<()> {
    let in_plan: HashSet<&str> = plan.files.iter().flat_map(|op| op.touched()).collect();
    let mut new: Vec<&Linker> = now
        .iter()
        .filter(|linker| !in_plan.contains(linker.path.as_str()))
        .filter(|linker| linkers.notes.get(&linker.path) != Some(&linker.links))
        .collect();
    if new.is_empty() {
        return Ok(());
    }
    new.sort_by(|a, b| a.path.cmp(&b.path));
    new.dedup_by(|a, b| a.path == b.path);
    let named: Vec<String> = new
        .iter()
        .take(NAMED_MAX)
        .map(|linker| format!("{} ({}, line {})", linker.path, linker.first.1, linker.first.0))
        .collect();
    let more = new.len().saturating_sub(NAMED_MAX);
    let what = if plan.files.iter().any(|op| op.op == FileOpKind::Move) { "moves" } else { "deletes" };
    let (files, links): (Vec<&str>, Vec<serde_json::Value>) = new
        .iter()
        .map(|linker| {
            let link = json!({ "path": linker.path, "line": linker.first.0, "link": linker.first.1 });
            (linker.path.as_str(), link)
        })
        .unzip();
    Err(Error::new(
        ErrorCode::StaleBase,
        format!(
            "{} link{} to a note this proposal {what} since it was made: {}{}; applied now, {} would break \
             or lead elsewhere unseen, so nothing was changed",
            if new.len() == 1 { "a note" } else { "notes" },
            if new.len() == 1 { "s" } else { "" },
            named.join(", "),
            if more > 0 { format!(" and {more} more") } else { String::new() },
            if new.len() == 1 { "that link" } else { "those links" },
        ),
    )
    .with_hint(
        "the proposal stays pending: propose the change again, so those links are rewritten or listed too, and \
         reject this one",
    )
    .with_details(json!({ "files": files, "links": links })))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use super::*;
    use crate::sandbox::NotePath;
    use crate::vault::graph::Graph;
    use crate::vault::{NoteKind, NoteRecord, parse_note};

    fn records(notes: &[(&str, &str)]) -> Vec<Arc<NoteRecord>> {
        let mut out: Vec<Arc<NoteRecord>> = notes
            .iter()
            .map(|(path, text)| {
                let note = parse_note(&NotePath::parse(path).unwrap(), text);
                Arc::new(NoteRecord::from_note(note, NoteKind::Note, 0, 0, None, String::new()))
            })
            .collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }

    /// The linkers by path, as `check` compares them.
    fn by_path(now: &[Linker]) -> HashMap<&str, &str> {
        now.iter().map(|l| (l.path.as_str(), l.links.as_str())).collect()
    }

    fn linkers(notes: &[(&str, &str)], targets: &[&str]) -> Vec<Linker> {
        let records = records(notes);
        let graph = Graph::build(&records, &[]);
        let view = VaultView { records: &records, attachments: &[], graph: &graph, texts: None };
        let at: Vec<usize> =
            targets.iter().map(|t| records.iter().position(|r| r.path == *t).unwrap()).collect();
        linkers_in(&view, &at, &|_| false)
    }

    #[test]
    fn a_linker_is_its_links_to_the_targets_not_their_lines() {
        let before =
            linkers(&[("t.md", "# H\n"), ("a.md", "x\n[[t]] [[other]]\n"), ("other.md", "")], &["t.md"]);
        let moved_down =
            linkers(&[("t.md", "# H\n"), ("a.md", "y\n\n\n[[t]]\n"), ("other.md", "")], &["t.md"]);
        assert_eq!(by_path(&before), by_path(&moved_down), "lines and other links do not count");
        assert_eq!(before[0].first, (2, "[[t]]".to_owned()));
        let added = linkers(&[("t.md", "# H\n"), ("a.md", "[[t]] [t](t.md)\n"), ("other.md", "")], &["t.md"]);
        assert_ne!(by_path(&before), by_path(&added), "a link more counts");
        // A link broken only by its anchor still leads to the note; a property's link counts.
        let anchored = linkers(&[("t.md", ""), ("b.md", "---\nup: \"[[t#Nope]]\"\n---\n")], &["t.md"]);
        assert_eq!(anchored.len(), 1);
        assert_eq!(anchored[0].first, (2, "[[t#Nope]]".to_owned()));
    }
}
