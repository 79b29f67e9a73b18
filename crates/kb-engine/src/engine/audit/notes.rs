//! The checks about notes as a whole, from the catalog alone: orphans,
//! duplicate titles and aliases, notes missing from their tag's map of content,
//! oversize notes and files skipped as notes.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::findings::Findings;
use super::{NAMED_MAX, Scope};
use crate::engine::types::{AuditCheck, Fix};
use crate::vault::{NoteKind, is_canvas};

/// Notes nothing links to that link to nothing.
pub(super) fn orphans(scope: &Scope<'_>, findings: &mut Findings) {
    for &i in scope.graph().orphans.iter().filter(|i| scope.records[**i].path.starts_with(&scope.prefix)) {
        findings.push(
            AuditCheck::Orphan,
            &scope.records[i].path,
            None,
            "no note links here and it links to no note".to_owned(),
            None,
        );
    }
}

/// Titles and aliases of notes in scope that another note (anywhere) also has.
pub(super) fn duplicate_titles(scope: &Scope<'_>, findings: &mut Findings) {
    let records = scope.records;
    let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, record) in records.iter().enumerate().filter(|(_, r)| r.kind == NoteKind::Note) {
        let mut own: Vec<String> = std::iter::once(record.title.trim().to_lowercase())
            .chain(record.aliases.iter().map(|a| a.trim().to_lowercase()))
            .filter(|n| !n.is_empty())
            .collect();
        own.sort();
        own.dedup();
        for name in own {
            by_name.entry(name).or_default().push(i);
        }
    }
    for &i in &scope.in_scope {
        let record = &records[i];
        let mut own: Vec<&str> = std::iter::once(record.title.trim())
            .chain(record.aliases.iter().map(|a| a.trim()))
            .filter(|n| !n.is_empty())
            .collect();
        own.dedup_by(|a, b| a.to_lowercase() == b.to_lowercase());
        let mut reported = HashSet::new();
        for name in own {
            let key = name.to_lowercase();
            if !reported.insert(key.clone()) {
                continue;
            }
            let others: Vec<&str> = by_name
                .get(&key)
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .filter(|&&o| o != i)
                .map(|&o| records[o].path.as_str())
                .collect();
            if others.is_empty() {
                continue;
            }
            let what = if name == record.title.trim() { "title" } else { "alias" };
            let more = others.len().saturating_sub(NAMED_MAX);
            let more = if more > 0 { format!(" and {more} more") } else { String::new() };
            findings.push(
                AuditCheck::DuplicateTitle,
                &record.path,
                None,
                format!(
                    "its {what} `{name}` is also the title or an alias of {}{more}",
                    others[..others.len().min(NAMED_MAX)].join(", ")
                ),
                None,
            );
        }
    }
}

/// Notes in scope that carry a map of content's tag but that map does not link.
pub(super) fn moc_missing(scope: &Scope<'_>, findings: &mut Findings) {
    let records = scope.records;
    let mut carriers: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, record) in records.iter().enumerate().filter(|(_, r)| r.kind == NoteKind::Note) {
        for tag in &record.tags {
            carriers.entry(tag.to_lowercase()).or_default().push(i);
        }
    }
    let registry = scope.config.tag_registry.as_deref();
    // A map of content is a note (the tag registry, listing #moc, is not one).
    let maps = scope.graph().mocs.iter().copied().filter(|&m| {
        records[m].kind == NoteKind::Note
            && Some(records[m].path.as_str()) != registry
            && !is_canvas(&records[m].path)
    });
    for moc in maps {
        for (note, tag) in moc_members(scope, moc, &carriers) {
            if note == moc || !records[note].path.starts_with(&scope.prefix) || records[note].is_moc() {
                continue;
            }
            if scope.graph().backlinks(note).iter().any(|b| b.from as usize == moc) {
                continue;
            }
            let map = &records[moc];
            let name = super::links::link_name(scope.graph(), records, scope.attachments, note);
            findings.push(
                AuditCheck::MocMissing,
                &records[note].path,
                None,
                format!("it carries #{tag}, but the map of content {} does not link it", map.path),
                Some(Fix {
                    path: map.path.clone(),
                    summary: format!("add [[{name}]] to {}", map.path),
                    old: None,
                    new: format!("- [[{name}]]"),
                    mechanical: super::spelling::fits_in_link(&name),
                }),
            );
        }
    }
}

/// The notes a map of content covers (carrying one of its tags, or the subject
/// of its title `<subject> MOC`, or a tag below one), each with the tag it covers.
fn moc_members(
    scope: &Scope<'_>,
    moc: usize,
    carriers: &HashMap<String, Vec<usize>>,
) -> BTreeMap<usize, String> {
    let map = &scope.records[moc];
    let mut mapped: BTreeSet<String> =
        map.tags.iter().map(|t| t.to_lowercase()).filter(|t| t != "moc" && !t.starts_with("moc/")).collect();
    let title = map.title.trim().to_lowercase();
    if let Some(subject) = title.strip_suffix(" moc").map(str::trim).filter(|s| !s.is_empty()) {
        mapped.insert(subject.replace(' ', "-"));
        mapped.insert(subject.to_owned());
    }
    let mut members: BTreeMap<usize, String> = BTreeMap::new();
    for (tag, notes) in carriers {
        let Some(own) = mapped
            .iter()
            .find(|m| tag == *m || tag.strip_prefix(m.as_str()).is_some_and(|r| r.starts_with('/')))
        else {
            continue;
        };
        for &n in notes {
            members.entry(n).or_insert_with(|| own.clone());
        }
    }
    members
}

/// Notes larger than `read_note` returns at once.
pub(super) fn oversize(scope: &Scope<'_>, findings: &mut Findings) {
    let most = scope.config.limits.read_max_bytes;
    for &i in scope.in_scope.iter().filter(|&&i| scope.records[i].size > most) {
        findings.push(
            AuditCheck::OversizeNote,
            &scope.records[i].path,
            None,
            format!(
                "{} bytes, more than read_note returns at once (read_max_bytes = {most}): split it",
                scope.records[i].size
            ),
            None,
        );
    }
}

/// Files under the folder that sync could not serve as notes (templates are
/// skipped on purpose and not reported).
pub(super) fn skipped(scope: &Scope<'_>, skipped: &[(String, String)], findings: &mut Findings) {
    for (path, reason) in skipped {
        if path.starts_with(&scope.prefix) && !reason.starts_with("a template") {
            findings.push(
                AuditCheck::SkippedFile,
                path,
                None,
                format!("not served as a note: {reason}"),
                None,
            );
        }
    }
}
