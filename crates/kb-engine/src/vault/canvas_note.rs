//! A canvas read as a note: its text nodes are its words and its file nodes
//! its links, so a board is searched, listed, read and counted in the link
//! graph like the Markdown notes it shows.
//!
//! The text nodes come in reading order (top to bottom, then left to right,
//! by their `y` and `x`; file order breaks ties), joined by blank lines: that
//! text is what the index holds and what `read_note` pages over. Every file
//! node (and group background) is a [`LinkKind::Canvas`] link to the vault
//! path it names, on the line where the path is written, its `subpath`
//! (`#heading`, `#^block`) its anchor. Tags written in text nodes are the
//! canvas's tags; wikilinks inside text nodes are not links of the graph
//! (a move could not rewrite them inside JSON strings). A canvas that is not
//! strict JSON is a note with no words and a diagnostic, never an error.

use std::borrow::Cow;

use jsonc_parser::CollectOptions;
use jsonc_parser::ast::{Object, Value};

use super::canvas::STRICT;
use super::markdown;
use super::note::{Anchor, Diagnostic, Link, LinkKind, Note};
use crate::sandbox::NotePath;

/// The text nodes' separator in a canvas's text.
const NODE_SEPARATOR: &str = "\n\n";

/// What a canvas is read as: its text nodes' text and its links.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CanvasNote {
    /// The text nodes in reading order, joined by blank lines.
    pub(crate) text: String,
    /// One link per file node (and group background), in file order.
    pub(crate) links: Vec<Link>,
    /// Why the file is not read as a canvas, when it is not.
    pub(crate) problem: Option<String>,
}

/// A text node: where it sits on the board, its place in the file, its text.
struct TextNode<'t> {
    y: f64,
    x: f64,
    at: usize,
    text: Cow<'t, str>,
}

/// Reads a canvas's JSON (see the module docs). Total: never fails.
pub(crate) fn read_canvas(text: &str) -> CanvasNote {
    let parsed = match jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &STRICT) {
        Ok(parsed) => parsed,
        Err(err) => {
            return CanvasNote { problem: Some(format!("not a JSON Canvas: {err}")), ..Default::default() };
        }
    };
    let Some(Value::Object(canvas)) = parsed.value else {
        return CanvasNote {
            problem: Some("not a JSON Canvas: not a JSON object".to_owned()),
            ..Default::default()
        };
    };
    let mut texts: Vec<TextNode<'_>> = Vec::new();
    let mut links = Vec::new();
    for node in nodes(&canvas) {
        let kind = string(node, "type");
        match kind.as_ref().map(|(kind, _)| kind.as_ref()) {
            Some("text") => {
                if let Some((words, range)) = string(node, "text") {
                    let y = number(node, "y").unwrap_or(f64::MAX);
                    let x = number(node, "x").unwrap_or(f64::MAX);
                    texts.push(TextNode { y, x, at: range.start, text: words });
                }
            }
            Some(named @ ("file" | "group")) => {
                let key = if named == "file" { "file" } else { "background" };
                let Some((path, range)) = string(node, key) else { continue };
                let anchor = string(node, "subpath").and_then(|(sub, _)| anchor_of(&sub));
                links.push(Link {
                    target: path.into_owned(),
                    anchor,
                    display: None,
                    kind: LinkKind::Canvas,
                    line: line_at(text, range.start),
                });
            }
            _ => {}
        }
    }
    texts.sort_by(|a, b| a.y.total_cmp(&b.y).then(a.x.total_cmp(&b.x)).then(a.at.cmp(&b.at)));
    let words: Vec<&str> = texts.iter().map(|node| node.text.as_ref()).collect();
    links.sort_by_key(|link| link.line);
    CanvasNote { text: words.join(NODE_SEPARATOR), links, problem: None }
}

/// A canvas as a [`Note`]: titled by its file name without `.canvas`, its
/// links its file nodes, its tags those its text nodes carry.
pub(crate) fn parse_canvas(path: &NotePath, text: &str) -> Note {
    let canvas = read_canvas(text);
    let name = path.file_name();
    let title = name.get(..name.len().saturating_sub(".canvas".len())).unwrap_or(name);
    let scanned = markdown::scan(&canvas.text, 0, 1, path.parent());
    let mut tags: Vec<String> = scanned.tags.into_iter().map(|t| t.tag).collect();
    tags.sort_unstable();
    tags.dedup();
    Note {
        path: path.clone(),
        title: if title.is_empty() { name.to_owned() } else { title.to_owned() },
        aliases: Vec::new(),
        tags,
        description: String::new(),
        created: None,
        frontmatter: serde_json::Value::Object(serde_json::Map::new()),
        headings: Vec::new(),
        links: canvas.links,
        block_ids: Vec::new(),
        body_offset: 0,
        body_line: 1,
        diagnostics: canvas.problem.map(|message| Diagnostic { line: None, message }).into_iter().collect(),
    }
}

/// The node objects of a canvas's `nodes` arrays.
fn nodes<'a, 't>(canvas: &'a Object<'t>) -> impl Iterator<Item = &'a Object<'t>> {
    canvas
        .properties
        .iter()
        .filter(|prop| prop.name.as_str() == "nodes")
        .filter_map(|prop| match &prop.value {
            Value::Array(nodes) => Some(nodes.elements.iter()),
            _ => None,
        })
        .flatten()
        .filter_map(|node| match node {
            Value::Object(node) => Some(node),
            _ => None,
        })
}

/// A node's string property `key` and where its literal starts.
fn string<'t>(node: &Object<'t>, key: &str) -> Option<(Cow<'t, str>, jsonc_parser::common::Range)> {
    node.properties.iter().find_map(|prop| match &prop.value {
        Value::StringLit(lit) if prop.name.as_str() == key => Some((lit.value.clone(), lit.range)),
        _ => None,
    })
}

/// A node's number property `key`.
fn number(node: &Object<'_>, key: &str) -> Option<f64> {
    node.properties.iter().find_map(|prop| match &prop.value {
        Value::NumberLit(lit) if prop.name.as_str() == key => lit.value.parse().ok(),
        _ => None,
    })
}

/// A file node's `subpath` as an anchor: `#^id` a block, `#text` a heading.
fn anchor_of(subpath: &str) -> Option<Anchor> {
    let rest = subpath.strip_prefix('#')?;
    match rest.strip_prefix('^') {
        Some(id) if !id.is_empty() => Some(Anchor::Block(id.to_owned())),
        Some(_) => None,
        None => (!rest.trim().is_empty()).then(|| Anchor::Heading(rest.to_owned())),
    }
}

/// The 1-based line of a byte offset of `text`.
fn line_at(text: &str, offset: usize) -> u32 {
    let before = text.get(..offset).unwrap_or(text);
    u32::try_from(before.matches('\n').count()).unwrap_or(u32::MAX).saturating_add(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOARD: &str = r##"{
	"nodes":[
		{"id":"b","type":"text","text":"第二：备份仓库 #计划","x":0,"y":400,"width":250,"height":60},
		{"id":"a","type":"text","text":"First: the plan","x":0,"y":0,"width":250,"height":60},
		{"id":"f","type":"file","file":"z/备份仓库.md","subpath":"#步骤","x":300,"y":0},
		{"id":"l","type":"link","url":"https://example.org","x":600,"y":0},
		{"id":"g","type":"group","background":"z/bg.png","label":"g","x":0,"y":-50}
	],
	"edges":[{"id":"e","fromNode":"a","toNode":"f"}]
}"##;

    #[test]
    fn text_nodes_read_top_to_bottom_and_file_nodes_are_links() {
        let canvas = read_canvas(BOARD);
        assert_eq!(canvas.text, "First: the plan\n\n第二：备份仓库 #计划");
        let links: Vec<(&str, u32, Option<&Anchor>)> =
            canvas.links.iter().map(|l| (l.target.as_str(), l.line, l.anchor.as_ref())).collect();
        assert_eq!(
            links,
            [("z/备份仓库.md", 5, Some(&Anchor::Heading("步骤".to_owned()))), ("z/bg.png", 7, None),]
        );
        assert!(canvas.links.iter().all(|l| l.kind == LinkKind::Canvas));
        let note = parse_canvas(&NotePath::parse("z/计划板.canvas").unwrap(), BOARD);
        assert_eq!(note.title, "计划板");
        assert_eq!(note.tags, ["计划"]);
        assert!(note.diagnostics.is_empty());
    }

    #[test]
    fn what_is_not_a_canvas_is_a_note_without_words() {
        for text in ["", "[]", "{", "{\"nodes\":[]} /* comment */", "\u{feff}{}"] {
            let note = parse_canvas(&NotePath::parse("b.canvas").unwrap(), text);
            assert!(note.links.is_empty(), "{text:?}");
            assert_eq!(read_canvas(text).text, "", "{text:?}");
        }
        assert_eq!(parse_canvas(&NotePath::parse("b.canvas").unwrap(), "[]").diagnostics.len(), 1);
        assert_eq!(read_canvas("{}"), CanvasNote::default());
    }
}
