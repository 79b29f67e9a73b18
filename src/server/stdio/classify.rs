//! What to do with one line before rmcp sees it: pass it on, answer it with
//! the JSON-RPC error it earns, or drop it (notifications, responses).

use std::borrow::Cow;

use rmcp::RoleServer;
use rmcp::service::RxJsonRpcMessage;
use serde_json::{Map, Value};

use super::surrogates::{MARK, lone_surrogates, mark_lone_surrogates};
use crate::server::rpc::{
    INVALID_REQUEST, IdField, MessageScan, PARSE_ERROR, Reply, SentId, too_many_values, unusable_id_message,
};

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// What to do with one line.
pub(super) enum Verdict {
    /// A message rmcp can process.
    Forward(Box<RxJsonRpcMessage<RoleServer>>),
    /// Answer it ourselves with `reply`.
    Answer { reply: Reply, why: &'static str },
    /// A notification or response that cannot be processed: no answer, a log line.
    Drop { why: &'static str },
    /// A blank line.
    Skip,
}

pub(super) fn answer(id: Option<SentId>, code: i64, message: &str, why: &'static str) -> Verdict {
    Verdict::Answer { reply: Reply::error(id, code, message), why }
}

/// The id of a parsed message as an answer carries it (`None`: too long to echo).
fn sent(id: &Value) -> Option<SentId> {
    serde_json::to_vec(id).ok().and_then(|token| SentId::from_token(&token))
}

/// Decides what to do with one line (see the module docs).
pub(super) fn classify(raw: &[u8]) -> Verdict {
    let raw = raw.strip_prefix(UTF8_BOM).unwrap_or(raw);
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    if raw.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Skip;
    }
    // Counted before any tree of the line is built (a million keys made two).
    match too_many_values(raw) {
        Some(Ok(reply)) => return Verdict::Answer { reply, why: "too_many_values" },
        Some(Err(why)) => return Verdict::Drop { why },
        None => {}
    }
    let (text, bad_byte) = match std::str::from_utf8(raw) {
        Ok(text) => (Cow::Borrowed(text), None),
        Err(error) => (String::from_utf8_lossy(raw), Some(error.valid_up_to())),
    };
    let (value, marked) = match serde_json::from_str::<Value>(&text) {
        Ok(value) => (value, false),
        Err(error) => match mark_lone_surrogates(&text).and_then(|m| serde_json::from_str(&m).ok()) {
            Some(value) => (value, true),
            None => {
                // An id no parser here holds (`1e400`) makes the line unreadable to
                // serde_json; the scan still reads it, and the answer carries it.
                let scanned = MessageScan::of(text.as_bytes());
                if let (true, true, IdField::Sent(id)) = (scanned.closed, scanned.method, &scanned.id)
                    && id.request_id().is_none()
                {
                    return answer(
                        Some(id.clone()),
                        INVALID_REQUEST,
                        &unusable_id_message(id.json()),
                        "bad_id",
                    );
                }
                let message = match bad_byte {
                    Some(at) => format!("the line is not valid UTF-8 (byte {at}) nor JSON; send UTF-8 JSON"),
                    None => {
                        format!("the line is not valid JSON ({error}); send one JSON-RPC message per line")
                    }
                };
                return answer(None, PARSE_ERROR, &message, "not_json");
            }
        },
    };
    let message = match value {
        Value::Object(message) => message,
        Value::Array(_) => {
            return answer(
                None,
                INVALID_REQUEST,
                "batches are not supported: send one JSON-RPC message per line",
                "batch",
            );
        }
        _ => {
            return answer(None, INVALID_REQUEST, "a JSON-RPC message must be an object", "not_object");
        }
    };
    let Some(method) = message.get("method") else {
        return response_or_junk(&message, &text, marked || bad_byte.is_some());
    };
    let Some(id) = message.get("id") else {
        // A notification: never answered.
        if bad_byte.is_some() || marked {
            return Verdict::Drop { why: "notification_with_broken_text" };
        }
        return match serde_json::from_str(&text) {
            Ok(message) => Verdict::Forward(Box::new(message)),
            Err(_) => Verdict::Drop { why: "notification_not_understood" },
        };
    };
    let (echo, id_problem) = check_id(id, &text);
    if let Some(problem) = id_problem {
        return answer(echo, INVALID_REQUEST, &problem, "bad_id");
    }
    if !method.is_string() {
        return answer(echo, INVALID_REQUEST, "`method` must be a string", "bad_method");
    }
    if let Some(at) = bad_byte {
        let message =
            format!("the request is not valid UTF-8 (first invalid byte at offset {at}); send UTF-8 text");
        return answer(echo, PARSE_ERROR, &message, "invalid_utf8");
    }
    if marked {
        return lone_surrogates(&message, echo);
    }
    match serde_json::from_str(&text) {
        Ok(message) => Verdict::Forward(Box::new(message)),
        Err(error) => answer(
            echo,
            INVALID_REQUEST,
            &format!("not a valid JSON-RPC 2.0 request: {error}"),
            "not_a_request",
        ),
    }
}

/// A message without `method`: a client's response to one of our requests, or junk.
fn response_or_junk(message: &Map<String, Value>, text: &str, broken: bool) -> Verdict {
    if message.contains_key("result") || message.contains_key("error") {
        if broken {
            return Verdict::Drop { why: "response_with_broken_text" };
        }
        return match serde_json::from_str(text) {
            Ok(message) => Verdict::Forward(Box::new(message)),
            Err(_) => Verdict::Drop { why: "response_not_understood" },
        };
    }
    let echo = message.get("id").and_then(|id| check_id(id, text).0);
    answer(echo, INVALID_REQUEST, "a JSON-RPC request needs a `method`", "no_method")
}

/// The id to answer with (`None`: null), and what is wrong with it if rmcp
/// cannot take it. MCP ids are strings or integers; rmcp holds integers in 64
/// bits. A number it cannot hold is answered as written in `text` (the line),
/// not as serde_json rounds it.
fn check_id(id: &Value, text: &str) -> (Option<SentId>, Option<String>) {
    match id {
        Value::String(s) if s.contains(MARK) => {
            (None, Some(unusable_id_message("a string with a lone UTF-16 surrogate")))
        }
        Value::String(_) => (sent(id), None),
        Value::Number(n) if n.as_i64().is_some() => (sent(id), None),
        Value::Number(n) => {
            let written = match MessageScan::of(text.as_bytes()).id {
                IdField::Sent(written) => Some(written),
                _ => sent(id),
            };
            let shown = written.as_ref().map_or_else(|| n.to_string(), |id| id.json().to_owned());
            (written, Some(unusable_id_message(&shown)))
        }
        Value::Null => (None, Some(unusable_id_message("null"))),
        other => {
            let kind = match other {
                Value::Bool(_) => "a boolean",
                Value::Array(_) => "an array",
                _ => "an object",
            };
            (None, Some(unusable_id_message(kind)))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::server::rpc::INVALID_PARAMS;

    fn answered(line: &str) -> Value {
        match classify(line.as_bytes()) {
            Verdict::Answer { reply, .. } => serde_json::from_str(&reply.line()).unwrap(),
            Verdict::Forward(_) => panic!("forwarded: {line}"),
            Verdict::Drop { why } => panic!("dropped ({why}): {line}"),
            Verdict::Skip => panic!("skipped: {line}"),
        }
    }

    #[test]
    fn lone_surrogates_are_found_only_inside_strings_and_unescaped() {
        assert_eq!(mark_lone_surrogates(r#"{"q":"\ud83d\ude00"}"#), None, "a pair is fine");
        assert_eq!(mark_lone_surrogates(r#"{"q":"\\ud83d"}"#), None, "an escaped backslash");
        assert_eq!(
            mark_lone_surrogates(r#"{"q":"a\ud83d","r":"\ude00b"}"#).as_deref(),
            Some(r#"{"q":"a\udbff\udfff","r":"\udbff\udfffb"}"#)
        );
        assert_eq!(
            mark_lone_surrogates(r#"{"q":"\ud83d\ud83d\ude00"}"#).as_deref(),
            Some(r#"{"q":"\udbff\udfff\ud83d\ude00"}"#)
        );
    }

    #[test]
    fn every_request_that_cannot_be_processed_is_answered_with_the_right_id() {
        let cases: &[(&str, Value, i64)] = &[
            ("garbage", Value::Null, PARSE_ERROR),
            ("[]", Value::Null, INVALID_REQUEST),
            ("3", Value::Null, INVALID_REQUEST),
            (r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, Value::Null, INVALID_REQUEST),
            (r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#, Value::Null, INVALID_REQUEST),
            (r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#, Value::Null, INVALID_REQUEST),
            (r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#, Value::Null, INVALID_REQUEST),
            (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, json!(1.5), INVALID_REQUEST),
            (
                r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}"#,
                json!(9223372036854775808u64),
                INVALID_REQUEST,
            ),
            (r#"{"jsonrpc":"2.0","id":"\ud83d","method":"ping"}"#, Value::Null, INVALID_REQUEST),
            (r#"{"jsonrpc":"2.0","id":4,"method":7}"#, json!(4), INVALID_REQUEST),
            (r#"{"jsonrpc":"2.0","id":5}"#, json!(5), INVALID_REQUEST),
            (
                r#"{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"kb://\ud83d"}}"#,
                json!(6),
                INVALID_PARAMS,
            ),
        ];
        for (line, id, code) in cases {
            let response = answered(line);
            assert_eq!(&response["id"], id, "{line}: {response}");
            assert_eq!(response["error"]["code"], *code, "{line}: {response}");
            assert_eq!(response["jsonrpc"], "2.0");
        }
        let mut bad = br#"{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":""#.to_vec();
        bad.extend_from_slice(b"\xff\"}}");
        match classify(&bad) {
            Verdict::Answer { reply, .. } => {
                let response: Value = serde_json::from_str(&reply.line()).unwrap();
                assert_eq!(
                    (response["id"].clone(), response["error"]["code"].clone()),
                    (json!(7), json!(PARSE_ERROR))
                );
            }
            _ => panic!("invalid UTF-8 is answered"),
        }
    }

    #[test]
    fn an_id_serde_json_cannot_hold_is_answered_as_written() {
        for (line, id) in [
            (r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}"#, "18446744073709551616"),
            (r#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#, "1e400"),
            (r#"{"method":"ping","id":1.50}"#, "1.50"),
        ] {
            let Verdict::Answer { reply, why } = classify(line.as_bytes()) else {
                panic!("answered: {line}")
            };
            assert_eq!((reply.id().map(SentId::json), why), (Some(id), "bad_id"), "{line}");
            assert!(reply.line().contains(&format!("id is {id}, which")), "{}", reply.line());
        }
        // Out of range elsewhere: the line is not JSON serde_json reads, and JSON-RPC says id null.
        let Verdict::Answer { reply, .. } =
            classify(br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":1e400}}"#)
        else {
            panic!("answered")
        };
        assert_eq!((reply.id(), reply.code()), (None, json!(PARSE_ERROR)));
    }

    #[test]
    fn a_lone_surrogate_in_a_tool_argument_is_an_invalid_argument_result() {
        let response = answered(
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"search_knowledge","arguments":{"query":"smile \ud83d"}}}"#,
        );
        assert_eq!(response["id"], "a");
        assert_eq!(response["result"]["isError"], true);
        assert!(response["result"].get("structuredContent").is_none(), "{response}");
        let text = response["result"]["content"][0]["text"].as_str().unwrap();
        let error = &serde_json::from_str::<Value>(text).unwrap()["error"];
        assert_eq!(error["code"], "invalid_argument");
        assert!(error["message"].as_str().unwrap().contains("`query`"), "{error}");
    }

    #[test]
    fn notifications_and_responses_are_never_answered() {
        for line in [
            r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":{"x":"\ud83d"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/nonsense"}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{"x":"\ud83d"}}"#,
        ] {
            assert!(
                matches!(classify(line.as_bytes()), Verdict::Drop { .. } | Verdict::Forward(_)),
                "{line}"
            );
        }
        assert!(matches!(classify(b"  \r"), Verdict::Skip));
        assert!(matches!(classify(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), Verdict::Forward(_)));
    }
}
