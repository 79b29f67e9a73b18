//! Sections: the lines under one heading, up to the next heading of the same or
//! a higher level.
//!
//! `read_note` serves a section, recall quotes the section around a hit, and a
//! patch's `replace_section` rewrites one. All three find headings with the
//! scanner [`parse_note`](super::parse_note) uses (ATX and setext headings, code
//! fences skipped) and cut sections here, so the section an agent reads is the
//! section it can replace.

use std::ops::Range;

use super::frontmatter;
use super::markdown;
use super::markdown::HeadingSpan;
use super::note::{Heading, heading_key};

/// The headings of a note's text, frontmatter skipped, with their spans.
pub fn heading_blocks(text: &str) -> Vec<HeadingSpan> {
    let offset = frontmatter::body_offset(text);
    let first_line = u32::try_from(text[..offset].matches('\n').count() + 1).unwrap_or(u32::MAX);
    markdown::scan(text, offset, first_line, "").headings
}

/// A line read as an ATX heading (`## Setup`): its level and text, as the
/// scanner reads headings.
pub fn atx_heading_line(line: &str) -> Option<(u8, String)> {
    markdown::atx_heading_line(line)
}

/// The byte offset where 1-based `line` starts; `text.len()` past the end.
pub fn line_start(text: &str, line: u32) -> usize {
    match (line as usize).checked_sub(2) {
        None => 0,
        Some(newlines) => text.match_indices('\n').nth(newlines).map_or(text.len(), |(at, _)| at + 1),
    }
}

/// The bytes of the section under `headings[index]`: from its heading's first
/// line to the next heading of the same or a higher level, or the end.
pub fn section_range(text: &str, headings: &[Heading], index: usize) -> Range<usize> {
    let Some(heading) = headings.get(index) else { return text.len()..text.len() };
    let start = line_start(text, heading.line);
    let end = headings[index + 1..]
        .iter()
        .find(|h| h.level <= heading.level)
        .map_or(text.len(), |h| line_start(text, h.line));
    start..end.max(start)
}

/// The section whose heading's text is `wanted` (`#` marks ignored, compared by
/// [`heading_key`]): the first such heading's section.
pub fn section_named(text: &str, headings: &[Heading], wanted: &str) -> Option<Range<usize>> {
    let key = heading_key(wanted.trim_start_matches('#'));
    let position = headings.iter().position(|h| heading_key(&h.text) == key)?;
    Some(section_range(text, headings, position))
}

/// The section holding file line `line`: the index of its heading and its bytes;
/// no heading when the line comes before the first, then the bytes from the body
/// (at `body_offset`) to the first heading.
pub fn section_around(
    text: &str,
    body_offset: usize,
    headings: &[Heading],
    line: u32,
) -> (Option<usize>, Range<usize>) {
    match headings.iter().rposition(|h| h.line <= line) {
        Some(index) => (Some(index), section_range(text, headings, index)),
        None => {
            let end = headings.first().map_or(text.len(), |h| line_start(text, h.line));
            (None, body_offset.min(end)..end)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_and_ranges() {
        let text = "---\na: 1\n---\nSetup\n=====\nx\n## Sub\ny\n\nNext\n===\n";
        let blocks = heading_blocks(text);
        let lines: Vec<(u8, &str, u32, u32, &str, &str)> = blocks
            .iter()
            .map(|b| {
                let h = &b.heading;
                (h.level, h.text.as_str(), h.line, b.last_line, b.span.of(text), b.text.of(text))
            })
            .collect();
        assert_eq!(
            lines,
            [
                (1, "Setup", 4, 5, "Setup\n=====", "Setup"),
                (2, "Sub", 7, 7, "## Sub", "Sub"),
                (1, "Next", 10, 11, "Next\n===", "Next")
            ]
        );
        let headings: Vec<Heading> = blocks.into_iter().map(|b| b.heading).collect();
        assert_eq!(&text[section_range(text, &headings, 0)], "Setup\n=====\nx\n## Sub\ny\n\n");
        assert_eq!(&text[section_range(text, &headings, 2)], "Next\n===\n");
        assert_eq!(section_named(text, &headings, "## sub").map(|r| &text[r]), Some("## Sub\ny\n\n"));
        assert_eq!(section_named(text, &headings, "none"), None);
        assert_eq!(section_around(text, 13, &headings, 8), (Some(1), section_range(text, &headings, 1)));
        let before = "---\na: 1\n---\nintro\n# H\n";
        let headings = [Heading { level: 1, text: "H".into(), line: 5 }];
        assert_eq!(section_around(before, 13, &headings, 4), (None, 13..19));
        assert_eq!(line_start(text, 1), 0);
        assert_eq!(line_start(text, 99), text.len());
        assert_eq!(atx_heading_line("  ## Setup ##"), Some((2, "Setup".to_owned())));
        assert_eq!(atx_heading_line("#Setup"), None);
    }
}
