//! The checks that read notes' text: the `[lint]` frontmatter rules, empty
//! notes (only notes small and bare enough to be empty are read), each file
//! once, in parallel; and unlinked mentions, from what the engine keeps of
//! each note's prose (`mentions/`), read again only where a note changed.

use rayon::prelude::*;

use super::Scope;
use super::findings::{Findings, Mention};
use crate::engine::Engine;
use crate::engine::types::{AuditCheck, Finding};
use crate::sandbox::NotePath;
use crate::vault::{NoteRecord, body_offset, decode_note, is_canvas, is_pdf, parse_frontmatter};

/// Largest file the text checks read.
const TEXT_MAX: u64 = 16 << 20;
/// Notes at most this large, with no link and at most one heading, are read to
/// see whether they are empty.
const EMPTY_CANDIDATE_MAX: u64 = 4096;

impl Engine {
    /// The findings of the text checks `run` asks for, for the notes in scope:
    /// unlinked mentions apart, in order.
    pub(super) fn text_checks(
        &self,
        scope: &Scope<'_>,
        run: &(dyn Fn(AuditCheck) -> bool + Sync),
    ) -> (Findings, Vec<Mention>) {
        let (records, config) = (scope.records, scope.config);
        let lint = run(AuditCheck::Frontmatter) && !config.lint.is_empty();
        let empty = run(AuditCheck::EmptyNote);
        let to_read: Vec<usize> = scope
            .in_scope
            .iter()
            .copied()
            // A canvas has no frontmatter, and its body is JSON.
            .filter(|&i| !is_canvas(&records[i].path) && !is_pdf(&records[i].path))
            .filter(|&i| lint || (empty && could_be_empty(&records[i])))
            .collect();
        let sandbox = self.sandbox();
        let read: Vec<Finding> = crate::engine::timing::time("audit_text", || {
            to_read
                .par_iter()
                .flat_map_iter(|&i| {
                    let record = &records[i];
                    let Ok(path) = NotePath::parse(&record.path) else { return Vec::new() };
                    let Ok(bytes) = sandbox.read(&path, TEXT_MAX) else { return Vec::new() };
                    let Ok(text) = decode_note(&bytes) else { return Vec::new() };
                    let mut out = Findings::default();
                    if lint {
                        let value =
                            parse_frontmatter(text).map(|f| f.value).unwrap_or(serde_json::Value::Null);
                        for problem in config.lint.check(&record.path, &value) {
                            out.push(AuditCheck::Frontmatter, &record.path, None, problem.message, None);
                        }
                    }
                    if empty && could_be_empty(record) && is_empty(record, text) {
                        let message = "nothing but frontmatter and a title".to_owned();
                        out.push(AuditCheck::EmptyNote, &record.path, None, message, None);
                    }
                    out.0
                })
                .collect()
        });
        if !run(AuditCheck::UnlinkedMention) {
            return (Findings(read), Vec::new());
        }
        let mentions = crate::engine::timing::time("audit_mentions", || {
            self.mentions.find(
                &sandbox,
                Some(self.index.folder()),
                records,
                || scope.graph(),
                &scope.in_scope,
            )
        });
        (Findings(read), mentions)
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
