//! kb-engine: the library behind kb-mcp, everything but the protocol. It reads
//! an Obsidian-style Markdown vault, keeps its search index and link graph, and
//! changes notes only through proposals a person approves.
//!
//! The layers point one way (see `ARCHITECTURE.md`):
//! `error <- sandbox <- vault <- {index, write} <- engine <- eval`. This crate
//! knows nothing of MCP, JSON Schema validation, async runtimes or HTTP: the
//! `kb-mcp` crate puts the protocol on top of [`engine::Engine`], and Cargo,
//! not a convention, keeps those crates out of here.

pub mod engine;
pub mod error;
pub mod eval;
pub mod index;
pub mod sandbox;
pub mod vault;
pub mod write;
