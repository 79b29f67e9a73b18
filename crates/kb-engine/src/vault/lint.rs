//! Frontmatter rules: `[lint]` in `kb.toml`, what `audit_vault`'s `frontmatter`
//! check holds every note to.
//!
//! The standards in `docs/` stay the person's prose; this is the part a machine
//! checks: which frontmatter keys a note must carry and what kind of value each
//! key holds (a string, a list, a date, or one of a fixed set of words), for the
//! whole vault and, added on top, for the notes under a folder. Parsing is as
//! strict as the rest of `kb.toml`: an unknown key or type is an error naming it.
//! Checking a note is pure: its frontmatter value in, one message per broken rule out.

use serde_json::Value as Json;
use toml::Value;

use crate::error::{Error, Result};

/// The kind of value a frontmatter key must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueType {
    /// A non-empty string (a number or a boolean is not one).
    String,
    /// A list.
    List,
    /// A date (`2026-03-01`) or a date and time (RFC 3339 or `2026-03-01 10:00`).
    Date,
    /// One of these words (a list holding only these words passes too).
    OneOf(Vec<String>),
}

/// The rules for the notes under one folder (`""`: every note).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FolderRules {
    /// The folder, vault-relative without a trailing slash; `""` for the whole vault.
    pub folder: String,
    /// Keys every note there must carry (with a non-empty value).
    pub required: Vec<String>,
    /// The kind of value each key must hold where it is present.
    pub types: Vec<(String, ValueType)>,
}

/// `[lint]`: the vault-wide rules first, then per-folder rules, by folder.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LintRules {
    /// Every set of rules, the vault's (folder `""`) first when present.
    pub folders: Vec<FolderRules>,
}

/// One broken rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LintProblem {
    /// The key concerned.
    pub key: String,
    /// What is wrong, for a person.
    pub message: String,
}

const LINT_HINT: &str = "write e.g. [lint] required = [\"tags\", \"created\"] and \
    types = { created = \"date\", tags = \"list\", status = [\"draft\", \"final\"] }; \
    per folder: [lint.folders.\"z/daily\"] with the same two keys";

fn invalid(message: String) -> Error {
    Error::invalid(format!("kb.toml: {message}")).with_hint(LINT_HINT)
}

impl LintRules {
    /// Whether there is any rule at all.
    pub fn is_empty(&self) -> bool {
        self.folders.iter().all(|rules| rules.required.is_empty() && rules.types.is_empty())
    }

    /// Parses the `[lint]` table.
    pub(super) fn parse(value: &Value) -> Result<LintRules> {
        let Value::Table(table) = value else {
            return Err(invalid("`lint` must be a table (a `[lint]` section)".to_owned()));
        };
        let mut rules = LintRules { folders: vec![rules_of("lint", "", table, true)?] };
        if let Some(folders) = table.get("folders") {
            let Value::Table(folders) = folders else {
                return Err(invalid(
                    "`lint.folders` must be a table of folders (`[lint.folders.\"z/daily\"]`)".to_owned(),
                ));
            };
            for (folder, value) in folders {
                let name = format!("lint.folders.{folder:?}");
                let Value::Table(own) = value else {
                    return Err(invalid(format!("`{name}` must be a table with `required` and `types`")));
                };
                let trimmed = folder.trim_matches('/');
                if trimmed.is_empty() {
                    return Err(invalid(format!(
                        "`{name}` names the vault root; put vault-wide rules directly in [lint]"
                    )));
                }
                super::config::check_folder(&name, folder, trimmed)?;
                rules.folders.push(rules_of(&name, trimmed, own, false)?);
            }
        }
        Ok(rules)
    }

    /// The rules a note at `path` (vault-relative) breaks, given its parsed
    /// frontmatter (`Null` when it has none or it is not valid YAML).
    pub fn check(&self, path: &str, frontmatter: &Json) -> Vec<LintProblem> {
        let mut problems: Vec<LintProblem> = Vec::new();
        let applies = |folder: &str| {
            folder.is_empty() || path.strip_prefix(folder).is_some_and(|rest| rest.starts_with('/'))
        };
        for rules in self.folders.iter().filter(|rules| applies(&rules.folder)) {
            let whose = if rules.folder.is_empty() {
                "every note".to_owned()
            } else {
                format!("notes under {}/", rules.folder)
            };
            for key in &rules.required {
                if present(frontmatter.get(key)).is_none() && !problems.iter().any(|p| p.key == *key) {
                    problems.push(LintProblem {
                        key: key.clone(),
                        message: format!("frontmatter lacks `{key}`, which [lint] requires of {whose}"),
                    });
                }
            }
            for (key, kind) in &rules.types {
                let Some(value) = present(frontmatter.get(key)) else { continue };
                if let Some(wrong) = mismatch(value, kind)
                    && !problems.iter().any(|p| p.key == *key)
                {
                    problems.push(LintProblem {
                        key: key.clone(),
                        message: format!("frontmatter `{key}` {wrong}"),
                    });
                }
            }
        }
        problems
    }
}

/// A value that counts as given: not null, not an empty string or list.
fn present(value: Option<&Json>) -> Option<&Json> {
    value.filter(|value| match value {
        Json::Null => false,
        Json::String(s) => !s.trim().is_empty(),
        Json::Array(items) => !items.is_empty(),
        _ => true,
    })
}

/// What is wrong with a value for a kind, or `None` when it fits.
fn mismatch(value: &Json, kind: &ValueType) -> Option<String> {
    let shown = || {
        let text = value.to_string();
        if text.chars().count() > 60 {
            format!("{}…", text.chars().take(60).collect::<String>())
        } else {
            text
        }
    };
    match kind {
        ValueType::String => (!value.is_string()).then(|| format!("must be a string, found {}", shown())),
        ValueType::List => (!value.is_array()).then(|| format!("must be a list, found {}", shown())),
        ValueType::Date => match value.as_str() {
            Some(text) if is_date(text) => None,
            _ => Some(format!("must be a date like 2026-03-01, found {}", shown())),
        },
        ValueType::OneOf(allowed) => {
            let fits = |v: &Json| v.as_str().is_some_and(|s| allowed.iter().any(|a| a == s.trim()));
            let ok = match value {
                Json::Array(items) => items.iter().all(fits),
                other => fits(other),
            };
            (!ok).then(|| format!("must be one of {}, found {}", allowed.join(", "), shown()))
        }
    }
}

/// Whether a frontmatter string is a date or a date and time.
fn is_date(text: &str) -> bool {
    let text = text.trim();
    text.parse::<jiff::civil::Date>().is_ok()
        || text.parse::<jiff::civil::DateTime>().is_ok()
        || text.parse::<jiff::Timestamp>().is_ok()
        || text.parse::<jiff::Zoned>().is_ok()
}

/// `required` and `types` of one table (`[lint]` or one folder's).
fn rules_of(name: &str, folder: &str, table: &toml::Table, top: bool) -> Result<FolderRules> {
    let mut rules = FolderRules { folder: folder.to_owned(), ..FolderRules::default() };
    for (key, value) in table {
        let full = format!("{name}.{key}");
        match key.as_str() {
            "required" => {
                let Value::Array(items) = value else {
                    return Err(invalid(format!("`{full}` must be a list of frontmatter keys")));
                };
                for item in items {
                    match item.as_str().map(str::trim) {
                        Some(k) if !k.is_empty() => rules.required.push(k.to_owned()),
                        _ => {
                            return Err(invalid(format!(
                                "`{full}` must be a list of frontmatter keys, but holds {item}"
                            )));
                        }
                    }
                }
            }
            "types" => {
                let Value::Table(types) = value else {
                    return Err(invalid(format!(
                        "`{full}` must be a table of key = type, e.g. {{ created = \"date\" }}"
                    )));
                };
                for (key, kind) in types {
                    rules.types.push((key.clone(), value_type(&format!("{full}.{key}"), kind)?));
                }
            }
            "folders" if top => {}
            other => {
                let also = if top { ", `types` or `folders`" } else { " or `types`" };
                return Err(invalid(format!("unknown key `{name}.{other}` (expected `required`{also})")));
            }
        }
    }
    Ok(rules)
}

fn value_type(name: &str, value: &Value) -> Result<ValueType> {
    match value {
        Value::String(kind) => match kind.as_str() {
            "string" => Ok(ValueType::String),
            "list" => Ok(ValueType::List),
            "date" => Ok(ValueType::Date),
            other => Err(invalid(format!(
                "`{name}` = {other:?} is not a type: write \"string\", \"list\", \"date\" or a list of allowed values"
            ))),
        },
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|item| {
                item.as_str().map(str::to_owned).ok_or_else(|| {
                    invalid(format!("`{name}` lists allowed values, which must be strings, but holds {item}"))
                })
            })
            .collect::<Result<Vec<_>>>()
            .map(ValueType::OneOf),
        _ => Err(invalid(format!(
            "`{name}` must be \"string\", \"list\", \"date\" or a non-empty list of allowed values"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(text: &str) -> Result<LintRules> {
        let table: toml::Table = toml::from_str(text).unwrap();
        LintRules::parse(&table["lint"])
    }

    #[test]
    fn rules_apply_to_the_vault_and_to_folders() {
        let rules = rules(
            "[lint]\nrequired = [\"tags\"]\ntypes = { created = \"date\", status = [\"draft\", \"final\"] }\n\
             [lint.folders.\"z/daily\"]\nrequired = [\"date\"]\ntypes = { tags = \"list\" }\n",
        )
        .unwrap();
        let keys =
            |path: &str, fm: Json| rules.check(path, &fm).into_iter().map(|p| p.key).collect::<Vec<_>>();
        assert_eq!(keys("z/a.md", json!({"tags": ["x"], "created": "2026-03-01"})), Vec::<String>::new());
        assert_eq!(
            keys("z/a.md", json!({"created": "soon", "status": "done"})),
            ["tags", "created", "status"]
        );
        assert_eq!(keys("z/daily/d.md", json!({"tags": "x"})), ["date", "tags"]);
        assert_eq!(keys("z/dailyx.md", json!({"tags": "x"})), Vec::<String>::new());
        assert_eq!(keys("z/a.md", Json::Null), ["tags"]);
    }

    #[test]
    fn bad_rules_name_the_key() {
        let err = rules("[lint]\ntypes = { created = \"dat\" }\n").unwrap_err();
        assert!(err.message.contains("`lint.types.created` = \"dat\""), "{}", err.message);
        let err = rules("[lint]\nrequire = [\"x\"]\n").unwrap_err();
        assert!(err.message.contains("`lint.require`"), "{}", err.message);
        let err = rules("[lint]\nrequired = \"x\"\n").unwrap_err();
        assert!(err.message.contains("`lint.required` must be a list"), "{}", err.message);
        let err = rules("[lint.folders.\"../x\"]\nrequired = [\"x\"]\n").unwrap_err();
        assert!(err.message.contains("lint.folders"), "{}", err.message);
    }
}
