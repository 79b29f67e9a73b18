//! The stdio transport: one JSON-RPC message per line on stdin, answers on
//! stdout, and every request answered exactly once.
//!
//! rmcp's own stdio transport drops, without an answer or a log line, the lines
//! it cannot parse: invalid UTF-8, an escaped lone UTF-16 surrogate (`"\ud83d"`,
//! what JavaScript sends when it cuts a string inside an emoji), ids it cannot
//! represent (null, booleans, fractions, objects, arrays, integers beyond 64
//! bits), and plain garbage; a client then waits until its own timeout. This
//! reading layer looks at each line first and hands rmcp only the messages it
//! can process. For the others it writes the answer itself, following JSON-RPC
//! 2.0: a line that is not JSON gets a parse error (-32700) with id null; a
//! request whose id is not a string or a 64-bit integer gets an invalid-request
//! error (-32600) with its id when the id is a number, else null; invalid UTF-8
//! is a parse error with the request's id when one can be read; a lone
//! surrogate inside a tool's arguments is the tool error `invalid_argument`
//! naming the argument (elsewhere in the params, -32602). Notifications and
//! responses never get an answer, as JSON-RPC requires. Every line refused or
//! dropped is logged to stderr (what was wrong and the id, never the content).
//!
//! All writes to stdout go through one writer task, so an answer written here
//! and one written by rmcp never interleave, and a cancelled read never leaves
//! half a line on stdout.

use std::borrow::Cow;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::log;
use crate::error::Error;
use crate::tools;

/// The longest line read (one message); longer ones are answered with an error and skipped.
const MAX_LINE_BYTES: usize = 16 << 20;
/// Answers waiting for stdout; a client that stops reading slows the reading down.
const QUEUE: usize = 64;
/// What a lone surrogate escape is replaced with to parse the line: U+10FFFF, a
/// noncharacter no client sends, so finding it afterwards names the argument.
const MARK_ESCAPE: &str = "\\udbff\\udfff";
const MARK: char = '\u{10FFFF}';
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// The stdio transport over `read` and `write`, and the task writing to `write`
/// (await it after the service ends, so the last answers reach the client).
pub(super) fn transport<R, W>(read: R, write: W) -> (LineTransport<BufReader<R>>, JoinHandle<()>)
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, lines) = mpsc::channel(QUEUE);
    let writer = tokio::spawn(write_lines(lines, write));
    let transport = LineTransport {
        reader: BufReader::new(read),
        line: Vec::new(),
        oversized: false,
        pending: None,
        out,
    };
    (transport, writer)
}

async fn write_lines<W: AsyncWrite + Unpin>(mut lines: mpsc::Receiver<Vec<u8>>, mut write: W) {
    while let Some(line) = lines.recv().await {
        if let Err(error) = async {
            write.write_all(&line).await?;
            write.flush().await
        }
        .await
        {
            log(json!({ "event": "stdout_closed", "error": error.to_string() }));
            return;
        }
    }
}

/// rmcp's transport for the stdio server (see the module docs).
pub(super) struct LineTransport<R> {
    reader: R,
    /// The line being read: kept here because a read may be cancelled and resumed.
    line: Vec<u8>,
    /// The line being read is over [`MAX_LINE_BYTES`]: skipping to its end.
    oversized: bool,
    /// An answer of ours not yet queued for stdout.
    pending: Option<Vec<u8>>,
    out: mpsc::Sender<Vec<u8>>,
}

/// One line read from stdin.
enum Read {
    Line(Vec<u8>),
    Oversized,
}

impl<R: AsyncBufRead + Unpin + Send> LineTransport<R> {
    /// The next line, `None` at the end of input. Cancel-safe: bytes already read
    /// stay in `self.line`.
    async fn next_line(&mut self) -> Option<std::io::Result<Read>> {
        loop {
            let available = match self.reader.fill_buf().await {
                Ok(available) => available,
                Err(error) => return Some(Err(error)),
            };
            if available.is_empty() {
                // The end of input; a last line without a newline still counts.
                if self.oversized {
                    self.oversized = false;
                    return Some(Ok(Read::Oversized));
                }
                if self.line.is_empty() {
                    return None;
                }
                return Some(Ok(Read::Line(std::mem::take(&mut self.line))));
            }
            let (chunk, used, ended) = match available.iter().position(|&b| b == b'\n') {
                Some(at) => (&available[..at], at + 1, true),
                None => (available, available.len(), false),
            };
            if !self.oversized {
                if self.line.len() + chunk.len() > MAX_LINE_BYTES {
                    self.oversized = true;
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(chunk);
                }
            }
            self.reader.consume(used);
            if ended {
                if std::mem::take(&mut self.oversized) {
                    return Some(Ok(Read::Oversized));
                }
                return Some(Ok(Read::Line(std::mem::take(&mut self.line))));
            }
        }
    }
}

impl<R: AsyncBufRead + Unpin + Send> Transport<RoleServer> for LineTransport<R> {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        let line = serde_json::to_vec(&item).map(|mut line| {
            line.push(b'\n');
            line
        });
        async move {
            let line = line.map_err(std::io::Error::other)?;
            out.send(line)
                .await
                .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdout is closed"))
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if self.pending.is_some() {
                let permit = self.out.reserve().await.ok()?;
                if let Some(answer) = self.pending.take() {
                    permit.send(answer);
                }
            }
            let line = match self.next_line().await? {
                Ok(Read::Line(line)) => line,
                Ok(Read::Oversized) => {
                    let message = format!(
                        "the message is larger than {} MiB; send smaller requests",
                        MAX_LINE_BYTES >> 20
                    );
                    self.answer(refusal(Value::Null, INVALID_REQUEST, &message), "oversized", &Value::Null);
                    continue;
                }
                Err(error) => {
                    log(json!({ "event": "stdin_failed", "error": error.to_string() }));
                    return None;
                }
            };
            match classify(&line) {
                Verdict::Forward(message) => return Some(*message),
                Verdict::Skip => {}
                Verdict::Drop { why } => {
                    log(json!({ "event": "rpc_dropped", "why": why, "bytes": line.len() }));
                }
                Verdict::Answer { response, why, id } => self.answer(response, why, &id),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

impl<R> LineTransport<R> {
    /// Queues an answer of ours (sent before the next line is read) and logs it.
    fn answer(&mut self, response: Value, why: &str, id: &Value) {
        let code = match response.get("error") {
            Some(error) => error["code"].clone(),
            None => response["result"]["structuredContent"]["error"]["code"].clone(),
        };
        let mut event = json!({ "event": "rpc_refused", "why": why, "code": code });
        if loggable(id) {
            event["id"] = id.clone();
        }
        log(event);
        let mut line = response.to_string().into_bytes();
        line.push(b'\n');
        self.pending = Some(line);
    }
}

/// Whether an id is short enough to log (a client could send megabytes as an id).
fn loggable(id: &Value) -> bool {
    match id {
        Value::String(s) => s.len() <= 128,
        Value::Number(_) | Value::Null => true,
        _ => false,
    }
}

/// What to do with one line.
enum Verdict {
    /// A message rmcp can process.
    Forward(Box<RxJsonRpcMessage<RoleServer>>),
    /// Answer it ourselves with `response`.
    Answer { response: Value, why: &'static str, id: Value },
    /// A notification or response that cannot be processed: no answer, a log line.
    Drop { why: &'static str },
    /// A blank line.
    Skip,
}

fn refusal(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

fn answer(id: Value, code: i64, message: &str, why: &'static str) -> Verdict {
    Verdict::Answer { response: refusal(id.clone(), code, message), why, id }
}

/// Decides what to do with one line (see the module docs).
fn classify(raw: &[u8]) -> Verdict {
    let raw = raw.strip_prefix(UTF8_BOM).unwrap_or(raw);
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    if raw.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Skip;
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
                let message = match bad_byte {
                    Some(at) => format!("the line is not valid UTF-8 (byte {at}) nor JSON; send UTF-8 JSON"),
                    None => {
                        format!("the line is not valid JSON ({error}); send one JSON-RPC message per line")
                    }
                };
                return answer(Value::Null, PARSE_ERROR, &message, "not_json");
            }
        },
    };
    let message = match value {
        Value::Object(message) => message,
        Value::Array(_) => {
            return answer(
                Value::Null,
                INVALID_REQUEST,
                "batches are not supported: send one JSON-RPC message per line",
                "batch",
            );
        }
        _ => {
            return answer(
                Value::Null,
                INVALID_REQUEST,
                "a JSON-RPC message must be an object",
                "not_object",
            );
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
    let (echo, id_problem) = check_id(id);
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
    let echo = message.get("id").map(|id| check_id(id).0).unwrap_or(Value::Null);
    answer(echo, INVALID_REQUEST, "a JSON-RPC request needs a `method`", "no_method")
}

/// The id to answer with, and what is wrong with it if rmcp cannot take it. MCP ids
/// are strings or integers; rmcp holds integers in 64 bits.
fn check_id(id: &Value) -> (Value, Option<String>) {
    const USE: &str = "use a string or an integer between -2^63 and 2^63-1";
    match id {
        Value::String(s) if s.contains(MARK) => {
            (Value::Null, Some(format!("the request's id contains a lone UTF-16 surrogate; {USE}")))
        }
        Value::String(_) => (id.clone(), None),
        Value::Number(n) if n.as_i64().is_some() => (id.clone(), None),
        Value::Number(n) => {
            (id.clone(), Some(format!("the request's id {n} is not one kb-mcp can answer to; {USE}")))
        }
        Value::Null => (Value::Null, Some(format!("the request's id is null; {USE}"))),
        other => {
            let kind = match other {
                Value::Bool(_) => "a boolean",
                Value::Array(_) => "an array",
                _ => "an object",
            };
            (Value::Null, Some(format!("the request's id is {kind}; {USE}")))
        }
    }
}

/// A request with lone surrogates in its params: a tool error for a tool's
/// arguments, else invalid params; either way naming where they are.
fn lone_surrogates(message: &Map<String, Value>, id: Value) -> Verdict {
    let mut places = Vec::new();
    find_marks(&Value::Object(message.clone()), &mut String::new(), &mut places);
    let method = message.get("method").and_then(Value::as_str).unwrap_or_default();
    const WHAT: &str =
        "contains a lone UTF-16 surrogate (half of a character, as when a string is cut inside an emoji)";
    let arguments: Option<Vec<&str>> =
        places.iter().map(|place| place.strip_prefix("params.arguments.")).collect();
    if method == "tools/call"
        && let Some(arguments) = arguments.filter(|a| !a.is_empty())
    {
        let named: Vec<String> = arguments.iter().map(|a| format!("`{a}`")).collect();
        let error = Error::invalid(format!("{} {WHAT}", named.join(", ")))
            .with_hint("send whole characters: drop the broken character or send the full text again")
            .with_details(json!({ "problems": arguments.iter().map(|a| json!({ "argument": a, "rule": "whole Unicode characters only" })).collect::<Vec<_>>() }));
        let result = serde_json::to_value(tools::error_result(&error)).unwrap_or(Value::Null);
        return Verdict::Answer {
            response: json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            why: "lone_surrogate",
            id,
        };
    }
    let named: Vec<String> = places.iter().map(|p| format!("`{p}`")).collect();
    let code = if places.iter().all(|p| p.starts_with("params")) { INVALID_PARAMS } else { INVALID_REQUEST };
    answer(id, code, &format!("{} {WHAT}; send whole characters", named.join(", ")), "lone_surrogate")
}

/// The places (`params.arguments.query`, `params.items[2]`) of strings and keys holding [`MARK`].
fn find_marks(value: &Value, at: &mut String, places: &mut Vec<String>) {
    match value {
        Value::String(s) if s.contains(MARK) => places.push(at.clone()),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = at.len();
                at.push_str(&format!("[{i}]"));
                find_marks(item, at, places);
                at.truncate(len);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                let len = at.len();
                if !at.is_empty() {
                    at.push('.');
                }
                at.push_str(&key.replace(MARK, "\u{FFFD}"));
                if key.contains(MARK) {
                    places.push(at.clone());
                }
                find_marks(item, at, places);
                at.truncate(len);
            }
        }
        _ => {}
    }
}

/// The line with every escaped lone surrogate inside a string replaced by an
/// escape of [`MARK`]; `None` when there is none. Escaped backslashes are skipped,
/// so `"\\ud83d"` (a backslash, then text) is left alone.
fn mark_lone_surrogates(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        let digits = bytes.get(at..at + 6)?;
        if digits[0] != b'\\' || digits[1] != b'u' {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(&digits[2..]).ok()?, 16).ok()
    };
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len() + 16);
    let (mut i, mut in_string, mut changed) = (0, false, false);
    while i < bytes.len() {
        let byte = bytes[i];
        if !in_string {
            in_string = byte == b'"';
            out.push(byte);
            i += 1;
            continue;
        }
        match byte {
            b'"' => {
                in_string = false;
                out.push(byte);
                i += 1;
            }
            b'\\' => match unit(i) {
                Some(high @ 0xD800..=0xDBFF) => {
                    if unit(i + 6).is_some_and(|low| (0xDC00..=0xDFFF).contains(&low)) {
                        out.extend_from_slice(&bytes[i..i + 12]);
                        i += 12;
                    } else {
                        let _ = high;
                        out.extend_from_slice(MARK_ESCAPE.as_bytes());
                        changed = true;
                        i += 6;
                    }
                }
                Some(0xDC00..=0xDFFF) => {
                    out.extend_from_slice(MARK_ESCAPE.as_bytes());
                    changed = true;
                    i += 6;
                }
                _ => {
                    let end = (i + 2).min(bytes.len());
                    out.extend_from_slice(&bytes[i..end]);
                    i = end;
                }
            },
            _ => {
                out.push(byte);
                i += 1;
            }
        }
    }
    if !changed {
        return None;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(line: &str) -> Value {
        match classify(line.as_bytes()) {
            Verdict::Answer { response, .. } => response,
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
            Verdict::Answer { response, .. } => {
                assert_eq!(
                    (response["id"].clone(), response["error"]["code"].clone()),
                    (json!(7), json!(PARSE_ERROR))
                );
            }
            _ => panic!("invalid UTF-8 is answered"),
        }
    }

    #[test]
    fn a_lone_surrogate_in_a_tool_argument_is_an_invalid_argument_result() {
        let response = answered(
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"search_knowledge","arguments":{"query":"smile \ud83d"}}}"#,
        );
        assert_eq!(response["id"], "a");
        assert_eq!(response["result"]["isError"], true);
        let error = &response["result"]["structuredContent"]["error"];
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
