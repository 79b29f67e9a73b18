//! Asking the person before a proposal is applied.
//!
//! `apply_proposal` is the one tool that changes a note. When the client can
//! elicit (show the person a form), the server asks the person itself — with
//! the target, the kind of change, the reason and the first 40 lines of the
//! diff — so the model cannot approve on the person's behalf. A decline or
//! cancel leaves the proposal pending. On handshake-era sessions the question is a server→client
//! request; on 2026-07-28 sessions, which forbid those, it is an input-required
//! result the client answers by retrying the call. Clients without elicitation
//! rely on the host's own approval card.

use std::sync::Arc;

use rmcp::ErrorData as McpError;
use rmcp::RoleServer;
use rmcp::model::{
    ClientResult, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    InputRequest, InputRequests, InputRequiredResult, InputResponses, ServerRequest,
};
use rmcp::service::RequestContext;

use crate::engine::Engine;

/// The key of the confirmation in an input-required round trip.
const KEY: &str = "confirm_apply";

/// What the person said.
pub(super) enum Confirmation {
    /// Go ahead (confirmed, or the client cannot ask).
    Proceed,
    /// The person declined or cancelled.
    Declined,
    /// Ask first: return this to the client, which retries with the answer.
    Ask(InputRequiredResult),
}

fn params(summary: &str) -> Result<ElicitRequestParams, McpError> {
    let schema = ElicitationSchema::builder()
        .required_bool("apply")
        .build()
        .map_err(|e| McpError::internal_error(format!("building the confirmation form: {e}"), None))?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: format!("{summary}\n\nApply it now? An agent asked; only you can approve."),
        requested_schema: schema,
    })
}

fn accepted(result: &ElicitResult) -> bool {
    result.action == ElicitationAction::Accept
        && result.content.as_ref().and_then(|c| c.get("apply")).and_then(|v| v.as_bool()) == Some(true)
}

/// Asks the person to confirm applying `proposal_id`, when the client can ask.
pub(super) async fn apply(
    engine: &Arc<Engine>,
    proposal_id: &str,
    responses: Option<&InputResponses>,
    context: &RequestContext<RoleServer>,
) -> Result<Confirmation, McpError> {
    let can_elicit = context.client_capabilities().is_some_and(|c| c.elicitation.is_some());
    if !can_elicit {
        return Ok(Confirmation::Proceed);
    }
    if let Some(answer) = responses.and_then(|r| r.get(KEY)) {
        let result: ElicitResult = serde_json::from_value(answer.clone()).map_err(|e| {
            let problem = crate::error::cut_middle(&e.to_string(), crate::error::MESSAGE_MAX_CHARS);
            McpError::invalid_params(format!("the confirmation answer is malformed: {problem}"), None)
        })?;
        return Ok(if accepted(&result) { Confirmation::Proceed } else { Confirmation::Declined });
    }
    let summary = {
        let engine = engine.clone();
        let id = proposal_id.to_owned();
        super::blocking::run(move || engine.proposal_confirmation(&id))
            .await
            .map_err(|e| McpError::internal_error(format!("describing the proposal failed: {e}"), None))?
    };
    // Not pending (unknown, applied, tampered): let the apply report why.
    let Some(summary) = summary else { return Ok(Confirmation::Proceed) };
    let request = ElicitRequest::new(params(&format!("Apply proposal {proposal_id}: {summary}"))?);
    let modern = context.protocol_version().is_some_and(|v| !v.has_initialize());
    if modern {
        let mut requests = InputRequests::new();
        requests.insert(KEY.to_owned(), InputRequest::Elicitation(request));
        return Ok(Confirmation::Ask(InputRequiredResult::new(Some(requests), None)));
    }
    match context.peer.send_request(ServerRequest::ElicitRequest(request)).await {
        Ok(ClientResult::ElicitResult(result)) if accepted(&result) => Ok(Confirmation::Proceed),
        Ok(_) => Ok(Confirmation::Declined),
        Err(error) => {
            Err(McpError::internal_error(format!("asking the person to confirm failed: {error}"), None))
        }
    }
}
