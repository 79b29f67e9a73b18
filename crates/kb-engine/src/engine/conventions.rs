//! The vault's conventions as an Agent Skill (`SKILL.md`): what an agent should
//! load before it writes, generated from the vault itself. Its folder layout
//! (where notes go, with counts), the frontmatter rules of `kb.toml`'s `[lint]`,
//! the tags the registry allows, and the text of its standards, each standard
//! cut to its share of a 32 KiB page with the `read_note` call that reads on.
//!
//! The text is built again on every call from the catalog, the configuration in
//! force and the standards as they are on disk (read through `read_note`, so
//! the sandbox decides), so it changes exactly when they do, and it holds
//! nothing else that changes (no clock, no index state): the same vault gives
//! the same bytes, which is what lets a host pin it by digest. How it is served
//! (the skills extension of MCP) is the server's business, not the engine's.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::engine::Engine;
use crate::engine::bounded::cut_chars;
use crate::engine::types::ReadNoteArgs;
use crate::error::Result;
use crate::sandbox::Policy;
use crate::vault::{LintRules, NoteKind, NoteRecord, ValueType, parse_frontmatter};

/// The generated skill's name (its frontmatter `name`, and the folder a host
/// keeps it in).
pub const CONVENTIONS_SKILL_NAME: &str = "vault-conventions";

/// The generated skill's frontmatter `description`: when to load it.
pub const CONVENTIONS_SKILL_DESCRIPTION: &str = "The conventions of this vault, generated from the vault \
itself - its standards, the frontmatter rules of its kb.toml, its registered tags and its folder layout. \
Load it before you propose a new note or a change, so that what you write follows the person's own rules.";

/// The most the generated skill holds, in bytes.
pub const CONVENTIONS_SKILL_MAX_BYTES: usize = 32 * 1024;

/// Folder rows in the layout table (top folders and their subfolders).
const FOLDER_ROWS: usize = 40;
/// Bytes the registered tags may take; the rest are counted.
const TAGS_BYTES: usize = 6 * 1024;
/// Unregistered tags in use named (the most used first).
const UNREGISTERED_SHOWN: usize = 20;
/// Standards whose text is quoted; later ones are listed by title only.
const STANDARDS_QUOTED: usize = 40;
/// Kept free for the closing section and the last cut notice.
const FOOTER_BYTES: usize = 1024;
/// The smallest share of text worth quoting from one standard.
const MIN_SHARE: usize = 256;
/// Bytes kept for the line after a cut quote (the `read_note` call), besides the path.
const CUT_LINE_BYTES: usize = 120;
/// Bytes read past a standard's share, for its frontmatter.
const FRONTMATTER_SLACK: u64 = 4096;

impl Engine {
    /// The vault's conventions skill: a `SKILL.md` (YAML frontmatter with
    /// [`CONVENTIONS_SKILL_NAME`] and [`CONVENTIONS_SKILL_DESCRIPTION`], then
    /// Markdown) of at most [`CONVENTIONS_SKILL_MAX_BYTES`], built from the
    /// vault as it is now. A standard that cannot be read is named with why.
    pub fn conventions_skill(&self) -> Result<String> {
        let catalog = self.catalog();
        let config = self.config();
        let policy = self.policy();
        let records = catalog.records();

        let mut out = String::new();
        let _ = write!(
            out,
            "---\nname: {CONVENTIONS_SKILL_NAME}\ndescription: {CONVENTIONS_SKILL_DESCRIPTION}\n---\n\n\
             # The conventions of this vault\n\n\
             kb-mcp wrote this page from the vault itself: its standards, its `kb.toml` and its tag \
             registry. It changes when they do. Follow it in every note you propose; where it cuts a \
             standard short, read the rest with `read_note` before you write. The standards are the \
             person's own words and win over anything else here; links inside them lead to notes of \
             the vault (read them with `read_note`), not to files of this skill."
        );

        heading(&mut out, "Where notes go");
        out.push_str(&layout_section(&policy, records));
        heading(&mut out, "Frontmatter rules (`kb.toml` `[lint]`)");
        out.push_str(&lint_section(&config.lint));

        heading(&mut out, "Tags");
        out.push_str(&self.tags_section(&catalog, config.tag_registry.as_deref()));

        heading(&mut out, "Standards");
        let standards: Vec<&NoteRecord> =
            records.iter().filter(|r| r.kind == NoteKind::Standard).map(|r| &**r).collect();
        if standards.is_empty() {
            out.push_str("This vault has no standards (`[vault] standards` in `kb.toml`).\n");
        } else {
            let budget = CONVENTIONS_SKILL_MAX_BYTES.saturating_sub(out.len() + FOOTER_BYTES);
            out.push_str(&self.standards_section(&standards, budget));
        }

        heading(&mut out, "Before you write");
        out.push_str(
            "Search for a note that already covers the subject (`search_knowledge`) and extend it rather \
             than add a second one; link the new note to the notes it builds on; then propose it and stop \
             for the person's approval.\n",
        );
        Ok(cut_to(out, CONVENTIONS_SKILL_MAX_BYTES))
    }

    /// The registered tags (or, without a registry, those most in use) and the
    /// unregistered ones in use.
    fn tags_section(&self, catalog: &crate::engine::Catalog, registry: Option<&str>) -> String {
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

    /// Each standard's title, description and text, the text shared out of
    /// `budget` bytes and quoted, cut with the `read_note` call that reads on.
    fn standards_section(&self, standards: &[&NoteRecord], budget: usize) -> String {
        let heads: Vec<String> = standards.iter().map(|record| standard_head(record)).collect();
        let mut out = String::new();
        let quoted = standards.len().min(STANDARDS_QUOTED);
        let heads_bytes: usize = heads.iter().map(String::len).sum();
        // Each quoted standard may end with a line saying where to read on.
        let cut_lines: usize = standards[..quoted].iter().map(|r| CUT_LINE_BYTES + r.path.len()).sum();
        let text_budget = budget.saturating_sub(heads_bytes + cut_lines + 200);
        if text_budget < quoted * MIN_SHARE {
            // Too many standards to quote: name as many as fit.
            for (shown, head) in heads.iter().enumerate() {
                if out.len() + head.len() + 200 > budget {
                    let _ = writeln!(
                        out,
                        "…and {} more standards: `list_standards` lists them all.",
                        heads.len() - shown
                    );
                    break;
                }
                out.push_str(head);
            }
            return out;
        }
        let shares =
            shares(&standards[..quoted].iter().map(|r| r.size as usize).collect::<Vec<_>>(), text_budget);
        for (at, record) in standards.iter().enumerate() {
            out.push_str(&heads[at]);
            if at >= quoted {
                continue;
            }
            out.push_str(&self.standard_text(record, shares[at]));
        }
        if standards.len() > quoted {
            let _ = writeln!(
                out,
                "Only the first {quoted} standards are quoted; read the others with `read_note`.",
            );
        }
        out
    }

    /// One standard's body (without its frontmatter) quoted, within `share` bytes.
    fn standard_text(&self, record: &NoteRecord, share: usize) -> String {
        let args = ReadNoteArgs {
            path: Some(record.path.clone()),
            max_bytes: Some(share as u64 + FRONTMATTER_SLACK),
            ..ReadNoteArgs::default()
        };
        let page = match self.read_note(&args) {
            Ok(page) => page,
            Err(error) => return format!("*(not readable now: {})*\n\n", cut_chars(&error.message, 200)),
        };
        let body_start = match parse_frontmatter(&page.content) {
            Some(frontmatter) => frontmatter.end,
            None if page.content.starts_with("---") && page.truncated => page.content.len(),
            None => 0,
        };
        let body = page.content[body_start..].trim_start_matches(['\u{feff}', '\n', '\r']);
        let skipped = page.content.len() - body.len();
        let (quote, used) = quote_within(body, share);
        let mut out = String::new();
        if !quote.is_empty() {
            out.push_str(&quote);
            out.push('\n');
        }
        let whole = skipped + used;
        if (whole as u64) < page.size {
            let _ = writeln!(
                out,
                "*Cut at byte {whole} of {}: read on with `read_note {{\"path\": {}, \"offset\": {whole}}}`.*\n",
                page.size,
                Value::String(record.path.clone()),
            );
        }
        out
    }
}

/// Where notes go: the roots `kb.toml` names, then the folders with counts.
fn layout_section(policy: &Policy, records: &[Arc<NoteRecord>]) -> String {
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
fn lint_section(lint: &LintRules) -> String {
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

/// Ends `out` with one blank line and the section heading `title`.
fn heading(out: &mut String, title: &str) {
    out.truncate(out.trim_end_matches('\n').len());
    let _ = write!(out, "\n\n## {title}\n\n");
}

/// A standard's heading: its path and title, and its description.
fn standard_head(record: &NoteRecord) -> String {
    let mut head = format!("### `{}`: {}\n\n", record.path, one_line(&record.title, 120));
    if !record.description.trim().is_empty() {
        let _ = writeln!(head, "{}\n", one_line(&record.description, 300));
    }
    head
}

/// Text on one line, cut to `max` characters.
fn one_line(text: &str, max: usize) -> String {
    cut_chars(&text.split_whitespace().collect::<Vec<_>>().join(" "), max)
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

/// Shares of `budget` for texts of `sizes` bytes: each gets what it needs or an
/// equal part of what is left, whichever is less, the smallest served first.
fn shares(sizes: &[usize], budget: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&at| (sizes[at], at));
    let mut shares = vec![0; sizes.len()];
    let mut left = budget;
    for (done, &at) in order.iter().enumerate() {
        let share = sizes[at].min(left / (sizes.len() - done));
        shares[at] = share;
        left -= share;
    }
    shares
}

/// `text` as a Markdown block quote of at most `max` bytes, whole lines first
/// (a line longer than what is left is cut at a character); with the bytes of
/// `text` it holds.
fn quote_within(text: &str, max: usize) -> (String, usize) {
    let mut quote = String::new();
    let mut used = 0;
    for line in text.split_inclusive('\n') {
        let shown = line.trim_end_matches(['\n', '\r']);
        let cost = shown.len() + 3;
        if quote.len() + cost > max {
            let room = max.saturating_sub(quote.len() + 3);
            if room >= 64 || quote.is_empty() {
                let mut cut = room.min(shown.len());
                while !shown.is_char_boundary(cut) {
                    cut -= 1;
                }
                if cut > 0 {
                    quote.push_str("> ");
                    quote.push_str(&shown[..cut]);
                    quote.push('\n');
                    used += cut;
                }
            }
            return (quote, used);
        }
        quote.push_str(if shown.is_empty() { ">" } else { "> " });
        quote.push_str(shown);
        quote.push('\n');
        used += line.len();
    }
    (quote, used)
}

/// `text` cut to `max` bytes at a line, with a last line saying so (a guard:
/// the sections above keep within their budgets).
fn cut_to(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let notice = "\n*(cut to 32 KiB: read the standards with `read_note`.)*\n";
    let mut end = max - notice.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let end = text[..end].rfind('\n').map_or(end, |at| at + 1);
    format!("{}{notice}", &text[..end])
}

/// A `SKILL.md`'s frontmatter as a JSON object (`name`, `description` and
/// whatever else its author wrote), or `None` when it has none or it is not a
/// YAML mapping.
pub fn skill_frontmatter(text: &str) -> Option<Map<String, Value>> {
    match parse_frontmatter(text)?.value {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_serve_the_small_first_and_split_the_rest() {
        assert_eq!(shares(&[100, 5000, 5000], 3000), vec![100, 1450, 1450]);
        assert_eq!(shares(&[10, 20], 3000), vec![10, 20]);
        assert_eq!(shares(&[], 3000), Vec::<usize>::new());
    }

    #[test]
    fn a_quote_keeps_whole_lines_and_counts_the_bytes_it_holds() {
        let (quote, used) = quote_within("# A\n\nline two\n", 100);
        assert_eq!(quote, "> # A\n>\n> line two\n");
        assert_eq!(used, "# A\n\nline two\n".len());
        let long = "备份".repeat(100);
        let (quote, used) = quote_within(&long, 80);
        assert!(quote.len() <= 80 && long.is_char_boundary(used) && used > 0, "{quote}");
    }

    #[test]
    fn the_frontmatter_written_is_the_frontmatter_read() {
        let head = format!(
            "---\nname: {CONVENTIONS_SKILL_NAME}\ndescription: {CONVENTIONS_SKILL_DESCRIPTION}\n---\n\n# x\n"
        );
        let frontmatter = skill_frontmatter(&head).unwrap();
        assert_eq!(frontmatter["name"], CONVENTIONS_SKILL_NAME);
        assert_eq!(frontmatter["description"], CONVENTIONS_SKILL_DESCRIPTION);
        assert_eq!(frontmatter.len(), 2);
    }

    #[test]
    fn a_page_over_the_limit_is_cut_at_a_line_and_says_so() {
        let text = "line\n".repeat(10_000);
        let cut = cut_to(text, 1000);
        assert!(cut.len() <= 1000 && cut.ends_with("`read_note`.)*\n"), "{cut}");
    }
}
