//! The order findings come in and the cursor that pages through them: a
//! cursor names the last finding returned (and the checks and folder it was
//! made for), never a position, so paging stays stable while notes change.

use std::collections::BTreeSet;

use crate::engine::types::{AuditCheck, Finding};
use crate::error::{Error, Result};

/// What a cursor is bound to: the checks and the folder.
pub(super) fn scope(checks: &BTreeSet<AuditCheck>, folder: &str) -> String {
    let names: Vec<&str> = checks.iter().map(|c| c.name()).collect();
    format!("{}\n{folder}", names.join(","))
}

/// The order findings come in: path, line, check, message.
pub(super) fn order_key(finding: &Finding) -> (&str, u32, AuditCheck, &str) {
    (finding.path.as_str(), finding.line.unwrap_or(0), finding.check, finding.message.as_str())
}

/// `a1` and the hex of `scope\npath\nline\ncheck\nmessage`: opaque to the agent.
pub(super) fn encode(scope: &str, last: &Finding) -> String {
    let text = format!(
        "{scope}\n{}\n{}\n{}\n{}",
        last.path,
        last.line.unwrap_or(0),
        last.check.name(),
        last.message
    );
    crate::engine::cursor::encode("a1", &text)
}

/// The finding key a cursor names.
pub(super) fn decode(text: &str, scope: &str) -> Result<(String, u32, AuditCheck, String)> {
    let cut: String = text.chars().take(40).collect();
    let bad = || {
        Error::invalid(format!("`cursor` {cut:?} is not a cursor audit_vault returned")).with_hint(
            "pass the `next_cursor` of the previous answer unchanged, or leave `cursor` out to start again",
        )
    };
    let text = crate::engine::cursor::decode("a1", text).ok_or_else(bad)?;
    let parts: Vec<&str> = text.splitn(6, '\n').collect();
    let [checks, folder, path, line, check, message] = parts.as_slice() else { return Err(bad()) };
    if format!("{checks}\n{folder}") != scope {
        return Err(Error::invalid("`cursor` belongs to an audit with other checks or another folder")
            .with_hint("pass the same checks and folder as the call that returned the cursor"));
    }
    let check = AuditCheck::ALL.into_iter().find(|c| c.name() == *check).ok_or_else(bad)?;
    Ok(((*path).to_owned(), line.parse().map_err(|_| bad())?, check, (*message).to_owned()))
}
