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
//!
//! A retry's answer counts only with the `requestState` the question carried:
//! sealed by rmcp's HMAC codec under a key of this process, bound to the
//! proposal, valid for [`ANSWER_WITHIN`] and once. An answer without it, with
//! a forged or altered one, one made for another proposal, or one used
//! already, is refused and nothing is applied.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rmcp::ErrorData as McpError;
use rmcp::RoleServer;
use rmcp::model::{
    ClientResult, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    InputRequest, InputRequests, InputRequiredResult, InputResponses, RequestStateCodec, SealOptions,
    ServerRequest,
};
use rmcp::service::RequestContext;

use crate::engine::Engine;

/// The key of the confirmation in an input-required round trip.
const KEY: &str = "confirm_apply";

/// How long a question's answer is taken.
const ANSWER_WITHIN: Duration = Duration::from_secs(15 * 60);

/// The questions asked and not yet answered: their nonce and when they lapse.
struct Asked {
    codec: RequestStateCodec,
    open: Mutex<HashMap<String, Instant>>,
}

/// This process's questions (the key is made on first use, never written down).
fn asked() -> Option<&'static Asked> {
    static ASKED: OnceLock<Option<Asked>> = OnceLock::new();
    ASKED
        .get_or_init(|| {
            let mut key = [0u8; 32];
            getrandom::fill(&mut key).ok()?;
            let codec = RequestStateCodec::try_new(key.to_vec()).ok()?;
            Some(Asked { codec, open: Mutex::new(HashMap::new()) })
        })
        .as_ref()
}

impl Asked {
    /// A sealed state for a question about `proposal_id`, remembered as open.
    fn seal(&self, proposal_id: &str) -> Option<String> {
        let mut nonce = [0u8; 16];
        getrandom::fill(&mut nonce).ok()?;
        let nonce = crate::sandbox::hex(&nonce);
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        open.retain(|_, lapses| *lapses > now);
        open.insert(nonce.clone(), now + ANSWER_WITHIN);
        let options = SealOptions::new().associated_data(proposal_id.as_bytes()).ttl(ANSWER_WITHIN);
        Some(self.codec.seal_with(nonce.as_bytes(), &options))
    }

    /// Whether `state` is one this process sealed for `proposal_id`, still
    /// open; it is closed by this call either way.
    fn redeem(&self, state: &str, proposal_id: &str) -> bool {
        let Ok(nonce) = self.codec.open_with(state, proposal_id.as_bytes()) else { return false };
        let Ok(nonce) = String::from_utf8(nonce) else { return false };
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        open.remove(&nonce).is_some_and(|lapses| lapses > Instant::now())
    }
}

/// What the person said.
pub(super) enum Confirmation {
    /// Go ahead (confirmed, or the client cannot ask).
    Proceed,
    /// The person declined or cancelled.
    Declined,
    /// Ask first: return this to the client, which retries with the answer.
    Ask(InputRequiredResult),
    /// An answer came without the state of a question this process asked
    /// about this proposal (forged, altered, for another proposal, expired or
    /// used already): refused, nothing applied.
    Unasked,
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
    (responses, state): (Option<&InputResponses>, Option<&str>),
    context: &RequestContext<RoleServer>,
) -> Result<Confirmation, McpError> {
    let can_elicit = context.client_capabilities().is_some_and(|c| c.elicitation.is_some());
    if !can_elicit {
        return Ok(Confirmation::Proceed);
    }
    if let Some(answer) = responses.and_then(|r| r.get(KEY)) {
        let asked_here = asked().is_some_and(|asked| state.is_some_and(|s| asked.redeem(s, proposal_id)));
        if !asked_here {
            return Ok(Confirmation::Unasked);
        }
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
        let state = asked().and_then(|asked| asked.seal(proposal_id)).ok_or_else(|| {
            McpError::internal_error("cannot seal the confirmation's state: no randomness", None)
        })?;
        return Ok(Confirmation::Ask(InputRequiredResult::new(Some(requests), Some(state))));
    }
    match context.peer.send_request(ServerRequest::ElicitRequest(request)).await {
        Ok(ClientResult::ElicitResult(result)) if accepted(&result) => Ok(Confirmation::Proceed),
        Ok(_) => Ok(Confirmation::Declined),
        Err(error) => {
            Err(McpError::internal_error(format!("asking the person to confirm failed: {error}"), None))
        }
    }
}
