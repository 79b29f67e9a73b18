//! What a staged change does to the links of the notes it leaves alone. A new
//! note named like another note's alias takes that alias's links; a patch that
//! gives a second note the same alias makes its links ambiguous; a patch that
//! renames a heading breaks the links to it. None of these notes changes a
//! byte, so no diff shows it: the proposal says it instead, before anything is
//! applied, so the person who approves it (and the agent who made it) can see
//! every link that will lead somewhere else or nowhere.

use std::sync::Arc;

use super::view::{Break, VaultView, written};
use crate::error::Result;
use crate::sandbox::{NotePath, ends_in_md};
use crate::vault::graph::{Resolution, Resolver};
use crate::vault::{NoteKind, NoteRecord, content_hash, is_canvas, parse_note};
use crate::write::plan::FileOp;

/// The links of the notes `ops` leave alone that will lead to another note or
/// stop resolving once `ops` are applied to the vault of `view`, by note path
/// and line. A broken link that a new note answers is not listed (that is
/// what it was written for), nor is any link of a note `ops` write (its diff
/// shows it).
pub fn link_effects(view: &VaultView<'_>, ops: &[FileOp]) -> Result<Vec<Break>> {
    let before = view.records;
    let index_of = |path: &str| before.binary_search_by(|r| r.path.as_str().cmp(path)).ok();
    let mut changed = Vec::new();
    // The notes the change writes, with their index before it (none for a new one).
    let mut writes: Vec<(Arc<NoteRecord>, Option<usize>)> = Vec::with_capacity(ops.len());
    for op in ops {
        // A file the change moves is no note: links lead to it by its path,
        // which the move planned for. A canvas is a note (its file nodes links).
        if !ends_in_md(&op.path) && !is_canvas(&op.path) {
            continue;
        }
        let old = index_of(&op.path);
        changed.extend(old);
        let (Some(path), Some(text)) = (op.destination(), op.after.as_deref()) else { continue };
        let note = parse_note(&NotePath::parse(path)?, text);
        let (kind, modified, born) = old.map_or((NoteKind::Note, 0, None), |i| {
            (before[i].kind, before[i].modified_ns, before[i].born_ns)
        });
        let record = NoteRecord::from_note(
            note,
            kind,
            text.len() as u64,
            modified,
            born,
            content_hash(text.as_bytes()),
        );
        writes.push((Arc::new(record), old));
    }
    changed.sort_unstable();
    changed.dedup();
    // The same names at the same places (patches keeping their note's path and
    // aliases): the graph's own resolver answers for the vault after them.
    let same_names = writes.iter().all(|(record, old)| {
        old.is_some_and(|i| before[i].path == record.path && before[i].aliases == record.aliases)
    }) && writes.len() == changed.len();
    // Every note after the change, sorted by path (the notes kept are, the
    // few written go in where they sort), with its index before it.
    let mut notes: Vec<(Arc<NoteRecord>, Option<usize>)> = before
        .iter()
        .enumerate()
        .filter(|(i, _)| changed.binary_search(i).is_err())
        .map(|(i, record)| (Arc::clone(record), Some(i)))
        .collect();
    for note in writes {
        let at = notes.partition_point(|(record, _)| record.path < note.0.path);
        notes.insert(at, note);
    }
    let mut position = vec![usize::MAX; before.len()];
    let mut added = Vec::new();
    for (at, (_, old)) in notes.iter().enumerate() {
        match old {
            Some(old) => position[*old] = at,
            None => added.push(at),
        }
    }
    let after: Vec<Arc<NoteRecord>> = notes.into_iter().map(|(record, _)| record).collect();
    let built;
    let resolver = if same_names {
        &view.graph.resolver
    } else {
        built = Resolver::new(&after, view.attachments);
        &built
    };
    let relinked = view
        .graph
        .after_change(before, &after, resolver, view.attachments, None, &changed, &added, &position)
        .relinked;
    let mut effects = Vec::with_capacity(relinked.len());
    for (from, number, lead) in relinked {
        let note = &before[from];
        let Some(link) = note.links.get(number) else { continue };
        let was_broken = matches!(view.graph.outlinks(from).get(number), Some(Resolution::Broken(_)));
        let leads_to = match lead {
            Resolution::Note(to) => Some(after[to as usize].path.clone()),
            Resolution::Attachment(a) => Some(view.attachments[a as usize].clone()),
            Resolution::Broken(_) if was_broken => continue,
            Resolution::Broken(_) => None,
        };
        effects.push(Break { path: note.path.clone(), line: link.line, link: written(link), leads_to });
    }
    Ok(effects)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vault::graph::Graph;
    use crate::write::FileOpKind;

    /// A small vault with everything a lookup weighs: aliases, two notes of one
    /// name in different folders, headings, block ids, Markdown links, embeds,
    /// links by alias, by path, to headings, and broken ones.
    fn vault() -> Vec<(&'static str, &'static str)> {
        vec![
            ("a/dup.md", "# Dup A\n\n## Part\n\ntext ^blk\n"),
            ("b/x/dup.md", "---\naliases: [Twin]\n---\n# Dup B\n"),
            ("B.md", "---\naliases: [Ex, Other]\n---\n# B\n\n## Old\n\nbody ^para\n"),
            (
                "A.md",
                "# A\n[[Ex]] and [[B#Old]] and [[B#^para]] and ![[Other]]\n[[dup]] [[a/dup#Part]] [[dup#^blk]]\n[b](B.md#old) [[Twin]] [[Missing]] [[Gone#x]]\n",
            ),
            ("c/C.md", "# C\nsee [[Ex|the example]] and [[B]] and [[Other#Old]]\n[up](../B.md) [[Twin]]\n"),
            ("D.md", "# D\n[[A]] [[c/C]] [[Missing]] [[Ex#Old]]\n"),
        ]
    }

    fn records(notes: &[(&str, &str)]) -> Vec<Arc<NoteRecord>> {
        let mut records: Vec<Arc<NoteRecord>> = notes
            .iter()
            .map(|(path, text)| {
                let note = parse_note(&NotePath::parse(path).unwrap(), text);
                Arc::new(NoteRecord::from_note(
                    note,
                    NoteKind::Note,
                    0,
                    0,
                    None,
                    content_hash(text.as_bytes()),
                ))
            })
            .collect();
        records.sort_by(|a, b| a.path.cmp(&b.path));
        records
    }

    /// Every link of a note `ops` leave alone that leads elsewhere or nowhere
    /// after them, by building both whole graphs: what [`link_effects`] must find.
    fn by_whole_graphs(notes: &[(&str, &str)], ops: &[FileOp]) -> Vec<Break> {
        let before = records(notes);
        let graph = Graph::build(&before, &[]);
        let touched: Vec<&str> = ops.iter().map(|op| op.path.as_str()).collect();
        let mut after_notes: Vec<(String, String)> = notes
            .iter()
            .filter(|(path, _)| !touched.contains(path))
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        for op in ops {
            if let (Some(path), Some(text)) = (op.destination(), &op.after) {
                after_notes.push((path.to_owned(), text.clone()));
            }
        }
        let after_pairs: Vec<(&str, &str)> =
            after_notes.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
        let after = records(&after_pairs);
        let after_graph = Graph::build(&after, &[]);
        let mut found = Vec::new();
        for (from, note) in before.iter().enumerate() {
            if touched.contains(&note.path.as_str()) {
                continue;
            }
            let now = after.iter().position(|r| r.path == note.path).unwrap();
            for (number, (was, is)) in graph.outlinks(from).iter().zip(after_graph.outlinks(now)).enumerate()
            {
                let path_of = |resolution: &Resolution, records: &[Arc<NoteRecord>]| match resolution {
                    Resolution::Note(i) => Some(records[*i as usize].path.clone()),
                    _ => None,
                };
                let (was_at, is_at) = (path_of(was, &before), path_of(is, &after));
                let was_broken = matches!(was, Resolution::Broken(_));
                let changed = match (was_broken, &is_at) {
                    (true, None) => false,
                    (true, Some(_)) => {
                        !matches!(was, Resolution::Broken(crate::vault::graph::Broken::MissingNote))
                    }
                    (false, _) => was_at != is_at,
                };
                if changed {
                    let link = note.links.get(number).unwrap();
                    found.push(Break {
                        path: note.path.clone(),
                        line: link.line,
                        link: written(link),
                        leads_to: is_at,
                    });
                }
            }
        }
        found
    }

    fn effects(notes: &[(&str, &str)], ops: &[FileOp]) -> Vec<Break> {
        let records = records(notes);
        let graph = Graph::build(&records, &[]);
        let view = VaultView { records: &records, attachments: &[], graph: &graph, texts: None };
        link_effects(&view, ops).unwrap()
    }

    fn create(path: &str, text: &str) -> FileOp {
        FileOp {
            op: FileOpKind::Create,
            path: path.to_owned(),
            to: None,
            before: None,
            after: Some(text.to_owned()),
            kept: None,
            sha256: None,
        }
    }

    fn write(path: &str, text: &str) -> FileOp {
        FileOp {
            op: FileOpKind::Write,
            path: path.to_owned(),
            to: None,
            before: None,
            after: Some(text.to_owned()),
            kept: None,
            sha256: None,
        }
    }

    #[test]
    fn a_new_note_named_like_an_alias_takes_its_links_and_says_so() {
        let found = effects(&vault(), &[create("Ex.md", "# Ex\n")]);
        let leads: Vec<(&str, u32, &str, Option<&str>)> =
            found.iter().map(|b| (b.path.as_str(), b.line, b.link.as_str(), b.leads_to.as_deref())).collect();
        assert_eq!(
            leads,
            vec![
                ("A.md", 2, "[[Ex]]", Some("Ex.md")),
                ("D.md", 2, "[[Ex#Old]]", None),
                ("c/C.md", 2, "[[Ex]]", Some("Ex.md")),
            ]
        );
    }

    #[test]
    fn a_new_note_answering_a_broken_link_is_not_a_change_to_report() {
        assert_eq!(effects(&vault(), &[create("Missing.md", "# Missing\n")]), vec![]);
        assert_eq!(effects(&vault(), &[create("notes/Unrelated.md", "# U\n[[B]]\n")]), vec![]);
    }

    #[test]
    fn every_change_is_judged_as_two_whole_graphs_judge_it() {
        let notes = vault();
        let mut changes: Vec<Vec<FileOp>> = Vec::new();
        // A new note under every name a lookup may use, at the top and in a folder.
        for name in ["Ex", "Other", "Twin", "dup", "B", "A", "C", "Part", "Old", "Missing", "Gone", "x/dup"] {
            changes.push(vec![create(&format!("{name}.md"), "# N\n")]);
            changes.push(vec![create(&format!("z/{name}.md"), "# N\n")]);
            changes.push(vec![create("Fresh.md", &format!("---\naliases: [{name}]\n---\n# Fresh\n"))]);
        }
        // Every note given new aliases, losing its headings and block ids, or emptied.
        for (path, text) in &notes {
            changes.push(vec![write(path, "# Emptied\n")]);
            changes.push(vec![write(
                path,
                &format!("---\naliases: [Ex, Twin, dup]\n---\n{}", text.replace("---", "")),
            )]);
            changes.push(vec![write(path, &text.replace("## ", "### Renamed ").replace('^', ""))]);
        }
        changes.push(vec![create("Ex.md", "# Ex\n"), write("B.md", "# B\n")]);
        for ops in &changes {
            let mut expected = by_whole_graphs(&notes, ops);
            expected.sort_by(|a, b| (&a.path, a.line, &a.link).cmp(&(&b.path, b.line, &b.link)));
            let mut found = effects(&notes, ops);
            found.sort_by(|a, b| (&a.path, a.line, &a.link).cmp(&(&b.path, b.line, &b.link)));
            assert_eq!(
                found,
                expected,
                "{:?}",
                ops.iter().map(|op| (&op.path, &op.after)).collect::<Vec<_>>()
            );
        }
    }
}
