//! The tool reference (`docs/tools.md`), written from the same tool table and
//! schemas that `tools/list` publishes, so the document cannot drift from what a
//! client sees: `tests/it/docs.rs` compares the file with [`reference`] and
//! `KB_UPDATE_DOCS=1 cargo test --test it docs::` rewrites it.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::engine::types::Access;

/// The whole reference as Markdown: every tool at every level, in `tools/list` order.
pub fn reference() -> String {
    let tools = super::list(Access::Apply, false);
    let mut out = String::new();
    out.push_str(
        "# Tool reference\n\n\
         <!-- Generated from the tool table (src/tools) by `KB_UPDATE_DOCS=1 cargo test --test it docs::`; \
         do not edit by hand: tests/it/docs.rs fails when this file differs from tools/list. -->\n\n\
         Every tool kb-mcp serves, as `tools/list` publishes it. A connection sees the tools of its \
         access level and of the levels before it (`read` < `propose` < `apply`); a tool above the \
         level is neither listed nor callable. Arguments are checked against the input schema: a \
         mismatch is a tool error with code `invalid_argument` naming the argument and the rule. \
         Every result is JSON, in `structuredContent`, matching the output schema. A failure is a \
         result with `isError: true` whose one text content is the JSON \
         `{\"error\": {\"code\", \"message\", \"hint\"}}`, with no `structuredContent`.\n\n",
    );
    out.push_str("| Tool | Access | Title |\n|---|---|---|\n");
    for tool in &tools {
        let level = super::level(&tool.name).map_or("?", Access::as_str);
        let title = tool.title.as_deref().unwrap_or("");
        let _ = writeln!(out, "| [`{0}`](#{0}) | `{level}` | {title} |", tool.name);
    }
    for tool in &tools {
        let level = super::level(&tool.name).map_or("?", Access::as_str);
        let _ = write!(out, "\n## {}\n\n", tool.name);
        let title = tool.title.as_deref().unwrap_or("");
        let effect = match tool.annotations.as_ref() {
            Some(a) if a.read_only_hint == Some(true) => "read-only",
            Some(a) if a.destructive_hint == Some(true) => "changes notes",
            _ => "writes only into the inbox",
        };
        let _ = write!(out, "**{title}** · access `{level}` · {effect}\n\n");
        let _ = write!(out, "{}\n\n", cell_free(tool.description.as_deref().unwrap_or("")));

        let input = Value::Object((*tool.input_schema).clone());
        let mut rows = Vec::new();
        fields(&input, "", &defs(&input), &mut rows, 0);
        if rows.is_empty() {
            out.push_str("Arguments: none.\n\n");
        } else {
            out.push_str("**Arguments**\n\n| Argument | Type | Required | Default | Bounds | Description |\n|---|---|---|---|---|---|\n");
            for row in &rows {
                let _ = writeln!(
                    out,
                    "| `{}` | {} | {} | {} | {} | {} |",
                    row.path,
                    row.kind,
                    if row.required { "yes" } else { "no" },
                    default_of(&row.description).map_or("".to_owned(), |d| format!("`{d}`")),
                    row.bounds,
                    cell(&row.description),
                );
            }
            out.push('\n');
        }

        result_fields(&mut out, tool);
    }
    several_vaults(&mut out);
    out
}

/// What a connection that may use several vaults sees besides: the `vault`
/// argument and `list_vaults` (see `tools/vaults.rs`).
fn several_vaults(out: &mut String) {
    let listed = super::list_for(Access::Read, false, &["work", "home"]);
    let Some(tool) = listed.iter().find(|tool| tool.name == super::LIST_VAULTS) else { return };
    out.push_str(
        "\n## Several vaults\n\n\
         A connection that may use more than one vault (a server given several, and over HTTP a token \
         not scoped to one of them) sees every tool above with one more optional argument, `vault`: the \
         name of the vault to use, among those the connection may use (the default, the first listed, \
         when it is left out; a call naming a proposal id without `vault` goes to the vault holding \
         that proposal). `search_knowledge` and `search_note_content` also take `vault: \"*\"`: every \
         vault, each hit naming its `vault`, the hits of all merged by score (memory entries first, \
         weak hits last). Every other successful answer carries `vault`, the vault \
         that answered. A connection that may use one vault sees neither `vault` nor the tool below.\n",
    );
    let _ = write!(out, "\n### {}\n\n", tool.name);
    let title = tool.title.as_deref().unwrap_or("");
    let _ = write!(out, "**{title}** · access `read` · read-only\n\n");
    let _ = write!(out, "{}\n\nArguments: none.\n\n", cell_free(tool.description.as_deref().unwrap_or("")));
    result_fields(out, tool);
}

/// A tool's result fields, as a table.
fn result_fields(out: &mut String, tool: &rmcp::model::Tool) {
    if let Some(schema) = &tool.output_schema {
        let output = Value::Object((**schema).clone());
        let mut rows = Vec::new();
        fields(&output, "", &defs(&output), &mut rows, 0);
        out.push_str("**Result fields**\n\n| Field | Type |\n|---|---|\n");
        for row in &rows {
            let _ = writeln!(out, "| `{}` | {} |", row.path, row.kind);
        }
    }
}

/// One argument or result field, nested ones named by a dotted path (`[]` for an array's items).
struct Row {
    path: String,
    kind: String,
    required: bool,
    bounds: String,
    description: String,
}

fn defs(schema: &Value) -> Map<String, Value> {
    schema.get("$defs").and_then(Value::as_object).cloned().unwrap_or_default()
}

/// Follows a `$ref` into `$defs` (one level; the tables only use `#/$defs/Name`).
fn resolve<'a>(schema: &'a Value, defs: &'a Map<String, Value>) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
        Some(name) => defs.get(name).unwrap_or(schema),
        None => schema,
    }
}

/// The rows for an object schema's properties and, below each, its nested fields.
fn fields(schema: &Value, prefix: &str, defs: &Map<String, Value>, rows: &mut Vec<Row>, depth: usize) {
    // Deep enough for every table; a cycle through `$defs` stops here.
    if depth > 8 {
        return;
    }
    let schema = resolve(schema, defs);
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, property) in properties {
        let path = format!("{prefix}{name}");
        let resolved = resolve(property, defs);
        let description = property
            .get("description")
            .or_else(|| resolved.get("description"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        rows.push(Row {
            path: path.clone(),
            kind: kind(property, defs),
            required: required.contains(&name.as_str()),
            bounds: bounds(resolved),
            description,
        });
        nested(resolved, &path, defs, rows, depth + 1);
    }
}

/// The fields under a property: an object's, an array's items', or each variant's.
fn nested(schema: &Value, path: &str, defs: &Map<String, Value>, rows: &mut Vec<Row>, depth: usize) {
    if schema.get("properties").is_some() {
        fields(schema, &format!("{path}."), defs, rows, depth);
    }
    if let Some(items) = schema.get("items") {
        nested(resolve(items, defs), &format!("{path}[]"), defs, rows, depth);
    }
    for key in ["oneOf", "anyOf"] {
        for variant in schema.get(key).and_then(Value::as_array).into_iter().flatten() {
            let variant = resolve(variant, defs);
            // A tagged variant (`op: "append"`) names its fields after its tag.
            let tag = variant
                .get("properties")
                .and_then(Value::as_object)
                .and_then(|p| p.iter().find_map(|(k, v)| Some(format!("{k}={}", v.get("const")?.as_str()?))));
            match tag {
                Some(tag) => fields(variant, &format!("{path} ({tag})."), defs, rows, depth),
                None => nested(variant, path, defs, rows, depth),
            }
        }
    }
}

/// A short type: `string`, `integer or null`, `array of string`, `object`, `"a" | "b"`.
fn kind(schema: &Value, defs: &Map<String, Value>) -> String {
    let schema = resolve(schema, defs);
    if let Some(value) = schema.get("const") {
        return format!("`{value}`");
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(" \\| ");
    }
    let types: Vec<String> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    };
    let mut types: Vec<String> = types
        .into_iter()
        .map(|t| match (t.as_str(), schema.get("items")) {
            ("array", Some(items)) => format!("array of {}", kind(items, defs)),
            _ => t,
        })
        .collect();
    if types.is_empty() {
        for key in ["oneOf", "anyOf"] {
            if let Some(variants) = schema.get(key).and_then(Value::as_array) {
                types = variants.iter().map(|v| kind(v, defs)).collect();
                types.dedup();
            }
        }
    }
    if types.is_empty() {
        if schema.get("items").is_some() {
            return format!("array of {}", kind(&schema["items"], defs));
        }
        if schema.get("properties").is_some() {
            return "object".to_owned();
        }
        return "any".to_owned();
    }
    types.join(" or ")
}

/// Numeric and length bounds, e.g. `1 to 50`, `≥ 0`.
fn bounds(schema: &Value) -> String {
    let pair = |low: &str, high: &str, unit: &str| match (schema.get(low), schema.get(high)) {
        (Some(a), Some(b)) => Some(format!("{a} to {b}{unit}")),
        (Some(a), None) => Some(format!("≥ {a}{unit}")),
        (None, Some(b)) => Some(format!("≤ {b}{unit}")),
        (None, None) => None,
    };
    [
        pair("minimum", "maximum", ""),
        pair("minLength", "maxLength", " chars"),
        pair("minItems", "maxItems", " items"),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ")
}

/// The default a description states: "`x` (default)", "(default 10)", "(default: all)", "Default true.".
fn default_of(description: &str) -> Option<String> {
    if let Some(end) = description.find("` (default)") {
        let start = description[..end].rfind('`')?;
        return Some(description[start + 1..end].to_owned());
    }
    let lower = description.to_lowercase();
    let at = lower.find("default")?;
    let rest = description[at + "default".len()..].trim_start_matches([':', ' ']);
    let value: String = rest.chars().take_while(|c| !matches!(c, ')' | ';' | ',')).collect();
    let value = value.trim_end_matches('.').trim();
    (!value.is_empty()).then(|| value.to_owned())
}

/// Text made safe inside a table cell.
fn cell(text: &str) -> String {
    cell_free(text).replace('|', "\\|")
}

/// Text on one line.
fn cell_free(text: &str) -> String {
    text.replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_read_from_descriptions() {
        assert_eq!(default_of("How many results, 1 to 50 (default 10).").as_deref(), Some("10"));
        assert_eq!(default_of("`updated` (default) or `created`.").as_deref(), Some("updated"));
        assert_eq!(default_of("The checks to run (default: all).").as_deref(), Some("all"));
        assert_eq!(default_of("Default true.").as_deref(), Some("true"));
        assert_eq!(default_of("Why."), None);
    }

    #[test]
    fn every_tool_and_argument_is_in_the_reference() {
        let text = reference();
        for tool in crate::tools::list(Access::Apply, false) {
            assert!(text.contains(&format!("\n## {}\n", tool.name)), "{}", tool.name);
            for argument in
                tool.input_schema.get("properties").and_then(Value::as_object).into_iter().flatten()
            {
                assert!(text.contains(&format!("| `{}` |", argument.0)), "{}.{}", tool.name, argument.0);
            }
        }
    }
}
