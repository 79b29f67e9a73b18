//! `audit_vault {fix: true}`: the audit's mechanical fixes staged as patch
//! proposals, one per note, never written to a note directly.
//!
//! Only fixes their finding calls mechanical are staged (`Fix::mechanical`,
//! decided where the fix is made, by the rule of `spelling.rs`): a broken
//! link, a broken anchor or an unregistered tag that wrote the one note name,
//! heading or registered tag differently, and the line a map of content lacks.
//! Every other fix stays a suggestion, for a person to judge.
//!
//! Nothing is written inside code or a comment. Links and inline tags come
//! from the scanner, which reads no code fence (closed or not), code span or
//! HTML comment, so replacing one writes in text by construction. In the
//! frontmatter's `tags` a tag is replaced only outside YAML comments. A line
//! for a map of content is appended only when the note, scanned again with it,
//! reads it as a link: a note ending inside an unclosed fence or comment would
//! swallow it as code.
//!
//! Each note's fixes are made afresh from the note as it is now, through its
//! spans (the vault's Markdown model): a broken link's target, a broken anchor,
//! a tag written inline or in the frontmatter's `tags`, a line appended to a map
//! of content. The new text goes through `propose_note_patch` with the hash the
//! note was read at, so the person reviews one diff per note, and an apply
//! refuses it if the note changed since. A fix whose text is no longer where the
//! audit found it is left out.

use std::collections::BTreeMap;

use crate::engine::Engine;
use crate::engine::types::{AuditCheck, Finding, ProposePatchArgs};
use crate::error::Result;
use crate::sandbox::NotePath;
use crate::vault::{Span, content_hash, decode_note, frontmatter_keys, note_spans};
use crate::write::Edit;

/// Largest note a fix is staged for.
const FIX_MAX: u64 = 16 << 20;

/// Whether a byte may continue a tag (`#tag/child-name_2`).
fn tag_byte(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '/')
}

impl Engine {
    /// Stages one patch proposal per note that has mechanical fixes among `findings`;
    /// returns their ids. Stops at the first proposal that cannot be staged (the
    /// inbox full, say): the error when none was staged, else the ids so far.
    pub(crate) fn stage_fixes(&self, findings: &[Finding]) -> Result<Vec<String>> {
        let mut by_note: BTreeMap<&str, Vec<&Finding>> = BTreeMap::new();
        for finding in findings {
            if let Some(fix) = finding.fix.as_ref().filter(|fix| fix.mechanical) {
                by_note.entry(fix.path.as_str()).or_default().push(finding);
            }
        }
        let mut staged = Vec::new();
        for (path, fixes) in by_note {
            let Some((text, hash)) = self.fix_text(path) else { continue };
            let Some((new_text, summaries)) = fixed_text(path, &text, &fixes) else { continue };
            let args = ProposePatchArgs {
                path: path.to_owned(),
                base_hash: hash,
                reason: format!("audit_vault: {}", summaries.join("; ")),
                edits: vec![Edit::ReplaceAll { content: new_text }],
            };
            match self.propose_note_patch(&args) {
                Ok(result) => staged.push(result.proposal_id),
                Err(error) if staged.is_empty() => return Err(error),
                Err(_) => break,
            }
        }
        Ok(staged)
    }

    fn fix_text(&self, path: &str) -> Option<(String, String)> {
        let note = NotePath::parse(path).ok()?;
        let bytes = self.sandbox().read(&note, FIX_MAX).ok()?;
        let text = decode_note(&bytes).ok()?.to_owned();
        Some((text, content_hash(&bytes)))
    }
}

/// The note's text with its fixes made, and a summary of each fix made; `None`
/// when none could be made.
fn fixed_text(path: &str, text: &str, fixes: &[&Finding]) -> Option<(String, Vec<String>)> {
    let note = NotePath::parse(path).ok()?;
    let spans = note_spans(&note, text);
    let mut replacements: Vec<(Span, String)> = Vec::new();
    // Each line to append, with the summary of its fix.
    let mut appended: Vec<(String, String)> = Vec::new();
    let mut summaries: Vec<String> = Vec::new();
    for finding in fixes {
        let Some(fix) = &finding.fix else { continue };
        let before = replacements.len();
        match (finding.check, fix.old.as_deref()) {
            (AuditCheck::BrokenLink, Some(old)) => {
                for link in
                    spans.links.iter().filter(|l| Some(l.link.line) == finding.line && l.link.target == old)
                {
                    replacements.push((link.target, fix.new.clone()));
                }
            }
            (AuditCheck::BrokenAnchor, Some(old)) => {
                for link in spans.links.iter().filter(|l| Some(l.link.line) == finding.line) {
                    let Some(anchor) = link.anchor else { continue };
                    let written = anchor.of(text);
                    if written == old {
                        replacements.push((anchor, fix.new.clone()));
                    } else if let Some(head) = written.strip_suffix(old).filter(|h| h.ends_with('#')) {
                        let start = anchor.start + head.len();
                        replacements.push((Span { start, end: anchor.end }, fix.new.clone()));
                    }
                }
            }
            (AuditCheck::UnregisteredTag, Some(old)) => {
                for tag in spans.tags.iter().filter(|t| t.tag.eq_ignore_ascii_case(old)) {
                    replacements.push((tag.span, format!("#{}", fix.new)));
                }
                for key in frontmatter_keys(text).iter().filter(|k| k.key == "tags" || k.key == "tag") {
                    let entry = Span { start: key.span.end, end: key.entry.end };
                    for part in outside_yaml_comments(text, entry) {
                        for at in tag_occurrences(part.of(text), old) {
                            let start = part.start + at;
                            replacements.push((Span { start, end: start + old.len() }, fix.new.clone()));
                        }
                    }
                }
            }
            (AuditCheck::MocMissing, None)
                if !text.contains(&fix.new) && !appended.iter().any(|(line, _)| *line == fix.new) =>
            {
                appended.push((fix.new.clone(), fix.summary.clone()));
                continue;
            }
            _ => {}
        }
        if replacements.len() > before {
            summaries.push(fix.summary.clone());
        }
    }
    replacements.sort_by_key(|(span, _)| (span.start, span.end));
    replacements.dedup_by_key(|(span, _)| span.start);
    // Overlapping replacements would garble the text: keep the first of each.
    let mut kept: Vec<(Span, String)> = Vec::new();
    for (span, new) in replacements {
        if kept.last().is_none_or(|(last, _)| last.end <= span.start) {
            kept.push((span, new));
        }
    }
    let mut out = String::with_capacity(text.len() + 64);
    let mut at = 0;
    for (span, new) in &kept {
        out.push_str(&text[at..span.start]);
        out.push_str(new);
        at = span.end;
    }
    out.push_str(&text[at..]);
    if !appended.is_empty() {
        let (with_lines, read_as_links) = append_lines(&note, out, &appended);
        out = with_lines;
        for ((_, summary), read) in appended.iter().zip(read_as_links) {
            if read {
                summaries.push(summary.clone());
            }
        }
    }
    summaries.dedup();
    (out != text).then_some((out, summaries))
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
}
