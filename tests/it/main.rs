//! kb-mcp's integration tests, one binary (the suite links once): a module per
//! area, each driven by fixture vaults (`fixtures/`) and the real binaries.
//! `common` holds what several areas share; `eval_baseline` is the gate that
//! holds search quality to the committed baselines (`eval`).
//!
//! Run one area with `cargo test --test it mcp::`, one test by its name.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "tests make, change and read vaults on disk, as a person and an attacker would"
)]

mod attack;
mod canvas;
mod cli;
mod common;
mod docs;
mod engine;
mod eval;
mod eval_baseline;
mod fuzz_regressions;
mod history;
mod http;
mod index_folder;
mod mcp;
mod memory;
mod oauth;
mod pdf;
mod pdf_make;
mod project;
mod replica;
mod sandbox;
mod semantic;
mod structure;
mod vault_parse;
mod vaults;
mod write;
