//! The standards in the conventions skill: each one's title and description,
//! and its text quoted within its share of what the page has left, cut with
//! the `read_note` call that reads on.

use std::fmt::Write as _;

use serde_json::Value;

use crate::engine::Engine;
use crate::engine::bounded::cut_chars;
use crate::engine::types::ReadNoteArgs;
use crate::vault::{NoteRecord, parse_frontmatter};

/// Standards whose text is quoted; later ones are listed by title only.
const STANDARDS_QUOTED: usize = 40;
/// The smallest share of text worth quoting from one standard.
const MIN_SHARE: usize = 256;
/// Bytes kept for the line after a cut quote (the `read_note` call), besides the path.
const CUT_LINE_BYTES: usize = 120;
/// Bytes read past a standard's share, for its frontmatter.
const FRONTMATTER_SLACK: u64 = 4096;

impl Engine {
    /// Each standard's title, description and text, the text shared out of
    /// `budget` bytes and quoted, cut with the `read_note` call that reads on.
    pub(super) fn standards_section(&self, standards: &[&NoteRecord], budget: usize) -> String {
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
}
