//! The tools only the review card calls (`_meta.ui.visibility: ["app"]`):
//! the review of one proposal, and the person's Apply and Reject clicks.
//!
//! They are listed, and admitted, only on a connection whose client declared
//! the MCP Apps extension (`crate::review::APPS_EXTENSION`): a host without
//! it would show them to the model. A host hides them from the model, but the
//! server cannot tell who calls, so the two that change anything also need
//! the approval key ([`crate::review::key`]), which reaches the card in a
//! result's `_meta` and never the model. Apply and Reject do exactly what
//! `apply_proposal` and `kb-index inbox reject` do, every check included; the
//! audit line says `by: mcp`, `via: review_card`.

use schemars::JsonSchema;
use serde::Deserialize;

use super::invoke::answered;
use super::render;
use super::schema::{input, output};
use super::table::{Effect, ToolDef};
use crate::engine::ReviewPage;
use crate::engine::types::{Access, Actor, ApplyArgs, ApplyResult, RejectResult};
use crate::error::{Error, ErrorCode};
use crate::review;

/// `review_proposal` arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewArgs {
    /// The pending proposal's id.
    pub proposal_id: String,
    /// The approval key the card was given (not needed to look).
    #[serde(default)]
    pub review_token: Option<String>,
    /// The first file of the page (from 0).
    #[serde(default)]
    #[schemars(range(max = 1_000_000))]
    pub file_offset: usize,
    /// Files on the page (default 20, at most 200).
    #[serde(default)]
    #[schemars(range(min = 1, max = 200))]
    pub file_limit: Option<usize>,
}

/// `approve_proposal` arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveArgs {
    /// The pending proposal's id.
    pub proposal_id: String,
    /// The approval key the card was given.
    pub review_token: String,
}

/// `reject_proposal` arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RejectArgs {
    /// The pending proposal's id.
    pub proposal_id: String,
    /// The approval key the card was given.
    pub review_token: String,
    /// Why the person rejects it (kept in the audit log).
    #[schemars(length(min = 1, max = 2000))]
    pub reason: String,
}

/// The app-only tools, in `tools/list` order after the others.
pub(super) static APP_TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "review_proposal",
        title: "Review a proposal (card)",
        description: "For the review card only: one page of a pending proposal's review, its checks re-run.",
        level: Access::Propose,
        effect: Effect::Reads,
        input: input::<ReviewArgs>,
        output: output::<ReviewPage>,
        run: |mut call| {
            let args: ReviewArgs = call.args()?;
            answered(
                call.engine.review_page(&args.proposal_id, args.file_offset, args.file_limit),
                render_review,
            )
        },
    },
    ToolDef {
        name: "approve_proposal",
        title: "Apply, as the person clicked (card)",
        description: "For the review card only: the person's Apply click. Refused without the card's approval key.",
        level: Access::Apply,
        effect: Effect::Applies,
        input: input::<ApproveArgs>,
        output: output::<ApplyResult>,
        run: |mut call| {
            let args: ApproveArgs = call.args()?;
            clicked("approve_proposal", call.context.apps, &args.review_token)?;
            let apply = ApplyArgs { proposal_id: args.proposal_id };
            answered(call.engine.apply_proposal(&apply, Actor::ReviewCard), render::applied)
        },
    },
    ToolDef {
        name: "reject_proposal",
        title: "Reject, as the person clicked (card)",
        description: "For the review card only: the person's Reject click, with their reason. Refused without the card's approval key.",
        level: Access::Propose,
        effect: Effect::Stages,
        input: input::<RejectArgs>,
        output: output::<RejectResult>,
        run: |mut call| {
            let args: RejectArgs = call.args()?;
            clicked("reject_proposal", call.context.apps, &args.review_token)?;
            // An empty reason is refused by the reject itself, as at the command line.
            answered(
                call.engine.reject_proposal(&args.proposal_id, &args.reason, Actor::ReviewCard),
                render_rejected,
            )
        },
    },
];

/// Refuses a click that did not come from a card holding the approval key.
fn clicked(tool: &str, apps: bool, token: &str) -> Result<(), Error> {
    if apps && review::key_matches(token) {
        return Ok(());
    }
    Err(Error::new(
        ErrorCode::PermissionDenied,
        format!("`{tool}` is the review card's button: only the person's click there may call it"),
    )
    .with_hint(
        "never call it yourself; ask the person to approve or reject in the card, or with `kb-index review`",
    ))
}

/// Whether `name` is one of the card's tools.
pub(super) fn is_app_only(name: &str) -> bool {
    APP_TOOLS.iter().any(|tool| tool.name == name)
}

fn render_review(page: &ReviewPage) -> String {
    let proposal = &page.review.proposal;
    let state = if page.applicable { "can be applied" } else { "cannot be applied as it is" };
    format!(
        "{}: {} ({} files; {state}). The person approves or rejects it in the review card.",
        proposal.proposal_id, proposal.summary, page.files_total
    )
}

fn render_rejected(rejected: &RejectResult) -> String {
    format!("rejected {} (archived in {})", rejected.proposal_id, rejected.archive)
}
