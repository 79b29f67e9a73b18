//! Scope step-up over HTTP: an OAuth client whose token's scope is below
//! what its tool call needs is answered `403` with
//! `WWW-Authenticate: Bearer error="insufficient_scope", scope="…"` (RFC 6750
//! §3.1, the MCP authorization spec's scope challenge), so that it can ask
//! the person for more. Only a single `tools/call` message is looked at; a
//! static token's call, which cannot step up, still gets the tool's own
//! `PermissionDenied` result, which tells the person what to do.

use std::borrow::Cow;

use serde::Deserialize;

use crate::engine::types::Access;

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
}

/// The scope the JSON-RPC message `body` needs, when it is a tool call
/// beyond `access`; `None` for anything else (batches and unknown tools
/// included: rmcp answers those).
pub(super) fn scope_needed(body: &[u8], access: Access) -> Option<Access> {
    if access == Access::Apply {
        return None;
    }
    let message: Message<'_> = serde_json::from_slice(body).ok()?;
    if message.method.as_deref() != Some("tools/call") {
        return None;
    }
    let level = crate::tools::level(message.params?.name?.as_ref())?;
    (level > access).then_some(level)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str) -> Vec<u8> {
        serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": name } })
            .to_string()
            .into_bytes()
    }

    #[test]
    fn a_tool_call_beyond_the_scope_names_the_scope_it_needs() {
        assert_eq!(scope_needed(&call("apply_proposal"), Access::Read), Some(Access::Apply));
        assert_eq!(scope_needed(&call("propose_new_note"), Access::Read), Some(Access::Propose));
        assert_eq!(scope_needed(&call("propose_new_note"), Access::Propose), None);
        assert_eq!(scope_needed(&call("apply_proposal"), Access::Apply), None);
        assert_eq!(scope_needed(&call("no_such_tool"), Access::Read), None);
        assert_eq!(scope_needed(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#, Access::Read), None);
        assert_eq!(scope_needed(b"[]", Access::Read), None);
        assert_eq!(scope_needed(b"not json", Access::Read), None);
    }
}
