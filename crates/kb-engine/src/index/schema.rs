//! The tantivy schema, built from the declaration in `index-schema/schema.json`.
//!
//! The declaration is the single source of truth for field names, kinds and
//! per-tool weights; this module turns it into a tantivy schema and a [`Fields`]
//! handle the rest of the index layer uses. Building fails loudly (a test runs
//! it) if the code asks for a field the declaration lacks or the other way round.

use std::collections::BTreeMap;

use serde::Deserialize;
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, SchemaBuilder, TextFieldIndexing,
    TextOptions,
};

use super::tokenizer::ANALYZER;
use crate::error::{Error, Result};

/// The declaration file, compiled in.
pub(crate) const DECLARATION: &str = include_str!("../../index-schema/schema.json");

#[derive(Debug, Deserialize)]
pub(crate) struct Declaration {
    pub(crate) schema_version: u32,
    pub(crate) fields: Vec<FieldDeclaration>,
    pub(crate) weights: BTreeMap<String, BTreeMap<String, f32>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct FieldDeclaration {
    pub(crate) name: String,
    pub(crate) kind: String,
    pub(crate) stored: bool,
}

/// Handles to every field the code uses.
#[derive(Debug, Clone)]
pub(crate) struct Fields {
    pub(crate) path: Field,
    pub(crate) title: Field,
    pub(crate) aliases: Field,
    pub(crate) description: Field,
    pub(crate) tags: Field,
    pub(crate) headings: Field,
    pub(crate) body: Field,
    pub(crate) name_key: Field,
    pub(crate) tag_filter: Field,
    pub(crate) folder: Field,
    pub(crate) language: Field,
    pub(crate) record: Field,
    /// The record's head, stored first (see `SearchIndex::lean_hit_record`).
    pub(crate) hit: Field,
}

/// The names [`Fields`] needs, in declaration order.
pub(crate) const FIELD_NAMES: [&str; 13] = [
    "path",
    "title",
    "aliases",
    "description",
    "tags",
    "headings",
    "body",
    "name_key",
    "tag_filter",
    "folder",
    "language",
    "record",
    "hit",
];

/// The parsed declaration, its schema and field handles.
#[derive(Debug, Clone)]
pub(crate) struct IndexSchema {
    pub(crate) version: u32,
    pub(crate) schema: Schema,
    pub(crate) fields: Fields,
    /// Per tool, per field boost.
    pub(crate) weights: BTreeMap<String, Vec<(Field, f32)>>,
}

pub(crate) fn declaration() -> Result<Declaration> {
    serde_json::from_str(DECLARATION)
        .map_err(|e| Error::internal(format!("index-schema/schema.json is invalid: {e}")))
}

/// Builds the schema from the declaration.
pub(crate) fn build() -> Result<IndexSchema> {
    let declaration = declaration()?;
    let mut builder = SchemaBuilder::new();
    for field in &declaration.fields {
        match field.kind.as_str() {
            "raw" => {
                let options = if field.stored { STRING | STORED } else { STRING };
                builder.add_text_field(&field.name, options);
            }
            "text" => {
                let indexing = TextFieldIndexing::default()
                    .set_tokenizer(ANALYZER)
                    .set_index_option(IndexRecordOption::WithFreqsAndPositions);
                let mut options = TextOptions::default().set_indexing_options(indexing);
                if field.stored {
                    options = options.set_stored();
                }
                builder.add_text_field(&field.name, options);
            }
            "code" => {
                builder.add_u64_field(&field.name, INDEXED | FAST);
            }
            "blob" => {
                builder.add_text_field(&field.name, STORED);
            }
            other => {
                return Err(Error::internal(format!("field `{}` has unknown kind `{other}`", field.name)));
            }
        }
    }
    let schema = builder.build();
    let declared: Vec<&str> = declaration.fields.iter().map(|f| f.name.as_str()).collect();
    if declared != FIELD_NAMES {
        return Err(Error::internal(format!(
            "index-schema declares fields {declared:?} but the code uses {FIELD_NAMES:?}"
        )));
    }
    let get =
        |name: &str| schema.get_field(name).map_err(|e| Error::internal(format!("field `{name}`: {e}")));
    let fields = Fields {
        path: get("path")?,
        title: get("title")?,
        aliases: get("aliases")?,
        description: get("description")?,
        tags: get("tags")?,
        headings: get("headings")?,
        body: get("body")?,
        name_key: get("name_key")?,
        tag_filter: get("tag_filter")?,
        folder: get("folder")?,
        language: get("language")?,
        record: get("record")?,
        hit: get("hit")?,
    };
    let mut weights = BTreeMap::new();
    for (tool, per_field) in &declaration.weights {
        let mut list = Vec::new();
        for (name, weight) in per_field {
            list.push((get(name)?, *weight));
        }
        weights.insert(tool.clone(), list);
    }
    for tool in ["search_knowledge", "search_note_content"] {
        if !weights.contains_key(tool) {
            return Err(Error::internal(format!("index-schema has no weights for `{tool}`")));
        }
    }
    Ok(IndexSchema { version: declaration.schema_version, schema, fields, weights })
}
