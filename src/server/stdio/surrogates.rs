//! Escaped lone UTF-16 surrogates (`"\ud83d"`): marked so the JSON parser
//! accepts the line, then found again and named in the error.

use serde_json::{Map, Value, json};

use super::classify::{Verdict, answer};
use crate::error::Error;
use crate::server::rpc::{INVALID_PARAMS, INVALID_REQUEST, Reply, SentId};
use crate::tools;

/// What a lone surrogate escape is replaced with to parse the line: U+10FFFF, a
/// noncharacter no client sends, so finding it afterwards names the argument.
const MARK_ESCAPE: &str = "\\udbff\\udfff";

pub(super) const MARK: char = '\u{10FFFF}';

/// A request with lone surrogates in its params: a tool error for a tool's
/// arguments, else invalid params; either way naming where they are.
pub(super) fn lone_surrogates(message: &Map<String, Value>, id: Option<SentId>) -> Verdict {
    let mut places = Vec::new();
    find_marks(&Value::Object(message.clone()), &mut String::new(), &mut places);
    let method = message.get("method").and_then(Value::as_str).unwrap_or_default();
    const WHAT: &str =
        "contains a lone UTF-16 surrogate (half of a character, as when a string is cut inside an emoji)";
    let arguments: Option<Vec<&str>> =
        places.iter().map(|place| place.strip_prefix("params.arguments.")).collect();
    if method == "tools/call"
        && let Some(arguments) = arguments.filter(|a| !a.is_empty())
    {
        let named: Vec<String> = arguments.iter().map(|a| format!("`{a}`")).collect();
        let error = Error::invalid(format!("{} {WHAT}", named.join(", ")))
            .with_hint("send whole characters: drop the broken character or send the full text again")
            .with_details(json!({ "problems": arguments.iter().map(|a| json!({ "argument": a, "rule": "whole Unicode characters only" })).collect::<Vec<_>>() }));
        let result = serde_json::to_value(tools::error_result(&error)).unwrap_or(Value::Null);
        return Verdict::Answer { reply: Reply::result(id, result), why: "lone_surrogate" };
    }
    let named: Vec<String> = places.iter().map(|p| format!("`{p}`")).collect();
    let code = if places.iter().all(|p| p.starts_with("params")) { INVALID_PARAMS } else { INVALID_REQUEST };
    answer(id, code, &format!("{} {WHAT}; send whole characters", named.join(", ")), "lone_surrogate")
}

/// The places (`params.arguments.query`, `params.items[2]`) of strings and keys holding [`MARK`].
fn find_marks(value: &Value, at: &mut String, places: &mut Vec<String>) {
    match value {
        Value::String(s) if s.contains(MARK) => places.push(at.clone()),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = at.len();
                at.push_str(&format!("[{i}]"));
                find_marks(item, at, places);
                at.truncate(len);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                let len = at.len();
                if !at.is_empty() {
                    at.push('.');
                }
                at.push_str(&key.replace(MARK, "\u{FFFD}"));
                if key.contains(MARK) {
                    places.push(at.clone());
                }
                find_marks(item, at, places);
                at.truncate(len);
            }
        }
        _ => {}
    }
}

/// The line with every escaped lone surrogate inside a string replaced by an
/// escape of [`MARK`]; `None` when there is none. Escaped backslashes are skipped,
/// so `"\\ud83d"` (a backslash, then text) is left alone.
pub(super) fn mark_lone_surrogates(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        let digits = bytes.get(at..at + 6)?;
        if digits[0] != b'\\' || digits[1] != b'u' {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(&digits[2..]).ok()?, 16).ok()
    };
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len() + 16);
    let (mut i, mut in_string, mut changed) = (0, false, false);
    while i < bytes.len() {
        let byte = bytes[i];
        if !in_string {
            in_string = byte == b'"';
            out.push(byte);
            i += 1;
            continue;
        }
        match byte {
            b'"' => {
                in_string = false;
                out.push(byte);
                i += 1;
            }
            b'\\' => match unit(i) {
                Some(high @ 0xD800..=0xDBFF) => {
                    if unit(i + 6).is_some_and(|low| (0xDC00..=0xDFFF).contains(&low)) {
                        out.extend_from_slice(&bytes[i..i + 12]);
                        i += 12;
                    } else {
                        let _ = high;
                        out.extend_from_slice(MARK_ESCAPE.as_bytes());
                        changed = true;
                        i += 6;
                    }
                }
                Some(0xDC00..=0xDFFF) => {
                    out.extend_from_slice(MARK_ESCAPE.as_bytes());
                    changed = true;
                    i += 6;
                }
                _ => {
                    let end = (i + 2).min(bytes.len());
                    out.extend_from_slice(&bytes[i..end]);
                    i = end;
                }
            },
            _ => {
                out.push(byte);
                i += 1;
            }
        }
    }
    if !changed {
        return None;
    }
    String::from_utf8(out).ok()
}
