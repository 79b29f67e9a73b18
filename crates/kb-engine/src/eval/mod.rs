//! Retrieval evaluation: does search find the note a person means?
//!
//! A suite (JSON, see `index-schema/eval-suite.schema.json`) lists queries, the
//! tool that answers each, and which notes are acceptable or forbidden in the
//! top K. [`Suite::parse`] reads and validates it, naming the bad field on any
//! mistake; [`run`] sends every query through the same engine methods the MCP
//! tools call and returns a [`Report`] with a verdict per case and recall@1/5/10
//! and MRR@10 overall, per tool and per query language ([`run_as`] puts every
//! case through one tool instead, `recall_context` included). It needs no model and no
//! network, so it runs in tests and in CI, and the public suites in
//! `fixtures/eval/` keep ranking changes honest in English and Chinese alike.
//!
//! This layer sits above `engine` and below the binaries: it reads no files
//! (the caller hands over the suite's text) and knows nothing of MCP.

mod language;
mod report;
mod suite;

pub use language::language_of;
pub use report::{CaseReport, ForbiddenMatch, Metrics, Report, Score, run, run_as, run_baseline};
pub use suite::{Case, Expectation, LATEST_SCHEMA_VERSION, MAX_TOP_K, Suite, Tool};
