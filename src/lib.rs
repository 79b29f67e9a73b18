//! kb-mcp: controlled access for AI agents to a local Obsidian-style Markdown vault.
//!
//! The layers point one way (see `ARCHITECTURE.md`):
//! `error <- sandbox <- vault <- {index, write} <- engine <- tools <- server <- bins`.

pub mod engine;
pub mod error;
pub mod eval;
pub mod index;
pub mod sandbox;
pub mod server;
pub mod tools;
pub mod vault;
pub mod write;
