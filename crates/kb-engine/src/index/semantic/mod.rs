//! The semantic layer (issue 37): notes embedded section by section, so that a
//! question put in other words than a note's finds it by meaning, fused with
//! the lexical ranking by the engine. `model` holds the models and which
//! languages each reads, `chunks` what of a note is embedded, `store` the
//! vectors and exact search over them. The engine builds and keeps the store
//! (in the background, beside the index), and decides per query which path
//! ran: `hybrid`, or `lexical` and why.

mod chunks;
mod model;
mod store;

pub use chunks::{CHUNKS_PER_NOTE, Chunk, chunks_of};
pub use model::{Model, ModelFiles, is_language};
pub(crate) use model::{language_name, language_of, query_language};
pub use store::{Row, SeenNote, SemanticHit, Vectors};
