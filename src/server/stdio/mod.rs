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

mod classify;
mod surrogates;
mod transport;

pub(super) use transport::transport;
