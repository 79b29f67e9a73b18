//! Reading an evaluation suite: the three schema versions, checked field by field.
//!
//! A suite is written by a person and kept in a repository for years, so a
//! mistake in it must stop the run with a message naming the exact field
//! (`cases[3].maxRank: …`) rather than quietly turning into a failed or, worse,
//! a passed case. That is why the text is walked as a JSON value by hand instead
//! of being handed to a derived deserializer: every refusal can say where it is,
//! unknown fields are refused, and the rules that span fields (unique ids,
//! `maxRank` within `topK`, the shape of a negative case) live next to the
//! fields they govern. Versions 1 and 2 are normalised into the strict version 3
//! shape, so the runner knows one kind of case.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// The newest suite format this build reads.
pub const LATEST_SCHEMA_VERSION: u8 = 3;
/// The largest `topK` (the searches return at most 50 results).
pub const MAX_TOP_K: u32 = 50;
/// `topK` when a version 1 or 2 suite leaves it out.
const DEFAULT_TOP_K: u32 = 10;

/// Which search a case calls: the same engine method as the MCP tool of that name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tool {
    /// `search_knowledge`: titles, aliases, descriptions and tags.
    SearchKnowledge,
    /// `search_note_content`: headings and bodies.
    SearchNoteContent,
    /// `recall_context`: a note's rank is its place among the distinct notes of
    /// the pack's `match` items. No suite names it; a run may put every case
    /// through it instead of the case's own tool (see `run_as`).
    RecallContext,
}

impl Tool {
    /// The tool's name as the contract writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Tool::SearchKnowledge => "search_knowledge",
            Tool::SearchNoteContent => "search_note_content",
            Tool::RecallContext => "recall_context",
        }
    }

    /// The tool of this name, as the contract writes it.
    pub fn from_name(name: &str) -> Option<Tool> {
        [Tool::SearchKnowledge, Tool::SearchNoteContent, Tool::RecallContext]
            .into_iter()
            .find(|tool| tool.as_str() == name)
    }
}

/// What a case expects of the ranked list, in the strict (version 3) form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Expectation {
    /// Notes that answer the query; one of them must rank at `max_rank` or better.
    /// Empty for a negative case.
    pub acceptable: Vec<String>,
    /// Notes that must not appear anywhere in the top K.
    pub forbidden: Vec<String>,
    /// The worst rank (1-based) at which an acceptable note still passes.
    pub max_rank: u32,
}

impl Expectation {
    /// Whether the case only checks that nothing forbidden comes back.
    pub fn is_negative(&self) -> bool {
        self.acceptable.is_empty()
    }
}

/// One query and what it expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// Unique within the suite.
    pub id: String,
    /// The query, exactly as a person or agent would type it.
    pub query: String,
    /// Which search answers it.
    pub tool: Tool,
    /// Only notes under this vault-relative folder.
    pub folder: Option<String>,
    /// Only notes carrying all of these tags.
    pub tags: Option<Vec<String>>,
    /// What must (and must not) come back.
    pub expectation: Expectation,
}

/// A parsed, validated suite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suite {
    /// The format version the file declared (1, 2 or 3).
    pub schema_version: u8,
    /// How many results each query asks for and is judged on.
    pub top_k: u32,
    /// What the suite covers, for people.
    pub description: Option<String>,
    /// In file order.
    pub cases: Vec<Case>,
}

impl Suite {
    /// Parses and validates a suite from its JSON text. Any problem is an
    /// `invalid_argument` error whose message starts with the offending field.
    pub fn parse(text: &str) -> Result<Suite> {
        let value: Value = serde_json::from_str(text).map_err(|err| {
            Error::invalid(format!("the suite is not valid JSON: {err}"))
                .with_hint("a suite is a JSON object: {\"schemaVersion\": 3, \"topK\": 10, \"cases\": [...]}")
        })?;
        let Value::Object(root) = value else {
            return Err(invalid("(suite)", "must be a JSON object with schemaVersion, topK and cases"));
        };
        only_fields(&root, "", &["schemaVersion", "topK", "description", "cases"])?;
        let schema_version = match root.get("schemaVersion") {
            None => return Err(invalid("schemaVersion", "is required (1, 2 or 3)")),
            Some(value) => match value.as_u64() {
                Some(v @ 1..=3) => v as u8,
                _ => return Err(invalid("schemaVersion", format!("must be 1, 2 or 3, not {value}"))),
            },
        };
        let top_k = match root.get("topK") {
            None if schema_version < 3 => DEFAULT_TOP_K,
            None => return Err(invalid("topK", format!("is required in version 3 (1 to {MAX_TOP_K})"))),
            Some(value) => match value.as_u64() {
                Some(k) if (1..=u64::from(MAX_TOP_K)).contains(&k) => k as u32,
                _ => {
                    return Err(invalid(
                        "topK",
                        format!("must be an integer from 1 to {MAX_TOP_K}, not {value}"),
                    ));
                }
            },
        };
        let description = optional_string(&root, "", "description")?;
        let cases = match root.get("cases") {
            None => return Err(invalid("cases", "is required (an array of cases)")),
            Some(Value::Array(cases)) if cases.is_empty() => {
                return Err(invalid("cases", "is empty; a suite needs at least one case"));
            }
            Some(Value::Array(cases)) => cases,
            Some(_) => return Err(invalid("cases", "must be an array of cases")),
        };
        let context = Context { schema_version, top_k };
        let mut ids = BTreeSet::new();
        let mut parsed = Vec::with_capacity(cases.len());
        for (i, case) in cases.iter().enumerate() {
            let at = format!("cases[{i}]");
            let case = context.case(case, &at)?;
            if !ids.insert(case.id.clone()) {
                return Err(invalid(
                    &format!("{at}.id"),
                    format!("{:?} is used by an earlier case", case.id),
                )
                .with_hint("every case needs its own id so reports can be compared across runs"));
            }
            parsed.push(case);
        }
        Ok(Suite { schema_version, top_k, description, cases: parsed })
    }
}

/// What every case of a suite is checked against.
struct Context {
    schema_version: u8,
    top_k: u32,
}

impl Context {
    fn case(&self, value: &Value, at: &str) -> Result<Case> {
        let Value::Object(case) = value else {
            return Err(invalid(at, "must be an object with id, query, tool and the expectation"));
        };
        let mut fields = vec!["id", "query", "tool", "folder", "tags", "description"];
        if self.schema_version < 3 {
            fields.push("expected");
        } else {
            fields.extend(["acceptable", "forbidden", "maxRank"]);
        }
        only_fields(case, at, &fields)?;
        let id = required_string(case, at, "id")?;
        let query = required_string(case, at, "query")?;
        if query.trim().is_empty() {
            return Err(invalid(&format!("{at}.query"), "is blank"));
        }
        let tool = match case.get("tool") {
            None => return Err(invalid(&format!("{at}.tool"), "is required")),
            Some(Value::String(tool)) if tool == "search_knowledge" => Tool::SearchKnowledge,
            Some(Value::String(tool)) if tool == "search_note_content" => Tool::SearchNoteContent,
            Some(other) => {
                return Err(invalid(
                    &format!("{at}.tool"),
                    format!("must be \"search_knowledge\" or \"search_note_content\", not {other}"),
                ));
            }
        };
        let folder = optional_string(case, at, "folder")?;
        if let Some(folder) = &folder {
            check_folder(folder, &format!("{at}.folder"))?;
        }
        let tags = match case.get("tags") {
            None => None,
            Some(value) => Some(string_list(value, &format!("{at}.tags"))?),
        };
        optional_string(case, at, "description")?;
        let expectation =
            if self.schema_version < 3 { self.expected(case, at)? } else { self.strict(case, at)? };
        Ok(Case { id, query, tool, folder, tags, expectation })
    }

    /// Versions 1 and 2: `expected: {path, maxRank?}`.
    fn expected(&self, case: &Map<String, Value>, at: &str) -> Result<Expectation> {
        let at = format!("{at}.expected");
        let Some(value) = case.get("expected") else {
            return Err(invalid(&at, "is required: {\"path\": \"folder/note.md\"}"));
        };
        let Value::Object(expected) = value else {
            return Err(invalid(&at, "must be an object: {\"path\": \"folder/note.md\"}"));
        };
        let mut fields = vec!["path"];
        if self.schema_version >= 2 {
            fields.push("maxRank");
        }
        only_fields(expected, &at, &fields)?;
        let path = required_string(expected, &at, "path")?;
        check_note_path(&path, &format!("{at}.path"))?;
        let max_rank = match expected.get("maxRank") {
            None => self.top_k,
            Some(value) => self.max_rank(value, &format!("{at}.maxRank"))?,
        };
        Ok(Expectation { acceptable: vec![path], forbidden: Vec::new(), max_rank })
    }

    /// Version 3: `acceptable`, `forbidden` and `maxRank`, all explicit.
    fn strict(&self, case: &Map<String, Value>, at: &str) -> Result<Expectation> {
        let mut lists = Vec::with_capacity(2);
        for name in ["acceptable", "forbidden"] {
            let field = format!("{at}.{name}");
            let Some(value) = case.get(name) else {
                return Err(invalid(
                    &field,
                    "is required in version 3 (an array of note paths, possibly empty)",
                ));
            };
            let paths = string_list(value, &field)?;
            for (i, path) in paths.iter().enumerate() {
                check_note_path(path, &format!("{field}[{i}]"))?;
            }
            lists.push(paths);
        }
        let forbidden = lists.pop().unwrap_or_default();
        let acceptable = lists.pop().unwrap_or_default();
        if acceptable.is_empty() && forbidden.is_empty() {
            return Err(invalid(
                &format!("{at}.acceptable"),
                "and forbidden are both empty; name at least one path to judge the results by",
            ));
        }
        if let Some(i) = forbidden.iter().position(|p| acceptable.contains(p)) {
            return Err(invalid(
                &format!("{at}.forbidden[{i}]"),
                format!("{:?} is also acceptable; a note cannot be both", forbidden[i]),
            ));
        }
        let field = format!("{at}.maxRank");
        let Some(value) = case.get("maxRank") else {
            return Err(invalid(&field, format!("is required in version 3 (1 to topK, {})", self.top_k)));
        };
        let max_rank = self.max_rank(value, &field)?;
        if acceptable.is_empty() && max_rank != self.top_k {
            return Err(invalid(
                &field,
                format!(
                    "must be topK ({}) in a negative case (acceptable is empty): forbidden notes are checked over the whole top K",
                    self.top_k
                ),
            ));
        }
        Ok(Expectation { acceptable, forbidden, max_rank })
    }

    fn max_rank(&self, value: &Value, field: &str) -> Result<u32> {
        match value.as_u64() {
            Some(rank) if (1..=u64::from(self.top_k)).contains(&rank) => Ok(rank as u32),
            _ => Err(invalid(field, format!("must be between 1 and topK ({}), not {value}", self.top_k))),
        }
    }
}

fn invalid(field: &str, problem: impl std::fmt::Display) -> Error {
    Error::invalid(format!("{field}: {problem}"))
}

fn join(at: &str, name: &str) -> String {
    if at.is_empty() { name.to_owned() } else { format!("{at}.{name}") }
}

/// Refuses any key not in `allowed`, naming it and the keys that are allowed.
fn only_fields(object: &Map<String, Value>, at: &str, allowed: &[&str]) -> Result<()> {
    match object.keys().find(|key| !allowed.contains(&key.as_str())) {
        None => Ok(()),
        Some(key) => {
            let strict_only = ["acceptable", "forbidden", "maxRank"];
            let why = if key == "maxRank" && at.ends_with(".expected") {
                " (expected.maxRank needs schemaVersion 2 or later)".to_owned()
            } else if strict_only.contains(&key.as_str()) && !at.is_empty() {
                " (it needs schemaVersion 3; versions 1 and 2 use expected.path)".to_owned()
            } else if key == "expected" && !at.is_empty() {
                " (version 3 uses acceptable, forbidden and maxRank instead)".to_owned()
            } else {
                String::new()
            };
            Err(invalid(
                &join(at, key),
                format!("is not a known field{why}; allowed: {}", allowed.join(", ")),
            ))
        }
    }
}

fn required_string(object: &Map<String, Value>, at: &str, name: &str) -> Result<String> {
    match object.get(name) {
        None => Err(invalid(&join(at, name), "is required")),
        Some(Value::String(text)) if !text.is_empty() => Ok(text.clone()),
        Some(Value::String(_)) => Err(invalid(&join(at, name), "is empty")),
        Some(other) => Err(invalid(&join(at, name), format!("must be a string, not {other}"))),
    }
}

fn optional_string(object: &Map<String, Value>, at: &str, name: &str) -> Result<Option<String>> {
    match object.get(name) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(invalid(&join(at, name), format!("must be a string, not {other}"))),
    }
}

fn string_list(value: &Value, field: &str) -> Result<Vec<String>> {
    let Value::Array(items) = value else {
        return Err(invalid(field, format!("must be an array of strings, not {value}")));
    };
    let mut list: Vec<String> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match item {
            Value::String(text) if !text.is_empty() => {
                if list.contains(text) {
                    return Err(invalid(&format!("{field}[{i}]"), format!("{text:?} is listed twice")));
                }
                list.push(text.clone());
            }
            Value::String(_) => return Err(invalid(&format!("{field}[{i}]"), "is empty")),
            other => return Err(invalid(&format!("{field}[{i}]"), format!("must be a string, not {other}"))),
        }
    }
    Ok(list)
}

/// The lexical shape every vault-relative path in and out of the engine has.
/// Whether the note exists is checked against the index when the suite runs.
fn lexically_relative(path: &str) -> bool {
    !path.starts_with('/')
        && !path.contains('\\')
        && !path.contains('\0')
        && !path.split('/').any(|segment| segment.is_empty() || segment == "." || segment == "..")
}

fn check_note_path(path: &str, field: &str) -> Result<()> {
    if lexically_relative(path) && path.ends_with(".md") {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!("{path:?} is not a note path (vault-relative, forward slashes, ending in .md)"),
        ))
    }
}

fn check_folder(folder: &str, field: &str) -> Result<()> {
    let trimmed = folder.trim_end_matches('/');
    if trimmed.is_empty() || lexically_relative(trimmed) {
        Ok(())
    } else {
        Err(invalid(field, format!("{folder:?} is not a vault-relative folder (forward slashes, no ..)")))
    }
}
