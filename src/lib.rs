//! kb-mcp: controlled access for AI agents to a local Obsidian-style Markdown vault.
//!
//! Two crates, layers pointing one way (see `ARCHITECTURE.md`): the engine
//! crate `kb-engine` (`error <- sandbox <- vault <- {index, write} <- engine <-
//! eval`), knowing no protocol, and this one, `engine <- review <- tools <-
//! server <- bins`, the only code that knows rmcp, tokio and HTTP. The engine's modules
//! are re-exported here under their own names, so `kb_mcp::engine` is
//! `kb_engine::engine`.

pub use kb_engine::{engine, error, eval, index, sandbox, vault, write};

pub mod review;
pub mod server;
pub mod tools;

/// Every program built on this library (the server, `kb-index`, the tests and
/// the benchmarks) allocates through mimalloc. A search builds a few dozen
/// postings readers and scorers of a kilobyte or two each and drops them at
/// its end; glibc's allocator spent about a quarter of a `search_knowledge`
/// call on them (its fast bins are consolidated before each such block).
/// mimalloc 2 without transparent huge pages (`Cargo.toml`): mimalloc 3 held
/// 169 MiB serving 10k notes where glibc held 91 and mimalloc 2 holds 101
/// (BENCHMARKS.md, "Allocator"). Declared here, once, so the
/// benchmarks measure what the binaries run; not under `cargo fuzz`, whose
/// sanitizers watch the system allocator.
#[cfg(not(fuzzing))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
