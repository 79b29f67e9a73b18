//! The two searches (`search_knowledge`, `search_note_content`): checking a
//! search's arguments, running it on the index, cutting each content hit's
//! snippets from its file as it is now; and the plain BM25 yardstick the
//! evaluation compares the ranking with.

use std::collections::BTreeSet;

use crate::engine::bounded::{
    HIT_LIST_MAX, SNIPPET_WINDOW, TEXT_MAX_CHARS, cap_list, cut_chars, window_text,
};
use crate::engine::helped::map_helped;
use crate::engine::pdf::kept_labelled;
use crate::engine::semantic::RankingPlan;
use crate::engine::sync::same_stamp;
use crate::engine::types::*;
use crate::engine::{Engine, timing};
use crate::error::{Error, Result};
use crate::index::{NoteTexts, SearchHit, SearchOutcome, SearchRequest, SearchScope};
use crate::sandbox::{NotePath, Sandbox};
use crate::vault::{Heading, NoteRecord, body_offset, content_hash, decode_note, parse_note, read_canvas};

/// Snippets per content hit.
const SNIPPETS_PER_HIT: usize = 3;
/// Longest description in a search hit, in characters.
const DESCRIPTION_CHARS: usize = 300;
/// Most bytes of a note a question's feedback reads (nine notes in ten of the
/// help vault are under 9 KB; 16 KiB ranks as 64 KiB does on every suite).
const FEEDBACK_WINDOW: u64 = 16 * 1024;
/// Largest file the yardstick index reads whole.
const READ_FILE_MAX: u64 = 64 * 1024 * 1024;

impl Engine {
    /// The `folder` argument of a search, checked by the sandbox: a folder that
    /// is not there is `not_found` (a search in it would find nothing and look
    /// like an answer).
    fn search_folder(&self, args: &SearchArgs) -> Result<Option<NotePath>> {
        let folder = self.existing_folder(
            args.folder.as_deref(),
            "list_notes (`kb-index ls`) shows the vault's folders; or leave `folder` out to search everywhere",
        )?;
        if folder.is_empty() { Ok(None) } else { NotePath::parse(&folder).map(Some) }
    }

    fn search_request<'a>(
        &self,
        args: &'a SearchArgs,
        scope: SearchScope,
        tags: &'a [String],
        folder: Option<&'a NotePath>,
        max: u32,
    ) -> Result<SearchRequest<'a>> {
        let limit = Bound { max, ..SEARCH_LIMIT }.check("limit", args.limit)?;
        if args.query.trim().is_empty() {
            return Err(Error::invalid("`query` is empty").with_hint("give one or more words to search for"));
        }
        if args.query.len() > 1000 {
            return Err(Error::invalid("`query` is longer than 1000 bytes")
                .with_hint("search for the key words only"));
        }
        self.reload_if_due()?;
        Ok(SearchRequest {
            query: &args.query,
            scope,
            tags,
            folder,
            limit: limit as usize,
            explain: args.explain.unwrap_or(false),
            texts: None,
            passes: args.passes,
        })
    }

    /// A note's text after its frontmatter, at most [`FEEDBACK_WINDOW`] bytes of
    /// the file: what a question's feedback reads of its first pass's best notes.
    fn feedback_text(&self, record: &NoteRecord) -> Option<String> {
        let path = NotePath::parse(&record.path).ok()?;
        let file = self.sandbox().open_read(&path).ok()?;
        let bytes = file.read_at(0, usize::try_from(file.len().min(FEEDBACK_WINDOW)).ok()?).ok()?;
        let text = window_text(&bytes)?;
        Some(text[body_offset(text).min(text.len())..].to_owned())
    }

    /// `search_knowledge`: titles, aliases, descriptions and tags.
    pub fn search_knowledge(&self, args: &SearchArgs) -> Result<KnowledgeResults> {
        self.search_knowledge_up_to(args, SEARCH_LIMIT.max)
    }

    /// `search_knowledge` with `limit` allowed up to `max` (the CLI's larger cap).
    pub(in crate::engine) fn search_knowledge_up_to(
        &self,
        args: &SearchArgs,
        max: u32,
    ) -> Result<KnowledgeResults> {
        let tags = args.tags.clone().unwrap_or_default();
        let folder = self.search_folder(args)?;
        let mut request = self.search_request(args, SearchScope::Knowledge, &tags, folder.as_ref(), max)?;
        let limit = request.limit;
        let mut plan = self.search_ranking_plan(args);
        request.limit = plan.lexical_depth(limit, false);
        let texts = |record: &NoteRecord| self.feedback_text(record);
        request.texts = Some(NoteTexts(&texts));
        let outcome = self.lexical_beside_embedding(&plan, &request)?;
        self.find_near(&mut plan, &tags, folder.as_ref(), outcome.hits.len(), limit);
        let paths: Vec<&str> = outcome.hits.iter().map(|hit| hit.record.path.as_str()).collect();
        let fused = plan.fuse(&paths, limit, false);
        let mut hits: Vec<Option<SearchHit>> = outcome.hits.iter().cloned().map(Some).collect();
        let catalog = self.catalog();
        let results = fused
            .into_iter()
            .filter_map(|f| {
                let hit = match f.lexical.and_then(|i| hits.get_mut(i)?.take()) {
                    Some(hit) => hit,
                    None => meaning_hit(catalog.get(&f.path)?),
                };
                let (aliases, aliases_omitted) = cap_list(&hit.record.aliases, HIT_LIST_MAX);
                let (tags, tags_omitted) = cap_list(&hit.record.tags, HIT_LIST_MAX);
                Some(KnowledgeHit {
                    path: hit.record.path.clone(),
                    title: cut_chars(&hit.record.title, TEXT_MAX_CHARS),
                    aliases,
                    description: cut_chars(&hit.record.description, DESCRIPTION_CHARS),
                    tags,
                    score: plan.score(&f, hit.score),
                    matched: knowledge_matched(hit.matched),
                    aliases_omitted,
                    tags_omitted,
                    weak: hit.weak,
                    lexical_only: plan.lexical_only(&hit.record.path),
                    explain: plan.explain(&f, hit.explanation, request.explain),
                    memory: None,
                    vault: None,
                })
            })
            .collect();
        Ok(KnowledgeResults {
            query: args.query.clone(),
            total: (outcome.total as u64).max(plan.total_floor(&paths)),
            results,
            stale: self.stale_notice(),
            ranking: plan.ranking,
        })
    }

    /// `search_note_content`: headings and bodies, with snippets cut from the files.
    pub fn search_note_content(&self, args: &SearchArgs) -> Result<ContentResults> {
        self.search_note_content_up_to(args, SEARCH_LIMIT.max)
    }

    /// `search_note_content` with `limit` allowed up to `max` (the CLI's larger cap).
    pub(in crate::engine) fn search_note_content_up_to(
        &self,
        args: &SearchArgs,
        max: u32,
    ) -> Result<ContentResults> {
        let tags = args.tags.clone().unwrap_or_default();
        let folder = self.search_folder(args)?;
        let mut request = self.search_request(args, SearchScope::Content, &tags, folder.as_ref(), max)?;
        let limit = request.limit;
        let mut plan = self.search_ranking_plan(args);
        request.limit = plan.lexical_depth(limit, true);
        let texts = |record: &NoteRecord| self.feedback_text(record);
        request.texts = Some(NoteTexts(&texts));
        let outcome = self.lexical_beside_embedding(&plan, &request)?;
        self.find_near(&mut plan, &tags, folder.as_ref(), outcome.hits.len(), limit);
        let snippets_started = std::time::Instant::now();
        let paths: Vec<&str> = outcome.hits.iter().map(|hit| hit.record.path.as_str()).collect();
        let fused = plan.fuse(&paths, limit, true);
        let mut hits: Vec<Option<SearchHit>> = outcome.hits.iter().cloned().map(Some).collect();
        let catalog = self.catalog();
        // Cutting snippets reads and analyses each hit's file, shared with spare
        // cores without waiting for one to wake (see `helped`).
        let terms = std::sync::Arc::new(outcome.terms.clone());
        let mut results = Vec::with_capacity(fused.len());
        let mut records = Vec::with_capacity(fused.len());
        for f in &fused {
            let hit = match f.lexical.and_then(|i| hits.get_mut(i)?.take()) {
                Some(hit) => hit,
                None => match catalog.get(&f.path) {
                    Some(record) => meaning_hit(record),
                    None => continue,
                },
            };
            results.push(ContentHit {
                snippets: Vec::new(),
                path: hit.record.path.clone(),
                title: hit.record.title.clone(),
                score: plan.score(f, hit.score),
                weak: hit.weak,
                lexical_only: plan.lexical_only(&hit.record.path),
                explain: plan.explain(f, hit.explanation, request.explain),
                memory: None,
                vault: None,
            });
            records.push((hit.record, f.near.as_ref().map(|near| near.line)));
        }
        let sandbox = self.sandbox();
        let folder = Some(self.index.folder().clone()).filter(|f| f.exists());
        let cut = map_helped(
            records,
            |(record, _)| record.size,
            move |(record, near)| {
                let snippets = if crate::vault::is_pdf(&record.path) {
                    // A PDF's snippets come from its kept text, under their page's heading.
                    folder
                        .as_ref()
                        .and_then(|folder| kept_labelled(folder, &record.hash))
                        .map(|labelled| pdf_snippets(&labelled, &record.path, &terms))
                        .unwrap_or_default()
                } else {
                    cut_snippets(&sandbox, record, &terms)
                };
                match near {
                    // A note found by its meaning alone shows the section it was found by.
                    Some(line) if snippets.is_empty() => section_snippet(&sandbox, record, *line),
                    _ => snippets,
                }
            },
        );
        for (hit, snippets) in results.iter_mut().zip(cut) {
            hit.snippets = snippets;
        }
        timing::record("snippets", snippets_started.elapsed());
        Ok(ContentResults {
            query: args.query.clone(),
            total: (outcome.total as u64).max(plan.total_floor(&paths)),
            results,
            stale: self.stale_notice(),
            ranking: plan.ranking,
        })
    }
}

/// Snippets of a PDF's labelled text (see `PdfText::labelled`): each under
/// its page's heading, lines counted as `read_note` shows the text.
fn pdf_snippets(labelled: &str, path: &str, terms: &BTreeSet<String>) -> Vec<SnippetOut> {
    let Ok(path) = NotePath::parse(path) else { return Vec::new() };
    let parsed = parse_note(&path, labelled);
    snippets_out(labelled, 0, terms, &parsed.headings)
}

/// Snippets from the first [`SNIPPET_WINDOW`] bytes of a hit's file: a note of
/// any size costs a search at most that much reading and analysing.
fn cut_snippets(sandbox: &Sandbox, record: &NoteRecord, terms: &BTreeSet<String>) -> Vec<SnippetOut> {
    let window = SNIPPET_WINDOW;
    let Ok(path) = NotePath::parse(&record.path) else { return Vec::new() };
    let Ok(file) = sandbox.open_read(&path) else { return Vec::new() };
    let whole = file.len() <= window;
    let Ok(bytes) = file.read_at(0, usize::try_from(file.len().min(window)).unwrap_or(usize::MAX)) else {
        return Vec::new();
    };
    let text = if whole { decode_note(&bytes).ok() } else { window_text(&bytes) };
    let Some(text) = text else { return Vec::new() };
    // The file may have changed since it was indexed: cut from what is there now,
    // parsing it again only when its bytes are not the ones the record describes.
    // A window is taken as unchanged by its size alone. A whole file is when its
    // size and modification time are the record's, as the sync takes them
    // (hashing a hit's file was a fifth of a content search), else when its hash is.
    let unchanged = if whole {
        let stamped = file.modified().is_some_and(|modified| same_stamp(record, file.len(), modified));
        stamped || content_hash(&bytes) == record.hash
    } else {
        file.len() == record.size
    };
    // A canvas's snippets come from its text nodes, as `read_note` shows them.
    let words = path.is_canvas().then(|| read_canvas(text).text);
    let (text, offset, headings) = match &words {
        Some(words) => (words.as_str(), 0, Vec::new()),
        None if unchanged => (text, body_offset(text), record.headings.to_vec()),
        None => {
            let parsed = parse_note(&path, text);
            (text, parsed.body_offset, parsed.headings)
        }
    };
    snippets_out(text, offset, terms, &headings)
}

/// The best snippets of `text` (its body from `offset`) for `terms`, as a hit
/// carries them (headings cut to [`TEXT_MAX_CHARS`]).
fn snippets_out(
    text: &str,
    offset: usize,
    terms: &BTreeSet<String>,
    headings: &[Heading],
) -> Vec<SnippetOut> {
    crate::index::snippets(text, offset, terms, headings, SNIPPETS_PER_HIT)
        .into_iter()
        .map(|s| SnippetOut {
            text: s.text,
            heading: s.heading.map(|h| cut_chars(&h, TEXT_MAX_CHARS)),
            line: s.line,
            marks: s.marks,
        })
        .collect()
}

impl Engine {
    /// The yardstick ranking: every indexed file's title, aliases and body
    /// (its text after the frontmatter) in one field of a plain BM25 index
    /// with tantivy's default tokenizer (see `index::BaselineIndex`).
    pub(crate) fn baseline_index(&self) -> Result<crate::index::BaselineIndex> {
        let catalog = self.catalog();
        let documents = catalog.records().iter().filter_map(|record| {
            let path = NotePath::parse(&record.path).ok()?;
            let bytes = self.sandbox().read(&path, READ_FILE_MAX).ok()?;
            let text = decode_note(&bytes).ok()?;
            let body = &text[body_offset(text).min(text.len())..];
            let mut document = record.title.clone();
            for alias in &record.aliases {
                document.push('\n');
                document.push_str(alias);
            }
            document.push('\n');
            document.push_str(body);
            Some((record.path.clone(), document))
        });
        crate::index::BaselineIndex::build(documents)
    }
}

/// The fields a `search_knowledge` hit matched in: those of its record that hold
/// a query term, else `text` (the query also searches headings and note text at
/// a low weight, so a hit none of whose title fields match was found by its
/// text: it says so rather than nothing).
fn knowledge_matched(mut fields: Vec<String>) -> Vec<String> {
    if fields.is_empty() {
        fields.push("text".to_owned());
    }
    fields
}

/// A hit for a note only its meaning found: its record, no lexical score.
fn meaning_hit(record: &NoteRecord) -> SearchHit {
    SearchHit { record: record.clone(), score: 0.0, matched: Vec::new(), explanation: None, weak: false }
}

/// Longest snippet of a section found by meaning, in characters.
const SECTION_SNIPPET_CHARS: usize = 240;

/// The snippet of a note found by its meaning alone: the first line of text
/// of the section starting at `line`, under that section's heading.
fn section_snippet(sandbox: &Sandbox, record: &NoteRecord, line: u32) -> Vec<SnippetOut> {
    let Ok(path) = NotePath::parse(&record.path) else { return Vec::new() };
    let Ok(file) = sandbox.open_read(&path) else { return Vec::new() };
    let Ok(bytes) = file.read_at(0, usize::try_from(file.len().min(SNIPPET_WINDOW)).unwrap_or(usize::MAX))
    else {
        return Vec::new();
    };
    let Some(text) = window_text(&bytes) else { return Vec::new() };
    let parsed = parse_note(&path, text);
    let heading = parsed.headings.iter().rev().find(|h| h.line <= line).map(|h| h.text.clone());
    let first = text
        .lines()
        .enumerate()
        .skip(line.saturating_sub(1) as usize)
        .find(|(_, l)| !l.trim().is_empty() && crate::vault::atx_heading_line(l).is_none());
    match first {
        Some((at, l)) => vec![SnippetOut {
            text: cut_chars(l.trim(), SECTION_SNIPPET_CHARS),
            heading,
            line: u32::try_from(at + 1).unwrap_or(u32::MAX),
            marks: Vec::new(),
        }],
        None => Vec::new(),
    }
}

impl Engine {
    /// The ranking plan of a search (see [`Engine::ranking_plan`]). A query
    /// with exact phrases or excluded words asks for words: it stays lexical.
    fn search_ranking_plan(&self, args: &SearchArgs) -> RankingPlan {
        if args.query.contains('"')
            || args.query.split_whitespace().any(|w| w.len() > 1 && w.starts_with('-'))
        {
            return self
                .ranking_plan(&args.query, false)
                .with_why("off: exact phrases and excluded words are matched by words only");
        }
        self.ranking_plan(&args.query, args.passes.semantic)
    }

    /// The lexical search of `request`; a question's query is embedded on
    /// another thread meanwhile, when the plan will need its vector (the two
    /// take a few milliseconds each).
    fn lexical_beside_embedding(
        &self,
        plan: &RankingPlan,
        request: &SearchRequest<'_>,
    ) -> Result<SearchOutcome> {
        std::thread::scope(|scope| {
            if plan.needs_vector() {
                scope.spawn(|| plan.embed_ahead());
            }
            timing::time("query", || self.index.search(request))
        })
    }

    /// The notes nearest the query's meaning, when the plan needs them (see
    /// [`RankingPlan::find_near`]), kept to those the search's filters allow
    /// and the index holds now.
    fn find_near(
        &self,
        plan: &mut RankingPlan,
        tags: &[String],
        folder: Option<&NotePath>,
        found: usize,
        limit: usize,
    ) {
        let catalog = self.catalog();
        let wanted: Vec<String> =
            tags.iter().map(|t| t.trim().trim_start_matches('#').to_lowercase()).collect();
        let folder = folder.map(|f| format!("{}/", f.as_str()));
        let keep = |path: &str| {
            let Some(record) = catalog.get(path) else { return false };
            let in_folder = folder.as_ref().is_none_or(|f| path.starts_with(f.as_str()));
            let tagged = wanted.iter().all(|w| {
                record.tags.iter().any(|t| {
                    let t = t.to_lowercase();
                    t == *w || t.strip_prefix(w.as_str()).is_some_and(|rest| rest.starts_with('/'))
                })
            });
            in_folder && tagged
        };
        plan.find_near(found, limit, &keep);
    }
}
