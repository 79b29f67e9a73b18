//! Rewriting a move's links, and the check of the vault it leaves: each
//! affected note's links judged on their own, every link that would no
//! longer lead where it led written anew in its own form (a canvas's text
//! nodes' links too, inside their JSON strings), then the vault after the
//! move checked for links that break or lead elsewhere.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use rayon::prelude::*;
use serde_json::json;

use super::planner::{After, MovePlanner, path_of};
use super::relink::{
    LinkEdit, apply_link_edits, by_another_name, encoded, keep_shown_text, shortest_suffix, target_edit,
};
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{NotePath, strip_md};
use crate::vault::graph::{Graph, MovedAttachments, Resolution, Resolver};
use crate::vault::{
    LinkKind, LinkRef, LinkSpan, Links, NoteKind, Span, canvas_links, canvas_moved, is_canvas, json_escaped,
    note_spans, replace_spans,
};
use crate::write::propose::view::written;

/// The affected notes' texts with their links rewritten (and a moved note's
/// old name as an alias), by index; how many notes and links changed.
pub(super) struct Relinked {
    pub(crate) texts: HashMap<usize, String>,
    pub(crate) notes: u32,
    pub(crate) links: u32,
}

impl<'v> MovePlanner<'v> {
    /// Each affected note's links judged on its own (in parallel) in the
    /// vault as the move leaves it (`moved`): its new text and how many of
    /// its links changed.
    pub(crate) fn relink(
        &self,
        affected: &BTreeSet<usize>,
        texts: &HashMap<usize, String>,
        moved: &After,
    ) -> Result<Relinked> {
        let relinked: Vec<(usize, String, usize)> = affected
            .par_iter()
            .map(|&index| {
                let (text, edits) = self.relink_note(index, &texts[&index], moved)?;
                Ok((index, text, edits))
            })
            .collect::<Result<_>>()?;
        let mut done = Relinked { texts: HashMap::with_capacity(relinked.len()), notes: 0, links: 0 };
        for (index, text, edits) in relinked {
            // A canvas rewritten is counted among canvases (`file_ops`).
            if edits > 0 && !is_canvas(&self.view.records[index].path) {
                done.notes += 1;
            }
            if edits > 0 {
                done.links = done.links.saturating_add(u32::try_from(edits).unwrap_or(u32::MAX));
            }
            done.texts.insert(index, text);
        }
        Ok(done)
    }

    /// Note `index`'s text (`text`) with every link rewritten that would no
    /// longer lead where it led, each written as the link was (see the module
    /// docs), and a moved note's old name as an alias; and how many links changed.
    fn relink_note(&self, index: usize, text: &str, moved: &After) -> Result<(String, usize)> {
        let view = self.view;
        let old_path = NotePath::parse(&view.records[index].path)?;
        let source = NotePath::parse(&self.new_path(old_path.as_str()))?;
        if old_path.is_canvas() {
            return self.relink_canvas(index, text, &old_path, &source, moved);
        }
        let old_spans = note_spans(&old_path, text);
        // Spans depend on the note's folder alone: parsed again only when it changes.
        let moved_spans = (old_path.parent() != source.parent()).then(|| note_spans(&source, text));
        let new_spans = moved_spans.as_ref().unwrap_or(&old_spans);
        let outlinks = view.graph.outlinks(index);
        let mut edits: Vec<LinkEdit> = Vec::new();
        for (number, (old, new)) in old_spans.links.iter().zip(&new_spans.links).enumerate() {
            let Some(&resolution) = outlinks.get(number) else { continue };
            let in_table = old_spans.in_table(old.span.start);
            edits.extend(self.link_edit(text, old, new, resolution, &source, in_table, moved)?);
        }
        let rewritten = apply_link_edits(text, &edits);
        Ok((self.with_alias(index, &rewritten)?, edits.len()))
    }

    /// A canvas's text (`text`) with its file nodes pointed where their files
    /// go, as `canvases.rs` writes them, and every link of its text nodes
    /// rewritten as a note's are (`source`: where it will be), inside the
    /// JSON string holding it: the new bytes escaped, every other byte kept.
    fn relink_canvas(
        &self,
        index: usize,
        text: &str,
        old_path: &NotePath,
        source: &NotePath,
        moved: &After,
    ) -> Result<(String, usize)> {
        let old = canvas_links(text, old_path.parent());
        let moved_links = (old_path.parent() != source.parent()).then(|| canvas_links(text, source.parent()));
        let new = moved_links.as_ref().unwrap_or(&old);
        let outlinks = self.view.graph.outlinks(index);
        let mut raw: Vec<(Span, String)> = Vec::new();
        for (number, (was, is)) in old.links.iter().zip(&new.links).enumerate() {
            let (Some((node, at)), Some((new_node, new_at))) = (was.in_text, is.in_text) else { continue };
            let Some(&resolution) = outlinks.get(number) else { continue };
            let (text_node, new_text_node) = (&old.texts[node], &new.texts[new_node]);
            let (old_span, new_span) = (&text_node.spans.links[at], &new_text_node.spans.links[new_at]);
            let in_table = text_node.spans.in_table(old_span.span.start);
            let edit =
                self.link_edit(&text_node.text, old_span, new_span, resolution, source, in_table, moved)?;
            raw.extend(edit.map(|edit| (text_node.raw_span(edit.span), json_escaped(&edit.text))));
        }
        let edited = replace_spans(text, raw.iter().map(|(span, new)| (*span, new.as_str())));
        let after = canvas_moved(&edited, |path| self.moved_to(path)).unwrap_or(edited);
        Ok((after, raw.len()))
    }

    /// The edit of one link (`old` as read where its note is now, `new` as
    /// read where it will be, in `text`) that keeps it leading where it led
    /// (`resolution`); `None` when it still does.
    #[expect(clippy::too_many_arguments, reason = "one link's every input, read once by the caller")]
    fn link_edit(
        &self,
        text: &str,
        old: &LinkSpan,
        new: &LinkSpan,
        resolution: Resolution,
        source: &NotePath,
        in_table: bool,
        moved: &After,
    ) -> Result<Option<LinkEdit>> {
        let view = self.view;
        if old.link.target.trim().is_empty() {
            return Ok(None);
        }
        let Some(was) = path_of(resolution, view.records, view.attachments) else { return Ok(None) };
        let expected = self.new_path(&was);
        let packed: Links = vec![new.link.clone()].into();
        let Some(link) = packed.get(0) else { return Ok(None) };
        let now = self.lead(moved, link);
        // A Markdown link names a path: it must name it exactly (case included).
        let exact = new.link.kind != LinkKind::Markdown
            || new.link.target == expected
            || new.link.target == strip_md(&expected);
        // A name written as the note's file name follows a rename (a case-only one too).
        let written = strip_md(old.link.target.rsplit('/').next().unwrap_or(&old.link.target));
        let renamed = old.link.kind != LinkKind::Markdown
            && written == strip_md(was.rsplit('/').next().unwrap_or(&was))
            && written != strip_md(expected.rsplit('/').next().unwrap_or(&expected));
        if now.as_deref() == Some(expected.as_str()) && exact && !renamed {
            return Ok(None);
        }
        let expected_path = NotePath::parse(&expected)?;
        let bare = strip_md(expected_path.file_name());
        let bare_link =
            LinkRef { target: bare, anchor: None, display: None, kind: LinkKind::Wikilink, line: 0 };
        let bare_is_unique = self.lead(moved, bare_link).as_deref() == Some(expected.as_str());
        let Some(mut edit) = target_edit(text, old, source, &expected_path, bare_is_unique) else {
            return Ok(None);
        };
        let wiki = old.span.of(text).trim_start_matches('!').starts_with("[[");
        if wiki && edit.text.contains('/') {
            edit.text = shortest_suffix(&edit.text, |candidate| {
                let link = LinkRef {
                    target: candidate,
                    anchor: None,
                    display: None,
                    kind: LinkKind::Wikilink,
                    line: 0,
                };
                self.lead(moved, link).as_deref() == Some(expected.as_str())
            });
        }
        // Written as the link's quotes need (a property's); one that
        // cannot be is left, and the check refuses the move.
        let Some(mut edit) = encoded(text, old, edit) else { return Ok(None) };
        if matches!(old.link.kind, LinkKind::Wikilink | LinkKind::Property)
            && old.display.is_none()
            && by_another_name(old, &was)
        {
            keep_shown_text(text, old, in_table, &mut edit);
        }
        Ok(Some(edit))
    }

    /// The vault as the move leaves it, the links rewritten (`staged`): no
    /// link may break, counted over the links whose resolution can change,
    /// not by resolving the whole vault again; and every link of a note that
    /// led to a moved note is rewritten, so no other link may come to lead
    /// elsewhere (a name taken from another note, an alias; a link in a
    /// read-only standard, which is not rewritten). `moved`: the vault after
    /// the move before the rewrites, whose resolver serves when no name changed.
    pub(crate) fn check(
        &self,
        affected: &BTreeSet<usize>,
        staged: &HashMap<usize, String>,
        moved: After,
    ) -> Result<After> {
        let view = self.view;
        let (final_records, position) = self.records_after(staged)?;
        let same_names = affected.iter().all(|&index| {
            let (was, is) = (&moved.records[position[index]], &final_records[position[index]]);
            was.path == is.path && was.aliases == is.aliases
        });
        let final_resolver =
            if same_names { moved.resolver } else { Resolver::new(&final_records, &self.attachments_after) };
        // The notes whose record differs (one made from unchanged bytes is shared).
        let changed: Vec<usize> = affected
            .iter()
            .copied()
            .filter(|&index| !Arc::ptr_eq(&view.records[index], &final_records[position[index]]))
            .collect();
        let attachments_moved = (!self.carried.is_empty()).then_some(MovedAttachments {
            after: &self.attachments_after,
            position: &self.attachment_position,
        });
        let after_move = view.graph.after_change(
            view.records,
            &final_records,
            &final_resolver,
            view.attachments,
            attachments_moved,
            &changed,
            &[],
            &position,
        );
        let broken_after = after_move.broken_count;
        debug_assert_eq!(
            broken_after,
            Graph::build(&final_records, &self.attachments_after).broken_count,
            "the broken links counted over the changed links are the whole graph's"
        );
        if let Some(&(from, number, lead)) = after_move.relinked.first() {
            let holder = &view.records[from];
            let link = holder.links.get(number);
            let written = link.map(written).unwrap_or_default();
            let line = link.map_or(0, |l| l.line);
            let now = match lead {
                Resolution::Note(to) => format!("lead to {}", final_records[to as usize].path),
                Resolution::Attachment(to) => format!("lead to {}", self.attachments_after[to as usize]),
                Resolution::Broken(_) => "break".to_owned(),
            };
            let (what, hint) = if holder.kind == NoteKind::Note {
                ("", "move the note to another name, or move the notes one at a time")
            } else {
                (
                    " (read-only: it is not rewritten)",
                    "change that link yourself, or move the note to another name (with keep_alias, links by its old name still lead to it)",
                )
            };
            return Err(Error::new(
                ErrorCode::Conflict,
                format!(
                    "this move would make {written} in {}{what}, line {line}, {now}{}; nothing was staged",
                    holder.path,
                    match after_move.relinked.len() {
                        1 => String::new(),
                        n => format!(" (and {} more link(s) like it)", n - 1),
                    }
                ),
            )
            .with_hint(hint)
            .with_details(json!({ "path": holder.path, "line": line, "link": written })));
        }
        if broken_after > view.graph.broken_count {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!(
                    "this move would leave {} broken links where there are {} now; nothing was staged",
                    broken_after, view.graph.broken_count
                ),
            )
            .with_hint("move the notes one at a time, or rename them so their names stay unique"));
        }
        Ok(After { records: final_records, resolver: final_resolver })
    }
}
