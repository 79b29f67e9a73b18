//! Link rewriting for a move: given a link's spans (from the vault's Markdown
//! model) and the note it points at moving from one path to another, the new
//! bytes of the link's target, written in the link's own form. Only the target's
//! span changes: display text, anchors, `!`, brackets and angle brackets stay as
//! they are, so a move's diff touches link targets and nothing else. The one
//! exception is a wikilink by alias sent to its note's name: it gains display
//! text so it shows what it showed (`[[x]]` → `[[b|x]]`). The shortest path
//! form that still leads to a note is found here too.
//!
//! This is the core a `propose_move` builds on; which links to rewrite (those
//! that resolve to a moved note) and whether a bare name is still unique after
//! the move are the caller's to decide, with the vault's graph.

use crate::sandbox::{NotePath, strip_md};
use crate::vault::{LinkKind, LinkSpan, Span, replace_spans};

/// One replacement in a note's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkEdit {
    /// The bytes replaced: a link's target as written.
    pub span: Span,
    /// What replaces them.
    pub text: String,
}

/// The edit that makes `link` (in `text`, a note that will live at `source`
/// after the move) point at `to`, in the form it was written:
///
/// - a wikilink or embed keeps `.md` when it had it, a path when it had one, and
///   is otherwise the bare name (`bare_is_unique`: the name resolves to `to`
///   alone after the move) or, when it would not be, the full path;
/// - a Markdown link is relative to `source`'s folder (`./` kept when it had
///   it), vault-absolute when it started with `/`, percent-encoded when it was
///   or when it must be (a space outside `<…>`), and keeps its `<…>`.
///
/// `None` when the link already reads exactly so, and for a same-note link
/// (`[[#h]]`, `[t](#h)`), which points at its own note wherever it lives.
///
/// A link in a frontmatter property is a wikilink written inside quotes: its
/// new bytes are escaped for them (`LinkSpan::encode`); `None` when they
/// cannot be (a move's check then finds the link leading elsewhere).
pub fn relink(
    text: &str,
    link: &LinkSpan,
    source: &NotePath,
    to: &NotePath,
    bare_is_unique: bool,
) -> Option<LinkEdit> {
    let edit = target_edit(text, link, source, to, bare_is_unique)?;
    encoded(text, link, edit)
}

/// [`relink`]'s edit before its text is escaped for the link's quotes (and
/// whether or not it changes anything): the target as the note's path or name
/// reads, for a caller that shortens it first.
pub(super) fn target_edit(
    text: &str,
    link: &LinkSpan,
    source: &NotePath,
    to: &NotePath,
    bare_is_unique: bool,
) -> Option<LinkEdit> {
    let written = link.target.of(text);
    if written.is_empty() {
        return None;
    }
    let new = match link.link.kind {
        LinkKind::Wikilink | LinkKind::Embed | LinkKind::Property if !is_markdown_form(text, link) => {
            wikilink_target(&link.link.target, written, to, bare_is_unique)
        }
        _ => markdown_target(text, link, written, source, to),
    };
    Some(LinkEdit { span: link.target, text: new })
}

/// `edit` (of `link`'s target, its text unescaped) with its text written as
/// the link's quotes need; `None` when it cannot be, or reads as written now.
pub(crate) fn encoded(text: &str, link: &LinkSpan, mut edit: LinkEdit) -> Option<LinkEdit> {
    edit.text = link.encode(&edit.text)?.into_owned();
    (edit.text != edit.span.of(text)).then_some(edit)
}

/// Applies edits to `text` (`vault::replace_spans`); they must not overlap (each
/// is one link's target).
pub fn apply_link_edits(text: &str, edits: &[LinkEdit]) -> String {
    replace_spans(text, edits.iter().map(|edit| (edit.span, edit.text.as_str())))
}

/// An embed written as `![alt](path)` rather than `![[path]]`.
fn is_markdown_form(text: &str, link: &LinkSpan) -> bool {
    !link.span.of(text).trim_start_matches('!').starts_with("[[")
}

/// `target`: the link's target as read (a property's `''` read as `'`);
/// `written`: its bytes.
fn wikilink_target(target: &str, written: &str, to: &NotePath, bare_is_unique: bool) -> String {
    let keeps_md = strip_md(target).len() != target.len();
    let path = to.as_str();
    let mut out = if written.contains('/') || !bare_is_unique {
        strip_md(path).to_owned()
    } else {
        to.stem().to_owned()
    };
    if keeps_md {
        out.push_str(&path[strip_md(path).len()..]);
    }
    out
}

fn markdown_target(text: &str, link: &LinkSpan, written: &str, source: &NotePath, to: &NotePath) -> String {
    let angled = link.target.start > 0 && text.as_bytes()[link.target.start - 1] == b'<';
    let path = if written.starts_with('/') {
        format!("/{}", to.as_str())
    } else {
        let relative = relative_path(source.parent(), to.as_str());
        if written.starts_with("./") && !relative.starts_with("../") {
            format!("./{relative}")
        } else {
            relative
        }
    };
    let encoded = written.contains('%');
    let must = !angled && path.bytes().any(|b| matches!(b, b' ' | b'<' | b'>' | b'(' | b')' | b'\t'));
    if encoded || must { percent_encode(&path) } else { path }
}

/// The path from a folder (vault-relative, `""` at the top) to a vault path.
fn relative_path(folder: &str, path: &str) -> String {
    let from: Vec<&str> = folder.split('/').filter(|s| !s.is_empty()).collect();
    let to: Vec<&str> = path.split('/').collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count().min(to.len() - 1);
    let mut out: Vec<&str> = vec![".."; from.len() - common];
    out.extend(&to[common..]);
    out.join("/")
}

/// Percent-encodes every byte but unreserved characters and `/`.
fn percent_encode(path: &str) -> String {
    let mut out = String::with_capacity(path.len() * 3);
    for &b in path.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Whether a wikilink names its note (at `was`) by something else than the
/// note's file name: by an alias. Rewritten to the note's name, it would show
/// another text.
pub(super) fn by_another_name(link: &LinkSpan, was: &str) -> bool {
    let written = strip_md(&link.link.target);
    let written = written.rsplit('/').next().unwrap_or(written);
    let name = strip_md(was.rsplit('/').next().unwrap_or(was));
    written.to_lowercase() != name.to_lowercase()
}

/// Makes `edit` (of a wikilink without display text) keep the text the link
/// showed: `[[x]]` rewritten to `[[b]]` becomes `[[b|x]]`, an anchor kept
/// before the display (`[[b#h|x]]`). In a GFM table row (`in_table`, from the
/// Markdown model), where a bare `|` would end the cell, it is `\|`; a line
/// that merely holds a `|` is no table.
pub(super) fn keep_shown_text(text: &str, link: &LinkSpan, in_table: bool, edit: &mut LinkEdit) {
    let whole = link.span.of(text);
    if !whole.ends_with("]]") {
        return;
    }
    let close = link.span.end - 2;
    // In a property's quotes a `|` ends no table cell (and `\|` would be an escape).
    let in_table = in_table && link.quote.is_none();
    let bar = if in_table { "\\|" } else { "|" };
    let mut shown = std::mem::take(&mut edit.text);
    shown.push_str(&text[link.target.end..close]);
    shown.push_str(bar);
    shown.push_str(link.target.of(text));
    edit.text = shown;
    edit.span = Span { start: link.target.start, end: close };
}

/// The shortest trailing part of a wikilink's path (`b/x/dup` of `z/b/x/dup`)
/// that still leads to the same note, keeping at least two segments (a bare
/// name was judged already).
pub(super) fn shortest_suffix(path: &str, leads: impl Fn(&str) -> bool) -> String {
    let starts: Vec<usize> = path.match_indices('/').map(|(at, _)| at + 1).collect();
    for &start in starts.iter().rev().skip(1) {
        if leads(&path[start..]) {
            return path[start..].to_owned();
        }
    }
    path.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vault::note_spans;

    fn path(p: &str) -> NotePath {
        NotePath::parse(p).unwrap()
    }

    /// Rewrites every link of `text` (a note at `source`, staying there) to `to`.
    fn check(source: &str, text: &str, to: &str, bare_is_unique: bool, expected: &str) {
        let source = path(source);
        let model = note_spans(&source, text);
        assert!(!model.links.is_empty(), "no link in {text:?}");
        let edits: Vec<LinkEdit> =
            model.links.iter().filter_map(|l| relink(text, l, &source, &path(to), bare_is_unique)).collect();
        assert_eq!(apply_link_edits(text, &edits), expected, "links of {text:?}");
    }

    #[test]
    fn wikilinks_keep_their_form() {
        check("n.md", "see [[a]] now", "z/b.md", true, "see [[b]] now");
        check("n.md", "see [[a]] now", "z/b.md", false, "see [[z/b]] now");
        check("n.md", "[[a.md]]", "z/b.md", true, "[[b.md]]");
        check("n.md", "[[x/a]]", "z/b.md", true, "[[z/b]]");
        check("n.md", "[[x/a.md]]", "z/b.md", true, "[[z/b.md]]");
        check("n.md", "[[a|shown]]", "z/b.md", true, "[[b|shown]]");
        check("n.md", "[[ a #Setup | shown ]]", "z/b.md", true, "[[ b #Setup | shown ]]");
        check("n.md", "[[a#^blk]]", "z/b.md", true, "[[b#^blk]]");
        check("n.md", "![[a]] and ![[a#H|x]]", "z/b.md", true, "![[b]] and ![[b#H|x]]");
        check("n.md", "| [[a\\|s]] |", "z/b.md", true, "| [[b\\|s]] |");
        check("n.md", "[[note]]", "Note.md", true, "[[Note]]");
    }

    #[test]
    fn markdown_links_keep_their_form() {
        check("z/n.md", "[t](a.md)", "z/b.md", true, "[t](b.md)");
        check("z/n.md", "[t](./a.md)", "z/b.md", true, "[t](./b.md)");
        check("z/n.md", "[t](a.md)", "y/b.md", true, "[t](../y/b.md)");
        check("z/x/n.md", "[t](../a.md)", "b.md", true, "[t](../../b.md)");
        check("z/n.md", "[t](/z/a.md)", "y/b.md", true, "[t](/y/b.md)");
        check("z/n.md", "[t](a.md#Set%20up \"title\")", "z/c d.md", true, "[t](c%20d.md#Set%20up \"title\")");
        check("z/n.md", "[t](my%20a.md)", "z/备份.md", true, "[t](%E5%A4%87%E4%BB%BD.md)");
        check("z/n.md", "[t](<a b.md>)", "z/c d.md", true, "[t](<c d.md>)");
        check("z/n.md", "![pic](a.md)", "q/b.md", true, "![pic](../q/b.md)");
        check("z/n.md", "[t](#local) [[#h]] [u](a.md)", "z/b.md", true, "[t](#local) [[#h]] [u](b.md)");
    }

    #[test]
    fn property_links_keep_their_quotes_and_form() {
        let text =
            "---\nup: \"[[a]]\" # up\nnext: ['[[a|s]]', \"[[x/a#H]]\"]\nlist:\n  - '[[a.md]]'\n---\n[[a]]\n";
        check(
            "n.md",
            text,
            "z/b.md",
            true,
            "---\nup: \"[[b]]\" # up\nnext: ['[[b|s]]', \"[[z/b#H]]\"]\nlist:\n  - '[[b.md]]'\n---\n[[b]]\n",
        );
        // Inside single quotes a `'` is written twice; double quotes need nothing.
        check(
            "n.md",
            "---\nup: '[[a]]'\nx: \"[[a]]\"\n---\n",
            "z/Bob's.md",
            true,
            "---\nup: '[[Bob''s]]'\nx: \"[[Bob's]]\"\n---\n",
        );
        check("n.md", "---\nup: '[[Bob''s]]'\n---\n", "z/b.md", true, "---\nup: '[[b]]'\n---\n");
        // A property's shown text keeps a bare `|`, even on a line read as a table row.
        let source = path("n.md");
        let text = "---\nup: \"[[x]]\" # a | b\n---\n";
        let link = &note_spans(&source, text).links[0];
        let mut edit = relink(text, link, &source, &path("b.md"), true).unwrap();
        keep_shown_text(text, link, true, &mut edit);
        assert_eq!(apply_link_edits(text, &[edit]), "---\nup: \"[[b|x]]\" # a | b\n---\n");
        assert_eq!(link.encode("a\"b"), None, "a `\"` would need an escape, which no link value holds");
    }

    #[test]
    fn nothing_but_targets_changes() {
        let text = "# H\nText [[a]] and [t](a.md) `[[a]]` <!-- [[a]] -->\n";
        check("n.md", text, "b.md", true, "# H\nText [[b]] and [t](b.md) `[[a]]` <!-- [[a]] -->\n");
        assert_eq!(
            relink("[[b]]", &note_spans(&path("n.md"), "[[b]]").links[0], &path("n.md"), &path("b.md"), true),
            None
        );
    }

    #[test]
    fn relative_paths() {
        assert_eq!(relative_path("", "a/b.md"), "a/b.md");
        assert_eq!(relative_path("a", "a/b.md"), "b.md");
        assert_eq!(relative_path("a/c", "a/b.md"), "../b.md");
        assert_eq!(relative_path("x/y", "b.md"), "../../b.md");
    }
}
