//! `recall_context`: a context pack for a topic within a token budget.
//!
//! It replaces the search-then-read round trips an agent would otherwise make:
//! the best matching notes contribute their most relevant section (the one
//! holding the best snippet), then the notes they link to and that link to them
//! contribute their opening, each item saying why it is there. Items are
//! deduplicated by note and section and added in a fixed order until the budget
//! is spent; the last one is cut at a line boundary rather than dropped when
//! enough budget is left for it to be useful.

use std::collections::BTreeSet;

use super::Engine;
use super::types::*;
use crate::error::Result;
use crate::sandbox::NotePath;
use crate::vault::graph::Resolution;
use crate::vault::{Heading, NoteKind, decode_note, parse_note, read_canvas};

/// Notes whose sections are taken as matches.
const MATCHES: usize = 5;
/// Matches whose link neighbours are added.
const EXPANDED: usize = 3;
/// Neighbours per expanded match.
const NEIGHBOURS: usize = 4;
/// Longest section taken from one note, in tokens (the budget may cut further).
const SECTION_TOKENS: u32 = 1500;
/// Longest opening taken from a neighbour, in tokens.
const OPENING_TOKENS: u32 = 300;
/// An item cut to fit must keep at least this many tokens.
const MIN_PIECE: u32 = 60;
/// Largest file read for a pack.
const FILE_MAX: u64 = 8 * 1024 * 1024;

/// The most tokens one memory entry takes of a pack.
const MEMORY_TOKENS: u32 = 300;

/// Tokens a text may take, estimated high: one per CJK character, one per three
/// other characters (English averages about four).
pub fn estimate_tokens(text: &str) -> u32 {
    let (mut cjk, mut other) = (0u32, 0u32);
    for c in text.chars() {
        if crate::index::is_cjk(c) {
            cjk += 1;
        } else {
            other += 1;
        }
    }
    cjk + other.div_ceil(3)
}

/// The longest prefix of `text` within `tokens`, cut after a line when possible.
fn cut_to(text: &str, tokens: u32) -> &str {
    if estimate_tokens(text) <= tokens {
        return text;
    }
    let (mut used, mut end, mut last_line) = (0u32, 0usize, 0usize);
    let mut other = 0u32;
    for (at, c) in text.char_indices() {
        if crate::index::is_cjk(c) {
            used += 1;
        } else {
            other += 1;
        }
        if used + other.div_ceil(3) > tokens {
            break;
        }
        end = at + c.len_utf8();
        if c == '\n' {
            last_line = end;
        }
    }
    if last_line > end / 2 { &text[..last_line] } else { &text[..end] }
}

/// The section of a note holding `line`: its heading's text (`None` before the
/// first heading) and its text.
fn section_around<'t>(
    text: &'t str,
    body_offset: usize,
    headings: &[Heading],
    line: u32,
) -> (Option<String>, &'t str) {
    let (index, range) = crate::vault::section_around(text, body_offset, headings, line);
    (index.map(|i| headings[i].text.clone()), &text[range])
}

struct Pack {
    budget: u32,
    used: u32,
    items: Vec<RecallItem>,
    seen: BTreeSet<(String, Option<String>)>,
    full: bool,
}

impl Pack {
    /// Adds an item if it fits (cut to fit when enough budget is left); false once full.
    fn push(&mut self, mut item: RecallItem, cap: u32) -> bool {
        if self.full {
            return false;
        }
        if !self.seen.insert((item.path.clone(), item.section.clone())) {
            return true;
        }
        let left = self.budget.saturating_sub(self.used);
        let allowed = left.min(cap);
        let text = cut_to(item.text.trim_end(), allowed).to_owned();
        let tokens = estimate_tokens(&text);
        if text.trim().is_empty() || (tokens < MIN_PIECE && tokens < estimate_tokens(item.text.trim_end())) {
            self.full = left < MIN_PIECE;
            return !self.full;
        }
        item.text = text;
        self.used += tokens;
        self.items.push(item);
        true
    }
}

impl Engine {
    fn note_text(&self, path: &str) -> Option<(String, crate::vault::Note)> {
        let path = NotePath::parse(path).ok()?;
        if path.is_pdf() {
            // A PDF is recalled by its kept text, as `read_note` shows it.
            let hash = self.catalog().get(path.as_str())?.hash.clone();
            let text = self.pdf_text_kept(&hash)?;
            let note = parse_note(&path, &text);
            return Some((text, note));
        }
        let bytes = self.sandbox().read(&path, FILE_MAX).ok()?;
        let text = decode_note(&bytes).ok()?.to_owned();
        let note = parse_note(&path, &text);
        // A canvas is recalled by its text nodes (the text its snippets' lines count in).
        let text = if path.is_canvas() { read_canvas(&text).text } else { text };
        Some((text, note))
    }

    /// `recall_context`, from the notes alone.
    pub fn recall_context(&self, args: &RecallArgs) -> Result<RecallPack> {
        self.recall_with(args, Vec::new())
    }

    /// `recall_context` for a principal: the memory entries it may read that
    /// answer the topic come first, flagged, then the notes.
    pub fn recall_context_for(&self, args: &RecallArgs, principal: &Principal) -> Result<RecallPack> {
        let memory = match args.folder {
            Some(_) => Vec::new(),
            None => self.memory_recall(&args.topic, principal),
        };
        self.recall_with(args, memory)
    }

    fn recall_with(&self, args: &RecallArgs, memory: Vec<RecallItem>) -> Result<RecallPack> {
        let budget = RECALL_BUDGET.check("budget_tokens", args.budget_tokens)?;
        let search = SearchArgs {
            query: args.topic.clone(),
            folder: args.folder.clone(),
            limit: Some(MATCHES as u32),
            ..SearchArgs::default()
        };
        let content = self.search_note_content(&search)?;
        let knowledge =
            self.search_knowledge(&SearchArgs { limit: Some(MATCHES as u32), ..search.clone() })?;
        // Fuse both rankings by reciprocal rank; a note found by both rises.
        let mut fused: Vec<(String, f32, Option<u32>)> = Vec::new();
        for (rank, hit) in content.results.iter().enumerate() {
            let line = hit.snippets.first().map(|s| s.line);
            fused.push((hit.path.clone(), 1.0 / (rank as f32 + 2.0), line));
        }
        for (rank, hit) in knowledge.results.iter().enumerate() {
            match fused.iter_mut().find(|(p, ..)| *p == hit.path) {
                Some(entry) => entry.1 += 1.0 / (rank as f32 + 2.0),
                None => fused.push((hit.path.clone(), 1.0 / (rank as f32 + 2.0), None)),
            }
        }
        fused.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        fused.truncate(MATCHES);

        let mut pack = Pack { budget, used: 0, items: Vec::new(), seen: BTreeSet::new(), full: false };
        for item in memory {
            pack.push(item, MEMORY_TOKENS);
        }
        for (path, score, line) in &fused {
            let Some((text, note)) = self.note_text(path) else { continue };
            let (section, piece) = match line {
                Some(line) => section_around(&text, note.body_offset, &note.headings, *line),
                None => section_around(&text, note.body_offset, &note.headings, note.body_line),
            };
            let item = RecallItem {
                path: path.clone(),
                title: note.title.clone(),
                section,
                text: piece.to_owned(),
                reason: "match".to_owned(),
                score: *score,
                memory: None,
            };
            if !pack.push(item, SECTION_TOKENS) {
                break;
            }
        }

        let catalog = self.catalog();
        let graph = catalog.graph();
        let records = catalog.records();
        let matched: BTreeSet<&str> = fused.iter().map(|(p, ..)| p.as_str()).collect();
        'expand: for (path, score, _) in fused.iter().take(EXPANDED) {
            let Some(index) = catalog.position(path) else { continue };
            let mut neighbours: Vec<(usize, &str)> = Vec::new();
            for resolution in graph.outlinks(index) {
                if let Resolution::Note(to) = *resolution
                    && to as usize != index
                {
                    neighbours.push((to as usize, "outlink"));
                }
            }
            for backlink in graph.backlinks(index) {
                neighbours.push((backlink.from as usize, "backlink"));
            }
            let mut seen_here = BTreeSet::new();
            neighbours.retain(|(i, _)| {
                records[*i].kind == NoteKind::Note
                    && !matched.contains(records[*i].path.as_str())
                    && seen_here.insert(*i)
            });
            neighbours.sort_by(|a, b| {
                a.1.cmp(b.1).reverse().then_with(|| records[a.0].path.cmp(&records[b.0].path))
            });
            for (neighbour, relation) in neighbours.into_iter().take(NEIGHBOURS) {
                let record = &records[neighbour];
                let Some((text, note)) = self.note_text(&record.path) else { continue };
                let (section, piece) =
                    section_around(&text, note.body_offset, &note.headings, note.body_line);
                let opening = if record.description.is_empty() {
                    piece.to_owned()
                } else {
                    format!("{}\n\n{piece}", record.description)
                };
                let item = RecallItem {
                    path: record.path.clone(),
                    title: record.title.clone(),
                    section,
                    text: opening,
                    reason: format!("{relation} of {path}"),
                    score: score / 2.0,
                    memory: None,
                };
                if !pack.push(item, OPENING_TOKENS) {
                    break 'expand;
                }
            }
        }
        Ok(RecallPack {
            topic: args.topic.clone(),
            budget_tokens: budget,
            used_tokens: pack.used,
            items: pack.items,
            stale: content.stale.or(knowledge.stale),
            ranking: content.ranking,
        })
    }
}
