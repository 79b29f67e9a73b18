//! YAML frontmatter: finding it, parsing it totally, and reading the keys we know.
//!
//! A note has frontmatter only when its text (after an optional BOM) starts with a
//! line that is exactly `---`; the block ends at the next `---` or `...` line. The
//! YAML becomes JSON so that every later layer sees one value model; anything YAML
//! can say that JSON cannot (non-string keys, NaN, tags) is stringified rather than
//! refused. Obsidian's habits are read the way Obsidian reads them: `aliases` and
//! `tags` as a list or a single string, `[[x]]` (which YAML parses as a nested list)
//! flattened, `tags: #x` (which YAML reads as a comment) reported, dates kept as
//! strings and parsed with jiff.
//!
//! Parsing is bounded: YAML costs more than linear time on some inputs (deeply
//! nested flow collections take quadratic time in their depth), so a block longer
//! than [`FRONTMATTER_MAX_BYTES`] or nesting `[`/`{` deeper than
//! [`FRONTMATTER_MAX_DEPTH`] is not parsed: the note keeps its text and gets a
//! diagnostic, as for invalid YAML.

use std::ops::Range;

use jiff::civil::Time;
use jiff::fmt::temporal::{Pieces, PiecesOffset};
use jiff::tz::TimeZone;
use serde_json::{Map, Value};

use super::note::bom_len;

/// Largest frontmatter block parsed, in bytes (Obsidian properties are a few
/// hundred bytes; 50,000 aliases fit).
pub const FRONTMATTER_MAX_BYTES: usize = 1024 * 1024;
/// Deepest nesting of flow lists and mappings (`[`, `{`) parsed.
pub const FRONTMATTER_MAX_DEPTH: usize = 64;

/// The frontmatter block of a note.
#[derive(Debug, Clone, PartialEq)]
pub struct Frontmatter {
    /// Byte range of the YAML text between the `---` fences (empty when absent).
    pub yaml: std::ops::Range<usize>,
    /// Byte offset of the first byte after the closing fence line.
    pub end: usize,
    /// 1-based line of the first body line.
    pub body_line: u32,
    /// Parsed value as JSON (`Object`), `Null` when absent or invalid.
    pub value: serde_json::Value,
    /// Why parsing failed, when it did.
    pub error: Option<String>,
}

/// Finds and parses the frontmatter at the start of `text` (after an optional BOM).
pub fn parse_frontmatter(text: &str) -> Option<Frontmatter> {
    match scan(text) {
        Scan::Found { frontmatter, .. } => Some(frontmatter),
        Scan::Absent | Scan::Unclosed => None,
    }
}

/// What [`scan`] found at the start of a note.
pub(super) enum Scan {
    /// The text does not start with a `---` line.
    Absent,
    /// It starts with a `---` line that no closing fence follows.
    Unclosed,
    /// A closed block; `error_line` is the file line of a YAML error, when known.
    Found { frontmatter: Frontmatter, error_line: Option<u32> },
}

/// Where the body starts, as [`parse_note`](super::parse_note) finds it, without
/// parsing the YAML: after the closing fence, else after a BOM.
pub(super) fn body_offset(text: &str) -> usize {
    find_fences(text).map_or_else(|| bom_len(text), |(_, end, _)| end)
}

/// The byte range of the YAML between closed fences, without parsing it.
pub(super) fn yaml_range(text: &str) -> Option<Range<usize>> {
    find_fences(text).map(|(yaml, _, _)| yaml)
}

/// Finds the fences and parses the YAML between them.
pub(super) fn scan(text: &str) -> Scan {
    let Some((yaml, end, body_line)) = find_fences(text) else {
        return if opens_frontmatter(text) { Scan::Unclosed } else { Scan::Absent };
    };
    let (value, error, error_line) = match parse_yaml(&text[yaml.clone()]) {
        Ok(value) => (value, None, None),
        Err((message, line)) => (Value::Null, Some(message), line),
    };
    Scan::Found { frontmatter: Frontmatter { yaml, end, body_line, value, error }, error_line }
}

/// Whether a line (without its `\n`) is a fence made of `marker` plus optional trailing
/// spaces, tabs or a `\r`.
fn is_fence_line(line: &str, marker: &str) -> bool {
    line.strip_prefix(marker).is_some_and(|rest| rest.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r')))
}

/// Whether the text starts (after a BOM) with a `---` line.
fn opens_frontmatter(text: &str) -> bool {
    let start = bom_len(text);
    let first = text[start..].split('\n').next().unwrap_or("");
    is_fence_line(first, "---")
}

/// The YAML range, the offset after the closing fence line and the first body line.
fn find_fences(text: &str) -> Option<(Range<usize>, usize, u32)> {
    if !opens_frontmatter(text) {
        return None;
    }
    let start = bom_len(text);
    let yaml_start = match text[start..].find('\n') {
        Some(newline) => start + newline + 1,
        None => return None,
    };
    let mut offset = yaml_start;
    let mut line: u32 = 2;
    while offset < text.len() {
        let (content, next) = match text[offset..].find('\n') {
            Some(newline) => (&text[offset..offset + newline], offset + newline + 1),
            None => (&text[offset..], text.len()),
        };
        if is_fence_line(content, "---") || is_fence_line(content, "...") {
            return Some((yaml_start..offset, next, line.saturating_add(1)));
        }
        offset = next;
        line = line.saturating_add(1);
    }
    None
}

/// Parses the YAML text into a JSON object. `Err` carries a message naming the file
/// line (the YAML starts on line 2 of the file) and that line.
fn parse_yaml(yaml: &str) -> Result<Value, (String, Option<u32>)> {
    if yaml.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    if yaml.len() > FRONTMATTER_MAX_BYTES {
        return Err((
            format!(
                "frontmatter is {} bytes, more than the limit of {FRONTMATTER_MAX_BYTES} bytes; its metadata is \
                 ignored (the note is indexed without it); move long values into the note's text",
                yaml.len()
            ),
            Some(2),
        ));
    }
    if let Some(line) = too_deep(yaml, FRONTMATTER_MAX_DEPTH) {
        return Err((
            format!(
                "frontmatter nests lists or mappings (`[`, `{{`) more than {FRONTMATTER_MAX_DEPTH} levels deep; \
                 its metadata is ignored (the note is indexed without it)"
            ),
            Some(line),
        ));
    }
    let mut value = match yaml_serde::from_str::<yaml_serde::Value>(yaml) {
        Ok(value) => value,
        Err(err) => {
            let line = err.location().map(|l| u32::try_from(l.line()).unwrap_or(u32::MAX).saturating_add(1));
            let message = shift_line_numbers(&err.to_string(), 1);
            return Err((format!("frontmatter is not valid YAML: {message}"), line));
        }
    };
    // A failed merge leaves the `<<` key in place, which is still a usable mapping.
    let _ = value.apply_merge();
    match yaml_to_json(value) {
        object @ Value::Object(_) => Ok(object),
        Value::Null => Ok(Value::Object(Map::new())),
        other => {
            let kind = match other {
                Value::Array(_) => "a list",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                Value::Bool(_) => "a boolean",
                _ => "not a mapping",
            };
            Err((
                format!(
                    "frontmatter is {kind}, not a mapping of `key: value` lines; its metadata is ignored"
                ),
                Some(2),
            ))
        }
    }
}

/// The file line where flow collections (`[`, `{`) first nest deeper than `max`,
/// by a lexical scan that skips quoted strings and comments; `None` when they
/// never do. Brackets inside plain scalars count too, which can only make the
/// check stricter.
fn too_deep(yaml: &str, max: usize) -> Option<u32> {
    let bytes = yaml.as_bytes();
    let mut depth = 0usize;
    let mut line: u32 = 2;
    let mut i = 0;
    // The byte before `i` that was not inside a quoted string.
    let mut previous = b'\n';
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'\n' => line = line.saturating_add(1),
            b'#' if previous.is_ascii_whitespace() => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'\'' | b'"' if matches!(previous, b' ' | b'\t' | b'\n' | b'[' | b'{' | b',' | b':' | b'-') => {
                i += 1;
                while i < bytes.len() {
                    match bytes[i] {
                        b'\\' if b == b'"' => i += 1,
                        b'\n' => line = line.saturating_add(1),
                        c if c == b => {
                            // `''` inside a single-quoted string is an escaped quote.
                            if b == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
                                i += 1;
                            } else {
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return Some(line);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        previous = bytes.get(i).copied().unwrap_or(b' ');
        i += 1;
    }
    None
}

/// Rewrites `line N` in a YAML error message into file lines (the YAML starts `by`
/// lines into the file).
fn shift_line_numbers(message: &str, by: u64) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("line ") {
        let (before, after) = rest.split_at(at + "line ".len());
        out.push_str(before);
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        match after[..digits].parse::<u64>() {
            Ok(n) => out.push_str(&(n + by).to_string()),
            Err(_) => out.push_str(&after[..digits]),
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

/// Converts a YAML value to JSON, stringifying what JSON cannot hold.
fn yaml_to_json(value: yaml_serde::Value) -> Value {
    match value {
        yaml_serde::Value::Null => Value::Null,
        yaml_serde::Value::Bool(b) => Value::Bool(b),
        yaml_serde::Value::Number(n) => number_to_json(&n),
        yaml_serde::Value::String(s) => Value::String(s),
        yaml_serde::Value::Sequence(items) => Value::Array(items.into_iter().map(yaml_to_json).collect()),
        yaml_serde::Value::Mapping(mapping) => {
            let mut map = Map::new();
            for (key, value) in mapping {
                map.insert(key_to_string(key), yaml_to_json(value));
            }
            Value::Object(map)
        }
        yaml_serde::Value::Tagged(tagged) => yaml_to_json(tagged.value),
    }
}

fn number_to_json(n: &yaml_serde::Number) -> Value {
    if let Some(i) = n.as_i64() {
        Value::from(i)
    } else if let Some(u) = n.as_u64() {
        Value::from(u)
    } else {
        n.as_f64()
            .and_then(serde_json::Number::from_f64)
            .map_or_else(|| Value::String(n.to_string()), Value::Number)
    }
}

fn key_to_string(key: yaml_serde::Value) -> String {
    match key {
        yaml_serde::Value::String(s) => s,
        yaml_serde::Value::Null => "null".to_owned(),
        yaml_serde::Value::Bool(b) => b.to_string(),
        yaml_serde::Value::Number(n) => n.to_string(),
        other => match yaml_to_json(other) {
            Value::String(s) => s,
            json => json.to_string(),
        },
    }
}

/// Looks a key up exactly, then ignoring ASCII case (Obsidian's property names are
/// case-insensitive).
fn get<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    map.get(key).or_else(|| map.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v))
}

/// The first of `keys` that is present and not null.
fn first<'a>(map: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().find_map(|key| get(map, key).filter(|v| !v.is_null()))
}

/// Frontmatter `title`: a non-empty string, or a number written as text.
pub(super) fn title(map: &Map<String, Value>) -> Option<String> {
    match get(map, "title")? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Frontmatter `description`, else `summary`: the first non-empty string, trimmed.
pub(super) fn description(map: &Map<String, Value>) -> String {
    ["description", "summary"]
        .iter()
        .filter_map(|key| get(map, key).and_then(Value::as_str).map(str::trim))
        .find(|s| !s.is_empty())
        .unwrap_or_default()
        .to_owned()
}

/// Calls `f` on every scalar in `value`, flattening nested lists (`[[x]]`).
fn for_each_scalar(value: &Value, f: &mut impl FnMut(String)) {
    match value {
        Value::Array(items) => items.iter().for_each(|item| for_each_scalar(item, f)),
        Value::String(s) => f(s.clone()),
        Value::Number(n) => f(n.to_string()),
        Value::Bool(b) => f(b.to_string()),
        Value::Null | Value::Object(_) => {}
    }
}

/// Frontmatter `aliases` (or `alias`): a list or a single string; a single string with
/// commas is split on them, as Obsidian does. In order, without duplicates.
pub(super) fn aliases(map: &Map<String, Value>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    // A set, not a scan of `out`: a note may carry tens of thousands of aliases.
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut push = |alias: &str| {
        let alias = alias.trim();
        if !alias.is_empty() && seen.insert(alias.to_owned()) {
            out.push(alias.to_owned());
        }
    };
    for key in ["aliases", "alias"] {
        match get(map, key) {
            Some(Value::String(s)) => s.split(',').for_each(&mut push),
            Some(value) => for_each_scalar(value, &mut |s| push(&s)),
            None => {}
        }
    }
    out
}

/// Frontmatter `tags` (or `tag`): a list or a string separated by spaces or commas.
/// Each tag loses a leading `#` and a trailing `/`; nested tags (`type/synthesis`) stay.
pub(super) fn tags(map: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    for key in ["tags", "tag"] {
        if let Some(value) = get(map, key) {
            for_each_scalar(value, &mut |s| {
                for part in s.split(|c: char| c == ',' || c.is_whitespace()) {
                    let tag = part.trim_start_matches('#').trim_end_matches('/');
                    if !tag.is_empty() {
                        out.push(tag.to_owned());
                    }
                }
            });
        }
    }
    out
}

/// A diagnostic for `tags: #x` (or a `- #x` list item), which YAML reads as a comment:
/// the message and the file line. `yaml` is the frontmatter text, starting on line 2.
pub(super) fn tag_comment_problem(map: &Map<String, Value>, yaml: &str) -> Option<(String, u32)> {
    let lost = ["tags", "tag"].iter().any(|key| match get(map, key) {
        Some(Value::Null) => true,
        Some(Value::Array(items)) => items.iter().any(Value::is_null),
        _ => false,
    });
    if !lost {
        return None;
    }
    let mut in_tags = false;
    for (index, raw) in yaml.split('\n').enumerate() {
        let line = raw.trim_end();
        let file_line = u32::try_from(index).unwrap_or(u32::MAX).saturating_add(2);
        let key_rest = ["tags:", "tag:"].iter().find_map(|key| {
            let head = line.get(..key.len())?;
            head.eq_ignore_ascii_case(key).then(|| &line[key.len()..])
        });
        if let Some(rest) = key_rest {
            if rest.trim_start().starts_with('#') {
                return Some((comment_message(line), file_line));
            }
            in_tags = rest.trim().is_empty();
        } else if in_tags && (line.starts_with([' ', '\t', '-']) || line.is_empty()) {
            let item = line.trim_start();
            if let Some(rest) = item.strip_prefix('-')
                && rest.starts_with([' ', '\t'])
                && rest.trim_start().starts_with('#')
            {
                return Some((comment_message(line.trim()), file_line));
            }
        } else {
            in_tags = false;
        }
    }
    None
}

fn comment_message(line: &str) -> String {
    format!(
        "frontmatter `{line}`: YAML reads `#` after a space as the start of a comment, so this tag is lost; \
         write the tag without `#` or quote it (\"#tag\")"
    )
}

/// Frontmatter `created`, else `date`, else `created_at`, as RFC 3339. Returns the
/// timestamp and, for each present value that is not a date, a diagnostic message and
/// its file line. `yaml` is the frontmatter text, starting on line 2.
pub(super) fn created(map: &Map<String, Value>, yaml: &str) -> (Option<String>, Vec<(String, Option<u32>)>) {
    let mut problems = Vec::new();
    for key in ["created", "date", "created_at"] {
        let Some(value) = first(map, &[key]) else { continue };
        let text = match value {
            Value::String(s) => s.trim().to_owned(),
            other => other.to_string(),
        };
        match parse_time(&text) {
            Some(time) => return (Some(time), problems),
            None => problems.push((
                format!(
                    "frontmatter `{key}: {text}` is not a date; write YYYY-MM-DD or an RFC 3339 timestamp \
                     such as 2025-01-02T10:30:00+08:00"
                ),
                key_line(yaml, key),
            )),
        }
    }
    (None, problems)
}

/// The file line of a top-level `key:` in the frontmatter text.
fn key_line(yaml: &str, key: &str) -> Option<u32> {
    let index = yaml.split('\n').position(|line| {
        line.get(..key.len()).is_some_and(|head| head.eq_ignore_ascii_case(key))
            && line[key.len()..].trim_start().starts_with(':')
    })?;
    Some(u32::try_from(index).unwrap_or(u32::MAX).saturating_add(2))
}

/// Parses a date (`2024-03-15`, midnight UTC), a civil date-time (`2024-03-15 10:30`,
/// read as UTC) or a timestamp with an offset (kept with its offset).
pub(super) fn parse_time(text: &str) -> Option<String> {
    let pieces = Pieces::parse(text).ok()?;
    let civil = pieces.date().to_datetime(pieces.time().unwrap_or(Time::midnight()));
    match pieces.offset() {
        Some(PiecesOffset::Numeric(numeric)) if !numeric.is_negative() || numeric.offset().seconds() != 0 => {
            let offset = numeric.offset();
            let timestamp = offset.to_timestamp(civil).ok()?;
            Some(timestamp.display_with_offset(offset).to_string())
        }
        _ => Some(civil.to_zoned(TimeZone::UTC).ok()?.timestamp().to_string()),
    }
}
