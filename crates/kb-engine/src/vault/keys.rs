//! Frontmatter keys and where each is written: the top-level `key:` lines of a
//! note's YAML block and the lines each entry spans (its continuation lines,
//! list items and block scalars), read line by line without a YAML parser so a
//! key's bytes can be replaced and every other line kept exactly as it is.

use super::frontmatter;
use super::markdown::Span;

/// A top-level frontmatter key and where it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySpan {
    /// The key, unquoted (`"a b"` gives `a b`).
    pub key: String,
    /// The key as written, quotes included.
    pub span: Span,
    /// Its whole entry: from the start of the `key:` line to the end of its last
    /// continuation line, that line's ending included.
    pub entry: Span,
}

/// The top-level keys of a note's frontmatter in file order (repeated keys
/// included); empty when the note has no closed frontmatter block.
pub fn frontmatter_keys(text: &str) -> Vec<KeySpan> {
    let Some(yaml) = frontmatter::yaml_range(text) else { return Vec::new() };
    let lines = lines(text, yaml.start, yaml.end);
    let kinds: Vec<Kind> =
        lines.iter().map(|&(start, content_end, _)| classify(&text[start..content_end])).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < kinds.len() {
        let Kind::Key(key, written) = &kinds[i] else {
            i += 1;
            continue;
        };
        let start = i;
        let mut end = i + 1;
        let mut probe = i + 1;
        // Blank lines belong to the entry only when more of its lines follow
        // them (a block scalar).
        while probe < kinds.len() {
            match kinds[probe] {
                Kind::Continuation => {
                    probe += 1;
                    end = probe;
                }
                Kind::Blank => probe += 1,
                Kind::Key(..) | Kind::Comment => break,
            }
        }
        let first = lines[start].0;
        out.push(KeySpan {
            key: key.clone(),
            span: Span { start: first, end: first + written },
            entry: Span { start: first, end: lines[end - 1].2 },
        });
        i = end;
    }
    out
}

/// The lines of `text[from..to]`: start, end of content (before `\r\n` or `\n`),
/// end including the line ending.
fn lines(text: &str, from: usize, to: usize) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    let mut start = from;
    while start < to {
        let end = text[start..to].find('\n').map_or(to, |at| start + at + 1);
        let mut content_end = end;
        if text[start..content_end].ends_with('\n') {
            content_end -= 1;
        }
        if text[start..content_end].ends_with('\r') {
            content_end -= 1;
        }
        out.push((start, content_end, end));
        start = end;
    }
    out
}

/// What a frontmatter line is, for finding each key's lines.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    /// `key: ...` at column 0: the key and how many bytes it is written in.
    Key(String, usize),
    /// Indented, a `- item` at column 0, or anything else that is not a key:
    /// the continuation of the entry above.
    Continuation,
    /// Empty or only spaces.
    Blank,
    /// `# comment` at column 0: ends the entry above, belongs to none.
    Comment,
}

fn classify(line: &str) -> Kind {
    if line.trim().is_empty() {
        return Kind::Blank;
    }
    if line.starts_with([' ', '\t']) || line == "-" || line.starts_with("- ") || line.starts_with("-\t") {
        return Kind::Continuation;
    }
    if line.starts_with('#') {
        return Kind::Comment;
    }
    top_key(line).map_or(Kind::Continuation, |(key, written)| Kind::Key(key, written))
}

/// The key of a `key: value` line at column 0 (plain, single- or double-quoted)
/// and the length of the key as written.
fn top_key(line: &str) -> Option<(String, usize)> {
    let is_separator =
        |rest: &str| rest.starts_with(':') && (rest.len() == 1 || rest[1..].starts_with([' ', '\t']));
    if let Some(inner) = line.strip_prefix('"') {
        let mut escaped = false;
        for (at, c) in inner.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => {
                    let quoted = &line[..at + 2];
                    let rest = line[at + 2..].trim_start_matches([' ', '\t']);
                    return is_separator(rest).then(|| {
                        let key =
                            yaml_serde::from_str::<String>(quoted).unwrap_or_else(|_| inner[..at].to_owned());
                        (key, quoted.len())
                    });
                }
                _ => {}
            }
        }
        return None;
    }
    if let Some(inner) = line.strip_prefix('\'') {
        let mut chars = inner.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            if c == '\'' {
                if chars.peek().is_some_and(|&(_, next)| next == '\'') {
                    chars.next();
                    continue;
                }
                let rest = inner[at + 1..].trim_start_matches([' ', '\t']);
                return is_separator(rest).then(|| (inner[..at].replace("''", "'"), at + 2));
            }
        }
        return None;
    }
    let mut from = 0;
    while let Some(found) = line[from..].find(':') {
        let at = from + found;
        if is_separator(&line[at..]) {
            let key = line[..at].trim_end_matches([' ', '\t']);
            return (!key.is_empty()).then(|| (key.to_owned(), key.len()));
        }
        from = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_entries() {
        let text = "---\ntitle: A\ntags:\n  - x\n\n  - y\n# comment\n\"q k\": 1\n'it''s': 2\n---\nbody: no\n";
        let found: Vec<(String, &str, &str)> =
            frontmatter_keys(text).into_iter().map(|k| (k.key, k.span.of(text), k.entry.of(text))).collect();
        assert_eq!(
            found,
            [
                ("title".to_owned(), "title", "title: A\n"),
                ("tags".to_owned(), "tags", "tags:\n  - x\n\n  - y\n"),
                ("q k".to_owned(), "\"q k\"", "\"q k\": 1\n"),
                ("it's".to_owned(), "'it''s'", "'it''s': 2\n"),
            ]
        );
        assert!(frontmatter_keys("no: frontmatter\n").is_empty());
        assert!(frontmatter_keys("---\nunclosed: 1\n").is_empty());
    }
}
