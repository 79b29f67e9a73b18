//! The tools of a connection that may use several vaults: every tool's
//! `vault` argument and `list_vaults` (published only to such a connection,
//! so that one that may use a single vault sees a server of one vault), a
//! result's vault, and one search over every vault (`vault: "*"`).
//!
//! The server picks the vault and hands this layer its engine (or, for `*`
//! and `list_vaults`, every one the connection may use); the tools themselves
//! stay the table's, run on one engine each.

use std::sync::Arc;

use rayon::prelude::*;
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};

use super::invoke::{CallContext, error_result, parse, success};
use super::render;
use super::schema::output;
use super::table::list;
use crate::engine::Engine;
use crate::engine::types::{
    Access, ContentHit, ContentResults, Counts, KnowledgeHit, KnowledgeResults, Ranking, RankingPath,
    SearchArgs,
};
use crate::error::Error;

/// The tool listing a connection's vaults.
pub const LIST_VAULTS: &str = "list_vaults";

/// The value of `vault` that searches every vault.
pub const EVERY_VAULT: &str = "*";

/// Whether the tool `name` takes `vault: "*"`.
pub fn searches_every_vault(name: &str) -> bool {
    matches!(name, "search_knowledge" | "search_note_content")
}

/// `tools/list` for a connection that may use the vaults `names` (the
/// default first): [`list`] itself for one vault; for several, every tool with
/// a `vault` argument naming them (and `*` for the searches), and `list_vaults`.
pub fn list_for(access: Access, apps: bool, names: &[&str]) -> Vec<Tool> {
    let mut tools = list(access, apps);
    if names.len() < 2 {
        return tools;
    }
    for tool in &mut tools {
        let mut values: Vec<Value> = names.iter().map(|name| json!(name)).collect();
        if searches_every_vault(&tool.name) {
            values.push(json!(EVERY_VAULT));
        }
        let mut schema = (*tool.input_schema).clone();
        let properties = schema.entry("properties").or_insert_with(|| json!({}));
        if let Value::Object(properties) = properties {
            properties.insert("vault".to_owned(), json!({ "enum": values }));
        }
        tool.input_schema = Arc::new(schema);
    }
    let at = tools.iter().position(|tool| tool.name == "get_vault_overview").map_or(0, |at| at + 1);
    tools.insert(at, list_vaults_tool());
    tools
}

/// `list_vaults`: read-only, no arguments.
fn list_vaults_tool() -> Tool {
    let mut input = JsonObject::new();
    input.insert("type".to_owned(), json!("object"));
    input.insert("properties".to_owned(), json!({}));
    input.insert("additionalProperties".to_owned(), json!(false));
    Tool::new(
        LIST_VAULTS,
        "The vaults you may use, the default first, with their counts. Every tool takes `vault` (default: the first); search_* take `*` for all.",
        Arc::new(input),
    )
    .with_title("List vaults")
    .with_raw_output_schema(output::<VaultList>())
    .with_annotations(
        ToolAnnotations::with_title("List vaults").read_only(true).destructive(false).idempotent(true).open_world(false),
    )
}

/// `list_vaults` result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct VaultList {
    /// The vaults, the default first.
    pub vaults: Vec<VaultSummary>,
}

/// One vault of [`VaultList`].
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct VaultSummary {
    /// Its name: the value of `vault`.
    pub name: String,
    /// Whether a call without `vault` uses it.
    pub default: bool,
    /// Its counts (absent while it cannot answer: `error` says why).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counts: Option<Counts>,
    /// Whether its index holds every note at its current content.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fresh: Option<bool>,
    /// Why it cannot answer now (starting, failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The summary of the vault `name` from its engine (blocking: a vault's overview).
pub fn summarize(name: &str, default: bool, engine: Result<&Engine, &Error>, access: Access) -> VaultSummary {
    let overview = engine.map_err(Clone::clone).and_then(|engine| {
        engine.refresh_config()?;
        engine.overview(crate::engine::types::Caller::Agent(access))
    });
    match overview {
        Ok(overview) => VaultSummary {
            name: name.to_owned(),
            default,
            counts: Some(overview.counts),
            fresh: Some(overview.index.fresh),
            error: None,
        },
        Err(error) => VaultSummary {
            name: name.to_owned(),
            default,
            counts: None,
            fresh: None,
            error: Some(error.bounded().message),
        },
    }
}

/// The answer of `list_vaults`.
pub fn listed(vaults: Vec<VaultSummary>) -> Result<CallToolResult, McpError> {
    let mut text = format!("{} vaults:", vaults.len());
    for vault in &vaults {
        let default = if vault.default { " (default)" } else { "" };
        match (&vault.counts, &vault.error) {
            (Some(counts), _) => {
                let fresh = if vault.fresh == Some(true) { "" } else { ", index catching up" };
                text.push_str(&format!(
                    "\n- {}{default}: {} notes, {} standards, {} pending proposals{fresh}",
                    vault.name, counts.notes, counts.standards, counts.proposals_pending
                ));
            }
            (None, error) => {
                text.push_str(&format!(
                    "\n- {}{default}: {}",
                    vault.name,
                    error.as_deref().unwrap_or("not ready")
                ));
            }
        }
    }
    success(&VaultList { vaults }, text)
}

/// A result of the vault `name`, naming it: `vault` in its structure, and a
/// last line of its text. An error result is left as it is.
pub fn named(mut result: CallToolResult, name: &str) -> CallToolResult {
    if result.is_error == Some(true) {
        return result;
    }
    if let Some(Value::Object(structured)) = result.structured_content.as_mut() {
        structured.insert("vault".to_owned(), json!(name));
    }
    if let Some(ContentBlock::Text(text)) = result.content.first_mut() {
        text.text.push_str(&format!("\n(vault: {name})"));
    }
    result
}

/// One search (`search_knowledge` or `search_note_content`, `name`) over the
/// `vaults` (blocking): each vault's page, every hit naming its vault, merged.
/// A vault that cannot be searched (`Err`) is left out, and `stale` says so.
pub fn search_every(
    vaults: &[(String, Result<Arc<Engine>, Error>)],
    context: &CallContext,
    name: &str,
    arguments: Value,
) -> Result<CallToolResult, McpError> {
    let args: SearchArgs = match parse(name, arguments) {
        Ok(args) => args,
        Err(error) => return Ok(error_result(&error)),
    };
    let not_searched =
        |vault: &str, error: &Error| format!("vault {vault} was not searched: {}", error.bounded().message);
    let mut missed = Vec::new();
    let mut searched = Vec::new();
    for (vault, engine) in vaults {
        match engine.as_ref().map_err(Clone::clone).and_then(|engine| engine.refresh_config().map(|_| engine))
        {
            Ok(engine) => searched.push((vault.as_str(), engine.as_ref())),
            Err(error) => missed.push(not_searched(vault, &error)),
        }
    }
    let mut every = Every { searched, missed, args: &args, context };
    if name == "search_knowledge" {
        every.merge::<KnowledgeResults>()
    } else {
        every.merge::<ContentResults>()
    }
}

/// The vaults a search of every vault asks, and those it could not.
struct Every<'a> {
    searched: Vec<(&'a str, &'a Engine)>,
    missed: Vec<String>,
    args: &'a SearchArgs,
    context: &'a CallContext,
}

impl Every<'_> {
    /// Each vault's page of `P`, merged into one.
    fn merge<P: Page>(&mut self) -> Result<CallToolResult, McpError> {
        // The vaults are searched side by side, on rayon's threads.
        let found: Vec<_> = self
            .searched
            .par_iter()
            .map(|(vault, engine)| (*vault, P::search(engine, self.args, self.context)))
            .collect();
        let mut pages = Vec::new();
        for (vault, page) in found {
            match page {
                Ok(page) => pages.push((vault, page.into_parts())),
                Err(error) if self.searched.len() == 1 => return Ok(error_result(&error)),
                Err(error) => {
                    self.missed.push(format!("vault {vault} was not searched: {}", error.bounded().message));
                }
            }
        }
        let (total, ranking, stale) = page_facts(&pages, &self.missed);
        let limit = self.args.limit.unwrap_or(10) as usize;
        let hits = merged(pages.into_iter().map(|(vault, parts)| (vault, parts.hits)).collect(), limit);
        let page = P::from_parts(self.args.query.clone(), Parts { total, ranking, stale, hits });
        success(&page, page.render()).map(|result| named(result, EVERY_VAULT))
    }
}

/// A page of search results, taken apart and put back together.
struct Parts<H> {
    total: u64,
    ranking: Ranking,
    stale: Option<String>,
    hits: Vec<H>,
}

/// A search's page, one per tool.
trait Page: Serialize + Sized + Send {
    type Hit: Hit;
    fn search(engine: &Engine, args: &SearchArgs, context: &CallContext) -> crate::error::Result<Self>;
    fn into_parts(self) -> Parts<Self::Hit>;
    fn from_parts(query: String, parts: Parts<Self::Hit>) -> Self;
    fn render(&self) -> String;
}

/// A hit of a page: what merging looks at, and its vault.
trait Hit: Send {
    /// Its score, and whether it is a memory entry and weak.
    fn facts(&self) -> (f32, bool, bool);
    fn set_vault(&mut self, vault: &str);
}

impl Page for KnowledgeResults {
    type Hit = KnowledgeHit;
    fn search(engine: &Engine, args: &SearchArgs, context: &CallContext) -> crate::error::Result<Self> {
        engine.search_knowledge_for(args, &context.principal)
    }
    fn into_parts(self) -> Parts<KnowledgeHit> {
        Parts { total: self.total, ranking: self.ranking, stale: self.stale, hits: self.results }
    }
    fn from_parts(query: String, parts: Parts<KnowledgeHit>) -> Self {
        KnowledgeResults {
            query,
            total: parts.total,
            results: parts.hits,
            stale: parts.stale,
            ranking: parts.ranking,
        }
    }
    fn render(&self) -> String {
        render::knowledge(self)
    }
}

impl Page for ContentResults {
    type Hit = ContentHit;
    fn search(engine: &Engine, args: &SearchArgs, context: &CallContext) -> crate::error::Result<Self> {
        engine.search_note_content_for(args, &context.principal)
    }
    fn into_parts(self) -> Parts<ContentHit> {
        Parts { total: self.total, ranking: self.ranking, stale: self.stale, hits: self.results }
    }
    fn from_parts(query: String, parts: Parts<ContentHit>) -> Self {
        ContentResults {
            query,
            total: parts.total,
            results: parts.hits,
            stale: parts.stale,
            ranking: parts.ranking,
        }
    }
    fn render(&self) -> String {
        render::content(self)
    }
}

impl Hit for KnowledgeHit {
    fn facts(&self) -> (f32, bool, bool) {
        (self.score, self.memory.is_some(), self.weak)
    }
    fn set_vault(&mut self, vault: &str) {
        self.vault = Some(vault.to_owned());
    }
}

impl Hit for ContentHit {
    fn facts(&self) -> (f32, bool, bool) {
        (self.score, self.memory.is_some(), self.weak)
    }
    fn set_vault(&mut self, vault: &str) {
        self.vault = Some(vault.to_owned());
    }
}

/// What the merged page says besides its hits: the total of every vault's,
/// how it was ranked (`hybrid` when every vault's page was; else `lexical`,
/// each vault's reason), and `stale` (each vault's, and the vaults left out).
fn page_facts<H>(pages: &[(&str, Parts<H>)], missed: &[String]) -> (u64, Ranking, Option<String>) {
    let total = pages.iter().map(|(_, page)| page.total).sum();
    let hybrid = !pages.is_empty() && pages.iter().all(|(_, page)| page.ranking.path == RankingPath::Hybrid);
    let ranking = match pages.first() {
        Some((_, page)) if hybrid => page.ranking.clone(),
        _ => Ranking::lexical(
            pages
                .iter()
                .filter(|(_, page)| page.ranking.path != RankingPath::Hybrid)
                .map(|(vault, page)| format!("{vault}: {}", page.ranking.why))
                .collect::<Vec<_>>()
                .join("; "),
        ),
    };
    let mut stale: Vec<String> = pages
        .iter()
        .filter_map(|(vault, page)| page.stale.as_ref().map(|why| format!("vault {vault}: {why}")))
        .collect();
    stale.extend(missed.iter().cloned());
    (total, ranking, (!stale.is_empty()).then(|| stale.join("; ")))
}

/// Every vault's hits (each page best first) as one page of at most `limit`:
/// memory entries first, then hits on whole words before weak ones, then by
/// score (each vault's on the same scale: BM25 over its own notes, which a
/// fused page keeps too), ties in the vaults' order; each hit names its vault.
fn merged<H: Hit>(pages: Vec<(&str, Vec<H>)>, limit: usize) -> Vec<H> {
    let mut all: Vec<(bool, bool, f32, H)> = Vec::new();
    for (vault, hits) in pages {
        for mut hit in hits {
            let (score, memory, weak) = hit.facts();
            hit.set_vault(vault);
            all.push((!memory, weak, -score, hit));
        }
    }
    // A stable sort: equal hits stay in the vaults' order, each vault's page in its own.
    all.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)).then(a.2.total_cmp(&b.2)));
    all.into_iter().take(limit).map(|(.., hit)| hit).collect()
}

/// The error of a `vault` argument that names no vault this connection may
/// use: the same for a vault that does not exist and one it may not see.
pub fn unknown_vault(given: &str, names: &[&str]) -> Error {
    Error::invalid(format!(
        "no vault named {:?} here; this connection may use: {}",
        crate::error::cut_middle(given, 100),
        names.join(", ")
    ))
    .with_hint("pass one of those names as `vault`, or leave it out for the default; list_vaults lists them")
}
