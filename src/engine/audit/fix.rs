//! `audit_vault {fix: true}`: the audit's mechanical fixes staged as patch
//! proposals, one per note, never written to a note directly.
//!
//! Only fixes their finding calls mechanical are staged (`Fix::mechanical`,
//! decided where the fix is made, by the rule of `spelling.rs`): a broken
//! link, a broken anchor or an unregistered tag that wrote the one note name,
//! heading or registered tag differently, and the line a map of content lacks.
//! Every other fix stays a suggestion, for a person to judge.
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
    let mut appended: Vec<String> = Vec::new();
    let mut summaries: Vec<String> = Vec::new();
    for finding in fixes {
        let Some(fix) = &finding.fix else { continue };
        let before = replacements.len() + appended.len();
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
                    let written = entry.of(text);
                    let mut from = 0;
                    while let Some(at) = written[from..].find(old).map(|at| from + at) {
                        let end = at + old.len();
                        let prev = written[..at].chars().next_back();
                        let next = written[end..].chars().next();
                        if !prev.is_some_and(|c| tag_byte(c) && c != '/') && !next.is_some_and(tag_byte) {
                            let start = entry.start + at;
                            replacements.push((Span { start, end: start + old.len() }, fix.new.clone()));
                        }
                        from = end;
                    }
                }
            }
            (AuditCheck::MocMissing, None) if !text.contains(&fix.new) && !appended.contains(&fix.new) => {
                appended.push(fix.new.clone());
            }
            _ => {}
        }
        if replacements.len() + appended.len() > before {
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
    if kept.is_empty() && appended.is_empty() {
        return None;
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
        let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
        if !out.is_empty() && !out.ends_with('\n') {
            out.push_str(newline);
        }
        for line in appended {
            out.push_str(&line);
            out.push_str(newline);
        }
    }
    summaries.dedup();
    Some((out, summaries))
}
