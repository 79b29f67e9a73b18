//! The read tools: overview, both searches, reading a note, standards, tags,
//! related notes and recent notes.
//!
//! Every result is bounded so that it fits an agent's context: searches return
//! snippets and never whole notes, `read_note` pages by bytes, lists are capped.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use rayon::prelude::*;

use super::bounded::{
    self, HIT_LIST_MAX, METADATA_BUDGET, SNIPPET_WINDOW, TEXT_MAX_CHARS, WHOLE_MAX, cap_frontmatter,
    cap_list, cut_chars, window_text,
};
use super::types::*;
use super::{Engine, NoteName, one_of, rfc3339};
use crate::error::{Error, ErrorCode, Result};
use crate::index::{SearchRequest, SearchScope};
use crate::sandbox::NotePath;
use crate::vault::graph::{Broken, Resolution};
use crate::vault::{
    AnchorRef, ContentHasher, LinkKind, NoteKind, NoteRecord, body_offset, content_hash, decode_note,
    link_context, parse_note, section_named,
};

/// Snippets per content hit.
const SNIPPETS_PER_HIT: usize = 3;
/// Longest description in a search hit, in characters.
const DESCRIPTION_CHARS: usize = 300;
/// Longest list in `get_related_notes`.
const RELATED_CAP: usize = 500;
/// Skipped files the overview lists (with their reasons); the count covers all.
const SKIPPED_SHOWN: usize = 20;
/// Largest file `read_note` pages through (a page is at most `read_max_bytes`).
const READ_FILE_MAX: u64 = 64 * 1024 * 1024;

fn kind_name(kind: LinkKind) -> &'static str {
    match kind {
        LinkKind::Wikilink => "wikilink",
        LinkKind::Embed => "embed",
        LinkKind::Markdown => "markdown",
    }
}

impl Engine {
    /// The `folder` argument of a search, checked by the sandbox.
    fn search_folder(&self, args: &SearchArgs) -> Result<Option<NotePath>> {
        match args.folder.as_deref() {
            Some(folder) => self.sandbox().resolve_folder(folder),
            None => Ok(None),
        }
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
        })
    }

    /// `search_knowledge`: titles, aliases, descriptions and tags.
    pub fn search_knowledge(&self, args: &SearchArgs) -> Result<KnowledgeResults> {
        self.search_knowledge_up_to(args, SEARCH_LIMIT.max)
    }

    /// `search_knowledge` with `limit` allowed up to `max` (the CLI's larger cap).
    pub(super) fn search_knowledge_up_to(&self, args: &SearchArgs, max: u32) -> Result<KnowledgeResults> {
        let tags = args.tags.clone().unwrap_or_default();
        let folder = self.search_folder(args)?;
        let request = self.search_request(args, SearchScope::Knowledge, &tags, folder.as_ref(), max)?;
        let outcome = self.index.search(&request)?;
        let results = outcome
            .hits
            .into_iter()
            .map(|hit| {
                let (aliases, aliases_omitted) = cap_list(&hit.record.aliases, HIT_LIST_MAX);
                let (tags, tags_omitted) = cap_list(&hit.record.tags, HIT_LIST_MAX);
                KnowledgeHit {
                    path: hit.record.path.clone(),
                    title: cut_chars(&hit.record.title, TEXT_MAX_CHARS),
                    aliases,
                    description: cut_chars(&hit.record.description, DESCRIPTION_CHARS),
                    tags,
                    score: hit.score,
                    matched: hit.matched.into_iter().filter(|f| f != "headings").collect(),
                    aliases_omitted,
                    tags_omitted,
                    explain: hit.explanation,
                }
            })
            .collect();
        Ok(KnowledgeResults {
            query: args.query.clone(),
            total: outcome.total as u64,
            results,
            stale: self.stale_notice(),
        })
    }

    /// `search_note_content`: headings and bodies, with snippets cut from the files.
    pub fn search_note_content(&self, args: &SearchArgs) -> Result<ContentResults> {
        self.search_note_content_up_to(args, SEARCH_LIMIT.max)
    }

    /// `search_note_content` with `limit` allowed up to `max` (the CLI's larger cap).
    pub(super) fn search_note_content_up_to(&self, args: &SearchArgs, max: u32) -> Result<ContentResults> {
        let tags = args.tags.clone().unwrap_or_default();
        let folder = self.search_folder(args)?;
        let request = self.search_request(args, SearchScope::Content, &tags, folder.as_ref(), max)?;
        let outcome = self.index.search(&request)?;
        // Cutting snippets reads and analyses each hit's file: the hits are independent.
        let results = outcome
            .hits
            .into_par_iter()
            .map(|hit| ContentHit {
                snippets: self.snippets_of(&hit.record, &outcome.terms),
                path: hit.record.path.clone(),
                title: hit.record.title.clone(),
                score: hit.score,
                explain: hit.explanation,
            })
            .collect();
        Ok(ContentResults {
            query: args.query.clone(),
            total: outcome.total as u64,
            results,
            stale: self.stale_notice(),
        })
    }

    /// Fills each backlink's context from its note's current text (the catalog
    /// keeps only each link's line).
    /// Each linking note is read once, the notes in parallel.
    fn cut_backlink_contexts(&self, backlinks: &mut [BacklinkOut]) {
        backlinks.par_chunk_by_mut(|a, b| a.path == b.path).for_each(|group| {
            let Ok(path) = NotePath::parse(&group[0].path) else { return };
            // The first WHOLE_MAX bytes: a link further into a larger note shows no context.
            let Ok(file) = self.sandbox().open_read(&path) else { return };
            let Ok(bytes) = file.read_at(0, WHOLE_MAX as usize) else { return };
            let Some(text) = window_text(&bytes) else { return };
            let mut lines = text.split('\n').enumerate().peekable();
            for backlink in group {
                let wanted = (backlink.line as usize).saturating_sub(1);
                // Backlinks come by line: one pass over the lines serves the group.
                while lines.next_if(|(at, _)| *at < wanted).is_some() {}
                if let Some((at, line)) = lines.peek()
                    && *at == wanted
                {
                    backlink.context = link_context(line);
                }
            }
        });
    }

    fn snippets_of(&self, record: &NoteRecord, terms: &BTreeSet<String>) -> Vec<SnippetOut> {
        self.snippets_within(record, terms, SNIPPET_WINDOW)
    }

    /// Snippets from the first `window` bytes of a hit's file: a note of any size
    /// costs a search at most that much reading and analysing.
    pub(crate) fn snippets_within(
        &self,
        record: &NoteRecord,
        terms: &BTreeSet<String>,
        window: u64,
    ) -> Vec<SnippetOut> {
        let Ok(path) = NotePath::parse(&record.path) else { return Vec::new() };
        let Ok(file) = self.sandbox().open_read(&path) else { return Vec::new() };
        let whole = file.len() <= window;
        let Ok(bytes) = file.read_at(0, usize::try_from(file.len().min(window)).unwrap_or(usize::MAX)) else {
            return Vec::new();
        };
        let text = if whole { decode_note(&bytes).ok() } else { window_text(&bytes) };
        let Some(text) = text else { return Vec::new() };
        // The file may have changed since it was indexed: cut from what is there now,
        // parsing it again only when its bytes are not the ones the record describes
        // (for a window, when its size is not).
        let unchanged = if whole { content_hash(&bytes) == record.hash } else { file.len() == record.size };
        let (offset, headings) = if unchanged {
            (body_offset(text), record.headings.to_vec())
        } else {
            let parsed = parse_note(&path, text);
            (parsed.body_offset, parsed.headings)
        };
        crate::index::snippets(text, offset, terms, &headings, SNIPPETS_PER_HIT)
            .into_iter()
            .map(|s| SnippetOut {
                text: s.text,
                heading: s.heading.map(|h| cut_chars(&h, TEXT_MAX_CHARS)),
                line: s.line,
            })
            .collect()
    }

    /// Resolves `path` or `ref` to a readable note path (and a `#heading` from the ref).
    pub(crate) fn locate(&self, name: &NoteName) -> Result<(NotePath, Option<String>)> {
        match name {
            NoteName::Path(path) => Ok((self.sandbox().resolve_read(path)?, None)),
            NoteName::Ref(reference) => {
                let catalog = self.catalog();
                let (index, anchor) = catalog.graph().resolver.resolve_ref(
                    catalog.records(),
                    catalog.attachments(),
                    reference,
                )?;
                let path = self.sandbox().resolve_read(&catalog.records()[index].path)?;
                Ok((path, anchor.map(str::to_owned)))
            }
        }
    }

    /// `read_note`. A note up to [`WHOLE_MAX`] is read and parsed whole (the parse
    /// cached by content hash); a larger one is hashed in one streaming pass that
    /// keeps only its first `WHOLE_MAX` bytes (parsed for title, frontmatter, outline
    /// and sections) and the requested page. Frontmatter and outline are capped to
    /// the page size (see [`METADATA_BUDGET`]).
    pub fn read_note(&self, args: &ReadNoteArgs) -> Result<NoteContent> {
        let name = one_of(args.path.as_deref(), args.reference.as_deref())?;
        let (path, anchor) = self.locate(&name)?;
        let page_max = self.config().limits.read_max_bytes;
        let max = args.max_bytes.unwrap_or(page_max).clamp(1, page_max) as usize;
        let offset = args.offset.unwrap_or(0);
        let section = args.section.clone().or(anchor);
        let section = section.as_deref().map(str::trim).filter(|s| !s.is_empty());
        let file = self.sandbox().open_read(&path)?;
        let size = file.len();
        let whole = size <= WHOLE_MAX;
        let not_utf8 = |message: &str| {
            Error::invalid(format!("{path} is not UTF-8 text: {message}"))
                .with_hint("only UTF-8 Markdown notes can be read")
        };
        // Whole: every byte. Otherwise the head, and the page's bytes (plus a few to
        // find character boundaries) when the page is not inside the head.
        let page_span = (offset, offset.saturating_add(max as u64 + 4));
        let (head, page_bytes, hash) = if whole {
            let bytes = file.read_at(0, usize::try_from(size).unwrap_or(usize::MAX).saturating_add(1))?;
            let hash = content_hash(&bytes);
            (bytes, None, hash)
        } else {
            let mut hasher = ContentHasher::default();
            let mut head = Vec::new();
            let mut page = Vec::new();
            let want_page = section.is_none() && page_span.1 > WHOLE_MAX;
            file.for_each_chunk(|at, chunk| {
                hasher.update(chunk);
                let end = at + chunk.len() as u64;
                if at < WHOLE_MAX {
                    head.extend_from_slice(&chunk[..(WHOLE_MAX.min(end) - at) as usize]);
                }
                if want_page && at < page_span.1 && end > page_span.0 {
                    let from = page_span.0.max(at) - at;
                    let to = page_span.1.min(end) - at;
                    page.extend_from_slice(&chunk[from as usize..to as usize]);
                }
                true
            })?;
            (head, want_page.then_some(page), hasher.finish())
        };
        let text = if whole {
            decode_note(&head).map_err(|d| not_utf8(&d.message))?
        } else {
            window_text(&head).ok_or_else(|| not_utf8("an invalid byte in its first 8 MiB"))?
        };
        let note = bounded::parsed(&path, &hash, text);
        let mut hints = Vec::new();
        let (content, truncated, next_offset) = match section {
            Some(wanted) => {
                let found = section_named(text, &note.headings, wanted)
                    .and_then(|range| text.get(range))
                    .ok_or_else(|| {
                        let available: Vec<String> =
                            note.headings.iter().take(50).map(|h| cut_chars(&h.text, 100)).collect();
                        let more = if note.headings.len() > 50 { " | …" } else { "" };
                        let searched = if whole { "" } else { " (in its first 8 MiB)" };
                        Error::not_found(format!(
                            "{path} has no heading `{}`{searched}",
                            cut_chars(wanted, 200)
                        ))
                        .with_hint(format!("headings of this note: {}{more}", available.join(" | ")))
                    })?;
                if !whole && found.as_ptr() as usize + found.len() == text.as_ptr() as usize + text.len() {
                    hints.push(format!(
                        "this note is {size} bytes; sections are read from its first {WHOLE_MAX} bytes and this one \
                         may go on: read on without `section` from offset {}",
                        text.len()
                    ));
                }
                page_of(found.as_bytes(), 0, offset, max, found.len() as u64)?
            }
            None => match page_bytes {
                Some(bytes) => page_of(&bytes, offset, offset, max, size)?,
                None => {
                    page_of(head.as_slice(), 0, offset, max, if whole { head.len() as u64 } else { size })?
                }
            },
        };
        let content = String::from_utf8(content).map_err(|_| not_utf8("an invalid byte in the page read"))?;
        let budget = max.clamp(METADATA_BUDGET.0, METADATA_BUDGET.1);
        let frontmatter = match &note.frontmatter {
            serde_json::Value::Object(map) => map,
            _ => &serde_json::Map::new(),
        };
        let (frontmatter, frontmatter_omitted) = cap_frontmatter(frontmatter, budget);
        if frontmatter_omitted > 0 {
            hints.push(
                "frontmatter is cut to fit the page: the whole frontmatter is the start of the note's text \
                 (read from offset 0)"
                    .to_owned(),
            );
        }
        let mut outline = Vec::new();
        let mut used = 2usize;
        for heading in &note.headings {
            let entry = OutlineEntry {
                level: heading.level,
                text: cut_chars(&heading.text, TEXT_MAX_CHARS),
                line: heading.line,
            };
            used += entry.text.len() + 32;
            if used > budget {
                break;
            }
            outline.push(entry);
        }
        let outline_omitted = (note.headings.len() - outline.len()) as u64;
        if outline_omitted > 0 {
            hints.push(format!(
                "outline lists {} of {} headings: read a part with `section` or page with `offset`",
                outline.len(),
                note.headings.len()
            ));
        }
        if !whole {
            hints.push(format!(
                "this note is {size} bytes: its title, frontmatter and outline come from its first {WHOLE_MAX} bytes"
            ));
        }
        let stat = self.sandbox().stat(&path)?;
        Ok(NoteContent {
            path: path.as_str().to_owned(),
            title: cut_chars(&note.title, TEXT_MAX_CHARS),
            frontmatter,
            content,
            hash,
            size,
            modified: stat.map(|s| rfc3339(super::sync::nanos(s.modified))).unwrap_or_default(),
            outline,
            truncated,
            next_offset,
            frontmatter_truncated: frontmatter_omitted > 0,
            frontmatter_omitted,
            outline_truncated: outline_omitted > 0 || !whole,
            outline_omitted,
            hint: (!hints.is_empty()).then(|| hints.join("; ")),
        })
    }

    /// `list_standards`.
    pub fn list_standards(&self) -> Result<Standards> {
        let catalog = self.catalog();
        let standards = catalog
            .records()
            .iter()
            .filter(|r| r.kind == NoteKind::Standard)
            .map(|r| StandardEntry {
                path: r.path.clone(),
                title: r.title.clone(),
                description: r.description.clone(),
                updated: rfc3339(r.modified_ns),
            })
            .collect();
        Ok(Standards { standards })
    }

    /// The tags listed by the tag registry note, lowercased.
    fn registered_tags(&self) -> (Option<String>, BTreeMap<String, String>) {
        let Some(registry) = self.config().tag_registry.clone() else { return (None, BTreeMap::new()) };
        let catalog = self.catalog();
        let tags = catalog
            .get(&registry)
            .map(|r| r.tags.iter().map(|t| (t.to_lowercase(), t.clone())).collect())
            .unwrap_or_default();
        (Some(registry), tags)
    }

    /// `list_tags`.
    pub fn list_tags(&self, args: &ListTagsArgs) -> Result<Tags> {
        let limit = TAGS_LIMIT.check("limit", args.limit)?;
        let catalog = self.catalog();
        // Tags are case-insensitive; the first spelling seen (in path order) is shown.
        let mut counts: BTreeMap<String, (String, u64)> = BTreeMap::new();
        for record in catalog.records().iter().filter(|r| r.kind == NoteKind::Note) {
            let mut seen = BTreeSet::new();
            for tag in &record.tags {
                let key = tag.to_lowercase();
                if seen.insert(key.clone()) {
                    counts.entry(key).or_insert_with(|| (tag.clone(), 0)).1 += 1;
                }
            }
        }
        let (registry, registered) = self.registered_tags();
        for (key, shown) in &registered {
            counts.entry(key.clone()).or_insert_with(|| (shown.clone(), 0));
        }
        let prefix =
            args.prefix.as_deref().map(|p| p.trim_start_matches('#').to_lowercase()).unwrap_or_default();
        let mut tags: Vec<TagCount> = counts
            .into_iter()
            .filter(|(key, _)| key.starts_with(&prefix))
            .map(|(key, (tag, count))| TagCount { registered: registered.contains_key(&key), tag, count })
            .collect();
        tags.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.tag.cmp(&b.tag)));
        tags.truncate(limit as usize);
        Ok(Tags { tags, registry })
    }

    /// `get_related_notes`.
    pub fn get_related_notes(&self, args: &NoteRefArgs) -> Result<Related> {
        let name = one_of(args.path.as_deref(), args.reference.as_deref())?;
        let (path, _) = self.locate(&name)?;
        let catalog = self.catalog();
        let index = catalog.position(path.as_str()).ok_or_else(|| {
            Error::new(ErrorCode::NotFound, format!("{path} is not indexed yet"))
                .with_hint("retry in a moment; the index is catching up")
        })?;
        let graph = catalog.graph();
        let records = catalog.records();
        let record = &records[index];
        let mut truncated = false;
        let mut outlinks = Vec::new();
        let mut broken = Vec::new();
        for (link, resolution) in record.links.iter().zip(graph.outlinks(index)) {
            let written = match link.anchor {
                None => link.target.to_owned(),
                Some(AnchorRef::Heading(h)) => format!("{}#{h}", link.target),
                Some(AnchorRef::Block(b)) => format!("{}#^{b}", link.target),
            };
            let target_path = match *resolution {
                Resolution::Note(i) => Some(records[i as usize].path.clone()),
                Resolution::Attachment(i) => Some(catalog.attachments()[i as usize].clone()),
                Resolution::Broken(_) => None,
            };
            if let Resolution::Broken(why) = resolution {
                let reason = match why {
                    Broken::MissingNote => "missing_note",
                    Broken::MissingHeading(_) => "missing_heading",
                    Broken::MissingBlock(_) => "missing_block",
                };
                if broken.len() < RELATED_CAP {
                    broken.push(BrokenLink {
                        target: written.clone(),
                        line: link.line,
                        reason: reason.to_owned(),
                    });
                } else {
                    truncated = true;
                }
            }
            if outlinks.len() < RELATED_CAP {
                outlinks.push(Outlink {
                    target: written,
                    resolved: target_path,
                    kind: kind_name(link.kind).to_owned(),
                    line: link.line,
                });
            } else {
                truncated = true;
            }
        }
        // The graph lists backlinks by linking path, then in link (line) order: the
        // first RELATED_CAP are the ones to show, and only they are built.
        let all_backlinks = graph.backlinks(index);
        truncated |= all_backlinks.len() > RELATED_CAP;
        let mut backlinks: Vec<BacklinkOut> = all_backlinks
            .iter()
            .take(RELATED_CAP)
            .map(|b| {
                let source = &records[b.from as usize];
                let line = source.links.get(b.link as usize).map_or(0, |link| link.line);
                BacklinkOut {
                    path: source.path.clone(),
                    title: source.title.clone(),
                    line,
                    context: String::new(),
                }
            })
            .collect();
        debug_assert!(
            backlinks.is_sorted_by(|a, b| (a.path.as_str(), a.line) <= (b.path.as_str(), b.line)),
            "the graph lists backlinks by path, then line"
        );
        self.cut_backlink_contexts(&mut backlinks);
        let mocs = graph
            .mocs_linking(index)
            .into_iter()
            .map(|i| NoteTitle { path: records[i].path.clone(), title: records[i].title.clone() })
            .collect();
        Ok(Related { path: record.path.clone(), outlinks, backlinks, broken, mocs, truncated })
    }

    /// `list_recent_notes`.
    pub fn list_recent_notes(&self, args: &RecentArgs) -> Result<Recent> {
        let days = RECENT_DAYS.check("days", args.days)?;
        let limit = RECENT_LIMIT.check("limit", args.limit)?;
        let sort = args.sort.unwrap_or_default();
        let now = jiff::Timestamp::now();
        let cutoff = now.as_nanosecond() - i128::from(days) * 86_400 * 1_000_000_000;
        let catalog = self.catalog();
        let mut notes: Vec<(i128, &Arc<NoteRecord>)> = catalog
            .records()
            .iter()
            .filter(|r| r.kind == NoteKind::Note)
            .map(|r| {
                let key = match sort {
                    RecentSort::Updated => i128::from(r.modified_ns),
                    RecentSort::Created => created_nanos(r),
                };
                (key, r)
            })
            .filter(|(key, _)| *key >= cutoff)
            .collect();
        notes.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.path.cmp(&b.1.path)));
        let notes = notes
            .into_iter()
            .take(limit as usize)
            .map(|(_, r)| RecentNote {
                path: r.path.clone(),
                title: r.title.clone(),
                created: created_rfc3339(r),
                updated: rfc3339(r.modified_ns),
            })
            .collect();
        Ok(Recent { notes })
    }

    /// `get_vault_overview`. `access` is the caller's level, for the report.
    pub fn overview(&self, access: &str, proposals_pending: u64) -> Result<Overview> {
        let super::sync::Staleness { added, changed, removed, skipped } = self.staleness()?;
        let catalog = self.catalog();
        let graph = catalog.graph();
        let records = catalog.records();
        let notes = records.iter().filter(|r| r.kind == NoteKind::Note).count() as u64;
        let standards = records.iter().filter(|r| r.kind == NoteKind::Standard).count() as u64;
        // Distinct tags in any case; most are written in lowercase and are not copied.
        let mut tags: HashSet<Cow<'_, str>> = HashSet::new();
        for tag in records.iter().filter(|r| r.kind == NoteKind::Note).flat_map(|r| r.tags.iter()) {
            if tag.chars().all(|c| c.to_lowercase().eq([c])) {
                tags.insert(Cow::Borrowed(tag.as_str()));
            } else {
                tags.insert(Cow::Owned(tag.to_lowercase()));
            }
        }
        let meta = self.index.meta();
        let policy = self.policy();
        Ok(Overview {
            vault: self.root().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            access: access.to_owned(),
            roots: Roots {
                notes: policy.notes.clone(),
                standards: policy.standards.clone(),
                inbox: policy.inbox.clone(),
            },
            counts: Counts {
                notes,
                standards,
                tags: tags.len() as u64,
                links: graph.link_count as u64,
                broken_links: graph.broken_count as u64,
                orphans: graph.orphans.len() as u64,
                proposals_pending,
            },
            index: IndexState {
                schema_version: meta.schema_version,
                documents: meta.documents,
                built_at: meta.built_at,
                updated_at: meta.updated_at,
                fresh: added == 0 && changed == 0 && removed == 0,
                stale: Stale { added, changed, removed },
                skipped_files: skipped.len() as u64,
                skipped: skipped
                    .into_iter()
                    .take(SKIPPED_SHOWN)
                    .map(|(path, reason)| SkippedOut { path, reason })
                    .collect(),
            },
            server: ServerIdentity {
                name: "kb-mcp".to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
            },
        })
    }
}

pub(super) fn created_nanos(record: &NoteRecord) -> i128 {
    record
        .created
        .as_deref()
        .and_then(|c| c.parse::<jiff::Timestamp>().ok())
        .map(|t| t.as_nanosecond())
        .or(record.born_ns.map(i128::from))
        .unwrap_or(i128::from(record.modified_ns))
}

pub(super) fn created_rfc3339(record: &NoteRecord) -> String {
    match &record.created {
        Some(created) => created.clone(),
        None => rfc3339(record.born_ns.unwrap_or(record.modified_ns)),
    }
}

/// The page of at most `max` bytes from `offset` of a content of `len` bytes, of
/// which `bytes` holds the part from `base` on (at least up to the page's end and
/// a few bytes more, or to the end): cut to character boundaries, returned with
/// whether more follows and where it continues.
fn page_of(
    bytes: &[u8],
    base: u64,
    offset: u64,
    max: usize,
    len: u64,
) -> Result<(Vec<u8>, bool, Option<u64>)> {
    if offset > len {
        return Err(Error::invalid(format!("`offset` {offset} is past the end ({len} bytes)")));
    }
    let is_boundary = |at: u64| -> bool {
        at >= len || bytes.get((at - base) as usize).is_none_or(|&b| (b as i8) >= -0x40)
    };
    let mut start = offset;
    while !is_boundary(start) {
        start += 1;
    }
    let mut end = start.saturating_add(max as u64).min(len);
    while end > start && !is_boundary(end) {
        end -= 1;
    }
    if end == start && start < len {
        // A page smaller than one character still returns that character.
        end = start + 1;
        while !is_boundary(end) {
            end += 1;
        }
    }
    let from = ((start - base) as usize).min(bytes.len());
    let to = ((end - base) as usize).min(bytes.len());
    let truncated = end < len;
    Ok((bytes[from..to].to_vec(), truncated, truncated.then_some(end)))
}

impl Engine {
    /// The yardstick ranking: every indexed file's whole text in a plain BM25
    /// index with tantivy's default tokenizer (see `index::BaselineIndex`).
    pub fn baseline_index(&self) -> Result<crate::index::BaselineIndex> {
        let catalog = self.catalog();
        let documents = catalog.records().iter().filter_map(|record| {
            let path = NotePath::parse(&record.path).ok()?;
            let bytes = self.sandbox().read(&path, READ_FILE_MAX).ok()?;
            let text = decode_note(&bytes).ok()?.to_owned();
            Some((record.path.clone(), text))
        });
        crate::index::BaselineIndex::build(documents)
    }
}
