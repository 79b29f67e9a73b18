//! The tag and frontmatter checks that read only the catalog: tags missing
//! from the registry `kb.toml` names (fixed by the registered tag nearest each),
//! and the frontmatter diagnostics parsing left on a note. The `[lint]` rules
//! read the frontmatter itself (`text.rs`).
//!
//! A tag's fix is mechanical only when the tag is the one registered tag
//! written differently (`spelling.rs`: `#to_read` for `#to-read`), its parents
//! included. A registered tag sharing only the last segment (`#work/health`
//! for `#personal/health`, `#type/synthesis` for `#synthesis`) or a few edits
//! away (`#git` for `#gitt`) is a suggestion: it may mean something else.

use std::collections::{HashMap, HashSet};

use super::Scope;
use super::findings::Findings;
use super::spelling::folded;
use crate::engine::types::{AuditCheck, Fix};
use crate::vault::edit_distance;

/// Tags of the notes in scope that the tag registry does not list.
pub(super) fn unregistered(scope: &Scope<'_>, findings: &mut Findings) {
    let Some(registry) = scope.config.tag_registry.as_deref() else { return };
    let Some(listing) = scope.catalog.get(registry) else {
        findings.push(
            AuditCheck::UnregisteredTag,
            registry,
            None,
            "kb.toml names this tag registry, but it is not a note in the vault".to_owned(),
            None,
        );
        return;
    };
    let mut registered: Vec<String> = listing.tags.iter().map(|t| t.to_lowercase()).collect();
    registered.sort();
    registered.dedup();
    let known: HashSet<&str> = registered.iter().map(String::as_str).collect();
    let registered_folded: Vec<Option<String>> = registered.iter().map(|r| folded(r)).collect();
    let mut near_cache: HashMap<String, Option<(&str, bool)>> = HashMap::new();
    for &i in &scope.in_scope {
        let record = &scope.records[i];
        if record.path == registry {
            continue;
        }
        let mut seen = HashSet::new();
        for tag in &record.tags {
            let key = tag.to_lowercase();
            if known.contains(key.as_str()) || !seen.insert(key.clone()) {
                continue;
            }
            let near = *near_cache.entry(key.clone()).or_insert_with(|| {
                let own = folded(&key);
                let same: Vec<&str> = registered
                    .iter()
                    .zip(&registered_folded)
                    .filter(|(_, f)| own.is_some() && **f == own)
                    .map(|(r, _)| r.as_str())
                    .collect();
                match same.as_slice() {
                    [only] => Some((*only, true)),
                    _ => nearest_tag(&key, &registered).map(|near| (near, false)),
                }
            });
            let fix = near.map(|(near, mechanical)| Fix {
                path: record.path.clone(),
                summary: format!("use the registered tag #{near} instead of #{tag}"),
                old: Some(tag.clone()),
                new: near.to_owned(),
                mechanical,
            });
            let near = near.map(|(near, _)| near);
            let hint = near.map_or(String::new(), |n| format!("; did you mean #{n}?"));
            findings.push(
                AuditCheck::UnregisteredTag,
                &record.path,
                None,
                format!("tag #{tag} is not in the tag registry {registry}{hint}"),
                fix,
            );
        }
    }
}

/// The registered tag nearest an unregistered one: the same last segment, or
/// within a third of its length in edits; `None` when none or several tie.
fn nearest_tag<'r>(tag: &str, registered: &'r [String]) -> Option<&'r str> {
    let leaf = tag.rsplit('/').next().unwrap_or(tag);
    let mut scored: Vec<(usize, &str)> = registered
        .iter()
        .map(|r| {
            let r_leaf = r.rsplit('/').next().unwrap_or(r);
            let distance =
                if r_leaf == leaf { 0 } else { edit_distance(tag, r).min(edit_distance(leaf, r_leaf)) };
            (distance, r.as_str())
        })
        .filter(|(d, _)| *d <= (tag.chars().count() / 3).max(1))
        .collect();
    scored.sort();
    match scored.as_slice() {
        [] => None,
        [(_, only)] => Some(only),
        [(a, first), (b, _), ..] if a < b => Some(first),
        _ => None,
    }
}

/// The frontmatter diagnostics parsing left on the notes in scope (YAML that
/// does not parse, keys of the wrong shape).
pub(super) fn frontmatter_diagnostics(scope: &Scope<'_>, findings: &mut Findings) {
    for &i in &scope.in_scope {
        let record = &scope.records[i];
        for diagnostic in record.diagnostics.iter().filter(|d| d.message.starts_with("frontmatter")) {
            findings.push(
                AuditCheck::Frontmatter,
                &record.path,
                diagnostic.line,
                diagnostic.message.clone(),
                None,
            );
        }
    }
}
