//! Writing frontmatter values as YAML, one `key: value` line at a time.
//!
//! The write layer never re-serialises a whole frontmatter block (that would
//! reorder keys, drop comments and change quoting the person chose); it renders
//! only the entries an edit names. Each value goes on one line: scalars plain
//! when that reads back as the same string, double-quoted otherwise; lists and
//! maps in flow style (`[a, b]`, `{k: v}`). Every rendered entry is parsed back
//! with the same YAML parser the vault layer uses and compared with the value it
//! came from, so a title with `:`, `#`, quotes or a leading `-` round-trips.

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// Renders `key: value` (without a line ending) so that YAML reads back exactly
/// `{key: value}`.
pub(crate) fn entry(key: &str, value: &Value) -> Result<String> {
    let line = format!("{}: {}", scalar(key, Context::Key), render(value, false));
    let mut expected = Map::new();
    expected.insert(key.to_owned(), value.clone());
    if parses_to(&line, &Value::Object(expected)) {
        Ok(line)
    } else {
        Err(Error::internal(format!("cannot write frontmatter key {key:?} as YAML that reads back the same")))
    }
}

/// A string as one item of a list: `flow` for an item of `[...]`, else for a
/// block list's `- item`. Plain when that reads back the same, else quoted.
pub(crate) fn list_item(text: &str, flow: bool) -> String {
    scalar(text, if flow { Context::Flow } else { Context::Block })
}

/// Where a string is written: plain scalars are more restricted inside flow
/// collections and as keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    /// A block value after `key: `.
    Block,
    /// An item of `[...]` or a value of `{...}`.
    Flow,
    /// A mapping key.
    Key,
}

fn render(value: &Value, in_flow: bool) -> String {
    let context = if in_flow { Context::Flow } else { Context::Block };
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) => number.to_string(),
        Value::String(text) => scalar(text, context),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(|item| render(item, true)).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let entries: Vec<String> = map
                .iter()
                .map(|(key, value)| format!("{}: {}", scalar(key, Context::Key), render(value, true)))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
    }
}

/// A string as a plain scalar when that is safe and reads back the same, else
/// double-quoted.
fn scalar(text: &str, context: Context) -> String {
    if is_plain_safe(text, context) && reads_back_plain(text, context) {
        text.to_owned()
    } else {
        quote(text)
    }
}

/// Conservative syntax check for plain scalars: no indicator at the start, no
/// `: ` or ` #` inside, nothing a YAML 1.1 reader would take for a boolean or a
/// sexagesimal number.
fn is_plain_safe(text: &str, context: Context) -> bool {
    let Some(first) = text.chars().next() else { return false };
    if first.is_whitespace() || text.ends_with(char::is_whitespace) || text.ends_with(':') {
        return false;
    }
    if "-?:,[]{}#&*!|>'\"%@`".contains(first) {
        return false;
    }
    if text.chars().any(|c| c.is_control() || !is_printable(c)) {
        return false;
    }
    if text.contains(": ") || text.contains(" #") || text.contains(":\t") || text.contains("\t#") {
        return false;
    }
    if context != Context::Block && text.contains([',', '[', ']', '{', '}']) {
        return false;
    }
    if context == Context::Key && text.contains(':') {
        return false;
    }
    const YAML11_WORDS: [&str; 12] =
        ["y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", "nan", "inf"];
    if YAML11_WORDS.contains(&text.to_ascii_lowercase().as_str()) {
        return false;
    }
    // `1:30` is the number 90 to a YAML 1.1 reader.
    let numeric = text.chars().all(|c| c.is_ascii_digit() || "+-._:eE".contains(c));
    !(numeric && text.contains(':'))
}

/// Whether YAML reads the plain text back as the same string (not a number, a
/// boolean, a date object or null).
fn reads_back_plain(text: &str, context: Context) -> bool {
    let (yaml, expected) = match context {
        Context::Key => (format!("{text}: x"), serde_json::json!({ text: "x" })),
        Context::Block => (format!("k: {text}"), serde_json::json!({ "k": text })),
        Context::Flow => (format!("k: [{text}]"), serde_json::json!({ "k": [text] })),
    };
    parses_to(&yaml, &expected)
}

fn parses_to(yaml: &str, expected: &Value) -> bool {
    yaml_serde::from_str::<Value>(yaml).is_ok_and(|parsed| parsed == *expected)
}

/// A YAML double-quoted string. Like JSON, but also escapes what YAML does not
/// allow raw inside quotes (DEL, C1 controls, U+FFFE/U+FFFF).
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if !is_printable(c) || c.is_control() => {
                let code = u32::from(c);
                if code <= 0xFFFF {
                    out.push_str(&format!("\\u{code:04X}"));
                } else {
                    out.push_str(&format!("\\U{code:08X}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// YAML 1.2's `c-printable`, minus the line breaks and tab handled apart.
fn is_printable(c: char) -> bool {
    matches!(u32::from(c), 0x20..=0x7E | 0x85 | 0xA0..=0xD7FF | 0xE000..=0xFFFD | 0x1_0000..=0x10_FFFF)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tricky_values_round_trip() {
        for value in [
            json!("a: b # c"),
            json!("- dash"),
            json!("'single'"),
            json!("\"double\""),
            json!("yes"),
            json!("1:30"),
            json!("123"),
            json!("2024-03-15"),
            json!("中文标题：副标题"),
            json!("\u{7f}\u{85}\u{9f}\u{fffe}"),
            json!(["a, b", "[x]", "", null, 1.5, true]),
            json!({"k: v": {"n": [1, 2]}}),
        ] {
            entry("key", &value).unwrap();
            entry("weird key: #1", &value).unwrap();
        }
        assert_eq!(entry("tags", &json!(["rust", "type/concept"])).unwrap(), "tags: [rust, type/concept]");
        assert_eq!(entry("created", &json!("2024-03-15")).unwrap(), "created: 2024-03-15");
        assert_eq!(entry("num", &json!("123")).unwrap(), "num: \"123\"");
        assert_eq!(entry("n", &json!(1)).unwrap(), "\"n\": 1");
    }
}
