//! Planning a move (`propose_move`): which notes move where, which links must
//! be rewritten so that they still lead where they led, and what the vault
//! looks like afterwards (a delete's plan, `delete.rs`, shares the vault view).
//!
//! A link is rewritten only when, after the move, it would no longer lead to
//! the same note or file it leads to now: `[[a]]` stays `[[a]]` when `a` is
//! still the shortest unique name of the moved note, and a link by alias is
//! left alone; a link by another note's alias that a moved note's new name
//! would take is rewritten to that note, showing the same text (`[[x]]` →
//! `[[b|x]]`). Links inside moved notes are judged from their new folder, so
//! relative Markdown links are fixed. The plan is then checked against the
//! vault as it would be: the count of broken links must not grow. That count
//! is exact but resolves again only the links whose resolution can change
//! ([`Graph::after_change`]), and no link of a note it does not rewrite may come to
//! lead elsewhere; debug builds check the count against a whole new graph.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use rayon::prelude::*;

use serde_json::json;

use super::plan::{FileOp, FileOpKind, PLAN_SCHEMA, Plan};
use super::relink::{
    LinkEdit, apply_link_edits, by_another_name, encoded, keep_shown_text, shortest_suffix, target_edit,
};
use super::yaml;
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{NotePath, Sandbox, strip_md};
use crate::vault::graph::{Broken, Graph, Resolution, Resolver};
use crate::vault::{
    LinkKind, LinkRef, Links, NoteKind, NoteRecord, content_hash, decode_note, frontmatter_keys, note_spans,
    parse_note,
};

/// Largest note a move reads.
const NOTE_MAX_BYTES: u64 = 1 << 30;

/// The vault as the planner sees it: the records (sorted by path), the
/// attachments (sorted) and their graph.
pub struct VaultView<'a> {
    /// Every note's record, sorted by path.
    pub records: &'a [Arc<NoteRecord>],
    /// Every attachment path, sorted.
    pub attachments: &'a [String],
    /// The graph of both.
    pub graph: &'a Graph,
    /// Notes whose text is not the file's (a batch's earlier items changed
    /// them), by path; `None` outside a batch.
    pub texts: Option<&'a HashMap<String, String>>,
}

/// A planned move.
#[derive(Debug, Clone)]
pub struct MovePlan {
    /// Every note that moves, `(from, to)`.
    pub moves: Vec<(String, String)>,
    /// Notes whose links are rewritten (moved ones included).
    pub notes: u32,
    /// Links rewritten.
    pub links: u32,
    /// The file operations.
    pub plan: Plan,
}

pub(super) fn read_text(sandbox: &Sandbox, view: &VaultView<'_>, path: &str) -> Result<String> {
    if let Some(text) = view.texts.and_then(|texts| texts.get(path)) {
        return Ok(text.clone());
    }
    let note = NotePath::parse(path)?;
    let bytes = sandbox.read(&note, NOTE_MAX_BYTES)?;
    decode_note(&bytes)
        .map(str::to_owned)
        .map_err(|why| Error::invalid(format!("{path} cannot be rewritten: {}", why.message)))
}

/// A path a move may take from or to: well-formed, not denied, in a notes
/// root (not a standard, the inbox or a read-only folder), and, for a note,
/// an approved note target (no symlink on the way). `path_denied` otherwise.
fn writable(sandbox: &Sandbox, input: &str) -> Result<NotePath> {
    let path = NotePath::parse(input)?;
    if path.is_markdown() {
        return sandbox.resolve_note_target(path.as_str());
    }
    if sandbox.area_of(&path) != Some(crate::sandbox::Area::Note) {
        return Err(Error::denied(format!(
            "{path} is not inside a notes root; notes move only within notes roots"
        )));
    }
    sandbox.resolve_folder(path.as_str())?;
    Ok(path)
}

/// A folder path without its trailing slash (`/` stays, to be refused).
fn without_slash(path: &str) -> &str {
    match path.strip_suffix('/') {
        Some(rest) if !rest.is_empty() => rest,
        _ => path,
    }
}

/// The notes `from` names: the note itself, or every note under the folder.
/// Returns `(old, new)` paths.
fn moved_notes(
    sandbox: &Sandbox,
    view: &VaultView<'_>,
    from: &str,
    to: &str,
) -> Result<Vec<(String, String)>> {
    if from.is_empty() || to.is_empty() {
        return Err(Error::invalid("`from` and `to` must both be given: a note path or a folder path"));
    }
    let (from, to) = (without_slash(from), without_slash(to));
    if from == to {
        return Err(Error::invalid(format!("`to` is `from` ({from}): nothing would move")));
    }
    let from_path = writable(sandbox, from)?;
    let to_path = writable(sandbox, to)?;
    let notes_only = |path: &str| view.records.iter().any(|r| r.path == path && r.kind == NoteKind::Note);
    if from_path.is_markdown() {
        if !to_path.is_markdown() {
            return Err(Error::invalid(format!("`to` ({to}) must end in .md when `from` is a note")));
        }
        if !notes_only(from_path.as_str()) {
            return Err(Error::not_found(format!("{from} is not a note of a notes root"))
                .with_hint("give the note's exact path (search_knowledge or list_notes shows it)"));
        }
        return Ok(vec![(from_path.as_str().to_owned(), to_path.as_str().to_owned())]);
    }
    if to_path.is_markdown() {
        return Err(Error::invalid(format!("`from` ({from}) is a folder, so `to` must be a folder too")));
    }
    if to.to_lowercase().starts_with(&format!("{}/", from.to_lowercase())) {
        return Err(Error::invalid(format!("cannot move the folder {from} into itself ({to})")));
    }
    let prefix = format!("{from}/");
    let moves: Vec<(String, String)> = view
        .records
        .iter()
        .filter(|r| r.path.starts_with(&prefix))
        .map(|r| {
            if r.kind != NoteKind::Note {
                return Err(Error::denied(format!("{} is not in a notes root; it cannot be moved", r.path)));
            }
            Ok((r.path.clone(), format!("{to}/{}", &r.path[prefix.len()..])))
        })
        .collect::<Result<_>>()?;
    if moves.is_empty() {
        let exists = sandbox.resolve_folder(from).ok().flatten().is_some();
        return Err(Error::not_found(if exists {
            format!("the folder {from} holds no notes to move")
        } else {
            format!("no note or folder is at {from}")
        }));
    }
    Ok(moves)
}

/// Plans moving a note or a folder (see the module docs).
pub fn plan_move(
    sandbox: &Sandbox,
    view: &VaultView<'_>,
    from: &str,
    to: &str,
    keep_alias: bool,
) -> Result<MovePlan> {
    let moves = moved_notes(sandbox, view, from, to)?;
    // Every note's path by its lowercase form, built once: a folder of 1,000
    // notes must not compare each with the whole vault.
    let mut by_lowercase: HashMap<String, Vec<&str>> = HashMap::with_capacity(view.records.len());
    for record in view.records {
        by_lowercase.entry(record.path.to_lowercase()).or_default().push(&record.path);
    }
    let mut moved: HashMap<&str, &str> = HashMap::new();
    for (old, new) in &moves {
        let target = sandbox.resolve_note_target(new)?;
        let case_only = old.to_lowercase() == new.to_lowercase();
        let taken = by_lowercase.get(&new.to_lowercase()).is_some_and(|paths| paths.iter().any(|p| p != old));
        if !case_only && (taken || sandbox.stat(&target)?.is_some()) {
            return Err(Error::new(ErrorCode::TargetExists, format!("{new} already exists"))
                .with_hint("choose another `to`, or move that note away first")
                .with_details(json!({ "target": new })));
        }
        sandbox.resolve_note_target(old)?;
        moved.insert(old.as_str(), new.as_str());
    }
    let index_of: HashMap<&str, usize> =
        view.records.iter().enumerate().map(|(i, r)| (r.path.as_str(), i)).collect();

    // The notes whose links may need rewriting: the moved ones, the ones linking
    // to them, and the ones linking by a bare name a moved note takes on: to a
    // note of that name, or to a note that has it as an alias (a file name
    // wins over an alias, so `[[x]]` meaning the note aliased `x` would lead
    // to a note moved to `x.md`).
    let mut affected: BTreeSet<usize> = BTreeSet::new();
    let mut new_stems: BTreeSet<String> = BTreeSet::new();
    let mut watched: HashSet<u32> = HashSet::new();
    for (old, new) in &moves {
        let index = index_of[old.as_str()];
        affected.insert(index);
        watched.insert(u32::try_from(index).unwrap_or(u32::MAX));
        new_stems.insert(strip_md(new.rsplit('/').next().unwrap_or(new)).to_lowercase());
    }
    for (index, record) in view.records.iter().enumerate() {
        let named = |name: &str| new_stems.contains(&name.trim().to_lowercase());
        if named(record.stem()) || record.aliases.iter().any(|alias| named(alias)) {
            watched.insert(u32::try_from(index).unwrap_or(u32::MAX));
        }
    }
    // Only notes are rewritten: a standard or a `read_also` file is read-only,
    // so a link of one that the move would change refuses the move (below).
    let writable = |index: usize| view.records[index].kind == NoteKind::Note;
    for &index in &watched {
        affected.extend(
            view.graph.backlinks(index as usize).iter().map(|b| b.from as usize).filter(|&i| writable(i)),
        );
    }
    // A link to a watched note naming a heading or block it lacks is broken, so
    // not among its backlinks, yet leads to it: it must follow it all the same
    // (left alone, `[[dup#h]]` could fall to another `dup` and count as mended).
    for from in 0..view.records.len() {
        let leads_to_watched = view.graph.outlinks(from).iter().any(|resolution| {
            matches!(resolution, Resolution::Broken(Broken::MissingHeading(to) | Broken::MissingBlock(to))
                if watched.contains(to))
        });
        if leads_to_watched && writable(from) {
            affected.insert(from);
        }
    }

    // Each affected note's text, and moved notes' with the old name as an alias.
    // Read in parallel: a hub's move reads thousands of notes.
    let texts: HashMap<usize, String> = affected
        .par_iter()
        .map(|&index| Ok((index, read_text(sandbox, view, &view.records[index].path)?)))
        .collect::<Result<_>>()?;
    let with_alias = |index: usize, text: &str| -> Result<String> {
        let old = &view.records[index].path;
        match moved.get(old.as_str()) {
            Some(new) if keep_alias => {
                add_alias(old, text, strip_md(old.rsplit('/').next().unwrap_or(old)), new)
            }
            _ => Ok(text.to_owned()),
        }
    };

    // The vault after the move, before any link is rewritten.
    let new_path = |path: &str| moved.get(path).map_or_else(|| path.to_owned(), |new| (*new).to_owned());
    let record_of = |index: usize, text: &str| -> Result<Arc<NoteRecord>> {
        let old = &view.records[index];
        if !moved.contains_key(old.path.as_str()) && content_hash(text.as_bytes()) == old.hash {
            // The very bytes the record was made from, at the same path.
            return Ok(Arc::clone(old));
        }
        let path = NotePath::parse(&new_path(&old.path))?;
        let note = parse_note(&path, text);
        Ok(Arc::new(NoteRecord::from_note(
            note,
            old.kind,
            old.size,
            old.modified_ns,
            old.born_ns,
            old.hash.clone(),
        )))
    };
    // Judged without the old names as aliases: a link by the old name is
    // rewritten, not left to resolve through the alias.
    let mut staged: HashMap<usize, String> = texts.clone();
    let after = |staged: &HashMap<usize, String>| -> Result<(Vec<Arc<NoteRecord>>, Vec<usize>)> {
        // The staged notes parsed in parallel, the others shared.
        let mut parsed: HashMap<usize, Arc<NoteRecord>> = staged
            .par_iter()
            .map(|(&index, text)| Ok((index, record_of(index, text)?)))
            .collect::<Result<_>>()?;
        let mut records: Vec<(Arc<NoteRecord>, usize)> = Vec::with_capacity(view.records.len());
        for (index, record) in view.records.iter().enumerate() {
            let record = parsed.remove(&index).unwrap_or_else(|| Arc::clone(record));
            records.push((record, index));
        }
        records.sort_by(|a, b| a.0.path.cmp(&b.0.path));
        let mut position = vec![0usize; records.len()];
        for (at, (_, index)) in records.iter().enumerate() {
            position[*index] = at;
        }
        Ok((records.into_iter().map(|(record, _)| record).collect(), position))
    };
    let (new_records, _) = after(&staged)?;
    // Only where links lead is asked of the vault after the move: its resolver,
    // not a whole graph of every link resolved.
    let resolver = &Resolver::new(&new_records, view.attachments);
    let path_of = |resolution: Resolution, records: &[Arc<NoteRecord>]| -> Option<String> {
        match resolution {
            Resolution::Note(i) | Resolution::Broken(Broken::MissingHeading(i) | Broken::MissingBlock(i)) => {
                Some(records[i as usize].path.clone())
            }
            Resolution::Attachment(a) => view.attachments.get(a as usize).cloned(),
            Resolution::Broken(_) => None,
        }
    };

    // Each affected note's links judged on its own (in parallel): its new text
    // and how many of its links changed.
    let relink_note = |index: usize| -> Result<(usize, String, usize)> {
        let text = &texts[&index];
        let old_path = NotePath::parse(&view.records[index].path)?;
        let source = NotePath::parse(&new_path(old_path.as_str()))?;
        let old_spans = note_spans(&old_path, text);
        // Spans depend on the note's folder alone: parsed again only when it changes.
        let moved_spans = (old_path.parent() != source.parent()).then(|| note_spans(&source, text));
        let new_spans = moved_spans.as_ref().unwrap_or(&old_spans);
        let outlinks = view.graph.outlinks(index);
        let mut edits: Vec<LinkEdit> = Vec::new();
        for (number, (old, new)) in old_spans.links.iter().zip(&new_spans.links).enumerate() {
            if old.link.target.trim().is_empty() {
                continue;
            }
            let Some(resolution) = outlinks.get(number) else { continue };
            let Some(was) = path_of(*resolution, view.records) else { continue };
            let expected = new_path(&was);
            let packed: Links = vec![new.link.clone()].into();
            let Some(link) = packed.get(0) else { continue };
            let now = path_of(resolver.lead(&new_records, view.attachments, link), &new_records);
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
                continue;
            }
            let expected_path = NotePath::parse(&expected)?;
            let bare = strip_md(expected_path.file_name());
            let bare_link =
                LinkRef { target: bare, anchor: None, display: None, kind: LinkKind::Wikilink, line: 0 };
            let bare_is_unique =
                path_of(resolver.lead(&new_records, view.attachments, bare_link), &new_records).as_deref()
                    == Some(expected.as_str());
            if let Some(mut edit) = target_edit(text, old, &source, &expected_path, bare_is_unique) {
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
                        path_of(resolver.lead(&new_records, view.attachments, link), &new_records).as_deref()
                            == Some(expected.as_str())
                    });
                }
                // Written as the link's quotes need (a property's); one that
                // cannot be is left, and the check below refuses the move.
                if let Some(mut edit) = encoded(text, old, edit) {
                    if matches!(old.link.kind, LinkKind::Wikilink | LinkKind::Property)
                        && old.display.is_none()
                        && by_another_name(old, &was)
                    {
                        keep_shown_text(text, old, &mut edit);
                    }
                    edits.push(edit);
                }
            }
        }
        let rewritten = apply_link_edits(text, &edits);
        Ok((index, with_alias(index, &rewritten)?, edits.len()))
    };
    let relinked: Vec<(usize, String, usize)> =
        affected.par_iter().map(|&index| relink_note(index)).collect::<Result<_>>()?;
    let (mut notes, mut links) = (0u32, 0u32);
    for (index, text, edits) in relinked {
        if edits > 0 {
            notes += 1;
            links = links.saturating_add(u32::try_from(edits).unwrap_or(u32::MAX));
        }
        staged.insert(index, text);
    }

    // The vault as it would be: no link may break. Counted over the links
    // whose resolution can change, not by resolving the whole vault again.
    let (final_records, position) = after(&staged)?;
    let same_names = affected.iter().all(|&index| {
        let (was, is) = (&new_records[position[index]], &final_records[position[index]]);
        was.path == is.path && was.aliases == is.aliases
    });
    let final_resolver;
    let final_resolver = if same_names {
        resolver
    } else {
        final_resolver = Resolver::new(&final_records, view.attachments);
        &final_resolver
    };
    // The notes whose record differs (one made from unchanged bytes is shared).
    let changed: Vec<usize> = affected
        .iter()
        .copied()
        .filter(|&index| !Arc::ptr_eq(&view.records[index], &final_records[position[index]]))
        .collect();
    let after_move = view.graph.after_change(
        view.records,
        &final_records,
        final_resolver,
        view.attachments,
        &changed,
        &[],
        &position,
    );
    let broken_after = after_move.broken_count;
    debug_assert_eq!(
        broken_after,
        Graph::build(&final_records, view.attachments).broken_count,
        "the broken links counted over the changed links are the whole graph's"
    );
    // Every link of a note that led to a moved note is rewritten; no other
    // link may come to lead elsewhere (a name taken from another note, an
    // alias; a link in a read-only standard, which is not rewritten).
    if let Some(&(from, number, lead)) = after_move.relinked.first() {
        let holder = &view.records[from];
        let link = holder.links.get(number);
        let written = link.map(super::delete::written).unwrap_or_default();
        let line = link.map_or(0, |l| l.line);
        let now = match lead {
            Resolution::Note(to) => format!("lead to {}", final_records[to as usize].path),
            _ => "break".to_owned(),
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
    let mut files = Vec::new();
    for (old, new) in &moves {
        let index = index_of[old.as_str()];
        files.push(FileOp {
            op: FileOpKind::Move,
            path: old.clone(),
            to: Some(new.clone()),
            before: Some(texts[&index].clone()),
            after: Some(staged[&index].clone()),
            kept: None,
        });
    }
    for &index in &affected {
        let path = &view.records[index].path;
        if moved.contains_key(path.as_str()) || staged[&index] == texts[&index] {
            continue;
        }
        files.push(FileOp {
            op: FileOpKind::Write,
            path: path.clone(),
            to: None,
            before: Some(texts[&index].clone()),
            after: Some(staged[&index].clone()),
            kept: None,
        });
    }
    let plural = |n: usize, noun: &str| format!("{n} {noun}{}", if n == 1 { "" } else { "s" });
    let rewrite = format!("rewrite {} in {}", plural(links as usize, "link"), plural(notes as usize, "note"));
    let summary = match moves.as_slice() {
        [(old, new)] if old.ends_with(".md") && from.ends_with(".md") => {
            format!("move {old} → {new}, {rewrite}")
        }
        _ => format!(
            "move folder {} → {} ({}), {rewrite}",
            from.trim_end_matches('/'),
            to.trim_end_matches('/'),
            plural(moves.len(), "note")
        ),
    };
    Ok(MovePlan { moves, notes, links, plan: Plan { schema: PLAN_SCHEMA, summary, files, linkers: None } })
}

/// Adds `alias` to a note's `aliases` (when its file name changes), editing
/// only that frontmatter entry, or adding one.
fn add_alias(old: &str, text: &str, alias: &str, new: &str) -> Result<String> {
    let new_stem = strip_md(new.rsplit('/').next().unwrap_or(new));
    if new_stem == alias {
        return Ok(text.to_owned());
    }
    let path = NotePath::parse(old)?;
    let mut aliases = parse_note(&path, text).aliases;
    if aliases.iter().any(|a| a.trim() == alias) {
        return Ok(text.to_owned());
    }
    aliases.push(alias.to_owned());
    let line = format!("{}\n", yaml::entry("aliases", &json!(aliases))?);
    let keys = frontmatter_keys(text);
    let bom = if text.starts_with('\u{feff}') { '\u{feff}'.len_utf8() } else { 0 };
    let mut out = String::with_capacity(text.len() + line.len() + 8);
    if let Some(key) = keys.iter().find(|key| key.key == "aliases") {
        out.push_str(&text[..key.entry.start]);
        out.push_str(&line);
        out.push_str(&text[key.entry.end..]);
    } else if let Some(last) = keys.last() {
        out.push_str(&text[..last.entry.end]);
        out.push_str(&line);
        out.push_str(&text[last.entry.end..]);
    } else if text[bom..].starts_with("---") && crate::vault::parse_frontmatter(text).is_some() {
        let first_line = text[bom..].find('\n').map_or(text.len(), |at| bom + at + 1);
        out.push_str(&text[..first_line]);
        out.push_str(&line);
        out.push_str(&text[first_line..]);
    } else {
        out.push_str(&text[..bom]);
        out.push_str("---\n");
        out.push_str(&line);
        out.push_str("---\n");
        out.push_str(&text[bom..]);
    }
    Ok(out)
}
