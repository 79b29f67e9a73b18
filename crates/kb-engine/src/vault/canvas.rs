//! JSON Canvas files (`.canvas`, Obsidian's boards): where each node names a
//! file of the vault, with the exact bytes it is written in, so a move can
//! point it at the file's new path by replacing that string and nothing else
//! (the file keeps its key order, spacing and every other byte).
//!
//! A file node (`"type": "file"`) names its file in `file`; a group node may
//! name a background image in `background`. Both are vault paths. The canvas
//! is read by `jsonc-parser` as strict JSON (no comments, trailing commas or
//! other extensions), whose syntax tree keeps where each string is written; a
//! canvas that is not JSON, or nests deeper than the parser allows (512
//! levels), gives nothing (it is left as it is).

use std::borrow::Cow;

use jsonc_parser::ast::{ObjectProp, Value};
use jsonc_parser::{CollectOptions, ParseOptions};

use super::markdown::{Span, replace_spans};

/// Strict JSON, as JSON Canvas is.
pub(super) const STRICT: ParseOptions = ParseOptions {
    allow_comments: false,
    allow_loose_object_property_names: false,
    allow_trailing_commas: false,
    allow_missing_commas: false,
    allow_single_quoted_strings: false,
    allow_hexadecimal_numbers: false,
    allow_unary_plus_numbers: false,
    allow_bare_decimal_point_numbers: false,
    allow_non_finite_numbers: false,
    allow_extended_string_escapes: false,
};

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
    let parsed = jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &STRICT).ok()?;
    let Some(Value::Object(canvas)) = parsed.value else { return None };
    let mut out = Vec::new();
    fn string<'t>(prop: &ObjectProp<'t>, key: &str) -> Option<(Cow<'t, str>, jsonc_parser::common::Range)> {
        match (&prop.value, prop.name.as_str() == key) {
            (Value::StringLit(lit), true) => Some((lit.value.clone(), lit.range)),
            _ => None,
        }
    }
    for prop in &canvas.properties {
        let (Value::Array(nodes), "nodes") = (&prop.value, prop.name.as_str()) else { continue };
        for node in &nodes.elements {
            let Value::Object(node) = node else { continue };
            let kind = node.properties.iter().find_map(|prop| string(prop, "type"));
            let named = match kind.as_ref().map(|(kind, _)| kind.as_ref()) {
                Some("file") => "file",
                Some("group") => "background",
                _ => continue,
            };
            for (path, range) in node.properties.iter().filter_map(|prop| string(prop, named)) {
                let path = match path {
                    Cow::Borrowed(path) => path.to_owned(),
                    Cow::Owned(path) => path,
                };
                out.push(CanvasPath { path, span: Span { start: range.start, end: range.end } });
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
        // A hostile canvas nesting far deeper than any stack allows is refused, not followed.
        let hostile = format!("{{\"nodes\":{}{}}}", "[".repeat(200_000), "]".repeat(200_000));
        assert_eq!(canvas_paths(&hostile), None);
        let comments = r#"{"nodes":[{"type":"file","file":"a.md"}] /* not JSON */}"#;
        assert_eq!(canvas_paths(comments), None, "a canvas is strict JSON");
    }
}
