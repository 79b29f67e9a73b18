//! The `WWW-Authenticate` challenges of the resource (RFC 6750 §3, RFC 9728
//! §5.1): every one names the protected-resource metadata. A request with no
//! token gets the bare challenge; one whose token is unknown, expired, revoked
//! or for another resource gets `error="invalid_token"` (401); an OAuth token
//! whose scope is below what its request needs gets
//! `error="insufficient_scope"` with the `scope` to ask for (403), which an
//! MCP client answers by asking the person for more (step-up).

use http::HeaderValue;

use crate::engine::types::Access;

/// The challenges of one resource.
pub(in crate::server) struct Challenges {
    /// `resource_metadata="…"`, checked to fit in a header.
    metadata: String,
    missing: HeaderValue,
    invalid: HeaderValue,
}

impl Challenges {
    /// The challenges pointing at `metadata_url`.
    pub(super) fn new(metadata_url: &str) -> crate::error::Result<Challenges> {
        let metadata = format!("resource_metadata=\"{metadata_url}\"");
        let header = |text: String| {
            HeaderValue::from_str(&text).map_err(|_| {
                crate::error::Error::invalid(format!("`{metadata_url}` cannot be sent in a header"))
            })
        };
        let missing = header(format!("Bearer realm=\"kb-mcp\", {metadata}"))?;
        let invalid = header(format!(
            "Bearer realm=\"kb-mcp\", error=\"invalid_token\", error_description=\"the access token is \
             unknown, expired, revoked or for another resource\", {metadata}"
        ))?;
        Ok(Challenges { metadata, missing, invalid })
    }

    /// No token was presented.
    pub(in crate::server) fn missing(&self) -> HeaderValue {
        self.missing.clone()
    }

    /// A token was presented and is not valid here.
    pub(in crate::server) fn invalid(&self) -> HeaderValue {
        self.invalid.clone()
    }

    /// The token is valid but its scope is below `needed`.
    pub(in crate::server) fn insufficient(&self, needed: Access) -> HeaderValue {
        let text = format!(
            "Bearer realm=\"kb-mcp\", error=\"insufficient_scope\", scope=\"{}\", error_description=\"this \
             call needs the scope {}\", {}",
            needed.as_str(),
            needed.as_str(),
            self.metadata
        );
        HeaderValue::from_str(&text).unwrap_or_else(|_| self.missing.clone())
    }
}
