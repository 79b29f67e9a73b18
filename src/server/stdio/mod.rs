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
//! error (-32600) with its id exactly as sent when the id is a number (`1e400`,
//! `18446744073709551616`: never rounded), else null; invalid UTF-8 is a parse
//! error with the request's id when one can be read; a lone surrogate inside a
//! tool's arguments is the tool error `invalid_argument` naming the argument
//! (elsewhere in the params, -32602); a line over 16 MiB is not kept, but
//! scanned as it streams past for its id, wherever it stands, and answered
//! with it (-32600, naming the limit and how to split the message).
//! Notifications and responses never get an answer, as JSON-RPC requires.
//! Every line refused or dropped is logged to stderr (what was wrong and the
//! id, never the content).
//!
//! rmcp also keeps one pending answer per request id: of two requests in
//! flight with one id, one went unanswered (or got the other's answer). The
//! transport keeps the ids in flight and refuses a second request with one of
//! them (-32600, naming the id); the first is answered as usual. When stdin
//! closes, rmcp gives the requests in flight 5 s before it drops their
//! answers: the transport instead holds the end of input back until every one
//! is answered (for up to 30 s, then answers the rest with an error itself),
//! and fails the server's own questions to the client, which can no longer
//! come back.
//!
//! All writes to stdout go through one writer task, so an answer written here
//! and one written by rmcp never interleave, and a cancelled read never leaves
//! half a line on stdout.

mod classify;
mod surrogates;
mod transport;

pub(super) use transport::transport;
