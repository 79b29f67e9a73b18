//! The repository's generated documents against their source: `docs/tools.md`
//! must be exactly what the tool table (the data `tools/list` publishes) writes.
//! After changing a tool, `KB_UPDATE_DOCS=1 cargo test --test it docs::` rewrites it;
//! review the diff and commit it with the change.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the test reads and rewrites a document in the repository"
)]

use std::path::Path;

#[test]
fn tool_reference_matches_tools_list() {
    let actual = kb_mcp::tools::reference();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/tools.md");
    if std::env::var_os("KB_UPDATE_DOCS").is_some() {
        std::fs::write(&file, &actual).unwrap();
    }
    let expected = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        expected == actual,
        "docs/tools.md is out of date with tools/list; rerun with KB_UPDATE_DOCS=1 cargo test --test it docs:: \
         and commit the result"
    );
}

/// Every link in the repository's top-level documents points at a file inside
/// the repository that exists: nothing links to a sibling checkout
/// (`../shared/...`), which is dead on any forge, nor to the web (the
/// repository stands on its own; a URL a person types is written as code).
#[test]
fn documents_link_only_inside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for document in
        ["README.md", "ARCHITECTURE.md", "BENCHMARKS.md", "docs/tools.md", "skills/kb-mcp/SKILL.md"]
    {
        let path = root.join(document);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{document}: {e}"));
        for target in text.split("](").skip(1).filter_map(|rest| rest.split(')').next()) {
            let target = target.split('#').next().unwrap_or_default();
            if target.is_empty() {
                continue;
            }
            assert!(
                !target.contains(':'),
                "{document} links to the web: {target} (name it in words instead)"
            );
            assert!(
                !target.starts_with("../") && !target.starts_with('/'),
                "{document} links outside the repository: {target}"
            );
            let base = path.parent().unwrap();
            assert!(base.join(target).exists(), "{document} links to a missing file: {target}");
        }
    }
}
