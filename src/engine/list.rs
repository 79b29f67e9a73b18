//! `list_notes`: the vault's `ls`, a folder's direct notes and subfolders.
//!
//! Everything comes from the catalog (sorted by path), so a folder is one range
//! of it and nothing is read from disk but the folder check: what the catalog
//! leaves out (denied notes, templates, skipped files) is never listed. Pages are
//! cut by a cursor that names the last note returned (its sort key and path), not
//! a position, so notes added or removed between two calls never shift a page:
//! a note is never listed twice, and one that stays is never missed.

use super::Engine;
use super::bounded::{HIT_LIST_MAX, TEXT_MAX_CHARS, cap_list, cut_chars};
use super::read::{created_nanos, created_rfc3339};
use super::rfc3339;
use super::types::{FolderCount, LIST_NOTES_LIMIT, ListNotesArgs, ListSort, ListedNote, NoteList};
use crate::error::{Error, ErrorCode, Result};
use crate::vault::NoteRecord;

/// Most subfolders one answer lists (the rest are counted in `folders_omitted`).
const FOLDERS_MAX: usize = 500;

/// Where a page starts: after the note with this sort key and path.
#[derive(Debug, PartialEq, Eq)]
struct Cursor {
    key: i128,
    path: String,
}

/// What a cursor is bound to, so that one is never used with other arguments.
fn scope(folder: &str, tag: &str, sort: ListSort) -> String {
    let sort = match sort {
        ListSort::Path => "path",
        ListSort::Updated => "updated",
        ListSort::Created => "created",
    };
    format!("{sort}\n{folder}\n{tag}")
}

impl Cursor {
    /// `l1` and the hex of `scope\nkey\npath`: opaque to the agent, checked on return.
    fn encode(&self, scope: &str) -> String {
        super::cursor::encode("l1", &format!("{scope}\n{}\n{}", self.key, self.path))
    }

    fn decode(text: &str, scope: &str) -> Result<Cursor> {
        let bad = || {
            Error::invalid(format!("`cursor` {:?} is not a cursor list_notes returned", cut(text)))
                .with_hint("pass the `next_cursor` of the previous answer unchanged, or leave `cursor` out to start again")
        };
        let text = super::cursor::decode("l1", text).ok_or_else(bad)?;
        let (front, path) = text.rsplit_once('\n').ok_or_else(bad)?;
        let (given, key) = front.rsplit_once('\n').ok_or_else(bad)?;
        if given != scope {
            return Err(Error::invalid("`cursor` belongs to a listing with another folder, tag or sort")
                .with_hint("pass the same folder, tag and sort as the call that returned the cursor"));
        }
        Ok(Cursor { key: key.parse().map_err(|_| bad())?, path: path.to_owned() })
    }
}

/// At most 40 characters of a bad argument, for an error message.
fn cut(text: &str) -> String {
    text.chars().take(40).collect()
}

impl Engine {
    /// A `folder` argument as a vault-relative folder that exists (`""`: the
    /// whole vault); a folder that is not there is `not_found` with `hint`.
    pub(super) fn existing_folder(&self, folder: Option<&str>, hint: &str) -> Result<String> {
        let sandbox = self.sandbox();
        match sandbox.resolve_folder(folder.unwrap_or(""))? {
            Some(folder) if !sandbox.is_folder(&folder) => {
                Err(Error::new(ErrorCode::NotFound, format!("there is no folder {folder} in the vault"))
                    .with_hint(hint))
            }
            Some(folder) => Ok(folder.as_str().to_owned()),
            None => Ok(String::new()),
        }
    }

    /// `list_notes`.
    pub fn list_notes(&self, args: &ListNotesArgs) -> Result<NoteList> {
        let limit = LIST_NOTES_LIMIT.check("limit", args.limit)? as usize;
        let sort = args.sort.unwrap_or_default();
        let folder = self.existing_folder(
            args.folder.as_deref(),
            "list_notes without `folder` (`kb-index ls`) shows the top-level folders",
        )?;
        let tag = args.tag.as_deref().map(|t| t.trim().trim_start_matches('#').to_lowercase());
        if tag.as_deref().is_some_and(str::is_empty) {
            return Err(
                Error::invalid("`tag` is empty").with_hint("give a tag such as daily, or leave `tag` out")
            );
        }
        let scope = scope(&folder, tag.as_deref().unwrap_or(""), sort);
        let cursor = args.cursor.as_deref().map(|text| Cursor::decode(text, &scope)).transpose()?;

        let catalog = self.catalog();
        let records = catalog.records();
        let prefix = if folder.is_empty() { String::new() } else { format!("{folder}/") };
        // The folder's records are one run of the path-sorted records.
        let start = records.partition_point(|r| r.path.as_str() < prefix.as_str());
        let end = start + records[start..].partition_point(|r| r.path.starts_with(&prefix));
        let mut folders: Vec<FolderCount> = Vec::new();
        let mut notes: Vec<(i128, &NoteRecord)> = Vec::new();
        let key = |record: &NoteRecord| match sort {
            ListSort::Path => 0,
            ListSort::Updated => i128::from(record.modified_ns),
            ListSort::Created => created_nanos(record),
        };
        match tag.as_deref() {
            // Only the tagged records of the folder's run are looked at.
            Some(tag) => {
                let tagged = catalog.tagged(tag);
                let from = tagged.partition_point(|&at| (at as usize) < start);
                for &at in tagged[from..].iter().take_while(|&&at| (at as usize) < end) {
                    let record = &records[at as usize];
                    match record.path[prefix.len()..].split_once('/') {
                        // Records come by path, so one subfolder's notes are adjacent.
                        Some((sub, _)) => match folders.last_mut() {
                            Some(last) if last.path[prefix.len()..] == *sub => last.notes += 1,
                            _ => folders.push(FolderCount { path: format!("{prefix}{sub}"), notes: 1 }),
                        },
                        None => notes.push((key(record), record)),
                    }
                }
            }
            // A subfolder's records are a run too: counted by two binary searches,
            // not one by one (the vault's top level holds every note).
            None => {
                let mut at = start;
                while at < end {
                    let record = &records[at];
                    match record.path[prefix.len()..].split_once('/') {
                        Some((sub, _)) => {
                            let below = format!("{prefix}{sub}/");
                            let count = records[at..end].partition_point(|r| r.path.starts_with(&below));
                            folders.push(FolderCount { path: format!("{prefix}{sub}"), notes: count as u64 });
                            at += count;
                        }
                        None => {
                            notes.push((key(record), record));
                            at += 1;
                        }
                    }
                }
            }
        }
        // Newest first for times; by path within one key (and for `path`).
        notes.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.path.cmp(&b.1.path)));
        let total = notes.len() as u64;
        let from = match &cursor {
            None => 0,
            Some(after) => notes.partition_point(|(key, record)| {
                *key > after.key || (*key == after.key && record.path.as_str() <= after.path.as_str())
            }),
        };
        let page = &notes[from..(from + limit).min(notes.len())];
        let next_cursor = (from + page.len() < notes.len())
            .then(|| page.last())
            .flatten()
            .map(|(key, record)| Cursor { key: *key, path: record.path.clone() }.encode(&scope));
        let notes = page
            .iter()
            .map(|(_, record)| {
                let (tags, tags_omitted) = cap_list(&record.tags, HIT_LIST_MAX);
                ListedNote {
                    path: record.path.clone(),
                    title: cut_chars(&record.title, TEXT_MAX_CHARS),
                    updated: rfc3339(record.modified_ns),
                    created: created_rfc3339(record),
                    tags,
                    tags_omitted,
                }
            })
            .collect();
        if cursor.is_some() {
            folders.clear();
        }
        let folders_omitted = folders.len().saturating_sub(FOLDERS_MAX) as u64;
        folders.truncate(FOLDERS_MAX);
        Ok(NoteList { folder, folders, folders_omitted, notes, total, next_cursor })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::catalog::Catalog;
    use crate::sandbox::NotePath;
    use crate::vault::{NoteKind, parse_note};

    /// The catalog's tag lists answer as lowercasing each record's tags would,
    /// ASCII or not, a tag or one below it (what the filter looked at, record by
    /// record, before the lists).
    #[test]
    fn tagged_records_are_those_carrying_the_tag_or_one_below_it() {
        let notes = [
            vec!["Daily", "project/KB-mcp"],
            vec!["İstanbul", "STRAẞE/x"],
            vec!["ΣΟΦΙΑ", "ΟΔΟΣ", "dailyish"],
            vec!["a", "a//b", "project"],
            vec![],
            vec!["DAILY", "daily/X"],
        ];
        let records: Vec<Arc<NoteRecord>> = notes
            .iter()
            .enumerate()
            .map(|(at, tags)| {
                let text = format!("---\ntags: [{}]\n---\n", tags.join(", "));
                let note = parse_note(&NotePath::parse(&format!("n{at}.md")).unwrap(), &text);
                let record = NoteRecord::from_note(note, NoteKind::Note, 0, 0, None, String::new());
                assert_eq!(record.tags.len(), tags.len(), "{:?}", record.tags);
                Arc::new(record)
            })
            .collect();
        let catalog = Catalog::new(records, Vec::new());
        let carries = |record: &NoteRecord, tag: &str| {
            record.tags.iter().any(|own| {
                let own = own.to_lowercase();
                own == tag || own.strip_prefix(tag).is_some_and(|rest| rest.starts_with('/'))
            })
        };
        for tag in [
            "daily",
            "dail",
            "project",
            "project/kb-mcp",
            "project/kb",
            "i̇stanbul",
            "istanbul",
            "straße",
            "straße/x",
            "σοφια",
            "οδος",
            "οδοσ",
            "dailyish",
            "a",
            "a/",
            "a//b",
            "b",
            "",
            "projec",
            "project/kb-mcp/deeper",
        ] {
            let expected: Vec<u32> = (0..catalog.records().len())
                .filter(|&at| carries(&catalog.records()[at], tag))
                .map(|at| at as u32)
                .collect();
            assert_eq!(catalog.tagged(tag), expected.as_slice(), "{tag}");
        }
    }
}
