//! Link resolution: a link's target text to the note it names (by path, file
//! name or alias, in Obsidian's order), through sorted `(hash, note)` tables
//! whose hits are checked against the note, so a collision costs a comparison.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde_json::json;

use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{name_key, strip_md};
use crate::vault::{AnchorRef, LinkRef, NoteRecord, heading_key, is_pdf};

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

impl Resolution {
    /// The same resolution in another graph's indexes: where a change put
    /// the note (`note`) or the attachment (`attachment`) it names.
    pub(super) fn renumbered(self, note: impl Fn(u32) -> u32, attachment: impl Fn(u32) -> u32) -> Resolution {
        match self {
            Resolution::Note(to) => Resolution::Note(note(to)),
            Resolution::Broken(Broken::MissingHeading(to)) => {
                Resolution::Broken(Broken::MissingHeading(note(to)))
            }
            Resolution::Broken(Broken::MissingBlock(to)) => {
                Resolution::Broken(Broken::MissingBlock(note(to)))
            }
            Resolution::Attachment(to) => Resolution::Attachment(attachment(to)),
            Resolution::Broken(Broken::MissingNote) => self,
        }
    }
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
pub(super) fn id(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(u32::MAX)
}

/// Keys (names as [`name_key`] gives them) mapped to the notes or files carrying them, held as
/// sorted `(hash of the key, index)` pairs: 12 bytes an entry where a map of
/// owned lowercase strings took about 150. A lookup hashes the key, takes the
/// run of equal hashes and keeps the entries whose own key really is the one
/// asked for (so a hash collision costs a comparison, never a wrong answer).
#[derive(Debug, Default, Clone)]
pub(super) struct KeyTable {
    pub(super) entries: Vec<(u64, u32)>,
}

pub(super) fn key_hash(key: &str) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    key.hash(&mut hasher);
    hasher.finish()
}

impl KeyTable {
    /// Builds the table from `(key, index)` pairs; within one key the indexes
    /// keep the order `rank` gives them (best first).
    pub(super) fn new<K: Ord>(
        pairs: impl Iterator<Item = (String, usize)>,
        rank: impl Fn(usize) -> K,
    ) -> KeyTable {
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
#[derive(Debug, Default, Clone)]
pub struct Resolver {
    pub(super) by_path_lower: KeyTable,
    pub(super) by_stem_lower: KeyTable,
    pub(super) by_alias_lower: KeyTable,
    attachments_by_name: KeyTable,
}

/// Orders candidates as "shortest path wins": fewest segments, then fewest bytes, then by text.
fn path_rank(path: &str) -> (usize, usize, &str) {
    (path.matches('/').count(), path.len(), path)
}

/// A name as the tables key it: NFC-normalised and lowercased ([`name_key`]),
/// so `café` typed precomposed finds a file named decomposed.
fn lower(text: &str) -> String {
    name_key(text)
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
pub(super) struct Files<'a> {
    pub(super) records: &'a [Arc<NoteRecord>],
    pub(super) attachments: &'a [String],
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
        // A PDF is a record (searched, listed, read) but, to links, the
        // attachment it always was: links to it resolve as attachments, so
        // moves carry and rewrite them as before.
        let linkable = || records.iter().enumerate().filter(|(_, r)| !is_pdf(&r.path));
        let by_path_lower = KeyTable::new(linkable().map(|(i, r)| (lower(strip_md(&r.path)), i)), note_rank);
        let by_stem_lower = KeyTable::new(linkable().map(|(i, r)| (lower(r.stem()), i)), note_rank);
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
    pub(super) fn aliased(&self, files: Files<'_>, key: &str) -> Vec<usize> {
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
    pub(super) fn candidates(&self, files: Files<'_>, target: &str) -> Vec<usize> {
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

    /// The notes a wikilink target could mean in the vault of `records`, best
    /// first: more than one when several share the name (see
    /// [`Graph::candidates`](super::Graph::candidates)).
    pub(crate) fn notes_named(
        &self,
        records: &[Arc<NoteRecord>],
        attachments: &[String],
        target: &str,
    ) -> Vec<usize> {
        self.candidates(Files { records, attachments }, target)
    }

    /// Where a link's non-empty target leads, its anchor aside: a note, or else
    /// the attachment or broken link it is. The same for every link written
    /// with the same kind and target, whichever note holds it.
    pub(super) fn target(&self, files: Files<'_>, link: LinkRef<'_>) -> Target {
        let target_index = if link.kind.is_path() {
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

    /// Where `link` leads in the vault of `records`, its anchor checked: a
    /// note lacking the heading or block id leaves it broken.
    pub fn resolve(
        &self,
        records: &[Arc<NoteRecord>],
        attachments: &[String],
        link: LinkRef<'_>,
    ) -> Resolution {
        anchored(records, self.target(Files { records, attachments }, link), link)
    }

    /// Where a link leads, its anchor aside: a note or attachment (index into
    /// `records` or `attachments`, the ones the resolver was built with), or broken.
    pub fn lead(&self, records: &[Arc<NoteRecord>], attachments: &[String], link: LinkRef<'_>) -> Resolution {
        match self.target(Files { records, attachments }, link) {
            Ok(index) => Resolution::Note(id(index)),
            Err(elsewhere) => elsewhere,
        }
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
    pub(crate) fn resolve_ref<'r>(
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
pub(super) type Target = std::result::Result<usize, Resolution>;

/// A link's resolution once its target is known: a heading or block anchor
/// must exist in the note.
pub(super) fn anchored(records: &[Arc<NoteRecord>], target: Target, link: LinkRef<'_>) -> Resolution {
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
