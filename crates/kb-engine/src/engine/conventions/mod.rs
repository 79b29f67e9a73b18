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
//!
//! The sections written from the catalog and `kb.toml` (where notes go, the
//! frontmatter rules, the tags) are in `sections`; the standards, quoted
//! within what the page has left, in `standards`. This file puts the page
//! together and keeps it within its size.

mod sections;
mod standards;

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::engine::Engine;
use crate::error::Result;
use crate::vault::{NoteKind, NoteRecord, parse_frontmatter};
use sections::{layout_section, lint_section};

/// The generated skill's name (its frontmatter `name`, and the folder a host
/// keeps it in).
pub const CONVENTIONS_SKILL_NAME: &str = "vault-conventions";

/// The generated skill's frontmatter `description`: when to load it.
pub const CONVENTIONS_SKILL_DESCRIPTION: &str = "The conventions of this vault, generated from the vault \
itself - its standards, the frontmatter rules of its kb.toml, its registered tags and its folder layout. \
Load it before you propose a new note or a change, so that what you write follows the person's own rules.";

/// The most the generated skill holds, in bytes.
pub const CONVENTIONS_SKILL_MAX_BYTES: usize = 32 * 1024;

/// Kept free for the closing section and the last cut notice.
const FOOTER_BYTES: usize = 1024;

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
}

/// Ends `out` with one blank line and the section heading `title`.
fn heading(out: &mut String, title: &str) {
    out.truncate(out.trim_end_matches('\n').len());
    let _ = write!(out, "\n\n## {title}\n\n");
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
