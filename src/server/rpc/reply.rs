//! The answers a transport writes itself: a JSON-RPC error, or a tool's error
//! result, carrying the request's id exactly as it was sent. They are built as
//! text because an id such as `18446744073709551616` has no exact value in
//! serde_json: parsed and written again it would come out as `1.8446744073709552e19`,
//! which a client matching ids by their text never pairs with its request.

use serde_json::{Value, json};

use super::scan::SentId;

/// Invalid JSON.
pub(in crate::server) const PARSE_ERROR: i64 = -32700;

/// Not a request kb-mcp can process (a bad id, a duplicate id, too large, …).
pub(in crate::server) const INVALID_REQUEST: i64 = -32600;

/// Bad params of a known method.
pub(in crate::server) const INVALID_PARAMS: i64 = -32602;

/// The server could not finish the request.
pub(in crate::server) const INTERNAL_ERROR: i64 = -32603;

/// One answer of a transport's own.
#[derive(Debug, Clone)]
pub(in crate::server) struct Reply {
    /// The request's id as sent; `None` answers with null (the id could not be read).
    id: Option<SentId>,
    /// `error` (JSON-RPC) or `result` (a tool's error result), and its value.
    outcome: (&'static str, Value),
}

impl Reply {
    /// A JSON-RPC error.
    pub(in crate::server) fn error(id: Option<SentId>, code: i64, message: &str) -> Reply {
        // A message may name what was sent (an argument's key): never a megabyte of it.
        let message = crate::error::cut_middle(message, crate::error::MESSAGE_MAX_CHARS);
        Reply { id, outcome: ("error", json!({ "code": code, "message": message })) }
    }

    /// A result (a tool's error result, for an argument this layer refuses).
    pub(in crate::server) fn result(id: Option<SentId>, result: Value) -> Reply {
        Reply { id, outcome: ("result", result) }
    }

    /// Adds structured `data` to an error.
    pub(in crate::server) fn with_data(mut self, data: Value) -> Reply {
        if let ("error", Value::Object(error)) = &mut self.outcome {
            error.insert("data".to_owned(), data);
        }
        self
    }

    /// The id the answer carries.
    #[cfg(test)]
    pub(in crate::server) fn id(&self) -> Option<&SentId> {
        self.id.as_ref()
    }

    /// For the log: the JSON-RPC error code, or the tool error's code.
    pub(in crate::server) fn code(&self) -> Value {
        match &self.outcome {
            ("error", error) => error["code"].clone(),
            (_, result) => serde_json::from_value(result.clone())
                .map_or(Value::Null, |result| json!(crate::tools::error_code(&result))),
        }
    }

    /// Logs the answer: why it was given, its code and (when short) its id, never content.
    pub(in crate::server) fn log(&self, why: &str) {
        let mut event = json!({ "event": "rpc_refused", "why": why, "code": self.code() });
        if let Some(id) = self.id.as_ref().and_then(SentId::loggable) {
            event["id"] = id;
        }
        crate::server::log(event);
    }

    /// The answer as one line of JSON, without its newline.
    pub(in crate::server) fn line(&self) -> String {
        let id = self.id.as_ref().map_or("null", SentId::json);
        let (key, value) = &self.outcome;
        format!(r#"{{"jsonrpc":"2.0","id":{id},"{key}":{value}}}"#)
    }
}

/// The refusal of a request whose id names one still in flight on the same
/// connection: rmcp keeps one pending answer per id, so a second one would
/// take the first one's answer or leave it without any.
pub(in crate::server) fn duplicate_id(id: SentId) -> Reply {
    let message = format!(
        "a request with id {id} is still in flight on this connection; ids must be unique among requests \
         not yet answered: wait for its answer, or send this request with another id"
    );
    Reply::error(Some(id), INVALID_REQUEST, &message)
}

/// What to say of an id kb-mcp cannot answer to (`what` it is: `null`, `a
/// boolean`, the id as sent); MCP ids are strings or integers, rmcp holds
/// integers in 64 bits.
pub(in crate::server) fn unusable_id_message(what: &str) -> String {
    format!(
        "the request's id is {what}, which kb-mcp cannot answer to: use a string or an integer between -2^63 and 2^63-1"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_carries_the_id_as_sent() {
        let id = SentId::from_token(b"18446744073709551616");
        let line = Reply::error(id, INVALID_REQUEST, "no").with_data(json!({"limit": 1})).line();
        assert_eq!(
            line,
            r#"{"jsonrpc":"2.0","id":18446744073709551616,"error":{"code":-32600,"data":{"limit":1},"message":"no"}}"#
        );
        let line = Reply::error(None, PARSE_ERROR, "bad").line();
        assert_eq!(serde_json::from_str::<Value>(&line).unwrap()["id"], Value::Null);
        let id = SentId::from_token(br#""a\"b""#);
        let line = Reply::result(id, json!({"isError": true})).line();
        assert_eq!(line, r#"{"jsonrpc":"2.0","id":"a\"b","result":{"isError":true}}"#);
        let refused = duplicate_id(SentId::from_token(b"7").unwrap());
        assert_eq!(refused.code(), json!(INVALID_REQUEST));
        assert!(refused.line().contains("with id 7 is still in flight"));
    }
}
