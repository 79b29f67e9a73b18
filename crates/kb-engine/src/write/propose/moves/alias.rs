//! A moved note's old name added to its `aliases` (`keep_alias`), so that
//! spoken references and links by the old name still find it.
//!
//! Only the `aliases` entry changes, and as little of it as can be: a block
//! list gets one more `- item` line after its last line, a one-line flow list
//! one more item before its `]`, so the comments, order and layout the person
//! chose stay. Either edit is checked by parsing the frontmatter back: the
//! same value but for the one alias more. Anything else (a single string, a
//! list written some other way) is written again as a flow list, or the
//! entry is added after the last key (or a frontmatter block made for it).

use serde_json::{Value, json};

use crate::error::Result;
use crate::sandbox::{NotePath, strip_md};
use crate::vault::{KeySpan, bom_len, frontmatter_keys, parse_frontmatter, parse_note};
use crate::write::text::yaml;

/// Adds `alias` to the `aliases` of a note moved from `old` to `new` (whose
/// text is `text`) when its file name changes and the note lacks it.
pub(super) fn add_alias(old: &str, text: &str, alias: &str, new: &str) -> Result<String> {
    let new_stem = strip_md(new.rsplit('/').next().unwrap_or(new));
    if new_stem == alias {
        return Ok(text.to_owned());
    }
    let path = NotePath::parse(old)?;
    let mut aliases = parse_note(&path, text).aliases;
    if aliases.iter().any(|a| a.trim() == alias) {
        return Ok(text.to_owned());
    }
    let keys = frontmatter_keys(text);
    let entry = keys.iter().find(|key| key.key == "aliases");
    if let Some(edited) = entry.and_then(|entry| appended(text, entry, alias)) {
        return Ok(edited);
    }
    aliases.push(alias.to_owned());
    let line = format!("{}\n", yaml::entry("aliases", &json!(aliases))?);
    let bom = bom_len(text);
    let mut out = String::with_capacity(text.len() + line.len() + 8);
    if let Some(key) = entry {
        out.push_str(&text[..key.entry.start]);
        out.push_str(&line);
        out.push_str(&text[key.entry.end..]);
    } else if let Some(last) = keys.last() {
        out.push_str(&text[..last.entry.end]);
        out.push_str(&line);
        out.push_str(&text[last.entry.end..]);
    } else if text[bom..].starts_with("---") && parse_frontmatter(text).is_some() {
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

/// `text` with `alias` added to the list the `aliases` entry holds, in the
/// list's own layout (see the module docs); `None` when the entry is no list
/// written so, or the edit would not read back as that list and `alias`.
fn appended(text: &str, entry: &KeySpan, alias: &str) -> Option<String> {
    let before = parse_frontmatter(text)?.value;
    let mut expected = before.clone();
    expected.get_mut("aliases")?.as_array_mut()?.push(Value::String(alias.to_owned()));
    let written = entry.entry.of(text);
    let first_line = written.split_inclusive('\n').next()?;
    let value = first_line[entry.span.end - entry.entry.start..].trim_start_matches(':').trim();
    let edited = if value.is_empty() || value.starts_with('#') {
        block_item(text, entry, alias)?
    } else if value.starts_with('[') {
        flow_item(text, entry, first_line, alias)?
    } else {
        return None;
    };
    (parse_frontmatter(&edited)?.value == expected).then_some(edited)
}

/// A block list's entry with one more `- item` line after its last line,
/// indented like its last item.
fn block_item(text: &str, entry: &KeySpan, alias: &str) -> Option<String> {
    let lines: Vec<&str> = entry.entry.of(text).split_inclusive('\n').collect();
    let last_item = lines.iter().skip(1).rev().find(|line| {
        let item = line.trim_start_matches([' ', '\t']);
        item.starts_with("- ") || item.trim_end() == "-"
    })?;
    let indent = &last_item[..last_item.len() - last_item.trim_start_matches([' ', '\t']).len()];
    let ending = if lines.last()?.ends_with("\r\n") { "\r\n" } else { "\n" };
    let mut out = String::with_capacity(text.len() + alias.len() + 16);
    out.push_str(&text[..entry.entry.end]);
    if !text[..entry.entry.end].ends_with('\n') {
        out.push_str(ending);
    }
    out.push_str(indent);
    out.push_str("- ");
    out.push_str(&yaml::list_item(alias, false));
    out.push_str(ending);
    out.push_str(&text[entry.entry.end..]);
    Some(out)
}

/// A one-line flow list's entry (`first_line`) with one more item before its `]`.
fn flow_item(text: &str, entry: &KeySpan, first_line: &str, alias: &str) -> Option<String> {
    if entry.entry.of(text).len() != first_line.len() {
        return None;
    }
    let close = entry.entry.start + first_line.rfind(']')?;
    let open = entry.entry.start + first_line.find('[')?;
    let empty = text[open + 1..close].trim().is_empty();
    let mut out = String::with_capacity(text.len() + alias.len() + 4);
    out.push_str(&text[..close]);
    if !empty {
        out.push_str(", ");
    }
    out.push_str(&yaml::list_item(alias, true));
    out.push_str(&text[close..]);
    Some(out)
}
