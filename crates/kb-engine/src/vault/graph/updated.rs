//! The graph after a change, made from the graph before it: the notes the
//! change wrote are resolved whole, the links of the others that it can make
//! lead elsewhere are resolved again (`after_change` finds them), every other
//! resolution is carried over; the backlinks, orphans and counts are then laid
//! out again in one linear pass. A one-note edit in a large vault so costs the
//! name tables (copied when the names stayed) and that pass, not a resolution
//! of every link. Tested against a whole new graph.

use std::cmp::Ordering;
use std::sync::Arc;

use super::links::Graph;
use super::resolver::{Files, Resolution, Resolver, anchored, id};
use crate::vault::NoteRecord;

/// How two record lists sorted by path differ, as [`Graph::after_change`]
/// takes it: the notes of `before` written anew or gone, the notes of `after`
/// that are new, and where each note of `before` is in `after`.
struct Diff {
    changed: Vec<usize>,
    added: Vec<usize>,
    position: Vec<usize>,
}

/// A record kept by a change is the same `Arc`; one written anew is another.
fn diff(before: &[Arc<NoteRecord>], after: &[Arc<NoteRecord>]) -> Diff {
    let mut diff = Diff { changed: Vec::new(), added: Vec::new(), position: vec![usize::MAX; before.len()] };
    let (mut b, mut a) = (0, 0);
    loop {
        let order = match (before.get(b), after.get(a)) {
            (Some(old), Some(new)) => old.path.cmp(&new.path),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => return diff,
        };
        match order {
            Ordering::Equal => {
                diff.position[b] = a;
                if !Arc::ptr_eq(&before[b], &after[a]) {
                    diff.changed.push(b);
                }
                (b, a) = (b + 1, a + 1);
            }
            Ordering::Less => {
                diff.changed.push(b);
                b += 1;
            }
            Ordering::Greater => {
                diff.added.push(a);
                a += 1;
            }
        }
    }
}

/// Changes to more notes than this (or a quarter of the vault, if more) are
/// built whole: carrying over would save little.
const UPDATED_MAX: usize = 64;

impl Graph {
    /// The graph of `after` (sorted by path, with this graph's attachments),
    /// from this graph, which was built from `before`: the same as
    /// [`Graph::build`] gives. `None` when so much changed that a whole build
    /// is the better way.
    pub fn updated(
        &self,
        before: &[Arc<NoteRecord>],
        after: &[Arc<NoteRecord>],
        attachments: &[String],
    ) -> Option<Graph> {
        let Diff { changed, added, position } = diff(before, after);
        if changed.len() + added.len() > UPDATED_MAX.max(after.len() / 4) {
            return None;
        }
        // The same names at the same places: the name tables stay as they are.
        let same_names = added.is_empty()
            && changed
                .iter()
                .all(|&b| after.get(position[b]).is_some_and(|new| new.aliases == before[b].aliases));
        let resolver = if same_names { self.resolver.clone() } else { Resolver::new(after, attachments) };
        let change =
            self.after_change(before, after, &resolver, attachments, None, &changed, &added, &position);
        let mut again = change.relinked;
        again.extend(change.answered);
        again.sort_unstable_by_key(|&(from, link, _)| (from, link));
        // Each note of `after` kept by the change, by the index it had before.
        let mut origin = vec![usize::MAX; after.len()];
        for (b, &a) in position.iter().enumerate() {
            if a != usize::MAX && changed.binary_search(&b).is_err() {
                origin[a] = b;
            }
        }
        let moved = |to: u32| position.get(to as usize).map_or(u32::MAX, |&a| id(a));
        let carried = |old: Resolution| old.renumbered(moved, |attachment| attachment);
        let files = Files { records: after, attachments };
        let mut resolutions = Vec::with_capacity(self.resolutions_len() + 64);
        let mut resolution_starts = Vec::with_capacity(after.len() + 1);
        // The leads found again, in the order the notes kept come (by path).
        let mut leads = again.iter().peekable();
        for (a, record) in after.iter().enumerate() {
            resolution_starts.push(id(resolutions.len()));
            let b = origin[a];
            if b == usize::MAX {
                // Written anew: every link resolved.
                resolutions.extend(record.links.iter().map(|link| {
                    let target =
                        if link.target.trim().is_empty() { Ok(a) } else { resolver.target(files, link) };
                    anchored(after, target, link)
                }));
                continue;
            }
            while leads.next_if(|&&(from, _, _)| from < b).is_some() {}
            resolutions.extend(self.outlinks(b).iter().enumerate().map(|(number, &old)| {
                match leads.next_if(|&&(from, link, _)| from == b && link == number) {
                    Some(&(_, _, lead)) => lead,
                    None => carried(old),
                }
            }));
        }
        resolution_starts.push(id(resolutions.len()));
        Some(Graph::assemble(after, resolver, resolutions, resolution_starts))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::sandbox::NotePath;
    use crate::vault::{NoteKind, parse_note};

    fn record(path: &str, text: &str) -> Arc<NoteRecord> {
        let note = parse_note(&NotePath::parse(path).unwrap(), text);
        Arc::new(NoteRecord::from_note(note, NoteKind::Note, 0, 0, None, String::new()))
    }

    const VAULT: [(&str, &str); 8] = [
        ("a.md", "# A\n## Setup\n[[b]] [[c#Usage]] [[missing]] [[#Setup]] ![[pic.png]] [[later]]"),
        ("b.md", "---\naliases: [bee]\n---\n# B\n[[a#Setup]] [[a#Gone]] [[c]] [[d^blk]]"),
        ("c.md", "# C\n## Usage\n[[bee]] [[a]] [[new name]]"),
        ("d.md", "text ^blk\n[[b]]"),
        ("moc.md", "---\ntags: [MOC]\n---\n[[a]] [[b]] [[e/deep]]"),
        ("e/deep.md", "alone [[d]]"),
        ("f.md", "[[a#Setup]] [[ghost#x]]"),
        ("g.md", "orphan"),
    ];

    /// Applies `changes` (a path and its new text, or `None`: deleted) to
    /// [`VAULT`] and checks the updated graph against a whole build.
    fn check(changes: &[(&str, Option<&str>)]) {
        let attachments = vec!["img/pic.png".to_owned()];
        let before: Vec<Arc<NoteRecord>> = VAULT.iter().map(|(path, text)| record(path, text)).collect();
        let graph = Graph::build(&before, &attachments);
        let mut notes: BTreeMap<String, Arc<NoteRecord>> =
            before.iter().map(|r| (r.path.clone(), Arc::clone(r))).collect();
        for (path, text) in changes {
            match text {
                Some(text) => notes.insert((*path).to_owned(), record(path, text)),
                None => notes.remove(*path),
            };
        }
        let after: Vec<Arc<NoteRecord>> = notes.into_values().collect();
        let updated = graph.updated(&before, &after, &attachments).expect("a small change is carried over");
        let whole = Graph::build(&after, &attachments);
        for (note, record) in after.iter().enumerate() {
            assert_eq!(updated.outlinks(note), whole.outlinks(note), "{changes:?}: {}", record.path);
            assert_eq!(updated.backlinks(note), whole.backlinks(note), "{changes:?}: {}", record.path);
        }
        assert_eq!(updated.orphans, whole.orphans, "{changes:?}");
        assert_eq!(updated.mocs, whole.mocs, "{changes:?}");
        assert_eq!((updated.link_count, updated.broken_count), (whole.link_count, whole.broken_count));
        for target in ["bee", "a", "new name", "later", "deep"] {
            assert_eq!(
                updated.candidates(&after, &attachments, target),
                whole.candidates(&after, &attachments, target)
            );
        }
    }

    #[test]
    fn the_updated_graph_is_the_one_a_whole_build_gives() {
        // Text edits: links added and removed, headings and block ids that
        // other notes' anchors name removed and added, a map of content made.
        check(&[("g.md", Some("now links [[a]] and [[c#Usage]]"))]);
        check(&[("a.md", Some("# A\nno setup any more [[b]]"))]);
        check(&[("a.md", Some("# A\n## Setup\n## Gone\n[[b]]"))]);
        check(&[("d.md", Some("no block now [[b]]"))]);
        check(&[("c.md", Some("# C\n[[bee]]")), ("g.md", Some("---\ntags: [MOC]\n---\n[[g]]"))]);
        // Names: an alias given and taken, so links by it lead elsewhere.
        check(&[("g.md", Some("---\naliases: [new name]\n---\nnamed"))]);
        check(&[("b.md", Some("# B\nno alias [[a#Setup]]"))]);
        // New notes answering broken links, deleted notes breaking them, a move.
        check(&[("later.md", Some("# Later\n[[a]]")), ("ghost.md", Some("# x\n"))]);
        check(&[("b.md", None), ("e/deep.md", None)]);
        check(&[("e/deep.md", None), ("z/deep.md", Some("moved [[d]]"))]);
        check(&[("a.md", None), ("a/a.md", Some("# A\n## Setup\n[[b]]"))]);
    }

    #[test]
    fn a_change_to_most_notes_is_built_whole() {
        let before: Vec<Arc<NoteRecord>> =
            (0..200).map(|i| record(&format!("n{i:03}.md"), &format!("[[n{:03}]]", i + 1))).collect();
        let graph = Graph::build(&before, &[]);
        let after: Vec<Arc<NoteRecord>> =
            (0..200).map(|i| record(&format!("n{i:03}.md"), &format!("[[n{:03}]]", i + 2))).collect();
        assert!(graph.updated(&before, &after, &[]).is_none());
        let few: Vec<Arc<NoteRecord>> = before.iter().cloned().chain([record("x.md", "[[n001]]")]).collect();
        assert_eq!(graph.updated(&before, &few, &[]).unwrap().backlinks(1).len(), 2);
    }
}
