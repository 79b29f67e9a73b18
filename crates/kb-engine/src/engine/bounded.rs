//! Bounds on what one note may cost a request: how much of a file is read and
//! parsed, what a parse costs when it is asked for again, and how much of a note's
//! metadata goes into an answer.
//!
//! A vault may hold a 50 MB note, a frontmatter value of 10 MB or 50,000 headings.
//! Reading such a note whole for every search hit, re-parsing it on every read, or
//! returning its metadata whole would make one note cost gigabytes and seconds per
//! request. So: files up to [`WHOLE_MAX`] are read whole, larger ones through a
//! window; snippets come from the first [`SNIPPET_WINDOW`] bytes; parses are cached
//! by path and content hash; and answers cap frontmatter, outlines, tags and aliases,
//! and a proposal's diff, saying how much they left out.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Value};

use crate::sandbox::NotePath;
use crate::vault::{Note, parse_note};

/// Largest file read and parsed whole; a larger note is parsed from its first
/// `WHOLE_MAX` bytes and its content is served by pages read from the file.
pub(super) const WHOLE_MAX: u64 = 8 * 1024 * 1024;
/// Bytes of a note (from its start) in which a search hit's snippets are looked for.
pub(super) const SNIPPET_WINDOW: u64 = 1024 * 1024;
/// Longest string in a capped answer (a frontmatter value, a heading, an alias), in characters.
pub(super) const TEXT_MAX_CHARS: usize = 500;
/// Most items of one list or keys of one mapping in a capped frontmatter value.
const ITEMS_MAX: usize = 100;
/// Nesting kept in a capped frontmatter value; deeper values are left out.
const DEPTH_MAX: usize = 8;
/// Fewest and most bytes of JSON that `read_note` spends on the frontmatter and
/// on the outline, each; between them the page size (`max_bytes`) decides.
pub(super) const METADATA_BUDGET: (usize, usize) = (2 * 1024, 32 * 1024);
/// Aliases and tags in a search hit.
pub(super) const HIT_LIST_MAX: usize = 20;
/// Total text kept in the parse cache, in bytes of the parsed notes.
const CACHE_BYTES: usize = 32 * 1024 * 1024;

/// The most bytes of a diff a proposal's answer carries (whole lines; the
/// rest is counted): a folder move of 19,000 notes answered 30 MB. The whole
/// diff stays in the inbox, and the answer says how the person sees it.
pub(super) const DIFF_MAX_BYTES: usize = 64 * 1024;

/// A proposal's diff within [`DIFF_MAX_BYTES`]: its first whole lines, then a
/// line saying how much was left out and where the whole diff is.
pub(super) fn cap_diff(diff: String, proposal_id: &str) -> String {
    if diff.len() <= DIFF_MAX_BYTES {
        return diff;
    }
    let mut cut = DIFF_MAX_BYTES;
    while !diff.is_char_boundary(cut) {
        cut -= 1;
    }
    let cut = diff[..cut].rfind('\n').map_or(0, |at| at + 1);
    let rest = &diff[cut..];
    let lines = rest.lines().count();
    format!(
        "{}… {lines} more lines ({} bytes) of the diff are left out of this answer; the whole diff is \
         staged in the inbox, and the person sees it with `kb-index inbox show {proposal_id}`\n",
        &diff[..cut],
        rest.len()
    )
}

/// The most files of an applied proposal's audit line an answer lists.
const AUDIT_FILES_LISTED: usize = 100;

/// An audit line as an answer carries it: a multi-file proposal's `files`
/// (every file, with its hashes: 19,000 for a large folder move) cut to the
/// first [`AUDIT_FILES_LISTED`], `files_omitted` counting the rest (the line in
/// `inbox/_applied.jsonl` keeps every one).
pub(super) fn cap_audit_line(mut line: Value) -> Value {
    if let Some(Value::Array(files)) = line.get_mut("files")
        && files.len() > AUDIT_FILES_LISTED
    {
        let omitted = files.len() - AUDIT_FILES_LISTED;
        files.truncate(AUDIT_FILES_LISTED);
        line["files_omitted"] = Value::from(omitted as u64);
    }
    line
}

/// `text` cut to `max` characters, with `…` when something was cut.
pub(super) fn cut_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The longest prefix of `bytes` that is whole UTF-8 when `bytes` is a window cut
/// from a longer file: a character split by the cut is dropped. `None` when the
/// bytes are not UTF-8 before that.
pub(super) fn window_text(bytes: &[u8]) -> Option<&str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Some(text),
        // `error_len` is None only for a sequence cut short at the end.
        Err(err) if err.error_len().is_none() => std::str::from_utf8(&bytes[..err.valid_up_to()]).ok(),
        Err(_) => None,
    }
}

/// Recent parses by path and content hash. A parse depends only on the path and
/// the bytes, so one cache serves every engine in the process.
type Entries = VecDeque<(String, String, usize, Arc<Note>)>;

fn cache() -> &'static Mutex<Entries> {
    static CACHE: OnceLock<Mutex<Entries>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(VecDeque::new()))
}

/// [`parse_note`], answered from the cache when this path was parsed with these
/// bytes (`hash` is their content hash) recently.
pub(super) fn parsed(path: &NotePath, hash: &str, text: &str) -> Arc<Note> {
    let found = {
        let entries = cache().lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        entries.iter().find(|(p, h, _, _)| p == path.as_str() && h == hash).map(|entry| Arc::clone(&entry.3))
    };
    if let Some(note) = found {
        return note;
    }
    let note = Arc::new(parse_note(path, text));
    let mut entries = cache().lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !entries.iter().any(|(p, h, _, _)| p == path.as_str() && h == hash) {
        entries.push_back((path.as_str().to_owned(), hash.to_owned(), text.len(), Arc::clone(&note)));
        let mut total: usize = entries.iter().map(|entry| entry.2).sum();
        while total > CACHE_BYTES && entries.len() > 1 {
            total -= entries.pop_front().map_or(0, |entry| entry.2);
        }
    }
    note
}

/// The frontmatter within `budget` bytes of JSON: strings cut to
/// [`TEXT_MAX_CHARS`], lists and mappings to [`ITEMS_MAX`] entries, nesting to
/// [`DEPTH_MAX`], then top-level keys dropped from the end until it fits. Returns
/// the capped mapping and how many values, items and keys were cut or left out.
pub(super) fn cap_frontmatter(map: &Map<String, Value>, budget: usize) -> (Map<String, Value>, u64) {
    let mut omitted = 0u64;
    let mut out = Map::new();
    let mut used = 2usize;
    for (key, value) in map {
        let capped = cap_value(value, 0, &mut omitted);
        let cost = serde_json::to_string(&capped).map_or(usize::MAX, |s| s.len()) + key.len() + 4;
        if used.saturating_add(cost) > budget {
            omitted += 1;
            continue;
        }
        used += cost;
        out.insert(cut_chars(key, TEXT_MAX_CHARS), capped);
    }
    (out, omitted)
}

fn cap_value(value: &Value, depth: usize, omitted: &mut u64) -> Value {
    match value {
        Value::String(s) => {
            let cut = cut_chars(s, TEXT_MAX_CHARS);
            if cut.len() != s.len() {
                *omitted += 1;
            }
            Value::String(cut)
        }
        Value::Array(items) if depth >= DEPTH_MAX && !items.is_empty() => {
            *omitted += 1;
            Value::Array(Vec::new())
        }
        Value::Object(map) if depth >= DEPTH_MAX && !map.is_empty() => {
            *omitted += 1;
            Value::Object(Map::new())
        }
        Value::Array(items) => {
            *omitted += items.len().saturating_sub(ITEMS_MAX) as u64;
            Value::Array(
                items.iter().take(ITEMS_MAX).map(|item| cap_value(item, depth + 1, omitted)).collect(),
            )
        }
        Value::Object(map) => {
            *omitted += map.len().saturating_sub(ITEMS_MAX) as u64;
            Value::Object(
                map.iter()
                    .take(ITEMS_MAX)
                    .map(|(k, v)| (cut_chars(k, TEXT_MAX_CHARS), cap_value(v, depth + 1, omitted)))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

/// The first items of a list that fit `max_items`, each cut to
/// [`TEXT_MAX_CHARS`], and how many items were left out.
pub(super) fn cap_list(list: &[String], max_items: usize) -> (Vec<String>, u64) {
    let kept = list.iter().take(max_items).map(|item| cut_chars(item, TEXT_MAX_CHARS)).collect();
    (kept, list.len().saturating_sub(max_items) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_drops_only_a_character_cut_at_its_end() {
        let text = "ab同步";
        assert_eq!(window_text(&text.as_bytes()[..4]), Some("ab"));
        assert_eq!(window_text(text.as_bytes()), Some(text));
        assert_eq!(window_text(b"a\xffb"), None);
    }

    #[test]
    fn capped_frontmatter_fits_its_budget_and_counts_what_it_left_out() {
        let map = serde_json::json!({
            "title": "T",
            "huge": "x".repeat(1_000_000),
            "list": (0..1000).collect::<Vec<_>>(),
            "deep": serde_json::json!([[[[[[[[[[1]]]]]]]]]]),
        });
        let (capped, omitted) = cap_frontmatter(map.as_object().unwrap(), 4096);
        assert!(serde_json::to_string(&capped).unwrap().len() <= 4096);
        assert_eq!(capped["title"], "T");
        assert_eq!(capped["huge"].as_str().unwrap().chars().count(), TEXT_MAX_CHARS + 1);
        assert_eq!(capped["list"].as_array().unwrap().len(), ITEMS_MAX);
        assert!(omitted > 1 + 900, "{omitted}");
        let (capped, omitted) = cap_frontmatter(map.as_object().unwrap(), 100);
        assert!(serde_json::to_string(&capped).unwrap().len() <= 100);
        assert!(omitted >= 3);
    }
}
