//! The sections of the conventions skill written from the catalog and
//! `kb.toml`: where notes go (the roots and a table of folders), the
//! frontmatter rules of `[lint]` in words, and the tags the registry allows.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use crate::engine::Engine;
use crate::engine::bounded::cut_chars;
use crate::sandbox::Policy;
use crate::vault::{LintRules, NoteKind, NoteRecord, ValueType};

/// Folder rows in the layout table (top folders and their subfolders).
const FOLDER_ROWS: usize = 40;
/// Bytes the registered tags may take; the rest are counted.
const TAGS_BYTES: usize = 6 * 1024;
/// Unregistered tags in use named (the most used first).
const UNREGISTERED_SHOWN: usize = 20;

impl Engine {
    /// The registered tags (or, without a registry, those most in use) and the
    /// unregistered ones in use.
    pub(super) fn tags_section(&self, catalog: &crate::engine::Catalog, registry: Option<&str>) -> String {
        let mut out = String::new();
        let tally = catalog.tags();
        let counts: BTreeMap<&str, (&str, u64)> =
            tally.iter().map(|t| (t.key.as_str(), (t.shown.as_str(), t.notes))).collect();
        let Some(registry) = registry else {
            let mut used: Vec<(&str, u64)> = counts.values().copied().collect();
            used.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
            if used.is_empty() {
                out.push_str(
                    "No tag registry (`[tags] registry` in `kb.toml`), and no note carries a tag.\n",
                );
                return out;
            }
            out.push_str(
                "No tag registry (`[tags] registry` in `kb.toml`): prefer the tags already in use. The most used:\n\n",
            );
            push_tags(&mut out, used.iter().map(|(tag, count)| (*tag, *count)), used.len());
            return out;
        };
        let mut registered: Vec<(String, String)> = catalog
            .get(registry)
            .map(|r| r.tags.iter().map(|t| (t.to_lowercase(), t.clone())).collect())
            .unwrap_or_default();
        registered.sort();
        registered.dedup_by(|a, b| a.0 == b.0);
        if registered.is_empty() {
            let _ = writeln!(
                out,
                "The tag registry is `{registry}`, and it lists no tag yet: propose adding a tag there before \
                 you use it."
            );
        } else {
            let _ = writeln!(
                out,
                "Use only the {} tags the registry `{registry}` lists (in frontmatter without `#`; nested tags \
                 with `/`). To use another, propose adding it to the registry first. Registered, with the notes \
                 carrying each:\n",
                registered.len()
            );
            let shown = registered
                .iter()
                .map(|(key, tag)| (tag.as_str(), counts.get(key.as_str()).map_or(0, |(_, count)| *count)));
            push_tags(&mut out, shown, registered.len());
        }
        let mut unregistered: Vec<(&str, u64)> = counts
            .iter()
            .filter(|(key, _)| registered.binary_search_by(|(k, _)| k.as_str().cmp(key)).is_err())
            .map(|(_, (tag, count))| (*tag, *count))
            .collect();
        if !unregistered.is_empty() {
            unregistered.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
            let named: Vec<String> = unregistered
                .iter()
                .take(UNREGISTERED_SHOWN)
                .map(|(tag, count)| format!("`{}` ({count})", cut_chars(tag, 60)))
                .collect();
            let more = unregistered.len().saturating_sub(UNREGISTERED_SHOWN);
            let _ = writeln!(
                out,
                "\nIn use but not registered (do not add more): {}{}.",
                named.join(", "),
                if more > 0 {
                    format!(" and {more} more (`audit_vault {{\"checks\": [\"unregistered_tag\"]}}`)")
                } else {
                    String::new()
                }
            );
        }
        out
    }
}

/// Where notes go: the roots `kb.toml` names, then the folders with counts.
pub(super) fn layout_section(policy: &Policy, records: &[Arc<NoteRecord>]) -> String {
    let mut out = String::new();
    let roots = |folders: &[String]| -> String {
        folders.iter().map(|f| format!("`{}/`", f)).collect::<Vec<_>>().join(", ")
    };
    if policy.notes.iter().any(String::is_empty) {
        out.push_str("- Notes: anywhere in the vault outside the folders below that are read-only.\n");
    } else {
        let _ = writeln!(out, "- Notes live under {} (new notes go there).", roots(&policy.notes));
    }
    if !policy.standards.is_empty() {
        let _ = writeln!(out, "- Standards, read-only: {}.", roots(&policy.standards));
    }
    if !policy.read_also.is_empty() {
        let _ = writeln!(out, "- Also readable, read-only: {}.", roots(&policy.read_also));
    }
    if !policy.inbox.is_empty() {
        let _ = writeln!(
            out,
            "- Proposals wait in `{}/` until the person applies them; the propose tools stage them there, \
             never name it as a target.",
            policy.inbox
        );
    }
    out.push('\n');
    out.push_str(&folder_table(records));
    out
}

/// The `[lint]` rules, in words.
pub(super) fn lint_section(lint: &LintRules) -> String {
    let mut out = String::new();
    if lint.is_empty() {
        out.push_str(
            "`kb.toml` sets no frontmatter rules; the standards below say which keys notes carry.\n",
        );
    } else {
        for rules in &lint.folders {
            if rules.required.is_empty() && rules.types.is_empty() {
                continue;
            }
            let whose = if rules.folder.is_empty() {
                "Every note".to_owned()
            } else {
                format!("Notes under `{}/`", rules.folder)
            };
            if !rules.required.is_empty() {
                let keys: Vec<String> = rules.required.iter().map(|k| format!("`{k}`")).collect();
                let _ = writeln!(out, "- {whose} must carry {} (not empty).", keys.join(", "));
            }
            for (key, kind) in &rules.types {
                let _ = writeln!(out, "- {whose}: `{key}`, where present, is {}.", value_type(kind));
            }
        }
        out.push_str("\n`audit_vault {\"checks\": [\"frontmatter\"]}` lists the notes that break them.\n");
    }
    out
}

/// The folders notes are in, down to the second level, with what each holds.
fn folder_table(records: &[Arc<NoteRecord>]) -> String {
    // For each folder: notes, standards, other readable files (below it).
    let mut folders: BTreeMap<String, [u64; 3]> = BTreeMap::new();
    for record in records {
        let column = match record.kind {
            NoteKind::Note => 0,
            NoteKind::Standard => 1,
            NoteKind::ReadAlso => 2,
        };
        let mut parts = record.folder().split('/').filter(|p| !p.is_empty());
        match parts.next() {
            None => folders.entry(String::new()).or_default()[column] += 1,
            Some(top) => {
                folders.entry(top.to_owned()).or_default()[column] += 1;
                if let Some(second) = parts.next() {
                    folders.entry(format!("{top}/{second}")).or_default()[column] += 1;
                }
            }
        }
    }
    if folders.is_empty() {
        return "The vault holds no notes yet.\n".to_owned();
    }
    let mut out = String::from("| folder | holds (with its subfolders) |\n|---|---|\n");
    for (folder, [notes, standards, other]) in folders.iter().take(FOLDER_ROWS) {
        let mut holds = Vec::new();
        for (count, one, many) in [
            (*notes, "note", "notes"),
            (*standards, "standard", "standards"),
            (*other, "read-only file", "read-only files"),
        ] {
            if count > 0 {
                holds.push(format!("{count} {}", if count == 1 { one } else { many }));
            }
        }
        let name = if folder.is_empty() { "(the vault's top)".to_owned() } else { format!("`{folder}/`") };
        let _ = writeln!(out, "| {name} | {} |", holds.join(", "));
    }
    if folders.len() > FOLDER_ROWS {
        let _ = writeln!(
            out,
            "\n…and {} more folders: `list_notes {{\"folder\": \"…\"}}` walks them.",
            folders.len() - FOLDER_ROWS
        );
    }
    out
}

/// What a `[lint]` type asks of a value, in words.
fn value_type(kind: &ValueType) -> String {
    match kind {
        ValueType::String => "a string".to_owned(),
        ValueType::List => "a list".to_owned(),
        ValueType::Date => "a date like 2026-03-01".to_owned(),
        ValueType::OneOf(words) => {
            let words: Vec<String> = words.iter().map(|w| format!("`{w}`")).collect();
            format!("one of {}", words.join(", "))
        }
    }
}

/// Tags with counts, one run of text, within [`TAGS_BYTES`]; `total` counts them all.
fn push_tags<'a>(out: &mut String, tags: impl Iterator<Item = (&'a str, u64)>, total: usize) {
    let mut line = String::new();
    let mut shown = 0;
    for (tag, count) in tags {
        let item = format!("`{}` ({count})", cut_chars(tag, 60));
        if line.len() + item.len() + 2 > TAGS_BYTES {
            break;
        }
        if !line.is_empty() {
            line.push_str(", ");
        }
        line.push_str(&item);
        shown += 1;
    }
    out.push_str(&line);
    if shown < total {
        let _ = write!(out, ", and {} more (`list_tags`)", total - shown);
    }
    out.push_str(".\n");
}
