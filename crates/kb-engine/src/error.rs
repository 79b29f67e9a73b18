//! The one error type of the library.
//!
//! Every failure an agent or a person can act on carries a contract error code
//! (`path_denied`, `not_found`, `stale_base`, ...), a message that names the
//! path or value involved, and a hint saying what to do next. Lower layers build
//! these with the constructors below; the tools layer maps them one-to-one onto
//! `isError` tool results and the CLI onto exit codes, so the same failure reads
//! the same everywhere.

use std::fmt;

use serde::Serialize;

/// The contract's error codes (`TOOLS.md`, "Results and errors").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// An argument is syntactically valid JSON but semantically wrong.
    InvalidArgument,
    /// A path was refused by the sandbox.
    PathDenied,
    /// The note, heading or file does not exist.
    NotFound,
    /// A `ref` matched several notes.
    AmbiguousRef,
    /// A file or request exceeds a configured limit.
    TooLarge,
    /// A new note's target already exists.
    TargetExists,
    /// A patch's `base_hash` is not the file's current hash.
    StaleBase,
    /// No proposal has this id.
    ProposalNotFound,
    /// A proposal's files no longer match its metadata.
    ProposalTampered,
    /// The proposal was already applied or rejected.
    ProposalNotPending,
    /// Another process holds a lock or changed the file concurrently.
    Conflict,
    /// The caller's access level does not grant this tool.
    PermissionDenied,
    /// The index cannot be opened or queried.
    IndexUnavailable,
    /// A bug or an unexpected I/O failure.
    Internal,
}

impl ErrorCode {
    /// The wire name of the code, as written in the contract.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidArgument => "invalid_argument",
            ErrorCode::PathDenied => "path_denied",
            ErrorCode::NotFound => "not_found",
            ErrorCode::AmbiguousRef => "ambiguous_ref",
            ErrorCode::TooLarge => "too_large",
            ErrorCode::TargetExists => "target_exists",
            ErrorCode::StaleBase => "stale_base",
            ErrorCode::ProposalNotFound => "proposal_not_found",
            ErrorCode::ProposalTampered => "proposal_tampered",
            ErrorCode::ProposalNotPending => "proposal_not_pending",
            ErrorCode::Conflict => "conflict",
            ErrorCode::PermissionDenied => "permission_denied",
            ErrorCode::IndexUnavailable => "index_unavailable",
            ErrorCode::Internal => "internal",
        }
    }

    /// What to do next when the failure names nothing more specific: every
    /// error a tool returns carries a hint, this one where its maker gave none.
    pub fn default_hint(self) -> &'static str {
        match self {
            ErrorCode::InvalidArgument => "correct the argument the message names and call again",
            ErrorCode::PathDenied => {
                "use a vault-relative path with forward slashes inside a notes, standards or read_also folder"
            }
            ErrorCode::NotFound => {
                "check the path or name: search_knowledge or list_notes shows the notes that exist"
            }
            ErrorCode::AmbiguousRef => "give the exact vault-relative `path` of one of the candidates",
            ErrorCode::TooLarge => "ask for less (a section, an offset, a smaller limit) or split the change",
            ErrorCode::TargetExists => {
                "choose another title or folder, or propose a patch to the existing note"
            }
            ErrorCode::StaleBase => "read the note again and propose the change against its current hash",
            ErrorCode::ProposalNotFound => "list_proposals shows the pending proposals and their ids",
            ErrorCode::ProposalTampered => {
                "the staged files were changed by hand: reject this proposal and stage it again"
            }
            ErrorCode::ProposalNotPending => {
                "it was applied or rejected already: list_proposals {status: \"all\"} shows which"
            }
            ErrorCode::Conflict => "read the files again and retry; nothing of the proposal was applied",
            ErrorCode::PermissionDenied => "this connection's access level does not allow it; ask the person",
            ErrorCode::IndexUnavailable => {
                "run `kb-index build --full` to rebuild the index; it is derived data and safe to delete"
            }
            ErrorCode::Internal => "call again; if it keeps failing, the server's log on stderr says why",
        }
    }

    /// Whether the failure is the caller's to fix (bad input, denied path, stale state)
    /// rather than the server's. The CLI exits 2 for these and 1 otherwise.
    pub fn is_user_fault(self) -> bool {
        matches!(
            self,
            ErrorCode::InvalidArgument
                | ErrorCode::PathDenied
                | ErrorCode::AmbiguousRef
                | ErrorCode::TooLarge
                | ErrorCode::PermissionDenied
        )
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure with its contract code, a message naming what was wrong, and a hint.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    /// The contract code.
    pub code: ErrorCode,
    /// What went wrong, naming the path or value involved.
    pub message: String,
    /// What the caller can do about it.
    pub hint: Option<String>,
    /// Structured extras an agent can act on (`candidates`, `current_hash`, ...).
    pub details: Option<serde_json::Value>,
}

/// The most characters of an error's message, or of its hint, in an answer.
pub const MESSAGE_MAX_CHARS: usize = 1_000;
/// The most characters of one string in an error's details, in an answer.
pub(crate) const DETAIL_MAX_CHARS: usize = 500;
/// The most items of one list in an error's details, in an answer.
pub(crate) const DETAIL_MAX_ITEMS: usize = 100;

/// `text` within `max` characters: its start and its end (where a message
/// usually says the rule that was broken), the cut said in between
/// (`… [1258000 characters left out] …`). Unchanged when it fits.
pub fn cut_middle(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    let tail = max / 4;
    let head = max - tail;
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(at, _)| at);
    let tail_start = text.char_indices().nth(total - tail).map_or(text.len(), |(at, _)| at);
    format!("{} … [{} characters left out] … {}", &text[..head_end], total - head - tail, &text[tail_start..])
}

/// A details value within the answer's bounds (see [`Error::bounded`]): a list
/// cut to its first items says how many it left out in a last string item.
fn bounded_value(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(text) => Value::String(cut_middle(text, DETAIL_MAX_CHARS)),
        Value::Array(items) => {
            let mut kept: Vec<Value> = items.iter().take(DETAIL_MAX_ITEMS).map(bounded_value).collect();
            if items.len() > DETAIL_MAX_ITEMS {
                kept.push(Value::String(format!("… {} more", items.len() - DETAIL_MAX_ITEMS)));
            }
            Value::Array(kept)
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .take(DETAIL_MAX_ITEMS)
                .map(|(key, value)| (cut_middle(key, DETAIL_MAX_CHARS), bounded_value(value)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error with a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error { code, message: message.into(), hint: None, details: None }
    }

    /// Adds a hint saying what to do next.
    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Adds structured details (merged into the tool result's error object).
    #[must_use]
    pub fn with_details(mut self, details: serde_json::Value) -> Self {
        self.details = Some(details);
        self
    }

    /// The error as an answer carries it: the message and hint within
    /// [`MESSAGE_MAX_CHARS`] each (a message naming a value an agent sent
    /// echoes it, and a megabyte argument must not come back whole), each
    /// string in the details within `DETAIL_MAX_CHARS` and each list within
    /// `DETAIL_MAX_ITEMS`.
    #[must_use]
    pub fn bounded(&self) -> Error {
        Error {
            code: self.code,
            message: cut_middle(&self.message, MESSAGE_MAX_CHARS),
            hint: self.hint.as_deref().map(|hint| cut_middle(hint, MESSAGE_MAX_CHARS)),
            details: self.details.as_ref().map(bounded_value),
        }
    }

    /// The contract's error object, `{"error": {code, message, hint, …}}`:
    /// [bounded](Error::bounded), the code's [default hint](ErrorCode::default_hint)
    /// where the error names none, its details as fields beside the others.
    pub fn to_contract_json(&self) -> serde_json::Value {
        let error = self.bounded();
        let hint = error.hint.as_deref().unwrap_or(error.code.default_hint());
        let mut object =
            serde_json::json!({ "code": error.code.as_str(), "message": error.message, "hint": hint });
        if let Some(serde_json::Value::Object(details)) = &error.details {
            for (key, value) in details {
                object[key.as_str()] = value.clone();
            }
        }
        serde_json::json!({ "error": object })
    }

    /// `invalid_argument`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::InvalidArgument, message)
    }

    /// `path_denied`, with the standard hint.
    pub fn denied(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::PathDenied, message).with_hint(
            "use a vault-relative path with forward slashes inside a notes, standards or read_also folder, e.g. z/note.md",
        )
    }

    /// `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::NotFound, message)
    }

    /// `internal`, for bugs and unexpected I/O failures.
    pub fn internal(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::Internal, message)
    }

    /// `index_unavailable`.
    pub fn index(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::IndexUnavailable, message).with_hint(
            "run `kb-index build --full` to rebuild the index; it is derived data and safe to delete",
        )
    }

    /// `stale_base`: the note at `target` no longer has the hash `base` a
    /// change was made against; `current` is its hash now (`None`: it is
    /// gone), carried in `details.current_hash`.
    pub fn stale_base(target: impl fmt::Display, base: &str, current: Option<&str>) -> Self {
        let message = match current {
            Some(current) => format!("{target} has changed: its hash is {current}, not the base {base}"),
            None => format!("{target} no longer exists, so the patch made against {base} cannot apply"),
        };
        Error::new(ErrorCode::StaleBase, message)
            .with_hint("read the note again (read_note) and make the edits against its current text and hash")
            .with_details(serde_json::json!({ "current_hash": current }))
    }

    /// Wraps an I/O error, naming the path it happened on.
    pub fn io(path: impl fmt::Display, err: &std::io::Error) -> Self {
        match err.kind() {
            std::io::ErrorKind::NotFound => Error::not_found(format!("{path}: no such file")),
            std::io::ErrorKind::PermissionDenied => {
                Error::internal(format!("{path}: the operating system refused access ({err})"))
            }
            _ if is_link_loop(err) => Error::denied(format!(
                "{path} is a symbolic link loop: it leads to no file, so it cannot be read or written"
            )),
            _ if is_disk_full(err) => Error::internal(format!(
                "{path}: the disk is full (no space left on device)"
            ))
            .with_hint(
                "free some space on that disk and call again; kb-mcp writes through temporary files and rolls a failed apply back, so no note was half-written",
            ),
            _ => Error::internal(format!("{path}: {err}")),
        }
    }
}

/// Whether an I/O error means the disk is full (or the user's quota is used up).
pub fn is_disk_full(err: &std::io::Error) -> bool {
    matches!(err.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded)
        || (cfg!(unix) && err.raw_os_error() == Some(28))
}

/// `ELOOP` (or Windows' "the name of the file cannot be resolved"): symbolic
/// links that lead back to themselves. Its `ErrorKind` is not stable yet, so the
/// raw code is compared.
fn is_link_loop(err: &std::io::Error) -> bool {
    let code = err.raw_os_error();
    if cfg!(target_os = "linux") || cfg!(target_os = "android") {
        code == Some(40)
    } else if cfg!(windows) {
        code == Some(1921)
    } else if cfg!(unix) {
        code == Some(62)
    } else {
        false
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, " (hint: {hint})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    #[test]
    fn an_answer_carries_the_start_and_end_of_a_long_message_and_says_the_cut() {
        let echoed = format!("\"{}\" is not of type \"integer\"", "a".repeat(1_260_000));
        let error = Error::invalid(echoed).with_details(serde_json::json!({
            "problems": (0..150).map(|n| serde_json::json!({"argument": "x".repeat(900), "n": n})).collect::<Vec<_>>(),
        }));
        let bounded = error.bounded();
        assert!(bounded.message.chars().count() < MESSAGE_MAX_CHARS + 60, "{}", bounded.message.len());
        assert!(bounded.message.ends_with("is not of type \"integer\""), "{}", &bounded.message[900..]);
        let total = error.message.chars().count();
        let cut = format!("[{} characters left out]", total - MESSAGE_MAX_CHARS);
        assert!(bounded.message.contains(&cut), "{}", &bounded.message[700..800]);
        let problems = bounded.details.unwrap()["problems"].as_array().unwrap().clone();
        assert_eq!(problems.len(), DETAIL_MAX_ITEMS + 1);
        assert_eq!(problems[DETAIL_MAX_ITEMS], "… 50 more");
        assert!(problems[0]["argument"].as_str().unwrap().chars().count() < DETAIL_MAX_CHARS + 40);
        assert_eq!(cut_middle("short", 10), "short");
    }

    use super::*;

    #[test]
    fn a_full_disk_is_said_plainly_with_what_to_do() {
        let full = std::io::Error::from(std::io::ErrorKind::StorageFull);
        let err = Error::io("z/note.md", &full);
        assert_eq!(err.code, ErrorCode::Internal);
        assert_eq!(err.message, "z/note.md: the disk is full (no space left on device)");
        assert!(err.hint.as_deref().is_some_and(|hint| hint.starts_with("free some space on that disk")));
        assert!(is_disk_full(&full));
        assert!(!is_disk_full(&std::io::Error::from(std::io::ErrorKind::Other)));
    }
}
