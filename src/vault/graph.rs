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

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use serde_json::json;

use super::{Anchor, LinkKind, NoteKind, NoteRecord};
use crate::error::{Error, ErrorCode, Result};

/// Where a link leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// A note (index into the records), with its anchor found.
    Note(usize),
    /// A non-Markdown file of the vault (an image, a PDF).
    Attachment(String),
    /// Nothing: the reason says what is missing.
    Broken(Broken),
}

/// Why a link is broken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Broken {
    /// No note or file has that name.
    MissingNote,
    /// The note exists (index into the records) but has no such heading.
    MissingHeading(usize),
    /// The note exists (index into the records) but has no such block id.
    MissingBlock(usize),
}

/// A link of a note with where it leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedLink {
    /// Index of the link in its note's `links`.
    pub link: usize,
    /// Where it leads.
    pub resolution: Resolution,
}

/// Looks notes up by path, file name and alias.
#[derive(Debug, Default)]
pub struct Resolver {
    by_path: HashMap<String, usize>,
    by_path_lower: HashMap<String, Vec<usize>>,
    by_stem_lower: HashMap<String, Vec<usize>>,
    by_alias_lower: HashMap<String, Vec<usize>>,
    attachments: HashSet<String>,
    attachments_by_name: HashMap<String, Vec<String>>,
}

/// Orders candidates as "shortest path wins": fewest segments, then fewest bytes, then by text.
fn path_rank(path: &str) -> (usize, usize, &str) {
    (path.matches('/').count(), path.len(), path)
}

fn lower(text: &str) -> String {
    text.to_lowercase()
}

fn strip_md(text: &str) -> &str {
    match text.len().checked_sub(3) {
        Some(cut) if text.is_char_boundary(cut) && text[cut..].eq_ignore_ascii_case(".md") => &text[..cut],
        _ => text,
    }
}

/// Normalises a heading for anchor comparison: case-insensitive, whitespace collapsed.
fn heading_key(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

impl Resolver {
    /// Indexes records (sorted by path) and attachment paths.
    pub fn new(records: &[Arc<NoteRecord>], attachments: &[String]) -> Self {
        let mut resolver = Resolver::default();
        for (index, record) in records.iter().enumerate() {
            resolver.by_path.insert(record.path.clone(), index);
            resolver.by_path_lower.entry(lower(strip_md(&record.path))).or_default().push(index);
            resolver.by_stem_lower.entry(lower(record.stem())).or_default().push(index);
            for alias in &record.aliases {
                let list = resolver.by_alias_lower.entry(lower(alias.trim())).or_default();
                if !list.contains(&index) {
                    list.push(index);
                }
            }
        }
        for list in resolver
            .by_path_lower
            .values_mut()
            .chain(resolver.by_stem_lower.values_mut())
            .chain(resolver.by_alias_lower.values_mut())
        {
            list.sort_by(|&a, &b| path_rank(&records[a].path).cmp(&path_rank(&records[b].path)));
        }
        for path in attachments {
            resolver.attachments.insert(path.clone());
            let name = path.rsplit('/').next().unwrap_or(path);
            resolver.attachments_by_name.entry(lower(name)).or_default().push(path.clone());
        }
        for list in resolver.attachments_by_name.values_mut() {
            list.sort_by(|a, b| path_rank(a).cmp(&path_rank(b)));
        }
        resolver
    }

    /// The notes a link target could mean, best first (exact path, then path suffix or name).
    fn candidates(&self, records: &[Arc<NoteRecord>], target: &str) -> Vec<usize> {
        let target = target.trim().trim_start_matches('/');
        if target.is_empty() {
            return Vec::new();
        }
        for exact in [target.to_owned(), format!("{target}.md")] {
            if let Some(&index) = self.by_path.get(&exact) {
                return vec![index];
            }
        }
        let key = lower(strip_md(target));
        if let Some(list) = self.by_path_lower.get(&key) {
            return list.clone();
        }
        if key.contains('/') {
            // A partial path: `git/remote` matches `z/tech/git/remote.md`.
            let stem = key.rsplit('/').next().unwrap_or(&key);
            let suffix = format!("/{key}");
            return self
                .by_stem_lower
                .get(stem)
                .map(|list| {
                    list.iter()
                        .copied()
                        .filter(|&i| lower(strip_md(&records[i].path)).ends_with(&suffix))
                        .collect()
                })
                .unwrap_or_default();
        }
        self.by_stem_lower.get(&key).cloned().unwrap_or_default()
    }

    /// Resolves a link written in `from` (an index into `records`).
    pub fn resolve_link(&self, records: &[Arc<NoteRecord>], from: usize, link: &super::Link) -> Resolution {
        let target_index = if link.target.trim().is_empty() {
            Some(from)
        } else if link.kind == LinkKind::Markdown {
            // Markdown links are already vault-relative: exact path, then any case.
            self.by_path
                .get(&link.target)
                .copied()
                .or_else(|| {
                    self.by_path_lower.get(&lower(strip_md(&link.target))).and_then(|l| l.first().copied())
                })
                .or_else(|| self.candidates(records, &link.target).first().copied())
        } else {
            // By name; failing that, by an alias only one note carries (the contract's `ref` order).
            self.candidates(records, &link.target).first().copied().or_else(|| {
                match self.by_alias_lower.get(&lower(link.target.trim())).map(Vec::as_slice) {
                    Some([only]) => Some(*only),
                    _ => None,
                }
            })
        };
        let Some(index) = target_index else {
            return self.resolve_attachment(&link.target);
        };
        match &link.anchor {
            None => Resolution::Note(index),
            Some(Anchor::Heading(heading)) => {
                // `[[note#A#B]]` names a nested heading; the last one must exist.
                let wanted = heading_key(heading.rsplit('#').next().unwrap_or(heading));
                if wanted.is_empty() || records[index].headings.iter().any(|h| heading_key(&h.text) == wanted)
                {
                    Resolution::Note(index)
                } else {
                    Resolution::Broken(Broken::MissingHeading(index))
                }
            }
            Some(Anchor::Block(block)) => {
                if records[index].block_ids.iter().any(|b| b.eq_ignore_ascii_case(block)) {
                    Resolution::Note(index)
                } else {
                    Resolution::Broken(Broken::MissingBlock(index))
                }
            }
        }
    }

    fn resolve_attachment(&self, target: &str) -> Resolution {
        let target = target.trim().trim_start_matches('/');
        if self.attachments.contains(target) {
            return Resolution::Attachment(target.to_owned());
        }
        let name = target.rsplit('/').next().unwrap_or(target);
        let found = self.attachments_by_name.get(&lower(name)).and_then(|list| {
            list.iter().find(|path| target == name || lower(path).ends_with(&lower(target))).cloned()
        });
        match found {
            Some(path) => Resolution::Attachment(path),
            None => Resolution::Broken(Broken::MissingNote),
        }
    }

    /// Resolves a `ref` argument: exact path, then file name or path suffix
    /// (shortest path wins; a tie is ambiguous), then alias (several is ambiguous).
    /// A `#heading` suffix is split off and returned.
    pub fn resolve_ref<'r>(
        &self,
        records: &[Arc<NoteRecord>],
        reference: &'r str,
    ) -> Result<(usize, Option<&'r str>)> {
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
        let by_name = self.candidates(records, target);
        let chosen = match by_name.as_slice() {
            [] => {
                let by_alias = self.by_alias_lower.get(&lower(target)).cloned().unwrap_or_default();
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backlink {
    /// Index of the linking note.
    pub from: usize,
    /// Index of the link in the linking note.
    pub link: usize,
}

/// The whole vault's links, resolved.
#[derive(Debug, Default)]
pub struct Graph {
    /// The resolver the graph was built with.
    pub resolver: Resolver,
    /// Per note, its links with their resolution (same order as the note's links).
    pub outlinks: Vec<Vec<ResolvedLink>>,
    /// Per note, the links pointing at it from other notes, by linking path then line.
    pub backlinks: Vec<Vec<Backlink>>,
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
    /// Resolves every link of every record (sorted by path).
    pub fn build(records: &[Arc<NoteRecord>], attachments: &[String]) -> Graph {
        let resolver = Resolver::new(records, attachments);
        let mut outlinks = Vec::with_capacity(records.len());
        let mut backlinks: Vec<Vec<Backlink>> = vec![Vec::new(); records.len()];
        let mut linked: Vec<bool> = vec![false; records.len()];
        let (mut link_count, mut broken_count) = (0, 0);
        for (from, record) in records.iter().enumerate() {
            let mut resolved = Vec::with_capacity(record.links.len());
            for (index, link) in record.links.iter().enumerate() {
                let resolution = resolver.resolve_link(records, from, link);
                // The counts describe the notes' graph; standards and read_also files may
                // still link to notes (and show up as backlinks).
                let counted = record.kind == NoteKind::Note;
                link_count += usize::from(counted);
                match &resolution {
                    Resolution::Note(to) if *to != from => {
                        backlinks[*to].push(Backlink { from, link: index });
                        linked[*to] = true;
                        linked[from] = true;
                    }
                    Resolution::Broken(_) => broken_count += usize::from(counted),
                    _ => {}
                }
                resolved.push(ResolvedLink { link: index, resolution });
            }
            outlinks.push(resolved);
        }
        let orphans =
            (0..records.len()).filter(|&i| !linked[i] && records[i].kind == NoteKind::Note).collect();
        let mocs = (0..records.len()).filter(|&i| records[i].is_moc()).collect();
        Graph { resolver, outlinks, backlinks, orphans, mocs, link_count, broken_count }
    }

    /// The maps of content that link to a note.
    pub fn mocs_linking(&self, target: usize) -> Vec<usize> {
        let sources: BTreeSet<usize> = self.backlinks[target].iter().map(|b| b.from).collect();
        self.mocs.iter().copied().filter(|m| sources.contains(m)).collect()
    }
}
