//! rmcp's `ServerHandler`: initialize with the instructions, tools, resources
//! and prompts, each call run on a blocking thread and mapped to its answer.

use std::sync::Arc;
use std::time::Instant;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, DiscoverResult,
    ErrorCode as RpcCode, GetPromptRequestParams, GetPromptResponse, GetSkillRequestParams, GetSkillResult,
    Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListSkillsResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::json;

use super::blocking;
use super::call;
#[cfg(feature = "conformance-fixtures")]
use super::fixtures;
use super::guide;
use super::log;
use super::resources;
use super::shared::Shared;
use super::skills;
use super::tokens::Grant;
use super::vaults::{Served, Vaults};
use crate::engine::Engine;
use crate::engine::types::Access;
use crate::error::Error;
use crate::review;
use crate::tools;

/// One connection's handler.
#[derive(Clone)]
pub struct KbServer {
    pub(super) vaults: Arc<Vaults>,
    pub(super) access: Access,
}

impl KbServer {
    /// A handler for a connection with `access`.
    pub fn new(vaults: Arc<Vaults>, access: Access) -> Self {
        KbServer { vaults, access }
    }

    /// The vaults this request may use, the default first: every vault over
    /// stdio, those its token names over HTTP.
    pub(super) fn visible(&self, context: &RequestContext<RoleServer>) -> Vec<&Served> {
        let grant = context
            .extensions
            .get::<::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Grant>());
        self.vaults.visible(grant.and_then(|grant| grant.vaults.as_deref()))
    }

    /// The default vault of this request (resources, skills): `None` when its
    /// token may use none of the vaults served.
    fn default_vault(&self, context: &RequestContext<RoleServer>) -> Option<Arc<Shared>> {
        self.visible(context).first().map(|served| served.shared.clone())
    }

    /// The instructions for this request: its access level's, and the names of
    /// the vaults when it may use more than one.
    fn instructions(&self, context: &RequestContext<RoleServer>) -> String {
        let names: Vec<String> = self.visible(context).iter().map(|served| served.name.clone()).collect();
        guide::instructions_for(self.access(context), &names)
    }

    /// The access level of this request (HTTP requests carry their token's scope).
    pub(super) fn access(&self, context: &RequestContext<RoleServer>) -> Access {
        context
            .extensions
            .get::<::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Access>())
            .copied()
            .unwrap_or(self.access)
    }

    /// Whether this request's client declared the MCP Apps extension with
    /// the HTML views it renders (at `initialize`, or on the request itself
    /// in the stateless revision): only then is the review card offered.
    pub(super) fn shows_apps(&self, context: &RequestContext<RoleServer>) -> bool {
        let Some(capabilities) = context.client_capabilities() else { return false };
        let Some(ui) = capabilities.extensions.as_ref().and_then(|e| e.get(review::APPS_EXTENSION)) else {
            return false;
        };
        ui.get("mimeTypes")
            .and_then(|types| types.as_array())
            .is_some_and(|types| types.iter().any(|t| t.as_str() == Some(review::CARD_MIME_TYPE)))
    }

    async fn engine_or_error(&self, context: &RequestContext<RoleServer>) -> Result<Arc<Engine>, McpError> {
        let Some(shared) = self.default_vault(context) else {
            let error = super::vaults::none_granted();
            return Err(McpError::invalid_request(
                error.message,
                Some(json!({ "code": error.code.as_str() })),
            ));
        };
        shared
            .engine(context)
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), Some(json!({ "code": e.code.as_str() }))))
    }
}

/// Maps an engine error to a JSON-RPC error (for resources and prompts, which have no `isError`).
fn rpc_error(error: &Error) -> McpError {
    use crate::error::ErrorCode::*;
    let error = &error.bounded();
    let data = Some(json!({ "code": error.code.as_str(), "hint": error.hint }));
    match error.code {
        NotFound => McpError::resource_not_found(error.message.clone(), data),
        InvalidArgument | PathDenied | AmbiguousRef | TooLarge | PermissionDenied => {
            McpError::invalid_params(error.message.clone(), data)
        }
        _ => McpError::internal_error(error.message.clone(), data),
    }
}

impl ServerHandler for KbServer {
    fn get_info(&self) -> ServerConfig {
        let mut extensions = rmcp::model::ExtensionCapabilities::new();
        extensions.insert(review::APPS_EXTENSION.to_owned(), serde_json::Map::new());
        // Shown only to a client that declares it (`initialize`, `discover`).
        skills::declare(&mut extensions);
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_extensions_with(extensions)
                .enable_tools()
                .enable_resources()
                .enable_prompts()
                .build(),
        )
        .with_server_info(
            Implementation::new("kb-mcp", env!("CARGO_PKG_VERSION"))
                .with_title("kb-mcp: your Markdown knowledge vault")
                .with_description("Search, read and (by proposal only) extend a local Obsidian-style vault"),
        )
        .with_instructions(guide::instructions(self.access))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        let access = self.access(&context);
        if access >= Access::Apply && request.capabilities.elicitation.is_none() && !self.shows_apps(&context)
        {
            log(json!({
                "event": "approval",
                "client": request.client_info.name,
                "message": "this client declares neither elicitation nor MCP Apps: its host's own approval of \
                    apply_proposal is the person's second approval (`kb-index review` shows every proposal)",
            }));
        }
        skills::shown_to(&mut result.capabilities, Some(&request.capabilities));
        #[cfg(feature = "conformance-fixtures")]
        fixtures::advertise(&mut result.capabilities, true);
        // Over HTTP the token's scope, not the server's default, decides.
        result.instructions = Some(self.instructions(&context));
        Ok(result)
    }

    async fn discover(&self, context: RequestContext<RoleServer>) -> Result<DiscoverResult, McpError> {
        let mut info = self.get_info();
        info.instructions = Some(self.instructions(&context));
        skills::shown_to(&mut info.capabilities, context.client_capabilities().as_ref());
        #[cfg(feature = "conformance-fixtures")]
        fixtures::advertise(&mut info.capabilities, false);
        Ok(DiscoverResult::from_server_info(self.supported_protocol_versions().into_owned(), info))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let names: Vec<&str> = self.visible(&context).iter().map(|served| served.name.as_str()).collect();
        let listed = tools::list_for(self.access(&context), self.shows_apps(&context), &names);
        #[cfg(feature = "conformance-fixtures")]
        let listed = [listed, fixtures::tools()].concat();
        Ok(ListToolsResult::with_all_items(listed))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        #[cfg(feature = "conformance-fixtures")]
        if fixtures::is_tool(&request.name) {
            return fixtures::call_tool(request, context).await;
        }
        let started = Instant::now();
        let call = call::Accounted::of(&request, &context, started);
        let (response, said) = self.answer_call(request, &context, started).await;
        call.finish(self.vaults.metrics(), &response, said);
        response
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let mut listed = resources::fixed();
        if self.shows_apps(&context) {
            listed.push(resources::card());
        }
        if skills::declared(context.client_capabilities().as_ref()) {
            listed.extend(skills::listed());
        }
        #[cfg(feature = "conformance-fixtures")]
        {
            listed.extend(fixtures::resources());
            if !skills::declared(context.client_capabilities().as_ref()) {
                listed.extend(skills::listed());
            }
        }
        Ok(ListResourcesResult::with_all_items(listed))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let listed = resources::templates();
        #[cfg(feature = "conformance-fixtures")]
        let listed = [listed, fixtures::templates()].concat();
        Ok(ListResourceTemplatesResult::with_all_items(listed))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        #[cfg(feature = "conformance-fixtures")]
        if let Some(fixture) = fixtures::read_resource(&request.uri) {
            return Ok(fixture.into());
        }
        // The card is the server's own page, not the vault's: it needs no engine.
        if request.uri == review::CARD_URI {
            return Ok(resources::read_card().into());
        }
        if let Some(skill) = skills::read_fixed(&request.uri) {
            return Ok(skill.into());
        }
        let engine = self.engine_or_error(&context).await?;
        let uri = request.uri.clone();
        let result = blocking::run(move || {
            engine.refresh_config()?;
            resources::read(&engine, &uri)
        })
        .await
        .map_err(|e| McpError::internal_error(format!("resource task failed: {e}"), None))?;
        result.map(Into::into).map_err(|e| rpc_error(&e))
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, McpError> {
        let engine = self.engine_or_error(&context).await?;
        let result = blocking::run(move || {
            engine.refresh_config()?;
            skills::list(&engine)
        })
        .await
        .map_err(|e| McpError::internal_error(format!("skills task failed: {e}"), None))?;
        result.map(ListSkillsResult::with_all_items).map_err(|e| rpc_error(&e))
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, McpError> {
        let engine = self.engine_or_error(&context).await?;
        let uri = request.uri.clone();
        let result = blocking::run(move || {
            engine.refresh_config()?;
            skills::get(&engine, &uri)
        })
        .await
        .map_err(|e| McpError::internal_error(format!("skills task failed: {e}"), None))?;
        match result.map_err(|e| rpc_error(&e))? {
            Some(skill) => Ok(GetSkillResult::new(skill)),
            None => Err(McpError::invalid_params(format!("no skill is served at {}", request.uri), None)),
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let listed = guide::list();
        #[cfg(feature = "conformance-fixtures")]
        let listed = [listed, fixtures::prompts()].concat();
        Ok(ListPromptsResult::with_all_items(listed))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        #[cfg(feature = "conformance-fixtures")]
        if fixtures::is_prompt(&request.name) {
            return fixtures::get_prompt(&request);
        }
        guide::get(&request.name, request.arguments.as_ref(), self.access(&context)).map(Into::into)
    }

    #[cfg(feature = "conformance-fixtures")]
    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, McpError> {
        fixtures::complete(&request.argument.value)
    }

    #[cfg(feature = "conformance-fixtures")]
    #[allow(deprecated)]
    async fn set_level(
        &self,
        _request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        fixtures::legacy_only(&context, "logging/setLevel")
    }

    #[cfg(feature = "conformance-fixtures")]
    #[allow(deprecated)]
    async fn subscribe(
        &self,
        _request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        fixtures::legacy_only(&context, "resources/subscribe")
    }

    #[cfg(feature = "conformance-fixtures")]
    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        _request: rmcp::model::UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        fixtures::legacy_only(&context, "resources/unsubscribe")
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        // rmcp hands known methods with malformed params here; they are bad params, not unknown methods.
        match request.method.as_str() {
            "tools/call" | "resources/read" | "prompts/get" | "tools/list" | "skills/get" => {
                Err(McpError::invalid_params(
                    format!(
                        "malformed params for `{}`: check the request against the MCP schema",
                        request.method
                    ),
                    None,
                ))
            }
            other => Err(McpError::new(
                RpcCode::METHOD_NOT_FOUND,
                format!("unknown method `{}`", crate::error::cut_middle(other, 200)),
                None,
            )),
        }
    }
}
