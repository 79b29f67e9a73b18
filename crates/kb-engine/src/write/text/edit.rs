//! Edits: the operations a patch proposal is made of, and [`apply_edits`], the
//! pure function that performs them on a note's text.
//!
//! The rule every operation follows: touch only the bytes the edit names. A
//! file's line endings (CRLF stays CRLF: inserted text is converted to the
//! file's ending), its BOM, whether it ends with a newline, and every
//! frontmatter line an edit does not name come out exactly as they went in.
//! `apply_edits` is total: any text and any edit list give a new text or an
//! error that says what to fix, never a panic (a property test holds it to that).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::yaml;
use crate::error::{Error, Result};
use crate::vault::{
    BOM, Heading, Span, atx_heading_line, bom_len, frontmatter_keys, heading_blocks, heading_key, line_start,
    parse_frontmatter, replace_spans, section_range,
};

/// One change to a note (each applies to the result of the one before).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Edit {
    /// Replace the whole note.
    ReplaceAll {
        /// New text.
        content: String,
    },
    /// Replace what is under a heading (the heading stays unless `content` starts with one).
    ReplaceSection {
        /// Heading text (`## X`: level 2).
        heading: String,
        /// New lines.
        content: String,
    },
    /// Add at the end.
    Append {
        /// Text.
        content: String,
    },
    /// Add after the frontmatter.
    Prepend {
        /// Text.
        content: String,
    },
    /// Replace `find` (once) with `replace`.
    FindReplace {
        /// Text found exactly once.
        find: String,
        /// Replacement.
        replace: String,
    },
    /// Merge frontmatter keys (null removes one).
    SetFrontmatter {
        /// Keys and values.
        fields: Map<String, Value>,
    },
}

impl Edit {
    /// The wire name of the operation, e.g. `find_replace`.
    pub fn op(&self) -> &'static str {
        match self {
            Edit::ReplaceAll { .. } => "replace_all",
            Edit::ReplaceSection { .. } => "replace_section",
            Edit::Append { .. } => "append",
            Edit::Prepend { .. } => "prepend",
            Edit::FindReplace { .. } => "find_replace",
            Edit::SetFrontmatter { .. } => "set_frontmatter",
        }
    }
}

/// Applies the edits in order and returns the new text. Pure: no I/O. An error
/// names the edit (1-based) that failed and why.
pub fn apply_edits(text: &str, edits: &[Edit]) -> Result<String> {
    if edits.is_empty() {
        return Err(Error::invalid("`edits` is empty; give at least one edit"));
    }
    let mut current = text.to_owned();
    for (index, edit) in edits.iter().enumerate() {
        current = apply_one(&current, edit).map_err(|err| in_edit(err, index + 1, edit))?;
    }
    Ok(current)
}

fn apply_one(text: &str, edit: &Edit) -> Result<String> {
    let eol = line_ending(text);
    match edit {
        Edit::ReplaceAll { content } => Ok(replace_all(text, content, eol)),
        Edit::ReplaceSection { heading, content } => replace_section(text, heading, content, eol),
        Edit::Append { content } => Ok(append(text, content, eol)),
        Edit::Prepend { content } => Ok(prepend(text, content, eol)),
        Edit::FindReplace { find, replace } => find_replace(text, find, replace, eol),
        Edit::SetFrontmatter { fields } => set_frontmatter(text, fields, eol),
    }
}

/// Prefixes an edit's error with its number and operation.
fn in_edit(mut err: Error, number: usize, edit: &Edit) -> Error {
    err.message = format!("edit {number} ({}): {}", edit.op(), err.message);
    let mut details = match err.details.take() {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    details.insert("edit".to_owned(), json!(number));
    err.details = Some(Value::Object(details));
    err
}

/// The file's line ending: that of its first line, `\n` when it has none.
fn line_ending(text: &str) -> &'static str {
    match text.find('\n') {
        Some(at) if at > 0 && text.as_bytes()[at - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

/// Inserted text takes the file's line ending.
fn normalize(content: &str, eol: &str) -> String {
    let unix = content.replace("\r\n", "\n");
    if eol == "\n" { unix } else { unix.replace('\n', eol) }
}

/// Makes `result` end with a newline exactly when `original` did (texts that are
/// empty apart from a BOM have no opinion).
fn keep_final_newline(original: &str, mut result: String, eol: &str) -> String {
    if original[bom_len(original)..].is_empty() {
        return result;
    }
    let had = original.ends_with('\n');
    if had && !result.ends_with('\n') && !result[bom_len(&result)..].is_empty() {
        result.push_str(eol);
    } else if !had {
        while result.ends_with('\n') {
            result.pop();
            if result.ends_with('\r') {
                result.pop();
            }
        }
    }
    result
}

fn replace_all(text: &str, content: &str, eol: &str) -> String {
    let mut out = normalize(content, eol);
    if bom_len(text) > 0 && !out.starts_with(BOM) {
        out.insert(0, BOM);
    }
    out
}

fn append(text: &str, content: &str, eol: &str) -> String {
    let content = normalize(content, eol);
    if content.is_empty() {
        return text.to_owned();
    }
    let mut out = text.to_owned();
    if !text[bom_len(text)..].is_empty() && !text.ends_with('\n') {
        out.push_str(eol);
    }
    out.push_str(&content);
    keep_final_newline(text, out, eol)
}

/// Where the body starts: after the frontmatter block, else after the BOM.
fn body_start(text: &str) -> usize {
    parse_frontmatter(text).map_or_else(|| bom_len(text), |frontmatter| frontmatter.end.min(text.len()))
}

fn prepend(text: &str, content: &str, eol: &str) -> String {
    let mut content = normalize(content, eol);
    if content.is_empty() {
        return text.to_owned();
    }
    let at = body_start(text);
    let (head, rest) = text.split_at(at);
    if at > bom_len(text) && !head.ends_with('\n') {
        content.insert_str(0, eol);
    }
    if !rest.is_empty() && !content.ends_with('\n') {
        content.push_str(eol);
    }
    let out = format!("{head}{content}{rest}");
    if rest.is_empty() { keep_final_newline(text, out, eol) } else { out }
}

fn find_replace(text: &str, find: &str, replace: &str, eol: &str) -> Result<String> {
    if find.is_empty() {
        return Err(Error::invalid("`find` is empty; give the exact text to replace"));
    }
    let mut needle = normalize(find, eol);
    let mut first = text.find(&needle);
    if first.is_none() && needle != find {
        // A file with mixed line endings: try the text exactly as given.
        needle = find.to_owned();
        first = text.find(&needle);
    }
    let count = occurrences(text, &needle);
    let Some(at) = first.filter(|_| count == 1) else {
        return Err(Error::invalid(format!(
            "`find` matched {count} times; it must match exactly once — add surrounding text to make it unique"
        ))
        .with_hint(if count == 0 {
            "copy `find` exactly from the note's current text (read_note), including spaces and line breaks"
        } else {
            "extend `find` with the words before or after it until only one place in the note matches"
        })
        .with_details(json!({ "matches": count })));
    };
    let mut out = String::with_capacity(text.len() + replace.len());
    out.push_str(&text[..at]);
    out.push_str(&normalize(replace, eol));
    out.push_str(&text[at + needle.len()..]);
    Ok(out)
}

/// How many times `needle` occurs, overlapping occurrences counted (`aa` occurs
/// twice in `aaa`: which one was meant is ambiguous).
fn occurrences(text: &str, needle: &str) -> usize {
    let mut count = 0;
    let mut from = 0;
    while let Some(found) = text[from..].find(needle) {
        count += 1;
        let start = from + found;
        // Step one character past the start of this match.
        from = start + text[start..].chars().next().map_or(1, char::len_utf8);
    }
    count
}

/// Replaces the lines under a heading. Headings are the vault's (`heading_blocks`:
/// ATX and setext, outside code fences), the same `read_note` serves sections by.
fn replace_section(text: &str, heading: &str, content: &str, eol: &str) -> Result<String> {
    let wanted = heading.trim();
    let (level, name) = match atx_heading_line(wanted) {
        Some((level, name)) if wanted.starts_with('#') => (Some(level), name),
        _ => (None, wanted.to_owned()),
    };
    if name.is_empty() {
        return Err(Error::invalid("`heading` is empty; give the text of a heading in the note"));
    }
    let key = heading_key(&name);
    let blocks = heading_blocks(text);
    let found: Vec<usize> = (0..blocks.len())
        .filter(|&i| {
            let h = &blocks[i].heading;
            heading_key(&h.text) == key && level.is_none_or(|level| level == h.level)
        })
        .collect();
    let index = match found.as_slice() {
        [one] => *one,
        [] => {
            let listed: Vec<String> = blocks
                .iter()
                .map(|b| format!("{} {}", "#".repeat(usize::from(b.heading.level)), b.heading.text))
                .collect();
            let shown = if listed.is_empty() { "none".to_owned() } else { listed.join(", ") };
            return Err(Error::not_found(format!(
                "no heading {wanted:?} in the note; its headings are: {shown}"
            ))
            .with_hint("use one of the listed headings exactly, or append a new section instead")
            .with_details(json!({ "headings": listed })));
        }
        several => {
            let numbers: Vec<String> = several.iter().map(|&i| blocks[i].heading.line.to_string()).collect();
            return Err(Error::invalid(format!(
                "heading {wanted:?} occurs {} times (lines {}); a section must be named unambiguously",
                several.len(),
                numbers.join(", ")
            ))
            .with_hint("add the # marks to pick the level, or use find_replace on the section's text")
            .with_details(json!({ "lines": numbers })));
        }
    };
    let target = &blocks[index];
    let headings: Vec<Heading> = blocks.iter().map(|b| b.heading.clone()).collect();
    let section = section_range(text, &headings, index);
    let heading_end = line_start(text, target.last_line.saturating_add(1)).clamp(section.start, section.end);
    let mut content = normalize(content, eol);
    // Content that opens with a heading of the same level replaces the heading's
    // lines too.
    let replaces_heading = heading_blocks(&content)
        .first()
        .is_some_and(|b| b.heading.line == 1 && b.heading.level == target.heading.level);
    let mut head =
        if replaces_heading { text[..section.start].to_owned() } else { text[..heading_end].to_owned() };
    let rest = &text[section.end..];
    if !content.is_empty() && !head.is_empty() && !head.ends_with('\n') {
        head.push_str(eol);
    }
    if !rest.is_empty() && !content.is_empty() && !content.ends_with('\n') {
        content.push_str(eol);
    }
    let out = format!("{head}{content}{rest}");
    Ok(if rest.is_empty() { keep_final_newline(text, out, eol) } else { out })
}

fn set_frontmatter(text: &str, fields: &Map<String, Value>, eol: &str) -> Result<String> {
    for key in fields.keys() {
        if key.trim().is_empty() || key.chars().any(char::is_control) {
            return Err(Error::invalid(format!(
                "frontmatter key {key:?} is empty or holds a control character"
            )));
        }
    }
    let bom = bom_len(text);
    let Some(frontmatter) = parse_frontmatter(text) else {
        let first = text[bom..].split('\n').next().unwrap_or("").trim_end();
        if first == "---" {
            return Err(Error::invalid(
                "the note's frontmatter opened by `---` on line 1 is never closed, so keys cannot be set safely",
            )
            .with_hint("close the frontmatter with a `---` line first (find_replace or replace_all)"));
        }
        let mut block = String::new();
        for (key, value) in fields {
            if !value.is_null() {
                block.push_str(&yaml::entry(key, value)?);
                block.push_str(eol);
            }
        }
        if block.is_empty() {
            return Ok(text.to_owned());
        }
        return Ok(format!("{}---{eol}{block}---{eol}{}", &text[..bom], &text[bom..]));
    };
    let found = frontmatter_keys(text);
    let current = frontmatter.value.as_object();
    // The keys whose value really changes; setting a key to what it already is
    // keeps its lines (and their formatting) as they are.
    let changed: Vec<(&String, &Value)> = fields
        .iter()
        .filter(|(key, value)| {
            if value.is_null() {
                return found.iter().any(|entry| &entry.key == *key);
            }
            current.is_none_or(|map| map.get(key.as_str()) != Some(*value))
        })
        .collect();
    if changed.is_empty() {
        return Ok(text.to_owned());
    }
    // Each changed key's entries are replaced: the first by the new `key: value`
    // line (keeping the ending of the line it replaces), the others by nothing.
    let mut replacements: Vec<(Span, String)> = Vec::new();
    let mut written: Vec<&String> = Vec::new();
    for (key, value) in &changed {
        for entry in found.iter().filter(|entry| &entry.key == *key) {
            let mut replacement = String::new();
            if !value.is_null() && !written.contains(key) {
                let lines = entry.entry.of(text);
                let ending = match lines.find('\n') {
                    Some(at) if lines[..at].ends_with('\r') => "\r\n",
                    Some(_) => "\n",
                    None => "",
                };
                replacement = yaml::entry(key, value)? + ending;
                written.push(key);
            }
            replacements.push((entry.entry, replacement));
        }
    }
    // The keys not found are added at the end of the block, in order.
    let mut added = String::new();
    for (key, value) in &changed {
        if !value.is_null() && !written.contains(key) {
            added.push_str(&yaml::entry(key, value)?);
            added.push_str(eol);
        }
    }
    let end = frontmatter.yaml.end;
    replacements.push((Span { start: end, end }, added));
    Ok(replace_spans(text, replacements.iter().map(|(span, new)| (*span, new.as_str()))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn set(text: &str, fields: Value) -> String {
        let Value::Object(fields) = fields else { unreachable!() };
        apply_edits(text, &[Edit::SetFrontmatter { fields }]).unwrap()
    }

    #[test]
    fn set_frontmatter_merges() {
        let text = "---\ntitle: A\ntags:\n  - x\n  - y\n# comment\nother: 1\n---\nbody\n";
        assert_eq!(
            set(text, json!({"tags": ["z"], "new": "v"})),
            "---\ntitle: A\ntags: [z]\n# comment\nother: 1\nnew: v\n---\nbody\n"
        );
        assert_eq!(
            set(text, json!({"title": null})),
            "---\ntags:\n  - x\n  - y\n# comment\nother: 1\n---\nbody\n"
        );
        assert_eq!(set(text, json!({"title": "A"})), text);
        assert_eq!(set("body\n", json!({"a": 1})), "---\na: 1\n---\nbody\n");
        assert_eq!(set("\u{feff}x\r\n", json!({"a": 1})), "\u{feff}---\r\na: 1\r\n---\r\nx\r\n");
    }

    #[test]
    fn sections() {
        let text = "# T\n\n## A\n\nold\n\n```\n## not a heading\n```\n### Sub\nx\n## B\nb\n";
        let edit = Edit::ReplaceSection { heading: "a".into(), content: "new".into() };
        assert_eq!(apply_edits(text, &[edit]).unwrap(), "# T\n\n## A\nnew\n## B\nb\n");
        let edit = Edit::ReplaceSection { heading: "## b".into(), content: "c".into() };
        assert_eq!(apply_edits(text, &[edit]).unwrap(), format!("{}c\n", &text[..text.len() - 2]));
        let missing = Edit::ReplaceSection { heading: "not a heading".into(), content: String::new() };
        assert_eq!(apply_edits(text, &[missing]).unwrap_err().code, ErrorCode::NotFound);
    }
}
