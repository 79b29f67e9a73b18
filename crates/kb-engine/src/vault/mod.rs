//! The vault layer: pure parsing of notes and configuration, and link resolution.
//!
//! Nothing here touches the filesystem or fails on a bad note: parsers are total,
//! so a broken frontmatter or an unclosed code fence yields a [`Note`] plus
//! [`Diagnostic`]s, never an error and never a lost note. Link resolution follows
//! Obsidian's rules and builds the [`graph::Graph`] of outlinks, backlinks, broken
//! links, orphans and maps of content.

mod canvas;
mod canvas_note;
mod canvas_text;
mod config;
mod frontmatter;
pub mod graph;
mod keys;
mod lint;
mod markdown;
mod note;
mod obsidian;
mod packed;
mod pdf;
mod record;
mod section;

pub use canvas::{CanvasPath, canvas_moved, canvas_paths, is_canvas};
pub(crate) use canvas_note::{canvas_links, read_canvas};
pub(crate) use canvas_text::json_escaped;
pub use config::{Limits, ReplicaConfig, SemanticConfig, VaultConfig, edit_distance};
pub use frontmatter::{FRONTMATTER_MAX_BYTES, FRONTMATTER_MAX_DEPTH, Frontmatter, parse_frontmatter};
pub use keys::{KeySpan, frontmatter_keys};
pub use lint::{FolderRules, LintProblem, LintRules, ValueType};
pub use note::{
    Anchor, Diagnostic, Heading, Link, LinkKind, Note, body_offset, decode_note, heading_key, link_context,
    parse_note,
};
pub use obsidian::templates_folders;
pub use packed::{AnchorRef, HeadingRef, Headings, LinkRef, Links};

pub(crate) use markdown::replace_spans;
pub use markdown::{
    BlockIdSpan, HeadingSpan, LinkSpan, NoteSpans, PropertyQuote, Span, TagSpan, note_spans, prose_spans,
};
pub(crate) use note::{BOM, bom_len};
pub(crate) use pdf::pdf_note;
pub use pdf::{PDF_PAGES_MAX, PDF_TEXT_MAX_BYTES, PdfOutcome, PdfText, extract_pdf, is_pdf};
pub use record::{ContentHasher, NoteKind, NoteRecord, content_hash};
pub use section::{
    atx_heading_line, heading_blocks, line_start, section_around, section_named, section_range,
};
