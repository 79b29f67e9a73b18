//! A bounded scan of one JSON-RPC message for what an answer to it needs: is
//! it an object, what is its top-level `id` exactly as written, does it have a
//! `method` (a request or notification) or a `result` or `error` (a response).
//! It reads the bytes once, in pieces as they arrive, and keeps a few hundred
//! of them at most, so it reads a message too large to parse (a stdio line
//! over the limit, whose id may come last, after megabytes of params: the
//! TypeScript SDK writes it last) and gives back ids no parser here holds
//! exactly (`18446744073709551616`, `1e400`, `1.50`). It follows the
//! structure only as far as it needs to: it is not a validator.

use rmcp::model::{NumberOrString, RequestId};

/// The longest id answered as it was sent (its JSON text, a string's quotes
/// included); a longer one is answered with null.
const SENT_ID_MAX_BYTES: usize = 1024;

/// The longest key read (longer keys are none of the ones looked for).
const KEY_MAX_BYTES: usize = 64;

/// A request id exactly as the client wrote it: the JSON text of a number or
/// a string, at most [`SENT_ID_MAX_BYTES`] long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::server) struct SentId(String);

impl SentId {
    /// A JSON number or string token (the string with its quotes), when it is
    /// one and short enough to echo.
    pub(in crate::server) fn from_token(token: &[u8]) -> Option<SentId> {
        if token.len() > SENT_ID_MAX_BYTES {
            return None;
        }
        let valid = match token.first() {
            Some(b'"') => serde_json::from_slice::<String>(token).is_ok(),
            _ => is_number(token),
        };
        let text = std::str::from_utf8(token).ok()?;
        valid.then(|| SentId(text.to_owned()))
    }

    /// The id rmcp parsed, as JSON.
    pub(in crate::server) fn of(id: &RequestId) -> SentId {
        match id {
            NumberOrString::Number(n) => SentId(n.to_string()),
            NumberOrString::String(s) => SentId(serde_json::Value::from(&**s).to_string()),
        }
    }

    /// Its JSON text, for the answer.
    pub(in crate::server) fn json(&self) -> &str {
        &self.0
    }

    /// The id as rmcp holds ids: a string, or an integer within 64 bits;
    /// `None` for any other number.
    pub(in crate::server) fn request_id(&self) -> Option<RequestId> {
        if self.0.starts_with('"') {
            let text: String = serde_json::from_str(&self.0).ok()?;
            return Some(NumberOrString::String(text.into()));
        }
        self.0.parse::<i64>().ok().map(NumberOrString::Number)
    }

    /// The id for a log line: short ids only (a client could send a kilobyte as an id).
    pub(in crate::server) fn loggable(&self) -> Option<serde_json::Value> {
        (self.0.len() <= 128).then(|| serde_json::from_str(&self.0).ok()).flatten()
    }
}

impl std::fmt::Display for SentId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a message's top level says of its `id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::server) enum IdField {
    /// No `id`: a notification (or not a JSON-RPC message at all).
    Absent,
    /// A number or a string, as written.
    Sent(SentId),
    /// Something that cannot be answered to, named (`null`, `a boolean`, …).
    Unusable(&'static str),
}

/// What a scan found (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::server) struct Scanned {
    /// The message is a JSON object.
    pub(in crate::server) object: bool,
    /// The object closed where JSON says it does (false for a cut or broken message).
    pub(in crate::server) closed: bool,
    pub(in crate::server) id: IdField,
    /// It has a `method`: a request, or a notification when it has no `id`.
    pub(in crate::server) method: bool,
    /// It has a `result` or an `error`: a response.
    pub(in crate::server) response: bool,
}

impl Scanned {
    /// A notification or a response: JSON-RPC forbids answering either.
    pub(in crate::server) fn needs_no_answer(&self) -> bool {
        self.object && ((self.id == IdField::Absent && self.method) || (!self.method && self.response))
    }
}

/// Where the scan stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Before the message's first byte that is not white space.
    Start,
    /// In the top-level object, before a key or its closing brace.
    Key,
    /// Inside a top-level key.
    InKey,
    /// After a key, before its colon.
    Colon,
    /// After a colon, before the value.
    Value,
    /// Inside a top-level string value.
    InString,
    /// Inside a top-level number or literal (`true`, `null`).
    InScalar,
    /// Inside an object or array nested in a top-level value.
    Nested,
    /// After a top-level value, before a comma or the closing brace.
    Next,
    /// Finished: the object closed, or the message is not one.
    Done,
}

/// Which top-level key a value belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Id,
    Method,
    Response,
    Other,
}

/// The scan itself: feed it the message's bytes in order, then finish it.
pub(in crate::server) struct MessageScan {
    at: At,
    /// Nesting below the top-level value (`Nested` only).
    depth: usize,
    /// Inside a string, the last byte was a backslash.
    escaped: bool,
    /// Inside a string nested in a value.
    nested_string: bool,
    field: Field,
    /// The key or value being read (only those looked at), up to its cap.
    token: Vec<u8>,
    /// `token` passed its cap.
    token_cut: bool,
    found: Scanned,
}

impl Default for MessageScan {
    fn default() -> Self {
        MessageScan {
            at: At::Start,
            depth: 0,
            escaped: false,
            nested_string: false,
            field: Field::Other,
            token: Vec::new(),
            token_cut: false,
            found: Scanned {
                object: false,
                closed: false,
                id: IdField::Absent,
                method: false,
                response: false,
            },
        }
    }
}

impl MessageScan {
    /// Scans a whole message.
    pub(in crate::server) fn of(bytes: &[u8]) -> Scanned {
        let mut scan = MessageScan::default();
        scan.feed(bytes);
        scan.finish()
    }

    /// Reads the next bytes of the message.
    pub(in crate::server) fn feed(&mut self, mut bytes: &[u8]) {
        while let Some((&byte, rest)) = bytes.split_first() {
            if self.at == At::Done {
                return;
            }
            if self.in_string() && !self.escaped {
                // The long part of a message is string content: skip to its next quote or backslash.
                let plain = bytes.iter().position(|&b| b == b'"' || b == b'\\').unwrap_or(bytes.len());
                if plain > 0 {
                    self.keep(&bytes[..plain]);
                    bytes = &bytes[plain..];
                    continue;
                }
            }
            if self.in_string() {
                self.string_byte(byte);
            } else {
                self.step(byte);
            }
            bytes = rest;
        }
    }

    /// What the scan found.
    pub(in crate::server) fn finish(mut self) -> Scanned {
        if self.at == At::InScalar {
            self.value_ended();
        }
        self.found
    }

    fn in_string(&self) -> bool {
        matches!(self.at, At::InKey | At::InString) || (self.at == At::Nested && self.nested_string)
    }

    /// One byte inside a string (`feed` hands over runs of plain bytes itself).
    fn string_byte(&mut self, byte: u8) {
        self.keep(&[byte]);
        if std::mem::take(&mut self.escaped) {
            return;
        }
        match byte {
            b'\\' => self.escaped = true,
            b'"' if self.at == At::InKey => {
                self.field = self.key_field();
                self.at = At::Colon;
            }
            b'"' if self.at == At::InString => {
                self.value_ended();
                self.at = At::Next;
            }
            b'"' => self.nested_string = false,
            _ => {}
        }
    }

    /// One byte outside any string.
    fn step(&mut self, byte: u8) {
        let space = matches!(byte, b' ' | b'\t' | b'\r' | b'\n');
        match self.at {
            // A byte-order mark before the message is allowed, as on stdio.
            At::Start if space || matches!(byte, 0xEF | 0xBB | 0xBF) => {}
            At::Start if byte == b'{' => {
                self.found.object = true;
                self.at = At::Key;
            }
            At::Key | At::Colon | At::Value | At::Next if space => {}
            At::Key if byte == b'"' => self.start_token(byte, At::InKey),
            At::Key | At::Next if byte == b'}' => {
                self.found.closed = true;
                self.at = At::Done;
            }
            At::Colon if byte == b':' => self.at = At::Value,
            At::Value if byte == b'"' => self.start_token(byte, At::InString),
            At::Value if byte == b'{' || byte == b'[' => {
                self.start_token(byte, At::Nested);
                self.depth = 1;
            }
            At::Value => self.start_token(byte, At::InScalar),
            At::InScalar if space || byte == b',' || byte == b'}' => {
                self.value_ended();
                self.at = At::Next;
                self.step(byte);
            }
            At::InScalar => self.keep(&[byte]),
            At::Nested => match byte {
                b'"' => self.nested_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        self.value_ended();
                        self.at = At::Next;
                    }
                }
                _ => {}
            },
            At::Next if byte == b',' => self.at = At::Key,
            // Anything else is not JSON this scan can follow: it stops where it is.
            _ => self.at = At::Done,
        }
    }

    fn start_token(&mut self, byte: u8, at: At) {
        self.token.clear();
        self.token_cut = false;
        self.token.push(byte);
        self.at = at;
    }

    /// Keeps bytes of a key, or of the value of a key looked at, up to its cap.
    fn keep(&mut self, bytes: &[u8]) {
        let cap = match self.at {
            At::InKey => KEY_MAX_BYTES,
            At::InString | At::InScalar if self.field == Field::Id => SENT_ID_MAX_BYTES,
            _ => return,
        };
        if self.token.len() + bytes.len() > cap {
            self.token_cut = true;
        } else {
            self.token.extend_from_slice(bytes);
        }
    }

    fn key_field(&self) -> Field {
        if self.token_cut {
            return Field::Other;
        }
        let key = match serde_json::from_slice::<String>(&self.token) {
            Ok(key) => key,
            Err(_) => return Field::Other,
        };
        match key.as_str() {
            "id" => Field::Id,
            "method" => Field::Method,
            "result" | "error" => Field::Response,
            _ => Field::Other,
        }
    }

    /// A top-level value ended: notes it when its key is one looked at (a
    /// repeated key counts as its last value, as serde_json reads it).
    fn value_ended(&mut self) {
        match self.field {
            Field::Method => self.found.method = true,
            Field::Response => self.found.response = true,
            Field::Other => {}
            Field::Id => {
                self.found.id = match (self.token.first(), self.token_cut) {
                    (_, true) => IdField::Unusable("longer than 1 KiB"),
                    (Some(b'{'), _) => IdField::Unusable("an object"),
                    (Some(b'['), _) => IdField::Unusable("an array"),
                    _ => match self.token.as_slice() {
                        b"null" => IdField::Unusable("null"),
                        b"true" | b"false" => IdField::Unusable("a boolean"),
                        token => {
                            SentId::from_token(token).map_or(IdField::Unusable("malformed"), IdField::Sent)
                        }
                    },
                };
            }
        }
        self.field = Field::Other;
    }
}

/// Whether `token` is a JSON number: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
fn is_number(token: &[u8]) -> bool {
    let digits = |at: &mut usize| {
        let start = *at;
        while token.get(*at).is_some_and(u8::is_ascii_digit) {
            *at += 1;
        }
        *at > start
    };
    let mut at = usize::from(token.first() == Some(&b'-'));
    if token.get(at) == Some(&b'0') {
        at += 1;
    } else if !digits(&mut at) {
        return false;
    }
    if token.get(at) == Some(&b'.') {
        at += 1;
        if !digits(&mut at) {
            return false;
        }
    }
    if matches!(token.get(at), Some(b'e' | b'E')) {
        at += 1;
        if matches!(token.get(at), Some(b'+' | b'-')) {
            at += 1;
        }
        if !digits(&mut at) {
            return false;
        }
    }
    at == token.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_of(message: &str) -> IdField {
        MessageScan::of(message.as_bytes()).id
    }

    fn sent(text: &str) -> IdField {
        IdField::Sent(SentId(text.to_owned()))
    }

    #[test]
    fn the_id_is_read_as_written_wherever_it_stands() {
        let cases: &[(&str, IdField)] = &[
            (r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}"#, sent("18446744073709551616")),
            (r#"{"method":"ping","params":{"id":1,"x":[{"id":2}]},"id":1e400}"#, sent("1e400")),
            (r#" { "id" : 1.50 , "method" : "ping" } "#, sent("1.50")),
            (r#"{"id":-0.5E-3}"#, sent("-0.5E-3")),
            (r#"{"id":"a \"quoted\" \\ \u00e9 id","method":"x"}"#, sent(r#""a \"quoted\" \\ \u00e9 id""#)),
            (r#"{"\u0069d":"escaped key"}"#, sent(r#""escaped key""#)),
            (r#"{"params":{"text":"} \" ] {"},"id":3}"#, sent("3")),
            (r#"{"id":1,"id":2}"#, sent("2")),
            (r#"{"id":null,"method":"ping"}"#, IdField::Unusable("null")),
            (r#"{"id":true}"#, IdField::Unusable("a boolean")),
            (r#"{"id":{"a":1}}"#, IdField::Unusable("an object")),
            (r#"{"id":[1]}"#, IdField::Unusable("an array")),
            (r#"{"id":01}"#, IdField::Unusable("malformed")),
            (r#"{"id":"\ud83d"}"#, IdField::Unusable("malformed")),
            (r#"{"method":"notifications/initialized"}"#, IdField::Absent),
            (r#"{"ids":1,"xid":2}"#, IdField::Absent),
            (r#"[{"id":1}]"#, IdField::Absent),
        ];
        for (message, want) in cases {
            assert_eq!(&id_of(message), want, "{message}");
        }
        let long = format!(r#"{{"id":"{}"}}"#, "x".repeat(2000));
        assert_eq!(id_of(&long), IdField::Unusable("longer than 1 KiB"));
    }

    #[test]
    fn pieces_of_any_size_give_the_same_scan() {
        let message = br#"{"method":"tools/call","params":{"arguments":{"q":"a\\\"}b","n":[1,{"x":"]"}]}},"jsonrpc":"2.0","id":"last"}"#;
        let whole = MessageScan::of(message);
        assert_eq!(whole.id, sent(r#""last""#));
        assert!(whole.object && whole.closed && whole.method && !whole.response);
        for size in 1..8 {
            let mut scan = MessageScan::default();
            message.chunks(size).for_each(|piece| scan.feed(piece));
            assert_eq!(scan.finish(), whole, "pieces of {size}");
        }
    }

    #[test]
    fn what_needs_no_answer_is_told_apart() {
        let scan = |m: &str| MessageScan::of(m.as_bytes());
        assert!(scan(r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#).needs_no_answer());
        assert!(scan(r#"{"jsonrpc":"2.0","id":4,"result":{}}"#).needs_no_answer());
        assert!(!scan(r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#).needs_no_answer());
        assert!(!scan(r#"{"jsonrpc":"2.0","id":4}"#).needs_no_answer());
        assert!(!scan("not json").needs_no_answer());
        let cut = scan(r#"{"jsonrpc":"2.0","id":4,"method":"ping""#);
        assert!(cut.object && !cut.closed && cut.id == sent("4"));
    }

    #[test]
    fn ids_become_rmcp_ids_only_when_rmcp_can_hold_them() {
        let id = |text: &str| SentId::from_token(text.as_bytes()).and_then(|id| id.request_id());
        assert_eq!(id("7"), Some(NumberOrString::Number(7)));
        assert_eq!(id("-9223372036854775808"), Some(NumberOrString::Number(i64::MIN)));
        assert_eq!(id(r#""7""#), Some(NumberOrString::String("7".into())));
        assert_eq!(id("9223372036854775808"), None);
        assert_eq!(id("1.0"), None);
        assert_eq!(id("1e3"), None);
        assert_eq!(SentId::of(&NumberOrString::String("a\"b".into())).json(), r#""a\"b""#);
        for bad in ["", "-", "1.", ".5", "1e", "+1", "0x10", "1 ", "tru"] {
            assert!(!is_number(bad.as_bytes()), "{bad}");
        }
    }
}
