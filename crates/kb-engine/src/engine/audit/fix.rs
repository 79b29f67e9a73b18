//! `audit_vault {fix: true}`: the audit's mechanical fixes staged as
//! proposals, one batch proposal per kind of fix, never written to a note
//! directly; every fix not staged counted in the result by reason.
//!
//! **What is staged.** Only fixes their finding calls mechanical
//! (`Fix::mechanical`, decided where the fix is made, by the rule of
//! `spelling.rs`): a broken link, a broken anchor or an unregistered tag that
//! wrote the one note name, heading or registered tag differently (case,
//! spacing, punctuation, accents, `.md`), and the line a map of content lacks.
//! Everything else (a name differing in a digit, a tag sharing only its last
//! segment, the nearest of the headings, a typo's likeliest meaning) stays a
//! suggestion: the finding's `fix`, for a person to judge.
//!
//! **Where it is written.** Each note's fixes are made afresh from the note as
//! it is now, through its spans (the vault's Markdown model). Links and inline
//! tags come from the scanner, which reads no code fence (closed or not), code
//! span or HTML comment, so replacing one writes in text by construction. In the
//! frontmatter's `tags` a tag is replaced only outside YAML comments. A line for
//! a map of content is appended only when the note, scanned again with it, reads
//! it as a link: a note ending inside an unclosed fence or comment would swallow
//! it as code. A fix with no such place is left out (`code_or_comment`), as is
//! one whose text is no longer where the audit found it (`note_changed`).
//!
//! **How it is staged.** One batch proposal per kind (broken links, broken
//! anchors, tags, maps of content), a patch per note, with the hash the note was
//! read at, so the person can reject a kind that looks wrong and keep the
//! others, and an apply refuses a note changed since. A note is in one proposal
//! of a call: its fixes of a later kind wait for the next call (`later`), as do
//! those of a note a pending proposal already changes (`pending`), since of two
//! proposals made from one base the second applied would be stale. A batch
//! holds at most [`BATCH_MAX_ITEMS`] notes; the rest wait too.
//!
//! **Headroom.** The fixes stage under caps a quarter below `[limits]
//! pending_max_count` and `pending_max_bytes` (75 of the default 100
//! proposals): an audit never fills the inbox, and agents and the person's own
//! `kb-index mv` or `rm` can still stage after it (one call staged 99
//! proposals, one per note, and blocked them all). A kind that does not fit is
//! left out (`inbox_headroom`).

use std::collections::{BTreeMap, BTreeSet};

use crate::engine::Engine;
use crate::engine::types::{AuditCheck, BatchItem, Finding, ProposeBatchArgs, UnstagedReason};
use crate::error::{ErrorCode, Result};
use crate::sandbox::NotePath;
use crate::vault::{
    Limits, Span, content_hash, decode_note, frontmatter_keys, is_canvas, note_spans, replace_spans,
};
use crate::write::{self, BATCH_MAX_ITEMS, Edit};

/// The kinds of fix, one batch proposal each, staged in this order.
const KINDS: [AuditCheck; 4] =
    [AuditCheck::BrokenLink, AuditCheck::BrokenAnchor, AuditCheck::UnregisteredTag, AuditCheck::MocMissing];

/// The audit leaves one part in this many of each pending cap free: a quarter.
const HEADROOM_SHARE: u64 = 4;

/// Most fixes a proposal's reason lists one by one.
const REASON_FIXES: usize = 10;

/// Whether a byte may continue a tag (`#tag/child-name_2`).
fn tag_byte(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '/')
}

/// The caps the fixes stage under: `limits`' pending caps less a quarter (at
/// least one proposal), the other limits as they are.
fn with_headroom(limits: &Limits) -> Limits {
    let mut reserved = *limits;
    reserved.pending_max_count =
        limits.pending_max_count.saturating_sub((limits.pending_max_count / HEADROOM_SHARE).max(1));
    reserved.pending_max_bytes = limits.pending_max_bytes - limits.pending_max_bytes / HEADROOM_SHARE;
    reserved
}

/// The fixes left unstaged, by reason.
#[derive(Debug, Default)]
struct Unstaged(BTreeMap<UnstagedReason, u64>);

impl Unstaged {
    fn add(&mut self, reason: UnstagedReason, fixes: u64) {
        if fixes > 0 {
            *self.0.entry(reason).or_default() += fixes;
        }
    }

    /// The counts by reason's name, as `Audit::unstaged` has them.
    fn by_name(self) -> BTreeMap<String, u64> {
        self.0.into_iter().map(|(reason, fixes)| (reason.name().to_owned(), fixes)).collect()
    }
}

/// One kind's batch proposal as it is gathered, note by note.
#[derive(Debug, Default)]
struct Batch {
    items: Vec<BatchItem>,
    /// Its notes, lowercased as pending proposals' paths are compared.
    notes: Vec<String>,
    /// Its fixes: how many, and the summaries of the first.
    fixes: u64,
    summaries: Vec<String>,
}

impl Batch {
    fn add(&mut self, path: &str, base_hash: String, text: String, placed: &Placed) {
        self.items.push(BatchItem::Patch {
            path: path.to_owned(),
            base_hash,
            edits: vec![Edit::ReplaceAll { content: text }],
            reason: None,
        });
        self.notes.push(path.to_lowercase());
        self.fixes += placed.made;
        self.summaries.extend(placed.summaries.iter().cloned());
    }

    /// The proposal's reason, for the person: the kind, how many fixes in how
    /// many notes, and the first fixes.
    fn reason(&self, kind: AuditCheck) -> String {
        let what = match kind {
            AuditCheck::BrokenLink => "links that wrote a note's name differently",
            AuditCheck::BrokenAnchor => "anchors that wrote a heading differently",
            AuditCheck::UnregisteredTag => "tags that wrote a registered tag differently",
            _ => "notes missing from their maps of content",
        };
        let notes = self.items.len();
        let mut listed: Vec<&str> = self.summaries.iter().take(REASON_FIXES).map(String::as_str).collect();
        let more = self.summaries.len().saturating_sub(REASON_FIXES);
        let more = format!("and {more} more");
        if self.summaries.len() > REASON_FIXES {
            listed.push(&more);
        }
        format!(
            "audit_vault fix ({}): {what}, {} in {notes} note{}: {}",
            kind.name(),
            if self.fixes == 1 { "1 fix".to_owned() } else { format!("{} fixes", self.fixes) },
            if notes == 1 { "" } else { "s" },
            listed.join("; ")
        )
    }
}

/// One call's staging: the notes pending proposals change, the notes this
/// call's proposals claimed, the proposals staged and the fixes left out.
struct Staging<'e> {
    engine: &'e Engine,
    limits: Limits,
    /// Lowercased, as [`write::pending_paths`] gives them.
    pending: BTreeSet<String>,
    claimed: BTreeSet<String>,
    staged: Vec<String>,
    left: Unstaged,
}

impl Staging<'_> {
    /// One kind's fixes, by note, made into a batch: each note read now and
    /// its fixes made in it, unless it waits or its fixes have no place.
    fn gather(&mut self, notes: BTreeMap<&str, Vec<&Finding>>) -> Batch {
        let mut batch = Batch::default();
        for (path, fixes) in notes {
            let count = fixes.len() as u64;
            let key = path.to_lowercase();
            if self.pending.contains(&key) {
                self.left.add(UnstagedReason::Pending, count);
                continue;
            }
            // A batch takes each path once, case ignored.
            if self.claimed.contains(&key)
                || batch.notes.contains(&key)
                || batch.items.len() == BATCH_MAX_ITEMS
            {
                self.left.add(UnstagedReason::Later, count);
                continue;
            }
            let (text, hash) = match self.engine.fix_text(path, self.limits.proposal_max_bytes) {
                Ok(read) => read,
                Err(reason) => {
                    self.left.add(reason, count);
                    continue;
                }
            };
            let mut placed = place_fixes(path, &text, &fixes);
            self.left.add(UnstagedReason::CodeOrComment, placed.in_code_or_comment);
            self.left.add(UnstagedReason::NoteChanged, placed.not_found);
            let Some(new_text) = placed.text.take() else { continue };
            if new_text.len() as u64 > self.limits.proposal_max_bytes {
                self.left.add(UnstagedReason::TooLarge, placed.made);
                continue;
            }
            batch.add(path, hash, new_text, &placed);
        }
        batch
    }

    /// Stages `batch`, the fixes of `kind`, under the caps less the headroom;
    /// a batch that does not fit, or whose notes changed meanwhile, is left
    /// out. Any other failure is an error when nothing was staged yet.
    fn stage(&mut self, kind: AuditCheck, batch: Batch) -> Result<()> {
        let args = ProposeBatchArgs { reason: batch.reason(kind), items: batch.items };
        match self.engine.propose_batch_within(&args, &with_headroom(&self.limits)) {
            Ok(result) => {
                self.staged.push(result.proposal_id);
                self.claimed.extend(batch.notes);
            }
            Err(error) => match error.code {
                ErrorCode::TooLarge => self.left.add(UnstagedReason::InboxHeadroom, batch.fixes),
                ErrorCode::StaleBase | ErrorCode::NotFound => {
                    self.left.add(UnstagedReason::NoteChanged, batch.fixes);
                }
                _ if self.staged.is_empty() => return Err(error),
                _ => self.left.add(UnstagedReason::Later, batch.fixes),
            },
        }
        Ok(())
    }
}

impl Engine {
    /// Stages the mechanical fixes among `findings` (see the module docs): the
    /// ids of the proposals staged, one per kind, and the fixes left unstaged
    /// by reason. An error only when nothing was staged and staging failed for
    /// another reason than the notes or the inbox's room.
    pub(crate) fn stage_fixes(&self, findings: &[Finding]) -> Result<(Vec<String>, BTreeMap<String, u64>)> {
        let mut left = Unstaged::default();
        let mut by_kind: BTreeMap<usize, BTreeMap<&str, Vec<&Finding>>> = BTreeMap::new();
        for finding in findings {
            let Some(fix) = &finding.fix else { continue };
            match KINDS.iter().position(|kind| *kind == finding.check) {
                // A canvas is JSON: no fix is written into it as Markdown.
                Some(kind) if fix.mechanical && !is_canvas(&fix.path) => {
                    by_kind.entry(kind).or_default().entry(fix.path.as_str()).or_default().push(finding);
                }
                _ => left.add(UnstagedReason::Suggestion, 1),
            }
        }
        if by_kind.is_empty() {
            return Ok((Vec::new(), left.by_name()));
        }
        let mut staging = Staging {
            engine: self,
            limits: self.config().limits,
            pending: write::pending_paths(&self.sandbox())?,
            claimed: BTreeSet::new(),
            staged: Vec::new(),
            left,
        };
        for (kind, notes) in by_kind {
            let batch = staging.gather(notes);
            if !batch.items.is_empty() {
                staging.stage(KINDS[kind], batch)?;
            }
        }
        Ok((staging.staged, staging.left.by_name()))
    }

    /// The note's text and hash, read whole up to `max_bytes`; else why not.
    fn fix_text(&self, path: &str, max_bytes: u64) -> std::result::Result<(String, String), UnstagedReason> {
        let note = NotePath::parse(path).map_err(|_| UnstagedReason::NoteChanged)?;
        let bytes = self.sandbox().read(&note, max_bytes).map_err(|error| match error.code {
            ErrorCode::TooLarge => UnstagedReason::TooLarge,
            _ => UnstagedReason::NoteChanged,
        })?;
        let text = decode_note(&bytes).map_err(|_| UnstagedReason::NoteChanged)?.to_owned();
        Ok((text, content_hash(&bytes)))
    }
}

/// The fixes of one note made in its text.
#[derive(Debug, Default)]
struct Placed {
    /// The text with them made; `None` when none could be.
    text: Option<String>,
    /// A summary of each fix made.
    summaries: Vec<String>,
    /// How many fixes were made.
    made: u64,
    /// How many were found only inside code or a comment.
    in_code_or_comment: u64,
    /// How many were not found at all.
    not_found: u64,
}

/// Makes `fixes` (all for the note at `path`) in `text`, as the module docs say.
fn place_fixes(path: &str, text: &str, fixes: &[&Finding]) -> Placed {
    let mut placed = Placed::default();
    let Ok(note) = NotePath::parse(path) else {
        placed.not_found = fixes.len() as u64;
        return placed;
    };
    let spans = note_spans(&note, text);
    let mut replacements: Vec<(Span, String)> = Vec::new();
    // Each line to append, with the summary of its fix; and for a fix asking
    // for a line already asked for, that line's place.
    let mut appended: Vec<(String, String)> = Vec::new();
    let mut repeated: Vec<usize> = Vec::new();
    for finding in fixes {
        let Some(fix) = &finding.fix else { continue };
        let before = replacements.len();
        let mut hidden = 0;
        match (finding.check, fix.old.as_deref()) {
            (AuditCheck::BrokenLink, Some(old)) => {
                for link in
                    spans.links.iter().filter(|l| Some(l.link.line) == finding.line && l.link.target == old)
                {
                    // In a property's quotes, escaped as they need (never a broken value).
                    if let Some(new) = link.encode(&fix.new) {
                        replacements.push((link.target, new.into_owned()));
                    }
                }
            }
            (AuditCheck::BrokenAnchor, Some(old)) => {
                for link in spans.links.iter().filter(|l| Some(l.link.line) == finding.line) {
                    let Some(anchor) = link.anchor else { continue };
                    let Some(new) = link.encode(&fix.new) else { continue };
                    let written = anchor.of(text);
                    if written == old {
                        replacements.push((anchor, new.into_owned()));
                    } else if let Some(head) = written.strip_suffix(old).filter(|h| h.ends_with('#')) {
                        let start = anchor.start + head.len();
                        replacements.push((Span { start, end: anchor.end }, new.into_owned()));
                    }
                }
            }
            (AuditCheck::UnregisteredTag, Some(old)) => {
                for tag in spans.tags.iter().filter(|t| t.tag.eq_ignore_ascii_case(old)) {
                    replacements.push((tag.span, format!("#{}", fix.new)));
                }
                for key in frontmatter_keys(text).iter().filter(|k| k.key == "tags" || k.key == "tag") {
                    let entry = Span { start: key.span.end, end: key.entry.end };
                    let mut outside = 0;
                    for part in outside_yaml_comments(text, entry) {
                        for at in tag_occurrences(part.of(text), old) {
                            let start = part.start + at;
                            replacements.push((Span { start, end: start + old.len() }, fix.new.clone()));
                            outside += 1;
                        }
                    }
                    hidden += tag_occurrences(entry.of(text), old).len() - outside;
                }
            }
            (AuditCheck::MocMissing, None) => {
                if let Some(first) = appended.iter().position(|(line, _)| *line == fix.new) {
                    repeated.push(first);
                } else if text.contains(&fix.new) {
                    placed.not_found += 1;
                } else {
                    appended.push((fix.new.clone(), fix.summary.clone()));
                }
                continue;
            }
            _ => {}
        }
        if replacements.len() > before {
            placed.made += 1;
            placed.summaries.push(fix.summary.clone());
        } else if hidden > 0 {
            placed.in_code_or_comment += 1;
        } else {
            placed.not_found += 1;
        }
    }
    replacements.sort_by_key(|(span, _)| (span.start, span.end));
    replacements.dedup_by_key(|(span, _)| span.start);
    // Overlapping replacements would garble the text: keep the first of each.
    let mut out = replace_spans(text, replacements.iter().map(|(span, new)| (*span, new.as_str())));
    if !appended.is_empty() {
        let (with_lines, read_as_links) = append_lines(&note, out, &appended);
        out = with_lines;
        for ((_, summary), read) in appended.iter().zip(&read_as_links) {
            if *read {
                placed.made += 1;
                placed.summaries.push(summary.clone());
            } else {
                placed.in_code_or_comment += 1;
            }
        }
        for first in repeated {
            if read_as_links[first] {
                placed.made += 1;
            } else {
                placed.in_code_or_comment += 1;
            }
        }
    }
    placed.summaries.dedup();
    if out != text {
        placed.text = Some(out);
    }
    placed
}

/// `text` with `lines` appended, each on its own line, and for each whether it
/// was: only the lines the note, scanned again with them, reads as links. A
/// line that is not read as a link lies inside code or a comment left open at
/// the note's end, and so would every line after it.
fn append_lines(note: &NotePath, text: String, lines: &[(String, String)]) -> (String, Vec<bool>) {
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let with = |keep: &dyn Fn(usize) -> bool| {
        let mut out = text.clone();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push_str(newline);
        }
        let mut places = Vec::new();
        for (k, (line, _)) in lines.iter().enumerate().filter(|(k, _)| keep(*k)) {
            places.push((k, Span { start: out.len(), end: out.len() + line.len() }));
            out.push_str(line);
            out.push_str(newline);
        }
        (out, places)
    };
    let (all, places) = with(&|_| true);
    let links = note_spans(note, &all).links;
    let read: Vec<bool> = places
        .iter()
        .map(|(_, place)| links.iter().any(|l| l.span.start >= place.start && l.span.end <= place.end))
        .collect();
    if read.iter().all(|r| *r) {
        return (all, read);
    }
    if !read.iter().any(|r| *r) {
        return (text, read);
    }
    (with(&|k| read[k]).0, read)
}

/// Where `old` is written as a whole tag in `written` (a frontmatter value):
/// not inside a longer tag on either side (`gitt` is not in `gitter` or
/// `work/gitt`); byte offsets.
fn tag_occurrences(written: &str, old: &str) -> Vec<usize> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = written[from..].find(old).map(|at| from + at) {
        let end = at + old.len();
        let prev = written[..at].chars().next_back();
        let next = written[end..].chars().next();
        if !prev.is_some_and(tag_byte) && !next.is_some_and(tag_byte) {
            found.push(at);
        }
        from = end;
    }
    found
}

/// The parts of a frontmatter entry outside YAML comments: each of its lines
/// up to a `#` that starts the line or follows a space or tab, outside quotes.
fn outside_yaml_comments(text: &str, entry: Span) -> Vec<Span> {
    let mut parts = Vec::new();
    let mut start = entry.start;
    for line in entry.of(text).split_inclusive('\n') {
        let mut end = start + line.len();
        let mut quote: Option<char> = None;
        let mut escaped = false;
        let mut prev: Option<char> = None;
        for (at, c) in line.char_indices() {
            match quote {
                Some('"') if escaped => escaped = false,
                Some('"') if c == '\\' => escaped = true,
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None if matches!(c, '"' | '\'')
                    && prev.is_none_or(|p| p.is_whitespace() || matches!(p, '[' | '{' | ',' | ':')) =>
                {
                    quote = Some(c);
                }
                None if c == '#' && prev.is_none_or(|p| p == ' ' || p == '\t') => {
                    end = start + at;
                    break;
                }
                None => {}
            }
            prev = Some(c);
        }
        parts.push(Span { start, end });
        start += line.len();
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(text: &str) -> Vec<&str> {
        outside_yaml_comments(text, Span { start: 0, end: text.len() }).iter().map(|s| s.of(text)).collect()
    }

    #[test]
    fn yaml_comments_are_cut_off_outside_quotes() {
        assert_eq!(parts(": [a, b] # a note\n"), [": [a, b] "]);
        assert_eq!(parts(":\n  - a\n  # a gone\n  - b#c\n"), [":\n", "  - a\n", "  ", "  - b#c\n"]);
        assert_eq!(parts(": ['a # b', \"c \\\" # d\"] # e"), [": ['a # b', \"c \\\" # d\"] "]);
        assert_eq!(parts("# all comment\n"), [""]);
    }

    #[test]
    fn a_tag_is_found_only_whole() {
        assert_eq!(tag_occurrences("[gitt, gitter, work/gitt, \"#gitt\"]", "gitt"), [1, 28]);
    }

    #[test]
    fn headroom_leaves_a_quarter_free() {
        let limits = Limits { pending_max_count: 100, pending_max_bytes: 1000, ..Limits::default() };
        let reserved = with_headroom(&limits);
        assert_eq!((reserved.pending_max_count, reserved.pending_max_bytes), (75, 750));
        let tiny = with_headroom(&Limits { pending_max_count: 2, ..Limits::default() });
        assert_eq!(tiny.pending_max_count, 1);
    }
}
