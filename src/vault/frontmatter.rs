//! YAML frontmatter: finding it, parsing it totally, and reading the keys we know.

/// The frontmatter block of a note.
#[derive(Debug, Clone, PartialEq)]
pub struct Frontmatter {
    /// Byte range of the YAML text between the `---` fences (empty when absent).
    pub yaml: std::ops::Range<usize>,
    /// Byte offset of the first byte after the closing fence line.
    pub end: usize,
    /// 1-based line of the first body line.
    pub body_line: u32,
    /// Parsed value as JSON (`Object`), `Null` when absent or invalid.
    pub value: serde_json::Value,
    /// Why parsing failed, when it did.
    pub error: Option<String>,
}

/// Finds and parses the frontmatter at the start of `text` (after an optional BOM).
pub fn parse_frontmatter(text: &str) -> Option<Frontmatter> {
    let _ = text;
    todo!()
}
