//! A canvas read as a note: its text nodes are its words and its file nodes
//! its links, so a board is searched, listed, read and counted in the link
//! graph like the Markdown notes it shows.
//!
//! The text nodes come in reading order (top to bottom, then left to right,
//! by their `y` and `x`; file order breaks ties), joined by blank lines: that
//! text is what the index holds and what `read_note` pages over. A web link
//! node is written among them as `<url>`, the way a note's text holds its
//! web links (those are not links of the vault's graph, in notes or
//! canvases). Every file node (and group background) is a
//! [`LinkKind::Canvas`] link to the vault path it names, on the line where
//! the path is written, its `subpath` (`#heading`, `#^block`) its anchor. A
//! text node is Markdown: its wikilinks, embeds and Markdown links are links
//! of the canvas, of their own kinds, on the line where they are written
//! (`canvas_text.rs`). Tags written in text nodes are the canvas's tags. A
//! canvas that is not strict JSON is a note with no words and a diagnostic,
//! never an error.

use std::borrow::Cow;

use jsonc_parser::CollectOptions;
use jsonc_parser::ast::{Object, Value};

use super::canvas::STRICT;
use super::canvas_text::CanvasText;
use super::markdown;
use super::note::{Anchor, Diagnostic, Link, LinkKind, Note};
use crate::sandbox::NotePath;

/// The text nodes' separator in a canvas's text.
const NODE_SEPARATOR: &str = "\n\n";

/// What a canvas is read as: its text nodes' text and its links.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CanvasNote {
    /// The text nodes (and web link nodes, as `<url>`) in reading order,
    /// joined by blank lines.
    pub(crate) text: String,
    /// Its links in file order, where each is written (see [`canvas_links`]).
    pub(crate) links: Vec<CanvasLink>,
    /// Its text nodes that hold links, read as Markdown.
    pub(crate) texts: Vec<CanvasText>,
    /// Why the file is not read as a canvas, when it is not.
    pub(crate) problem: Option<String>,
}

/// A link of a canvas: a file node's (or group background's), or one
/// written in a text node.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CanvasLink {
    /// The link, on the canvas's line where it is written.
    pub(crate) link: Link,
    /// For a link in a text node: the node (in [`CanvasNote::texts`]) and
    /// the link's place among the node's `spans.links`.
    pub(crate) in_text: Option<(usize, usize)>,
    /// Where it is written in the canvas (its order).
    at: usize,
}

/// A node read for its words: where it sits on the board, its place in the
/// file, its words.
struct WordNode<'t> {
    y: f64,
    x: f64,
    at: usize,
    text: Cow<'t, str>,
}

/// Reads a canvas's words (see the module docs), not its links. Total: never fails.
pub(crate) fn read_canvas(text: &str) -> CanvasNote {
    read_board(text, None)
}

/// Reads a canvas's words and links, its Markdown links relative to its
/// folder `folder`. Total: never fails.
pub(crate) fn canvas_links(text: &str, folder: &str) -> CanvasNote {
    read_board(text, Some(folder))
}

/// [`read_canvas`], with its links when `folder` is given.
fn read_board(text: &str, folder: Option<&str>) -> CanvasNote {
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
    let mut words: Vec<WordNode<'_>> = Vec::new();
    let mut links = Vec::new();
    let mut texts = Vec::new();
    let place =
        |node: &Object<'_>| (number(node, "y").unwrap_or(f64::MAX), number(node, "x").unwrap_or(f64::MAX));
    for node in nodes(&canvas) {
        let kind = string(node, "type");
        match kind.as_ref().map(|(kind, _)| kind.as_ref()) {
            Some("text") => {
                let Some((value, range)) = string(node, "text") else { continue };
                if let Some(folder) = folder
                    && value.contains('[')
                    && let Some(read) = text
                        .get(range.start..range.end)
                        .and_then(|literal| CanvasText::read(literal, range.start, folder))
                        .filter(|read| read.text == value)
                {
                    for (number, span) in read.spans.links.iter().enumerate() {
                        let at = read.raw_offset(span.span.start);
                        let link = Link { line: line_at(text, at), ..span.link.clone() };
                        links.push(CanvasLink { link, in_text: Some((texts.len(), number)), at });
                    }
                    texts.push(read);
                }
                let (y, x) = place(node);
                words.push(WordNode { y, x, at: range.start, text: value });
            }
            Some("link") => {
                let Some((url, range)) = string(node, "url") else { continue };
                let (y, x) = place(node);
                words.push(WordNode { y, x, at: range.start, text: Cow::Owned(format!("<{url}>")) });
            }
            Some(named @ ("file" | "group")) if folder.is_some() => {
                let key = if named == "file" { "file" } else { "background" };
                let Some((path, range)) = string(node, key) else { continue };
                let anchor = string(node, "subpath").and_then(|(sub, _)| anchor_of(&sub));
                let link = Link {
                    target: path.into_owned(),
                    anchor,
                    display: None,
                    kind: LinkKind::Canvas,
                    line: line_at(text, range.start),
                };
                links.push(CanvasLink { link, in_text: None, at: range.start });
            }
            _ => {}
        }
    }
    words.sort_by(|a, b| a.y.total_cmp(&b.y).then(a.x.total_cmp(&b.x)).then(a.at.cmp(&b.at)));
    let words: Vec<&str> = words.iter().map(|node| node.text.as_ref()).collect();
    links.sort_by_key(|link| link.at);
    CanvasNote { text: words.join(NODE_SEPARATOR), links, texts, problem: None }
}

/// A canvas as a [`Note`]: titled by its file name without `.canvas`, its
/// links its file nodes, its tags those its text nodes carry.
pub(crate) fn parse_canvas(path: &NotePath, text: &str) -> Note {
    let canvas = canvas_links(text, path.parent());
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
        links: canvas.links.into_iter().map(|link| link.link).collect(),
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
		{"id":"a","type":"text","text":"First: the [[plan|\"plan\"]]\n![[图.png]] [m](sub/x.md#h)","x":0,"y":0,"width":250,"height":60},
		{"id":"f","type":"file","file":"z/备份仓库.md","subpath":"#步骤","x":300,"y":0},
		{"id":"l","type":"link","url":"https://example.org","x":600,"y":0},
		{"id":"g","type":"group","background":"z/bg.png","label":"g","x":0,"y":-50}
	],
	"edges":[{"id":"e","fromNode":"a","toNode":"f"}]
}"##;

    #[test]
    fn text_nodes_read_top_to_bottom_and_file_nodes_are_links() {
        let canvas = canvas_links(BOARD, "z");
        assert_eq!(
            canvas.text,
            "First: the [[plan|\"plan\"]]\n![[图.png]] [m](sub/x.md#h)\n\n<https://example.org>\n\n第二：备份仓库 #计划"
        );
        assert_eq!(read_canvas(BOARD).text, canvas.text);
        let links: Vec<(&str, u32, Option<&Anchor>, LinkKind)> = canvas
            .links
            .iter()
            .map(|l| (l.link.target.as_str(), l.link.line, l.link.anchor.as_ref(), l.link.kind))
            .collect();
        assert_eq!(
            links,
            [
                ("plan", 4, None, LinkKind::Wikilink),
                ("图.png", 4, None, LinkKind::Embed),
                ("z/sub/x.md", 4, Some(&Anchor::Heading("h".to_owned())), LinkKind::Markdown),
                ("z/备份仓库.md", 5, Some(&Anchor::Heading("步骤".to_owned())), LinkKind::Canvas),
                ("z/bg.png", 7, None, LinkKind::Canvas),
            ]
        );
        let (node, number) = canvas.links[0].in_text.unwrap();
        let span = canvas.texts[node].spans.links[number].span;
        assert_eq!(canvas.texts[node].raw_span(span).of(BOARD), "[[plan|\\\"plan\\\"]]");
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
