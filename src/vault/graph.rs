//! Link resolution and the link graph.
//!
//! Targets resolve as Obsidian resolves them: an exact vault path first (with or
//! without `.md`), then a path suffix or a bare file name, case-insensitively,
//! the shortest path winning when several notes share the name; heading and
//! block anchors are then checked against the target's headings and block ids.
//! Where Obsidian would leave a link unresolved, an alias that exactly one note
//! carries still resolves it (the contract's order for `ref`), so a link written
//! as `[[backup repo]]` is not reported broken when the note says it has that name.
//! A `ref` argument resolves the same way and then by alias, but there a tie is
//! an `ambiguous_ref` error listing the candidates instead of a silent pick.
//!
//! The [`Graph`] is computed from all records at once and is immutable; the
//! engine rebuilds it lazily after the vault changes.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde_json::json;

use super::{AnchorRef, LinkKind, LinkRef, NoteKind, NoteRecord, heading_key};
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::strip_md;

/// Where a link leads. Indexes are `u32` (a vault has far fewer than 4 billion
/// files) so that a resolution takes 8 bytes: a 100,000-note vault has about
/// 730,000 links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// A note (index into the records), with its anchor found.
    Note(u32),
    /// A non-Markdown file of the vault (an image, a PDF): index into the
    /// attachment paths the graph was built with.
    Attachment(u32),
    /// Nothing: the reason says what is missing.
    Broken(Broken),
}

/// Why a link is broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Broken {
    /// No note or file has that name.
    MissingNote,
    /// The note exists (index into the records) but has no such heading.
    MissingHeading(u32),
    /// The note exists (index into the records) but has no such block id.
    MissingBlock(u32),
}

/// A list index as the graph stores it.
fn id(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(u32::MAX)
}

/// Keys (lowercased names) mapped to the notes or files carrying them, held as
/// sorted `(hash of the key, index)` pairs: 12 bytes an entry where a map of
/// owned lowercase strings took about 150. A lookup hashes the key, takes the
/// run of equal hashes and keeps the entries whose own key really is the one
/// asked for (so a hash collision costs a comparison, never a wrong answer).
#[derive(Debug, Default)]
struct KeyTable {
    entries: Vec<(u64, u32)>,
}

fn key_hash(key: &str) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    key.hash(&mut hasher);
    hasher.finish()
}

impl KeyTable {
    /// Builds the table from `(key, index)` pairs; within one key the indexes
    /// keep the order `rank` gives them (best first).
    fn new<K: Ord>(pairs: impl Iterator<Item = (String, usize)>, rank: impl Fn(usize) -> K) -> KeyTable {
        let mut entries: Vec<(u64, u32)> = pairs.map(|(key, index)| (key_hash(&key), id(index))).collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| rank(a.1 as usize).cmp(&rank(b.1 as usize))));
        entries.dedup();
        entries.shrink_to_fit();
        KeyTable { entries }
    }

    /// The indexes whose key hashes as `key` does, best first; the caller keeps
    /// those whose key really is `key`.
    fn run(&self, key: &str) -> impl Iterator<Item = usize> + '_ {
        let hash = key_hash(key);
        let start = self.entries.partition_point(|e| e.0 < hash);
        self.entries[start..].iter().take_while(move |e| e.0 == hash).map(|e| e.1 as usize)
    }
}

/// Looks notes up by path, file name and alias, and attachments by path and name.
#[derive(Debug, Default)]
pub struct Resolver {
    by_path_lower: KeyTable,
    by_stem_lower: KeyTable,
    by_alias_lower: KeyTable,
    attachments_by_name: KeyTable,
}

/// Orders candidates as "shortest path wins": fewest segments, then fewest bytes, then by text.
fn path_rank(path: &str) -> (usize, usize, &str) {
    (path.matches('/').count(), path.len(), path)
}

fn lower(text: &str) -> String {
    text.to_lowercase()
}

/// Whether `text` lowercased is `key` (already lowercased): without building
/// the lowercase copy when both are ASCII, as most names are.
fn lowers_to(text: &str, key: &str) -> bool {
    if text.is_ascii() && key.is_ascii() { text.eq_ignore_ascii_case(key) } else { lower(text) == key }
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// What the resolver looks in: the records (sorted by path) and the attachment
/// paths (sorted), both owned by the catalog.
#[derive(Clone, Copy)]
struct Files<'a> {
    records: &'a [Arc<NoteRecord>],
    attachments: &'a [String],
}

impl Files<'_> {
    fn attachment_at(&self, path: &str) -> Option<usize> {
        self.attachments.binary_search_by(|a| a.as_str().cmp(path)).ok()
    }

    /// Whether the note's path without `.md` is `key` (lowercased) in any case.
    fn has_path(&self, index: usize, key: &str) -> bool {
        lowers_to(strip_md(&self.records[index].path), key)
    }

    fn has_stem(&self, index: usize, key: &str) -> bool {
        lowers_to(self.records[index].stem(), key)
    }

    fn has_alias(&self, index: usize, key: &str) -> bool {
        self.records[index].aliases.iter().any(|a| lowers_to(a.trim(), key))
    }

    fn has_attachment_name(&self, index: usize, key: &str) -> bool {
        lowers_to(file_name(&self.attachments[index]), key)
    }
}

impl Resolver {
    /// Indexes records (sorted by path) and attachment paths (sorted).
    pub fn new(records: &[Arc<NoteRecord>], attachments: &[String]) -> Self {
        let note_rank = |i: usize| path_rank(&records[i].path);
        let by_path_lower =
            KeyTable::new(records.iter().enumerate().map(|(i, r)| (lower(strip_md(&r.path)), i)), note_rank);
        let by_stem_lower =
            KeyTable::new(records.iter().enumerate().map(|(i, r)| (lower(r.stem()), i)), note_rank);
        let aliases =
            records.iter().enumerate().flat_map(|(i, r)| r.aliases.iter().map(move |a| (lower(a.trim()), i)));
        let by_alias_lower = KeyTable::new(aliases, note_rank);
        let attachments_by_name = KeyTable::new(
            attachments.iter().enumerate().map(|(i, a)| (lower(file_name(a)), i)),
            |i: usize| path_rank(&attachments[i]),
        );
        Resolver { by_path_lower, by_stem_lower, by_alias_lower, attachments_by_name }
    }

    /// The notes carrying an alias (lowercased), best first.
    fn aliased(&self, files: Files<'_>, key: &str) -> Vec<usize> {
        self.by_alias_lower.run(key).filter(|&i| files.has_alias(i, key)).collect()
    }

    /// The note at exactly `target`, or else at `target` + `.md`. Found through
    /// the lowercase path table (an exact path is also a lowercase match): a
    /// binary search of the records would touch a record at every step.
    fn exact(&self, files: Files<'_>, target: &str) -> Option<usize> {
        let path_of = |i: usize| files.records[i].path.as_str();
        self.by_path_lower.run(&lower(strip_md(target))).find(|&i| path_of(i) == target).or_else(|| {
            self.by_path_lower.run(&lower(target)).find(|&i| {
                let path = path_of(i);
                path.len() > target.len() && strip_md(path) == target
            })
        })
    }

    /// The notes whose path without `.md` is `key` in any case, best first.
    fn by_path(&self, files: Files<'_>, key: &str) -> Vec<usize> {
        self.by_path_lower.run(key).filter(|&i| files.has_path(i, key)).collect()
    }

    /// The notes a link target could mean, best first (exact path, then path suffix or name).
    fn candidates(&self, files: Files<'_>, target: &str) -> Vec<usize> {
        let target = target.trim().trim_start_matches('/');
        if target.is_empty() {
            return Vec::new();
        }
        if let Some(index) = self.exact(files, target) {
            return vec![index];
        }
        let key = lower(strip_md(target));
        let by_path = self.by_path(files, &key);
        if !by_path.is_empty() {
            return by_path;
        }
        if key.contains('/') {
            // A partial path: `git/remote` matches `z/tech/git/remote.md`.
            let stem = key.rsplit('/').next().unwrap_or(&key);
            let suffix = format!("/{key}");
            return self
                .by_stem_lower
                .run(stem)
                .filter(|&i| {
                    files.has_stem(i, stem) && lower(strip_md(&files.records[i].path)).ends_with(&suffix)
                })
                .collect();
        }
        self.by_stem_lower.run(&key).filter(|&i| files.has_stem(i, &key)).collect()
    }

    /// Where a link's non-empty target leads, its anchor aside: a note, or else
    /// the attachment or broken link it is. The same for every link written
    /// with the same kind and target, whichever note holds it.
    fn target(&self, files: Files<'_>, link: LinkRef<'_>) -> Target {
        let target_index = if link.kind == LinkKind::Markdown {
            // Markdown links are already vault-relative: exact path, then any case.
            self.exact(files, link.target)
                .filter(|&i| files.records[i].path == link.target)
                .or_else(|| self.by_path(files, &lower(strip_md(link.target))).first().copied())
                .or_else(|| self.candidates(files, link.target).first().copied())
        } else {
            // By name; failing that, by an alias only one note carries (the contract's `ref` order).
            self.candidates(files, link.target).first().copied().or_else(|| {
                match self.aliased(files, &lower(link.target.trim())).as_slice() {
                    [only] => Some(*only),
                    _ => None,
                }
            })
        };
        target_index.ok_or_else(|| self.resolve_attachment(files, link.target))
    }

    fn resolve_attachment(&self, files: Files<'_>, target: &str) -> Resolution {
        let target = target.trim().trim_start_matches('/');
        if let Some(index) = files.attachment_at(target) {
            return Resolution::Attachment(id(index));
        }
        let name = file_name(target);
        let wanted = lower(target);
        let key = lower(name);
        let found = self.attachments_by_name.run(&key).find(|&i| {
            files.has_attachment_name(i, &key)
                && (target == name || lower(&files.attachments[i]).ends_with(&wanted))
        });
        match found {
            Some(index) => Resolution::Attachment(id(index)),
            None => Resolution::Broken(Broken::MissingNote),
        }
    }

    /// Resolves a `ref` argument: exact path, then file name or path suffix
    /// (shortest path wins; a tie is ambiguous), then alias (several is ambiguous).
    /// A `#heading` suffix is split off and returned.
    pub fn resolve_ref<'r>(
        &self,
        records: &[Arc<NoteRecord>],
        attachments: &[String],
        reference: &'r str,
    ) -> Result<(usize, Option<&'r str>)> {
        let files = Files { records, attachments };
        let (target, anchor) = match reference.split_once('#') {
            Some((target, anchor)) => (target, Some(anchor).filter(|a| !a.trim().is_empty())),
            None => (reference, None),
        };
        let target = target.trim();
        if target.is_empty() {
            return Err(Error::invalid(
                "`ref` is empty: give a note name like 备份仓库 or a path like z/备份仓库",
            ));
        }
        let by_name = self.candidates(files, target);
        let chosen = match by_name.as_slice() {
            [] => {
                let by_alias = self.aliased(files, &lower(target));
                match by_alias.as_slice() {
                    [] => {
                        return Err(Error::not_found(format!("no note is named or aliased `{target}`"))
                            .with_hint("use search_knowledge to find the note, then pass its exact `path`"));
                    }
                    [one] => *one,
                    many => return Err(ambiguous(records, target, many)),
                }
            }
            [one] => *one,
            [first, second, ..] => {
                let (a, b) = (path_rank(&records[*first].path), path_rank(&records[*second].path));
                if (a.0, a.1) == (b.0, b.1) {
                    return Err(ambiguous(records, target, &by_name));
                }
                *first
            }
        };
        Ok((chosen, anchor))
    }
}

/// Where a link's target leads before its anchor is checked: a note (index
/// into the records), or the final resolution when it is not a note.
type Target = std::result::Result<usize, Resolution>;

/// A link's resolution once its target is known: a heading or block anchor
/// must exist in the note.
fn anchored(records: &[Arc<NoteRecord>], target: Target, link: LinkRef<'_>) -> Resolution {
    let index = match target {
        Ok(index) => index,
        Err(elsewhere) => return elsewhere,
    };
    let note = id(index);
    match link.anchor {
        None => Resolution::Note(note),
        Some(AnchorRef::Heading(heading)) => {
            // `[[note#A#B]]` names a nested heading; the last one must exist.
            let wanted = heading_key(heading.rsplit('#').next().unwrap_or(heading));
            if wanted.is_empty() || records[index].headings.iter().any(|h| heading_key(h.text) == wanted) {
                Resolution::Note(note)
            } else {
                Resolution::Broken(Broken::MissingHeading(note))
            }
        }
        Some(AnchorRef::Block(block)) => {
            if records[index].block_ids.iter().any(|b| b.eq_ignore_ascii_case(block)) {
                Resolution::Note(note)
            } else {
                Resolution::Broken(Broken::MissingBlock(note))
            }
        }
    }
}

fn ambiguous(records: &[Arc<NoteRecord>], target: &str, candidates: &[usize]) -> Error {
    let paths: Vec<&str> = candidates.iter().map(|&i| records[i].path.as_str()).collect();
    Error::new(
        ErrorCode::AmbiguousRef,
        format!("`{target}` matches {} notes: {}", paths.len(), paths.join(", ")),
    )
    .with_hint("pass the exact `path` of the note you mean")
    .with_details(json!({ "candidates": paths }))
}

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
    /// and the attachment paths (sorted).
    pub fn build(records: &[Arc<NoteRecord>], attachments: &[String]) -> Graph {
        let resolver = Resolver::new(records, attachments);
        let files = Files { records, attachments };
        let mut targets: HashMap<(bool, &str), Target> = HashMap::new();
        let total: usize = records.iter().map(|r| r.links.len()).sum();
        let mut resolutions = Vec::with_capacity(total);
        let mut resolution_starts = Vec::with_capacity(records.len() + 1);
        let mut incoming = vec![0u32; records.len()];
        let mut linked: Vec<bool> = vec![false; records.len()];
        let (mut link_count, mut broken_count) = (0, 0);
        for (from, record) in records.iter().enumerate() {
            resolution_starts.push(id(resolutions.len()));
            // The counts describe the notes' graph; standards and read_also files may
            // still link to notes (and show up as backlinks).
            let counted = record.kind == NoteKind::Note;
            for link in record.links.iter() {
                let resolution = if link.target.trim().is_empty() {
                    // `[[#heading]]`: a link within the note itself.
                    anchored(records, Ok(from), link)
                } else {
                    // Popular targets are written thousands of times: resolve each once.
                    let key = (link.kind == LinkKind::Markdown, link.target);
                    let target = *targets.entry(key).or_insert_with(|| resolver.target(files, link));
                    anchored(records, target, link)
                };
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
                resolutions.push(resolution);
            }
        }
        resolution_starts.push(id(resolutions.len()));

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
        let orphans =
            (0..records.len()).filter(|&i| !linked[i] && records[i].kind == NoteKind::Note).collect();
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

    /// The maps of content that link to a note (backlinks are ordered by the
    /// linking note, so each map is one binary search).
    pub fn mocs_linking(&self, target: usize) -> Vec<usize> {
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
