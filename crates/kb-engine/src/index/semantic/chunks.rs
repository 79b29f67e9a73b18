//! What of a note is embedded: its sections, each one vector, so that a long
//! note is not one blurred average and a question finds the section that
//! answers it. A chunk is the note's title, the section's heading and the
//! section's first [`CHUNK_BYTES`] (the bundled model reads 128 word pieces,
//! about 500 characters of English: more would be cut by the model anyway).
//! Its hash, of exactly that text, is what the store keys a vector by, so a
//! note whose other sections changed keeps the vectors of those that did not.

use sha2::{Digest, Sha256};

use crate::vault::{body_offset, heading_blocks};

/// The most bytes of a section a chunk holds.
pub(super) const CHUNK_BYTES: usize = 1200;

/// The most chunks one note gives (its first sections): a note of hundreds of
/// headings is not a hundred answers, and the store's size stays bounded.
pub const CHUNKS_PER_NOTE: usize = 32;

/// A section shorter than this (in non-blank characters, heading aside) joins
/// the next one rather than making a vector of a heading alone.
const MIN_SECTION_CHARS: usize = 24;

/// One section of a note, ready to embed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The section's first line (1-based, in the file): where a hit points.
    pub line: u32,
    /// What the model reads: title, heading and the section's opening.
    pub text: String,
    /// The key of its vector: a hash of `text`.
    pub hash: u128,
}

/// The chunks of a note: `title` and its text as on disk (frontmatter
/// skipped). Code fences count as text; an empty note gives its title alone.
pub fn chunks_of(title: &str, description: &str, text: &str) -> Vec<Chunk> {
    let body = body_offset(text).min(text.len());
    let line_of = |offset: usize| u32::try_from(text[..offset].matches('\n').count() + 1).unwrap_or(u32::MAX);
    // Section starts: the body's start, then each heading.
    let mut starts: Vec<(usize, Option<String>)> = vec![(body, None)];
    for block in heading_blocks(text) {
        if block.span.start >= body {
            starts.push((block.span.start, Some(block.heading.text.clone())));
        }
    }
    let mut chunks = Vec::new();
    let mut pending: Option<(usize, Option<String>)> = None;
    for (i, (start, heading)) in starts.iter().enumerate() {
        let end = starts.get(i + 1).map_or(text.len(), |(next, _)| *next);
        let section = &text[*start..end];
        let (from, heading) = pending.take().unwrap_or((*start, heading.clone()));
        let words: usize =
            section.lines().skip(usize::from(heading.is_some())).map(|l| l.trim().chars().count()).sum();
        if words < MIN_SECTION_CHARS && i + 1 < starts.len() {
            pending = Some((from, heading));
            continue;
        }
        let piece = cut(&text[from..end], CHUNK_BYTES);
        let mut input = String::with_capacity(piece.len() + title.len() + description.len() + 2);
        input.push_str(title);
        if chunks.is_empty() && !description.is_empty() {
            input.push_str(". ");
            input.push_str(description);
        }
        input.push('\n');
        input.push_str(piece.trim());
        if input.trim().is_empty() {
            continue;
        }
        let hash = hash_of(&input);
        chunks.push(Chunk { line: line_of(from), text: input, hash });
        if chunks.len() == CHUNKS_PER_NOTE {
            break;
        }
    }
    if chunks.is_empty() && !title.trim().is_empty() {
        let input = title.to_owned();
        chunks.push(Chunk { line: line_of(body), hash: hash_of(&input), text: input });
    }
    chunks
}

/// The first `max` bytes of `text`, cut at a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The first 16 bytes of the SHA-256 of `text`.
pub(super) fn hash_of(text: &str) -> u128 {
    let digest = Sha256::digest(text.as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    u128::from_be_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_section_is_a_chunk_and_short_ones_join_the_next() {
        let text = "---\ntitle: Bread\n---\nWhy dough rises and falls when left for too long.\n\n## Proofing\n\n## Timing\nLeave it an hour at most, or the gluten gives way and it sinks.\n";
        let chunks = chunks_of("Bread", "", text);
        assert_eq!(chunks.len(), 2, "{chunks:#?}");
        assert_eq!(chunks[0].line, 4);
        assert!(chunks[0].text.starts_with("Bread\nWhy dough"));
        // The empty `Proofing` section joins `Timing`, and the chunk starts at its line.
        assert_eq!(chunks[1].line, 6);
        assert!(chunks[1].text.contains("## Proofing") && chunks[1].text.contains("sinks"));
    }

    #[test]
    fn an_unchanged_section_keeps_its_hash() {
        let before = chunks_of(
            "T",
            "",
            "Intro text that is long enough to stand.\n\n## A\nFirst section text, long enough.\n",
        );
        let after = chunks_of(
            "T",
            "",
            "Intro text that changed and is long enough.\n\n## A\nFirst section text, long enough.\n",
        );
        assert_ne!(before[0].hash, after[0].hash);
        assert_eq!(before[1].hash, after[1].hash);
    }

    #[test]
    fn long_notes_are_bounded() {
        let text: String =
            (0..100).map(|i| format!("## Part {i}\nSome words about part number {i} here.\n")).collect();
        let chunks = chunks_of("Long", "", &text);
        assert_eq!(chunks.len(), CHUNKS_PER_NOTE);
        assert!(chunks.iter().all(|c| c.text.len() <= CHUNK_BYTES + 8));
        let huge = "x".repeat(10_000);
        assert!(chunks_of("Huge", "", &huge)[0].text.len() <= CHUNK_BYTES + 8);
        assert_eq!(chunks_of("Empty", "", "").len(), 1);
    }
}
