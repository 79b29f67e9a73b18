//! JSON Canvas files (`.canvas`, Obsidian's boards): where each node names a
//! file of the vault, with the exact bytes it is written in, so a move can
//! point it at the file's new path by replacing that string and nothing else
//! (the file keeps its key order, spacing and every other byte).
//!
//! A file node (`"type": "file"`) names its file in `file`; a group node may
//! name a background image in `background`. Both are vault paths. The scan is
//! a small JSON reader of its own: a canvas that is not JSON, or nests deeper
//! than [`MAX_DEPTH`], gives nothing (it is left as it is).

use super::markdown::{Span, replace_spans};

/// Deepest nesting read (a canvas nests three levels; deeper is not a canvas).
const MAX_DEPTH: usize = 64;

/// Whether a path names a canvas (`.canvas`, any case).
pub fn is_canvas(path: &str) -> bool {
    path.len() > 7
        && path.is_char_boundary(path.len() - 7)
        && path[path.len() - 7..].eq_ignore_ascii_case(".canvas")
}

/// A vault path a canvas names, and where it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanvasPath {
    /// The path, unescaped.
    pub path: String,
    /// The JSON string literal holding it, quotes included.
    pub span: Span,
}

/// Every vault path the canvas `text` names (file nodes' `file`, group nodes'
/// `background`), in file order; `None` when it is not a JSON object.
pub fn canvas_paths(text: &str) -> Option<Vec<CanvasPath>> {
    let mut reader = Reader { bytes: text.as_bytes(), text, at: 0 };
    let value = reader.value(0)?;
    reader.space();
    if reader.at != text.len() {
        return None;
    }
    let Json::Object(fields) = value else { return None };
    let mut out = Vec::new();
    for (key, value) in &fields {
        let (true, Json::Array(nodes)) = (key == "nodes", value) else { continue };
        for node in nodes {
            let Json::Object(node) = node else { continue };
            let kind = node.iter().find_map(|(key, value)| match value {
                Json::String(kind, _) if key == "type" => Some(kind.as_str()),
                _ => None,
            });
            let named = match kind {
                Some("file") => "file",
                Some("group") => "background",
                _ => continue,
            };
            for (key, value) in node {
                if let (true, Json::String(path, span)) = (key == named, value) {
                    out.push(CanvasPath { path: path.clone(), span: *span });
                }
            }
        }
    }
    out.sort_by_key(|path| path.span.start);
    Some(out)
}

/// The canvas `text` with every path `moved` gives a new path for pointed at
/// it (each string literal replaced by the new path's, JSON-escaped); `None`
/// when it names none of them (or is not a canvas).
pub fn canvas_moved(text: &str, moved: impl Fn(&str) -> Option<String>) -> Option<String> {
    let mut replacements: Vec<(Span, String)> = Vec::new();
    for named in canvas_paths(text)? {
        let Some(new) = moved(&named.path) else { continue };
        replacements.push((named.span, serde_json::to_string(&new).ok()?));
    }
    if replacements.is_empty() {
        return None;
    }
    Some(replace_spans(text, replacements.iter().map(|(span, new)| (*span, new.as_str()))))
}

/// A JSON value, its strings with their spans.
enum Json {
    String(String, Span),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
    Other,
}

struct Reader<'t> {
    text: &'t str,
    bytes: &'t [u8],
    at: usize,
}

impl Reader<'_> {
    fn space(&mut self) {
        while self.bytes.get(self.at).is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        self.space();
        (self.bytes.get(self.at) == Some(&byte)).then(|| self.at += 1)
    }

    fn value(&mut self, depth: usize) -> Option<Json> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.space();
        match *self.bytes.get(self.at)? {
            b'"' => self.string().map(|(text, span)| Json::String(text, span)),
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                if self.eat(b']').is_some() {
                    return Some(Json::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    if self.eat(b']').is_some() {
                        return Some(Json::Array(items));
                    }
                    self.eat(b',')?;
                }
            }
            b'{' => {
                self.at += 1;
                let mut fields = Vec::new();
                if self.eat(b'}').is_some() {
                    return Some(Json::Object(fields));
                }
                loop {
                    self.space();
                    let (key, _) = self.string()?;
                    self.eat(b':')?;
                    fields.push((key, self.value(depth + 1)?));
                    if self.eat(b'}').is_some() {
                        return Some(Json::Object(fields));
                    }
                    self.eat(b',')?;
                }
            }
            _ => self.scalar(),
        }
    }

    /// A number, `true`, `false` or `null`.
    fn scalar(&mut self) -> Option<Json> {
        let start = self.at;
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.'))
        {
            self.at += 1;
        }
        let word = &self.text[start..self.at];
        let number = word.parse::<f64>().is_ok_and(f64::is_finite) && !word.starts_with('+');
        (number || matches!(word, "true" | "false" | "null")).then_some(Json::Other)
    }

    /// A string literal at `self.at`, unescaped, and its span.
    fn string(&mut self) -> Option<(String, Span)> {
        let start = self.at;
        if self.bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        self.at += 1;
        let mut out = String::new();
        loop {
            let run = self.bytes[self.at..].iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
            out.push_str(&self.text[self.at..self.at + run]);
            self.at += run;
            match self.bytes[self.at] {
                b'"' => {
                    self.at += 1;
                    return Some((out, Span { start, end: self.at }));
                }
                b'\\' => {
                    let escape = *self.bytes.get(self.at + 1)?;
                    self.at += 2;
                    out.push(match escape {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode()?,
                        _ => return None,
                    });
                }
                _ => return None,
            }
        }
    }

    /// The character of a `\u` escape (after `\u`), a surrogate pair joined.
    fn unicode(&mut self) -> Option<char> {
        let high = self.hex4()?;
        if !(0xD800..0xDC00).contains(&high) {
            return char::from_u32(high);
        }
        if self.bytes.get(self.at..self.at + 2)? != b"\\u" {
            return None;
        }
        self.at += 2;
        let low = self.hex4()?;
        if !(0xDC00..0xE000).contains(&low) {
            return None;
        }
        char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.text.get(self.at..self.at + 4)?;
        let value = u32::from_str_radix(digits, 16).ok()?;
        self.at += 4;
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_nodes_and_backgrounds_are_found_where_written() {
        let text = r##"{
	"nodes":[
		{"id":"a","type":"file","file":"z/f/note.md","x":0,"y":0,"width":400,"height":400},
		{"id":"b","type":"text","text":"file: \"z/f/note.md\"","x":1,"y":-2.5e3},
		{"id":"c","type":"group","background":"z\/f\/bg.png","label":"g"},
		{"type":"file","id":"d","file":"z/caf\u00e9.md","subpath":"#h"}
	],
	"edges":[{"id":"e","fromNode":"a","toNode":"d"}]
}"##;
        let found: Vec<(String, &str)> =
            canvas_paths(text).unwrap().into_iter().map(|p| (p.path, p.span.of(text))).collect();
        assert_eq!(
            found,
            [
                ("z/f/note.md".to_owned(), "\"z/f/note.md\""),
                ("z/f/bg.png".to_owned(), "\"z\\/f\\/bg.png\""),
                ("z/café.md".to_owned(), "\"z/caf\\u00e9.md\""),
            ]
        );
        let moved =
            canvas_moved(text, |path| path.strip_prefix("z/f/").map(|rest| format!("y/\"{rest}"))).unwrap();
        assert_eq!(
            moved,
            text.replace("\"z/f/note.md\",\"x\":0", "\"y/\\\"note.md\",\"x\":0")
                .replace("\"z\\/f\\/bg.png\"", "\"y/\\\"bg.png\"")
        );
        assert_eq!(canvas_moved(text, |_| None), None);
    }

    #[test]
    fn what_is_not_a_canvas_names_nothing() {
        for text in ["", "[]", "{", r#"{"nodes":[{"type":"file","file":"a.md"}]} x"#, r#"{"a":"\q"}"#, "nul"]
        {
            assert!(canvas_paths(text).is_none_or(|paths| paths.is_empty()), "{text:?}");
        }
        let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert_eq!(canvas_paths(&deep), None);
    }
}
