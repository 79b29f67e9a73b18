//! Fuzzes the note parser: `decode_note`, `parse_note` (frontmatter, titles, tags,
//! headings, links) and `parse_frontmatter` on arbitrary bytes (see
//! `harness::note_parser`).

#![no_main]

#[allow(dead_code, reason = "each target uses one of the harness's three bodies")]
#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::note_parser(data));
