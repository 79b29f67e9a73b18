//! The published schemas: schemars' input and output schemas of the engine
//! types, tightened to what `tools/list` needs to say (the caps a test holds
//! it to: 16 KiB at `read`, 25 KiB at `propose` and `apply`).

use std::sync::Arc;

use rmcp::handler::server::tool::{schema_for_input, schema_for_output};
use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde_json::Value;

pub(super) fn input<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    // Every argument type is a struct, so the schema root is an object.
    tighten(schema_for_input::<T>().unwrap_or_default(), Side::Input)
}

pub(super) fn output<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    tighten(schema_for_output::<T>(), Side::Output)
}

/// Which way a schema faces: what the model writes, or what it reads back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Input,
    Output,
}

/// Rust-specific `format` values (`uint32`, `int64`, `float`, …) that JSON Schema does
/// not define and validators warn about; the numeric bounds stay.
const RUST_FORMATS: &[&str] = &[
    "uint", "uint8", "uint16", "uint32", "uint64", "int", "int8", "int16", "int32", "int64", "float",
    "double",
];

/// Writes schemars' schemas the way `tools/list` publishes them, as small as they can be
/// while saying the same about the values:
/// - no `$schema` (MCP's default dialect, 2020-12, is what schemars writes), no
///   Rust-specific `format`, no `additionalProperties: true` (the default);
/// - inputs: an optional argument is typed as what it is (`integer`, not
///   `["integer", "null"]`, which clients' form builders and the Inspector warn
///   about); leaving it out is how it is not given, and an explicit `null` is
///   dropped before validation (`admit`);
/// - outputs: no descriptions, titles or `minimum: 0` (the field names, types and the
///   tool description say it), `required` only at the
///   top level, `null` kept where a result does carry one;
/// - both: a `$defs` entry used once stands in place of its reference; an enum of
///   documented constants is a plain `enum`, without a `type` its values say.
fn tighten(schema: Arc<JsonObject>, side: Side) -> Arc<JsonObject> {
    let mut root = (*schema).clone();
    root.remove("$schema");
    // The top level keeps its `type` (MCP asks for an object) and its `required`.
    let kept: Vec<(String, Value)> =
        ["type", "required"].iter().filter_map(|k| Some(((*k).to_owned(), root.get(*k)?.clone()))).collect();
    inline_single_use(&mut root);
    tighten_schema(&mut root, side);
    root.extend(kept);
    Arc::new(root)
}

/// Puts each `$defs` entry that is referred to once in place of its reference: a
/// definition pays for itself only when shared.
fn inline_single_use(root: &mut JsonObject) {
    fn count(value: &Value, uses: &mut std::collections::HashMap<String, usize>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get("$ref") {
                    *uses.entry(target.clone()).or_default() += 1;
                }
                map.values().for_each(|v| count(v, uses));
            }
            Value::Array(items) => items.iter().for_each(|v| count(v, uses)),
            _ => {}
        }
    }
    fn replace(value: &mut Value, target: &str, definition: &JsonObject) {
        match value {
            Value::Object(map) => {
                if map.get("$ref").and_then(Value::as_str) == Some(target) {
                    map.remove("$ref");
                    for (key, value) in definition {
                        // The reference's own keywords (its description) win.
                        map.entry(key.clone()).or_insert_with(|| value.clone());
                    }
                    return;
                }
                map.values_mut().for_each(|v| replace(v, target, definition));
            }
            Value::Array(items) => items.iter_mut().for_each(|v| replace(v, target, definition)),
            _ => {}
        }
    }
    loop {
        let mut uses = std::collections::HashMap::new();
        count(&Value::Object(root.clone()), &mut uses);
        let Some(Value::Object(definitions)) = root.get("$defs") else { return };
        let single = definitions.iter().find_map(|(name, definition)| {
            let target = format!("#/$defs/{name}");
            let refers_to_itself = {
                let mut own = std::collections::HashMap::new();
                count(definition, &mut own);
                own.contains_key(&target)
            };
            (uses.get(&target) == Some(&1) && !refers_to_itself)
                .then(|| (name.clone(), target, definition.as_object().cloned().unwrap_or_default()))
        });
        let Some((name, target, definition)) = single else { return };
        if let Some(Value::Object(definitions)) = root.get_mut("$defs") {
            definitions.remove(&name);
            if definitions.is_empty() {
                root.remove("$defs");
            }
        }
        let mut whole = Value::Object(std::mem::take(root));
        replace(&mut whole, &target, &definition);
        if let Value::Object(map) = whole {
            *root = map;
        }
    }
}

/// One schema object; recurses into its subschemas.
fn tighten_schema(schema: &mut JsonObject, side: Side) {
    if schema.get("format").and_then(Value::as_str).is_some_and(|f| RUST_FORMATS.contains(&f)) {
        schema.remove("format");
    }
    if schema.get("additionalProperties") == Some(&Value::Bool(true)) {
        // What JSON Schema assumes anyway.
        schema.remove("additionalProperties");
    }
    enum_of_constants(schema);
    let all_strings = |values: &Value| values.as_array().is_some_and(|v| v.iter().all(Value::is_string));
    if schema.get("type").and_then(Value::as_str) == Some("string")
        && (schema.contains_key("const") || schema.get("enum").is_some_and(all_strings))
    {
        // A constant, or a list of string values, says its type.
        schema.remove("type");
    }
    if side == Side::Output {
        for keyword in ["description", "title"] {
            if schema.get(keyword).is_some_and(Value::is_string) {
                schema.remove(keyword);
            }
        }
        if schema.get("minimum").and_then(Value::as_u64) == Some(0) {
            schema.remove("minimum");
        }
        // Which fields a result always has is said once, at its top level; an
        // object's `properties` say it is an object, an array's `items` that it is one.
        schema.remove("required");
        if schema.contains_key("properties") && schema.get("type").and_then(Value::as_str) == Some("object") {
            schema.remove("type");
        }
        if schema.contains_key("items") && schema.get("type").and_then(Value::as_str) == Some("array") {
            schema.remove("type");
        }
    }
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    if side == Side::Input
        && let Some(Value::Object(items)) = schema.get_mut("items")
    {
        // An argument's description covers its elements.
        items.remove("description");
    }
    for (key, value) in schema.iter_mut() {
        match (key.as_str(), value) {
            ("properties", Value::Object(properties)) => {
                for (name, property) in properties.iter_mut() {
                    let Value::Object(property) = property else { continue };
                    if side == Side::Input && !required.contains(name) {
                        drop_null(property);
                    }
                    tighten_schema(property, side);
                }
            }
            ("$defs", Value::Object(definitions)) => {
                for definition in definitions.values_mut() {
                    if let Value::Object(definition) = definition {
                        tighten_schema(definition, side);
                    }
                }
            }
            (_, Value::Object(sub)) => tighten_schema(sub, side),
            (_, Value::Array(items)) => {
                for item in items {
                    if let Value::Object(sub) = item {
                        tighten_schema(sub, side);
                    }
                }
            }
            _ => {}
        }
    }
}

/// `{"oneOf": [{"const": "a", "type": "string", "description": …}, …]}`, schemars'
/// spelling of a documented Rust enum, as `{"type": "string", "enum": ["a", …]}`: the
/// property's own description says what the values mean.
fn enum_of_constants(schema: &mut JsonObject) {
    let Some(Value::Array(alternatives)) = schema.get("oneOf") else { return };
    let constants: Option<Vec<Value>> = alternatives
        .iter()
        .map(|a| {
            let a = a.as_object()?;
            let plain = a.keys().all(|k| matches!(k.as_str(), "const" | "type" | "description"))
                && a.get("type").and_then(Value::as_str) == Some("string");
            a.get("const").filter(|c| plain && c.is_string()).cloned()
        })
        .collect();
    if let Some(constants) = constants {
        schema.remove("oneOf");
        schema.insert("type".to_owned(), Value::from("string"));
        schema.insert("enum".to_owned(), Value::Array(constants));
    }
}

/// An optional argument's schema without its `null` alternative:
/// `{"type": ["integer", "null"]}` becomes `{"type": "integer"}`, and
/// `{"anyOf": [{"$ref": …}, {"type": "null"}]}` the `$ref` alone.
fn drop_null(property: &mut JsonObject) {
    if let Some(Value::Array(types)) = property.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            property.insert("type".to_owned(), only);
        }
    }
    if property.get("default").is_some_and(Value::is_null) {
        property.remove("default");
    }
    if let Some(Value::Array(alternatives)) = property.get_mut("anyOf") {
        alternatives.retain(|a| a.get("type").and_then(Value::as_str) != Some("null"));
        if alternatives.len() == 1
            && let Some(Value::Object(only)) = alternatives.pop()
        {
            property.remove("anyOf");
            for (key, value) in only {
                property.entry(key).or_insert(value);
            }
        }
    }
}
