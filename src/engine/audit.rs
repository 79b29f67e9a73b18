//! `audit_vault` and `kb-index audit`: the vault's health in one call.
//!
//! Most checks read nothing but the catalog and its link graph (broken links and
//! anchors, ambiguous links, orphans, tags, duplicate titles, maps of content,
//! sizes). Only three need a note's text: `frontmatter` (when `[lint]` has rules),
//! `unlinked_mention` and `empty_note` (only for notes small and bare enough to
//! be empty); those files are read once, in parallel. Findings are computed
//! whole and sorted by path, line and check, so `total` and `counts` cover every
//! page; a page's cursor names the last finding returned, not a position, so a
//! finding that stays is never skipped or repeated while notes change.
//!
//! Mentions are found with one Aho-Corasick automaton over every unique title
//! and alias, run over each note's prose only (no frontmatter, code, comments,
//! links or tags): a Chinese, Japanese or Korean name counts inside a sentence,
//! a Latin one only between word boundaries.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use rayon::prelude::*;

use super::Engine;
use super::types::{AUDIT_LIMIT, Audit, AuditArgs, AuditCheck, Finding, Fix};
use crate::error::{Error, Result};
use crate::index::is_cjk;
use crate::sandbox::{NotePath, strip_md};
use crate::vault::graph::{Broken, Graph, Resolution};
use crate::vault::{
    AnchorRef, LinkKind, LinkRef, NoteKind, NoteRecord, body_offset, decode_note, edit_distance,
    parse_frontmatter, prose_spans,
};

/// Largest file the text checks read.
const TEXT_MAX: u64 = 16 << 20;
/// Notes at most this large, with no link and at most one heading, are read to
/// see whether they are empty.
const EMPTY_CANDIDATE_MAX: u64 = 4096;
/// Most other notes a duplicate-title finding names.
const NAMED_MAX: usize = 5;

/// What a cursor is bound to: the checks and the folder.
fn scope(checks: &BTreeSet<AuditCheck>, folder: &str) -> String {
    let names: Vec<&str> = checks.iter().map(|c| c.name()).collect();
    format!("{}\n{folder}", names.join(","))
}

/// The order findings come in: path, line, check, message.
fn order_key(finding: &Finding) -> (&str, u32, AuditCheck, &str) {
    (finding.path.as_str(), finding.line.unwrap_or(0), finding.check, finding.message.as_str())
}

/// `a1` and the hex of `scope\npath\nline\ncheck\nmessage`: opaque to the agent.
fn encode_cursor(scope: &str, last: &Finding) -> String {
    let text = format!(
        "{scope}\n{}\n{}\n{}\n{}",
        last.path,
        last.line.unwrap_or(0),
        last.check.name(),
        last.message
    );
    super::cursor::encode("a1", &text)
}

/// The finding key a cursor names.
fn decode_cursor(text: &str, scope: &str) -> Result<(String, u32, AuditCheck, String)> {
    let cut: String = text.chars().take(40).collect();
    let bad = || {
        Error::invalid(format!("`cursor` {cut:?} is not a cursor audit_vault returned")).with_hint(
            "pass the `next_cursor` of the previous answer unchanged, or leave `cursor` out to start again",
        )
    };
    let text = super::cursor::decode("a1", text).ok_or_else(bad)?;
    let parts: Vec<&str> = text.splitn(6, '\n').collect();
    let [checks, folder, path, line, check, message] = parts.as_slice() else { return Err(bad()) };
    if format!("{checks}\n{folder}") != scope {
        return Err(Error::invalid("`cursor` belongs to an audit with other checks or another folder")
            .with_hint("pass the same checks and folder as the call that returned the cursor"));
    }
    let check = AuditCheck::ALL.into_iter().find(|c| c.name() == *check).ok_or_else(bad)?;
    Ok(((*path).to_owned(), line.parse().map_err(|_| bad())?, check, (*message).to_owned()))
}

/// A character of a word for the boundary rule: a letter or digit of a script
/// written with spaces (Chinese, Japanese and Korean are not).
fn is_word_char(c: char) -> bool {
    (c.is_alphanumeric() || c == '_') && !is_cjk(c)
}

/// Whether a title or alias is worth looking for in other notes' text: it has
/// a letter, and two characters at least in Chinese, Japanese or Korean, three
/// in other scripts.
fn mentionable(name: &str) -> bool {
    let chars = name.chars().count();
    let cjk = name.chars().any(is_cjk);
    name.chars().any(char::is_alphabetic) && chars >= if cjk { 2 } else { 3 }
}

/// A link as a person wrote it, for messages.
fn shown(link: &LinkRef<'_>) -> String {
    let anchor = match link.anchor {
        Some(AnchorRef::Heading(h)) => format!("#{h}"),
        Some(AnchorRef::Block(b)) => format!("#^{b}"),
        None => String::new(),
    };
    match link.kind {
        LinkKind::Markdown => format!("({}{anchor})", link.target),
        LinkKind::Embed => format!("![[{}{anchor}]]", link.target),
        _ => format!("[[{}{anchor}]]", link.target),
    }
}

/// Lowercased names (file names, titles, aliases) of notes, with a bigram
/// index to find the ones close to a misspelt link target quickly.
struct NameIndex {
    names: Vec<(String, usize)>,
    bigrams: HashMap<(char, char), Vec<u32>>,
}

fn bigrams(text: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = std::iter::once('\u{2}').chain(text.chars()).chain(['\u{3}']).collect();
    let mut out: Vec<(char, char)> = chars.windows(2).map(|w| (w[0], w[1])).collect();
    out.sort_unstable();
    out.dedup();
    out
}

impl NameIndex {
    fn new(records: &[Arc<NoteRecord>]) -> NameIndex {
        let mut names: Vec<(String, usize)> = Vec::new();
        for (i, record) in records.iter().enumerate().filter(|(_, r)| r.kind == NoteKind::Note) {
            let mut own: Vec<String> = vec![record.stem().to_lowercase(), record.title.trim().to_lowercase()];
            own.extend(record.aliases.iter().map(|a| a.trim().to_lowercase()));
            own.sort();
            own.dedup();
            names.extend(own.into_iter().filter(|n| !n.is_empty()).map(|n| (n, i)));
        }
        let mut bigram_map: HashMap<(char, char), Vec<u32>> = HashMap::new();
        for (k, (name, _)) in names.iter().enumerate() {
            for gram in bigrams(name) {
                bigram_map.entry(gram).or_default().push(k as u32);
            }
        }
        NameIndex { names, bigrams: bigram_map }
    }

    /// The notes closest to `target` by name (within a quarter of its length in
    /// edits, at least one), with their distance, best first.
    fn nearest(&self, target: &str) -> Vec<(usize, usize)> {
        let target = target.trim().to_lowercase();
        let target = strip_md(target.rsplit('/').next().unwrap_or(&target)).to_owned();
        let length = target.chars().count();
        if length < 2 {
            return Vec::new();
        }
        let most = (length / 4).max(1);
        let grams = bigrams(&target);
        // A name within `most` edits shares all but `2 * most` of the target's bigrams.
        let needed = grams.len().saturating_sub(2 * most).max(1);
        let mut shared: HashMap<u32, usize> = HashMap::new();
        for gram in &grams {
            for &k in self.bigrams.get(gram).map_or(&[][..], Vec::as_slice) {
                *shared.entry(k).or_default() += 1;
            }
        }
        let mut found: Vec<(usize, usize)> = shared
            .into_iter()
            .filter(|&(_, count)| count >= needed)
            .filter_map(|(k, _)| {
                let (name, note) = &self.names[k as usize];
                let distance = edit_distance(&target, name);
                (distance <= most).then_some((*note, distance))
            })
            .collect();
        found.sort_by_key(|&(note, distance)| (distance, note));
        found.dedup_by_key(|pair| pair.0);
        found.sort_by_key(|&(note, distance)| (distance, note));
        found
    }
}

/// Whether note `a` and note `b` are linked to or from a common note, or one to the other.
fn near_in_graph(graph: &Graph, a: usize, b: usize) -> bool {
    let neighbours = |n: usize| -> HashSet<usize> {
        let mut set: HashSet<usize> = graph
            .outlinks(n)
            .iter()
            .filter_map(|r| match r {
                Resolution::Note(to) => Some(*to as usize),
                _ => None,
            })
            .collect();
        set.extend(graph.backlinks(n).iter().map(|b| b.from as usize));
        set
    };
    let of_a = neighbours(a);
    of_a.contains(&b) || !neighbours(b).is_disjoint(&of_a)
}

/// The shortest wikilink target naming a note uniquely: its file name when no
/// other note shares it, else its path without `.md`.
fn link_name(graph: &Graph, records: &[Arc<NoteRecord>], attachments: &[String], note: usize) -> String {
    let stem = records[note].stem();
    if graph.candidates(records, attachments, stem) == [note] {
        stem.to_owned()
    } else {
        strip_md(&records[note].path).to_owned()
    }
}

impl Engine {
    /// `audit_vault` (and `kb-index audit`): the findings of the checks asked
    /// for, one page of them; with `fix`, the mechanical fixes staged as
    /// proposals, one per note (the caller checks the access level).
    pub fn audit_vault(&self, args: &AuditArgs) -> Result<Audit> {
        let limit = AUDIT_LIMIT.check("limit", args.limit)? as usize;
        let checks: BTreeSet<AuditCheck> = match &args.checks {
            Some(list) if list.is_empty() => {
                return Err(Error::invalid("`checks` is empty")
                    .with_hint("name at least one check, or leave `checks` out to run them all"));
            }
            Some(list) => list.iter().copied().collect(),
            None => AuditCheck::ALL.into_iter().collect(),
        };
        let folder = self.existing_folder(
            args.folder.as_deref(),
            "call list_notes to see the vault's folders, or leave `folder` out",
        )?;
        let scope = scope(&checks, &folder);
        let cursor = args.cursor.as_deref().map(|text| decode_cursor(text, &scope)).transpose()?;

        let findings = self.audit_findings(&checks, &folder)?;
        let mut counts: BTreeMap<String, u64> = checks.iter().map(|c| (c.name().to_owned(), 0)).collect();
        let mut errors = 0;
        for finding in &findings {
            *counts.entry(finding.check.name().to_owned()).or_default() += 1;
            errors += u64::from(finding.severity == super::types::Severity::Error);
        }
        let proposals = if args.fix {
            let mut all = findings.clone();
            self.suggest_notes(&mut all);
            self.stage_fixes(&all)?
        } else {
            Vec::new()
        };
        let total = findings.len() as u64;
        let from = match &cursor {
            None => 0,
            Some((path, line, check, message)) => {
                findings.partition_point(|f| order_key(f) <= (path.as_str(), *line, *check, message.as_str()))
            }
        };
        let mut page: Vec<Finding> = findings[from..].iter().take(limit).cloned().collect();
        let next_cursor = (from + page.len() < findings.len())
            .then(|| page.last().map(|last| encode_cursor(&scope, last)))
            .flatten();
        self.suggest_notes(&mut page);
        Ok(Audit {
            checks_run: checks.into_iter().collect(),
            counts,
            errors,
            total,
            findings: page,
            next_cursor,
            proposals,
        })
    }

    /// Every finding of `checks` for the notes under `folder` (`""`: all), sorted.
    pub(crate) fn audit_findings(&self, checks: &BTreeSet<AuditCheck>, folder: &str) -> Result<Vec<Finding>> {
        let catalog = self.catalog();
        let records = catalog.records();
        let attachments = catalog.attachments();
        let graph = catalog.graph();
        let config = self.config();
        let prefix = if folder.is_empty() { String::new() } else { format!("{folder}/") };
        let in_scope: Vec<usize> = {
            let start = records.partition_point(|r| r.path.as_str() < prefix.as_str());
            (start..records.len())
                .take_while(|&i| records[i].path.starts_with(&prefix))
                .filter(|&i| records[i].kind == NoteKind::Note)
                .collect()
        };
        let run = |check: AuditCheck| checks.contains(&check);
        let mut findings: Vec<Finding> = Vec::new();
        let mut push =
            |check: AuditCheck, path: &str, line: Option<u32>, message: String, fix: Option<Fix>| {
                findings.push(Finding {
                    check,
                    severity: check.severity(),
                    path: path.to_owned(),
                    line,
                    message,
                    fix,
                });
            };

        // Links: broken, broken anchors, ambiguous.
        if run(AuditCheck::BrokenLink) || run(AuditCheck::BrokenAnchor) || run(AuditCheck::AmbiguousLink) {
            let mut shared: HashMap<&str, Vec<usize>> = HashMap::new();
            for &i in &in_scope {
                let record = &records[i];
                for (link, resolution) in record.links.iter().zip(graph.outlinks(i)) {
                    match *resolution {
                        // The note it most likely meant is looked for only for the
                        // findings an answer returns (see `suggest_notes`).
                        Resolution::Broken(Broken::MissingNote) if run(AuditCheck::BrokenLink) => push(
                            AuditCheck::BrokenLink,
                            &record.path,
                            Some(link.line),
                            broken_message(&link),
                            None,
                        ),
                        Resolution::Broken(Broken::MissingHeading(to)) if run(AuditCheck::BrokenAnchor) => {
                            let target = &records[to as usize];
                            let wanted = match link.anchor {
                                Some(AnchorRef::Heading(h)) => h.rsplit('#').next().unwrap_or(h),
                                _ => "",
                            };
                            let near = target
                                .headings
                                .iter()
                                .map(|h| {
                                    (edit_distance(&wanted.to_lowercase(), &h.text.to_lowercase()), h.text)
                                })
                                .filter(|(d, _)| *d <= (wanted.chars().count() / 3).max(1))
                                .min_by_key(|(d, _)| *d)
                                .map(|(_, text)| text.to_owned());
                            let fix =
                                near.as_ref().filter(|_| link.kind != LinkKind::Markdown).map(|heading| {
                                    Fix {
                                        path: record.path.clone(),
                                        summary: format!("point the link at the heading `{heading}`"),
                                        old: Some(wanted.to_owned()),
                                        new: heading.clone(),
                                    }
                                });
                            let hint = near.map_or(String::new(), |h| format!("; did you mean `{h}`?"));
                            push(
                                AuditCheck::BrokenAnchor,
                                &record.path,
                                Some(link.line),
                                format!("{}: {} has no heading `{wanted}`{hint}", shown(&link), target.path),
                                fix,
                            );
                        }
                        Resolution::Broken(Broken::MissingBlock(to)) if run(AuditCheck::BrokenAnchor) => {
                            let block = match link.anchor {
                                Some(AnchorRef::Block(b)) => b,
                                _ => "",
                            };
                            push(
                                AuditCheck::BrokenAnchor,
                                &record.path,
                                Some(link.line),
                                format!(
                                    "{}: {} has no block ^{block}",
                                    shown(&link),
                                    records[to as usize].path
                                ),
                                None,
                            );
                        }
                        Resolution::Note(_)
                            if run(AuditCheck::AmbiguousLink)
                                && link.kind != LinkKind::Markdown
                                && !link.target.trim().is_empty() =>
                        {
                            let candidates = shared
                                .entry(link.target)
                                .or_insert_with(|| graph.candidates(records, attachments, link.target));
                            if candidates.len() > 1 {
                                let paths: Vec<&str> = candidates
                                    .iter()
                                    .take(NAMED_MAX)
                                    .map(|&c| records[c].path.as_str())
                                    .collect();
                                push(
                                    AuditCheck::AmbiguousLink,
                                    &record.path,
                                    Some(link.line),
                                    format!(
                                        "{} could mean {} notes: {}; it opens the first",
                                        shown(&link),
                                        candidates.len(),
                                        paths.join(", ")
                                    ),
                                    None,
                                );
                            }
                        }
                        _ => {}
                    }
                }
            }
        }

        if run(AuditCheck::Orphan) {
            for &i in graph.orphans.iter().filter(|i| records[**i].path.starts_with(&prefix)) {
                push(
                    AuditCheck::Orphan,
                    &records[i].path,
                    None,
                    "no note links here and it links to no note".to_owned(),
                    None,
                );
            }
        }

        if run(AuditCheck::UnregisteredTag)
            && let Some(registry) = config.tag_registry.as_deref()
        {
            match catalog.get(registry) {
                None => push(
                    AuditCheck::UnregisteredTag,
                    registry,
                    None,
                    "kb.toml names this tag registry, but it is not a note in the vault".to_owned(),
                    None,
                ),
                Some(listing) => {
                    let registered: Vec<String> = listing.tags.iter().map(|t| t.to_lowercase()).collect();
                    let known: HashSet<&str> = registered.iter().map(String::as_str).collect();
                    let mut near_cache: HashMap<String, Option<&str>> = HashMap::new();
                    for &i in &in_scope {
                        let record = &records[i];
                        if record.path == registry {
                            continue;
                        }
                        let mut seen = HashSet::new();
                        for tag in &record.tags {
                            let key = tag.to_lowercase();
                            if known.contains(key.as_str()) || !seen.insert(key.clone()) {
                                continue;
                            }
                            let near = *near_cache
                                .entry(key.clone())
                                .or_insert_with(|| nearest_tag(&key, &registered));
                            let fix = near.map(|near| Fix {
                                path: record.path.clone(),
                                summary: format!("use the registered tag #{near} instead of #{tag}"),
                                old: Some(tag.clone()),
                                new: near.to_owned(),
                            });
                            let hint = near.map_or(String::new(), |n| format!("; did you mean #{n}?"));
                            push(
                                AuditCheck::UnregisteredTag,
                                &record.path,
                                None,
                                format!("tag #{tag} is not in the tag registry {registry}{hint}"),
                                fix,
                            );
                        }
                    }
                }
            }
        }

        if run(AuditCheck::Frontmatter) {
            for &i in &in_scope {
                for diagnostic in
                    records[i].diagnostics.iter().filter(|d| d.message.starts_with("frontmatter"))
                {
                    push(
                        AuditCheck::Frontmatter,
                        &records[i].path,
                        diagnostic.line,
                        diagnostic.message.clone(),
                        None,
                    );
                }
            }
        }

        if run(AuditCheck::DuplicateTitle) {
            let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
            for (i, record) in records.iter().enumerate().filter(|(_, r)| r.kind == NoteKind::Note) {
                let mut own: Vec<String> = std::iter::once(record.title.trim().to_lowercase())
                    .chain(record.aliases.iter().map(|a| a.trim().to_lowercase()))
                    .filter(|n| !n.is_empty())
                    .collect();
                own.sort();
                own.dedup();
                for name in own {
                    by_name.entry(name).or_default().push(i);
                }
            }
            for &i in &in_scope {
                let record = &records[i];
                let mut own: Vec<&str> = std::iter::once(record.title.trim())
                    .chain(record.aliases.iter().map(|a| a.trim()))
                    .filter(|n| !n.is_empty())
                    .collect();
                own.dedup_by(|a, b| a.to_lowercase() == b.to_lowercase());
                let mut reported = HashSet::new();
                for name in own {
                    let key = name.to_lowercase();
                    if !reported.insert(key.clone()) {
                        continue;
                    }
                    let others: Vec<&str> = by_name
                        .get(&key)
                        .map_or(&[][..], Vec::as_slice)
                        .iter()
                        .filter(|&&o| o != i)
                        .map(|&o| records[o].path.as_str())
                        .collect();
                    if others.is_empty() {
                        continue;
                    }
                    let what = if name == record.title.trim() { "title" } else { "alias" };
                    let more = others.len().saturating_sub(NAMED_MAX);
                    let more = if more > 0 { format!(" and {more} more") } else { String::new() };
                    push(
                        AuditCheck::DuplicateTitle,
                        &record.path,
                        None,
                        format!(
                            "its {what} `{name}` is also the title or an alias of {}{more}",
                            others[..others.len().min(NAMED_MAX)].join(", ")
                        ),
                        None,
                    );
                }
            }
        }

        if run(AuditCheck::MocMissing) {
            let mut carriers: HashMap<String, Vec<usize>> = HashMap::new();
            for (i, record) in records.iter().enumerate().filter(|(_, r)| r.kind == NoteKind::Note) {
                for tag in &record.tags {
                    carriers.entry(tag.to_lowercase()).or_default().push(i);
                }
            }
            let registry = config.tag_registry.as_deref();
            // A map of content is a note (the tag registry, listing #moc, is not one).
            let maps =
                graph.mocs.iter().copied().filter(|&m| {
                    records[m].kind == NoteKind::Note && Some(records[m].path.as_str()) != registry
                });
            for moc in maps {
                let map = &records[moc];
                let mut mapped: BTreeSet<String> = map
                    .tags
                    .iter()
                    .map(|t| t.to_lowercase())
                    .filter(|t| t != "moc" && !t.starts_with("moc/"))
                    .collect();
                let title = map.title.trim().to_lowercase();
                if let Some(subject) = title.strip_suffix(" moc").map(str::trim).filter(|s| !s.is_empty()) {
                    mapped.insert(subject.replace(' ', "-"));
                    mapped.insert(subject.to_owned());
                }
                let mut members: BTreeMap<usize, String> = BTreeMap::new();
                for (tag, notes) in &carriers {
                    let Some(own) = mapped.iter().find(|m| {
                        tag == *m || tag.strip_prefix(m.as_str()).is_some_and(|r| r.starts_with('/'))
                    }) else {
                        continue;
                    };
                    for &n in notes {
                        members.entry(n).or_insert_with(|| own.clone());
                    }
                }
                for (note, tag) in members {
                    if note == moc || !records[note].path.starts_with(&prefix) || records[note].is_moc() {
                        continue;
                    }
                    if graph.backlinks(note).iter().any(|b| b.from as usize == moc) {
                        continue;
                    }
                    let name = link_name(graph, records, attachments, note);
                    push(
                        AuditCheck::MocMissing,
                        &records[note].path,
                        None,
                        format!("it carries #{tag}, but the map of content {} does not link it", map.path),
                        Some(Fix {
                            path: map.path.clone(),
                            summary: format!("add [[{name}]] to {}", map.path),
                            old: None,
                            new: format!("- [[{name}]]"),
                        }),
                    );
                }
            }
        }

        if run(AuditCheck::OversizeNote) {
            let most = config.limits.read_max_bytes;
            for &i in in_scope.iter().filter(|&&i| records[i].size > most) {
                push(
                    AuditCheck::OversizeNote,
                    &records[i].path,
                    None,
                    format!(
                        "{} bytes, more than read_note returns at once (read_max_bytes = {most}): split it",
                        records[i].size
                    ),
                    None,
                );
            }
        }

        if run(AuditCheck::SkippedFile) {
            let skipped = self.staleness()?.skipped;
            for (path, reason) in skipped {
                if path.starts_with(&prefix) && !reason.starts_with("a template") {
                    push(
                        AuditCheck::SkippedFile,
                        &path,
                        None,
                        format!("not served as a note: {reason}"),
                        None,
                    );
                }
            }
        }

        // The checks that read notes' text.
        let lint = run(AuditCheck::Frontmatter) && !config.lint.is_empty();
        let mentions = run(AuditCheck::UnlinkedMention).then(|| Mentions::new(records));
        let empty = run(AuditCheck::EmptyNote);
        let to_read: Vec<usize> = in_scope
            .iter()
            .copied()
            .filter(|&i| lint || mentions.is_some() || (empty && could_be_empty(&records[i])))
            .collect();
        let read: Vec<Finding> = to_read
            .par_iter()
            .flat_map_iter(|&i| {
                let record = &records[i];
                let Ok(path) = NotePath::parse(&record.path) else { return Vec::new() };
                let Ok(bytes) = self.sandbox().read(&path, TEXT_MAX) else { return Vec::new() };
                let Ok(text) = decode_note(&bytes) else { return Vec::new() };
                let mut out = Vec::new();
                let mut push = |check: AuditCheck, line: Option<u32>, message: String| {
                    out.push(Finding {
                        check,
                        severity: check.severity(),
                        path: record.path.clone(),
                        line,
                        message,
                        fix: None,
                    });
                };
                if lint {
                    let value = parse_frontmatter(text).map(|f| f.value).unwrap_or(serde_json::Value::Null);
                    for problem in config.lint.check(&record.path, &value) {
                        push(AuditCheck::Frontmatter, None, problem.message);
                    }
                }
                if empty && could_be_empty(record) && is_empty(record, text) {
                    push(AuditCheck::EmptyNote, None, "nothing but frontmatter and a title".to_owned());
                }
                if let Some(mentions) = &mentions {
                    for (line, name, target) in mentions.find(graph, i, &path, text) {
                        push(
                            AuditCheck::UnlinkedMention,
                            Some(line),
                            format!("mentions `{name}` ({}) without linking it", records[target].path),
                        );
                    }
                }
                out
            })
            .collect();
        findings.extend(read);
        findings.sort_by(|a, b| order_key(a).cmp(&order_key(b)));
        findings.dedup_by(|a, b| order_key(a) == order_key(b));
        Ok(findings)
    }
}

/// A broken link's message (the key its finding is found again by).
fn broken_message(link: &LinkRef<'_>) -> String {
    format!("{} leads to no note or file", shown(link))
}

impl Engine {
    /// Gives the broken-link findings among `findings` the fix of the note each
    /// link most likely meant, when there is one. Looked for only here, for the
    /// findings an answer returns: comparing a misspelt name with every note's
    /// names costs a few milliseconds in a large vault.
    fn suggest_notes(&self, findings: &mut [Finding]) {
        if !findings.iter().any(|f| f.check == AuditCheck::BrokenLink) {
            return;
        }
        let catalog = self.catalog();
        let records = catalog.records();
        let attachments = catalog.attachments();
        let graph = catalog.graph();
        let names = NameIndex::new(records);
        let mut nearest: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
        for finding in findings.iter_mut().filter(|f| f.check == AuditCheck::BrokenLink) {
            let Some(from) = catalog.position(&finding.path) else { continue };
            let link = records[from].links.iter().zip(graph.outlinks(from)).find(|(link, resolution)| {
                Some(link.line) == finding.line
                    && **resolution == Resolution::Broken(Broken::MissingNote)
                    && broken_message(link) == finding.message
            });
            let Some((link, _)) = link.filter(|(link, _)| link.kind != LinkKind::Markdown) else { continue };
            let candidates = nearest
                .entry(link.target.trim().to_lowercase())
                .or_insert_with(|| names.nearest(link.target));
            if let Some(to) = meant_note(graph, from, candidates) {
                finding.fix = Some(Fix {
                    path: finding.path.clone(),
                    summary: format!("link to {} instead of `{}`", records[to].path, link.target),
                    old: Some(link.target.to_owned()),
                    new: link_name(graph, records, attachments, to),
                });
            }
        }
    }
}

/// The note a broken link most likely meant: the nearest by name, ties broken
/// by closeness in the link graph to the linking note; `None` when two remain equal.
fn meant_note(graph: &Graph, from: usize, candidates: &[(usize, usize)]) -> Option<usize> {
    let best = candidates.first()?.1;
    let tied: Vec<usize> =
        candidates.iter().filter(|c| c.1 == best).map(|c| c.0).filter(|&c| c != from).collect();
    match tied.as_slice() {
        [] => None,
        [only] => Some(*only),
        several => {
            let near: Vec<usize> =
                several.iter().copied().filter(|&c| near_in_graph(graph, from, c)).collect();
            match near.as_slice() {
                [only] => Some(*only),
                _ => None,
            }
        }
    }
}

/// The registered tag nearest an unregistered one: the same last segment, or
/// within a third of its length in edits; `None` when none or several tie.
fn nearest_tag<'r>(tag: &str, registered: &'r [String]) -> Option<&'r str> {
    let leaf = tag.rsplit('/').next().unwrap_or(tag);
    let mut scored: Vec<(usize, &str)> = registered
        .iter()
        .map(|r| {
            let r_leaf = r.rsplit('/').next().unwrap_or(r);
            let distance =
                if r_leaf == leaf { 0 } else { edit_distance(tag, r).min(edit_distance(leaf, r_leaf)) };
            (distance, r.as_str())
        })
        .filter(|(d, _)| *d <= (tag.chars().count() / 3).max(1))
        .collect();
    scored.sort();
    match scored.as_slice() {
        [] => None,
        [(_, only)] => Some(only),
        [(a, first), (b, _), ..] if a < b => Some(first),
        _ => None,
    }
}

/// Whether a note may be empty without reading it: small, no links, no block
/// ids, at most one heading.
fn could_be_empty(record: &NoteRecord) -> bool {
    record.size <= EMPTY_CANDIDATE_MAX
        && record.links.is_empty()
        && record.block_ids.is_empty()
        && record.headings.len() <= 1
}

/// Whether a note's body holds nothing but blank lines and an H1 heading.
fn is_empty(record: &NoteRecord, text: &str) -> bool {
    let title_line = record.headings.iter().find(|h| h.level == 1).map(|h| h.line);
    let body = &text[body_offset(text).min(text.len())..];
    body.lines()
        .enumerate()
        .all(|(k, line)| line.trim().is_empty() || Some(record.body_line + k as u32) == title_line)
}

/// Titles and aliases that name exactly one note, as one automaton.
struct Mentions {
    automaton: Option<AhoCorasick>,
    /// Per pattern: the name as written in its note, and the note.
    targets: Vec<(String, usize)>,
}

impl Mentions {
    fn new(records: &[Arc<NoteRecord>]) -> Mentions {
        let mut by_name: BTreeMap<String, (String, BTreeSet<usize>)> = BTreeMap::new();
        for (i, record) in records.iter().enumerate().filter(|(_, r)| r.kind == NoteKind::Note) {
            for name in std::iter::once(&record.title).chain(record.aliases.iter()) {
                let name = name.trim();
                if mentionable(name) {
                    by_name
                        .entry(name.to_lowercase())
                        .or_insert_with(|| (name.to_owned(), BTreeSet::new()))
                        .1
                        .insert(i);
                }
            }
        }
        let targets: Vec<(String, usize)> = by_name
            .into_values()
            .filter(|(_, notes)| notes.len() == 1)
            .filter_map(|(name, notes)| notes.first().map(|&n| (name, n)))
            .collect();
        let automaton = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .ascii_case_insensitive(true)
            .build(targets.iter().map(|(name, _)| name.as_str()))
            .ok();
        Mentions { automaton, targets }
    }

    /// The other notes a note's prose names without linking them: the first
    /// line of each, the name as found, the note.
    fn find(&self, graph: &Graph, note: usize, path: &NotePath, text: &str) -> Vec<(u32, String, usize)> {
        let Some(automaton) = &self.automaton else { return Vec::new() };
        let linked: HashSet<u32> = graph
            .outlinks(note)
            .iter()
            .filter_map(|r| match r {
                Resolution::Note(to) => Some(*to),
                Resolution::Broken(Broken::MissingHeading(to) | Broken::MissingBlock(to)) => Some(*to),
                _ => None,
            })
            .collect();
        let mut found: BTreeMap<usize, (usize, String)> = BTreeMap::new();
        for span in prose_spans(path, text) {
            let prose = &text[span.range()];
            for hit in automaton.find_iter(prose) {
                let (_, target) = &self.targets[hit.pattern().as_usize()];
                if *target == note || linked.contains(&(*target as u32)) || found.contains_key(target) {
                    continue;
                }
                let before = prose[..hit.start()].chars().next_back();
                let after = prose[hit.end()..].chars().next();
                let written = &prose[hit.start()..hit.end()];
                let first = written.chars().next();
                let last = written.chars().next_back();
                let joined = |edge: Option<char>, next: Option<char>| {
                    edge.is_some_and(is_word_char) && next.is_some_and(is_word_char)
                };
                if joined(first, before) || joined(last, after) {
                    continue;
                }
                found.insert(*target, (span.start + hit.start(), written.to_owned()));
            }
        }
        let mut out: Vec<(u32, String, usize)> = found
            .into_iter()
            .map(|(target, (at, written))| {
                let line = text[..at].matches('\n').count() as u32 + 1;
                (line, written, target)
            })
            .collect();
        out.sort();
        out
    }
}
