//! The link graph: every note's resolved outlinks and its backlinks as slices
//! of two flat arrays, broken links, orphans and maps of content. What a
//! change would do to it is worked out in `after_change`.

use std::collections::HashMap;
use std::sync::Arc;

use rayon::prelude::*;

use super::resolver::{Files, Resolution, Resolver, Target, anchored, id};
use crate::vault::{LinkRef, NoteKind, NoteRecord, is_pdf};

/// A backlink: another note linking to this one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backlink {
    /// Index of the linking note.
    pub from: u32,
    /// Index of the link in the linking note.
    pub link: u32,
}

/// The whole vault's links, resolved. Per-note lists are slices of two flat
/// arrays (a note's entries start where its offset says), so the graph of a
/// 100,000-note vault is two allocations of a few megabytes rather than
/// 200,000 small ones.
#[derive(Debug, Default)]
pub struct Graph {
    /// The resolver the graph was built with.
    pub resolver: Resolver,
    /// Every note's links' resolutions, note after note, in each note's link order.
    resolutions: Vec<Resolution>,
    /// Where each note's resolutions start in `resolutions` (one more entry than notes).
    resolution_starts: Vec<u32>,
    /// Every note's backlinks, note after note, each note's by linking path then line.
    backlinks: Vec<Backlink>,
    /// Where each note's backlinks start in `backlinks` (one more entry than notes).
    backlink_starts: Vec<u32>,
    /// Notes (kind `Note`) with no resolved link in or out.
    pub orphans: Vec<usize>,
    /// Maps of content.
    pub mocs: Vec<usize>,
    /// Number of links in notes (not standards or read_also files).
    pub link_count: usize,
    /// Number of broken links in notes.
    pub broken_count: usize,
}

impl Graph {
    /// Resolves every link of every record (sorted by path) against the records
    /// and the attachment paths (sorted), in parallel.
    pub fn build(records: &[Arc<NoteRecord>], attachments: &[String]) -> Graph {
        let resolver = Resolver::new(records, attachments);
        let files = Files { records, attachments };
        // Popular targets are written thousands of times: each (kind, target)
        // is resolved once, all of them in parallel.
        let mut keys: HashMap<(bool, &str), u32> = HashMap::new();
        let mut distinct: Vec<LinkRef<'_>> = Vec::new();
        for record in records {
            for link in record.links.iter().filter(|link| !link.target.trim().is_empty()) {
                keys.entry((link.kind.is_path(), link.target)).or_insert_with(|| {
                    distinct.push(link);
                    id(distinct.len() - 1)
                });
            }
        }
        let targets: Vec<Target> =
            distinct.par_iter().with_min_len(256).map(|&link| resolver.target(files, link)).collect();
        // Each note's links with their anchors checked, in parallel.
        let per_note: Vec<Vec<Resolution>> = records
            .par_iter()
            .enumerate()
            .with_min_len(256)
            .map(|(from, record)| {
                let target = |link: LinkRef<'_>| match keys.get(&(link.kind.is_path(), link.target)) {
                    Some(&key) => targets[key as usize],
                    // `[[#heading]]`: a link within the note itself.
                    None => Ok(from),
                };
                record.links.iter().map(|link| anchored(records, target(link), link)).collect()
            })
            .collect();
        let mut resolutions = Vec::with_capacity(per_note.iter().map(Vec::len).sum());
        let mut resolution_starts = Vec::with_capacity(records.len() + 1);
        for note in per_note {
            resolution_starts.push(id(resolutions.len()));
            resolutions.extend(note);
        }
        resolution_starts.push(id(resolutions.len()));
        Graph::assemble(records, resolver, resolutions, resolution_starts)
    }

    /// The graph of `records` from its resolver and every note's resolutions
    /// (note after note, in each note's link order, from where `resolution_starts`
    /// says): the backlinks, orphans, maps of content and counts follow.
    pub(super) fn assemble(
        records: &[Arc<NoteRecord>],
        resolver: Resolver,
        resolutions: Vec<Resolution>,
        resolution_starts: Vec<u32>,
    ) -> Graph {
        let mut incoming = vec![0u32; records.len()];
        let mut linked: Vec<bool> = vec![false; records.len()];
        let (mut link_count, mut broken_count) = (0, 0);
        for (from, record) in records.iter().enumerate() {
            let (start, end) = (resolution_starts[from] as usize, resolution_starts[from + 1] as usize);
            // The counts describe the notes' graph; standards and read_also files may
            // still link to notes (and show up as backlinks).
            let counted = record.kind == NoteKind::Note;
            for &resolution in &resolutions[start..end] {
                link_count += usize::from(counted);
                match resolution {
                    Resolution::Note(to) if to as usize != from => {
                        incoming[to as usize] += 1;
                        linked[to as usize] = true;
                        linked[from] = true;
                    }
                    Resolution::Broken(_) => broken_count += usize::from(counted),
                    _ => {}
                }
            }
        }

        // Backlinks by target: count, then fill in linking order (by path, then
        // link order), which is the order a backlink list shows.
        let mut backlink_starts = Vec::with_capacity(records.len() + 1);
        let mut next = 0u32;
        for count in &incoming {
            backlink_starts.push(next);
            next += count;
        }
        backlink_starts.push(next);
        let mut fill: Vec<u32> = backlink_starts[..records.len()].to_vec();
        let mut backlinks = vec![Backlink { from: 0, link: 0 }; next as usize];
        for from in 0..records.len() {
            let (start, end) = (resolution_starts[from] as usize, resolution_starts[from + 1] as usize);
            for (link, resolution) in resolutions[start..end].iter().enumerate() {
                if let Resolution::Note(to) = *resolution
                    && to as usize != from
                {
                    backlinks[fill[to as usize] as usize] = Backlink { from: id(from), link: id(link) };
                    fill[to as usize] += 1;
                }
            }
        }
        // A PDF links nowhere and is linked as an attachment: never an orphan.
        let orphans = (0..records.len())
            .filter(|&i| !linked[i] && records[i].kind == NoteKind::Note && !is_pdf(&records[i].path))
            .collect();
        let mocs = (0..records.len()).filter(|&i| records[i].is_moc()).collect();
        Graph {
            resolver,
            resolutions,
            resolution_starts,
            backlinks,
            backlink_starts,
            orphans,
            mocs,
            link_count,
            broken_count,
        }
    }

    /// How many links the graph resolved, in every note.
    pub(super) fn resolutions_len(&self) -> usize {
        self.resolutions.len()
    }

    /// A note's links' resolutions, in the order of the note's `links`.
    pub fn outlinks(&self, note: usize) -> &[Resolution] {
        let (start, end) = (self.resolution_starts[note] as usize, self.resolution_starts[note + 1] as usize);
        &self.resolutions[start..end]
    }

    /// The links pointing at a note from other notes, by linking path then line.
    pub fn backlinks(&self, note: usize) -> &[Backlink] {
        let (start, end) = (self.backlink_starts[note] as usize, self.backlink_starts[note + 1] as usize);
        &self.backlinks[start..end]
    }

    /// The notes a wikilink target could mean, best first (exact path, then path
    /// suffix or file name): more than one when several notes share the name.
    pub fn candidates(
        &self,
        records: &[Arc<NoteRecord>],
        attachments: &[String],
        target: &str,
    ) -> Vec<usize> {
        self.resolver.candidates(Files { records, attachments }, target)
    }

    /// The maps of content that link to a note (backlinks are ordered by the
    /// linking note, so each map is one binary search).
    pub(crate) fn mocs_linking(&self, target: usize) -> Vec<usize> {
        let backlinks = self.backlinks(target);
        self.mocs
            .iter()
            .copied()
            .filter(|&m| backlinks.binary_search_by_key(&id(m), |b| b.from).is_ok())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::NotePath;
    use crate::vault::graph::resolver::{Broken, key_hash};
    use crate::vault::parse_note;

    fn record(path: &str, text: &str) -> Arc<NoteRecord> {
        let note = parse_note(&NotePath::parse(path).unwrap(), text);
        Arc::new(NoteRecord::from_note(note, NoteKind::Note, 0, 0, None, String::new()))
    }

    #[test]
    fn a_hash_collision_never_resolves_to_the_wrong_note() {
        let records = vec![
            record("a/Alpha.md", "---\naliases: [shared]\n---\n"),
            record("x/b/Beta.md", "[[Alpha]] [[beta]]"),
        ];
        let mut resolver = Resolver::new(&records, &[]);
        // Every key of every table now hashes as `beta` does: the run for `beta`
        // holds both notes, and only the one really named so may come out.
        for table in [&mut resolver.by_path_lower, &mut resolver.by_stem_lower, &mut resolver.by_alias_lower]
        {
            for entry in &mut table.entries {
                entry.0 = key_hash("beta");
            }
        }
        let files = Files { records: &records, attachments: &[] };
        assert_eq!(resolver.candidates(files, "beta"), vec![1]);
        assert_eq!(resolver.candidates(files, "BETA.md"), vec![1]);
        assert_eq!(resolver.candidates(files, "b/beta"), vec![1]);
        assert!(resolver.aliased(files, "beta").is_empty());
        assert_eq!(resolver.resolve_ref(&records, &[], "Beta").unwrap().0, 1);
        assert!(resolver.resolve_ref(&records, &[], "gamma").is_err());
    }

    #[test]
    fn per_note_lists_are_slices_of_the_flat_graph() {
        let records = vec![
            record("a.md", "[[b]] [[c]] [[missing]] [[b#Nope]]"),
            record("b.md", "# Top\n[[a]]"),
            record("c.md", "[[b#Top]] ![[pic.png]]"),
            record("d.md", "alone"),
            record("moc.md", "---\ntags: [MOC]\n---\n[[b]]"),
        ];
        let attachments = vec!["img/pic.png".to_owned()];
        let graph = Graph::build(&records, &attachments);
        assert_eq!(
            graph.outlinks(0),
            &[
                Resolution::Note(1),
                Resolution::Note(2),
                Resolution::Broken(Broken::MissingNote),
                Resolution::Broken(Broken::MissingHeading(1)),
            ]
        );
        assert_eq!(graph.outlinks(2), &[Resolution::Note(1), Resolution::Attachment(0)]);
        assert!(graph.outlinks(3).is_empty());
        // Backlinks of `b`: from `a` (its first link), then `c`, then the map; `a#Nope` is broken.
        assert_eq!(
            graph.backlinks(1),
            &[Backlink { from: 0, link: 0 }, Backlink { from: 2, link: 0 }, Backlink { from: 4, link: 0 }]
        );
        assert_eq!(graph.backlinks(0), &[Backlink { from: 1, link: 0 }]);
        assert!(graph.backlinks(3).is_empty());
        assert_eq!(graph.orphans, vec![3]);
        assert_eq!((graph.link_count, graph.broken_count), (8, 2));
        assert_eq!(graph.mocs, vec![4]);
        assert_eq!(graph.mocs_linking(1), vec![4]);
        assert!(graph.mocs_linking(0).is_empty());
    }
}
