//! The pages a person sees during authorization: the consent page and the
//! pages that end an attempt (refused, expired, replayed, locked). Plain
//! server-rendered HTML with inline styles and no script or external
//! resource; every value from a client is escaped. Served with a strict
//! Content-Security-Policy, no caching, no referrer to other sites, and no framing (so no
//! other site can overlay the Allow button).

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};

use crate::engine::types::Access;

/// Escapes text for HTML content and attribute values.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// What each level lets a client do, in the consent page's words.
fn describe(access: Access) -> &'static str {
    match access {
        Access::Read => "search and read your notes",
        Access::Propose => "search and read, and stage proposed changes in the inbox for you to review",
        Access::Apply => "search and read, stage proposals, and apply approved proposals to your notes",
    }
}

const STYLE: &str = "body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;color:#222}\
    h1{font-size:1.4rem}code{background:#f3f3f3;padding:0 .2rem;word-break:break-all}\
    fieldset{border:1px solid #ccc;border-radius:6px;margin:1rem 0}label{display:block;margin:.4rem 0}\
    input[type=password]{width:100%;padding:.4rem;font-size:1rem}\
    button{font-size:1rem;padding:.5rem 1.2rem;margin-right:.6rem}.error{color:#a00;font-weight:600}\
    .note{color:#555;font-size:.9rem}";

fn html(status: StatusCode, title: &str, body: &str) -> Response {
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{}</title><link rel=\"icon\" href=\"data:,\"><style>{STYLE}</style></head><body><main>{body}</main></body></html>",
        escape(title)
    );
    let mut response = (status, page).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'",
        ),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // Not `no-referrer`: Chromium then sends `Origin: null` with the form, which the gate refuses.
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    response
}

/// A page that ends an attempt: what happened and what to do.
pub(super) fn ending(status: StatusCode, title: &str, message: &str) -> Response {
    html(status, title, &format!("<h1>{}</h1><p>{}</p>", escape(title), escape(message)))
}

/// What the consent page shows.
pub(super) struct Consent<'a> {
    pub(super) client_name: &'a str,
    pub(super) client_id: &'a str,
    pub(super) registered: &'a str,
    pub(super) redirect_uri: &'a str,
    pub(super) vault: &'a str,
    pub(super) issuer: &'a str,
    pub(super) asked: Access,
    pub(super) attempt: &'a str,
    pub(super) csrf: &'a str,
    pub(super) has_owner: bool,
    pub(super) error: Option<&'a str>,
}

impl Consent<'_> {
    /// The page, with the CSRF cookie its form is checked against.
    pub(super) fn render(&self) -> Response {
        let client = escape(self.client_name);
        let back_to = url::Url::parse(self.redirect_uri)
            .ok()
            .map(|u| u.origin().ascii_serialization())
            .filter(|o| o != "null")
            .unwrap_or_else(|| self.redirect_uri.to_owned());
        let mut body = format!(
            "<h1>Allow <q>{client}</q> to use your notes?</h1>\
             <p>A client calling itself <q>{client}</q> (client id <code>{id}</code>, registered {registered}) asks \
             for access to the vault <b>{vault}</b> served by kb-mcp at <code>{issuer}</code>. The name is the one \
             the client gave itself; if you allow, you are sent back to <code>{back}</code>: check that this is the \
             app you are connecting.</p>\
             <p>It asks to <b>{asked}</b> ({asked_name}).</p>",
            id = escape(self.client_id),
            registered = escape(self.registered),
            vault = escape(self.vault),
            issuer = escape(self.issuer),
            back = escape(&back_to),
            asked = describe(self.asked),
            asked_name = self.asked.as_str(),
        );
        if let Some(error) = self.error {
            body.push_str(&format!("<p class=\"error\">{}</p>", escape(error)));
        }
        if !self.has_owner {
            body.push_str(
                "<p class=\"error\">This server has no owner passphrase yet, so nobody can grant access here. \
                 On the machine that runs kb-mcp, run <code>kb-mcp owner set --tokens FILE</code> (the same token \
                 file the server was started with), then reload this page.</p>",
            );
        }
        body.push_str("<form method=\"post\" action=\"/oauth/authorize\"><fieldset><legend>Grant</legend>");
        for level in Access::ALL.into_iter().filter(|level| *level <= self.asked) {
            let checked = if level == self.asked { " checked" } else { "" };
            body.push_str(&format!(
                "<label><input type=\"radio\" name=\"scope\" value=\"{name}\"{checked}> <b>{name}</b>: {what}</label>",
                name = level.as_str(),
                what = describe(level),
            ));
        }
        body.push_str(&format!(
            "</fieldset><label>Owner passphrase (set with <code>kb-mcp owner set</code>)\
             <input type=\"password\" name=\"passphrase\" autocomplete=\"current-password\"></label>\
             <input type=\"hidden\" name=\"attempt\" value=\"{attempt}\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <p><button type=\"submit\" name=\"decision\" value=\"allow\">Allow</button>\
             <button type=\"submit\" name=\"decision\" value=\"deny\">Deny</button></p></form>\
             <p class=\"note\">Only the person who runs this server knows the passphrase, so a stranger who reaches \
             this page cannot grant access. Granted clients are listed by <code>kb-mcp clients list</code> and \
             revoked by <code>kb-mcp clients revoke NAME</code>. This request expires in 10 minutes.</p>",
            attempt = escape(self.attempt),
            csrf = escape(self.csrf),
        ));
        let mut response =
            html(StatusCode::OK, &format!("Allow {} to use your notes?", self.client_name), &body);
        let cookie =
            format!("kb_csrf={}; Path=/oauth/authorize; HttpOnly; SameSite=Strict; Max-Age=600", self.csrf);
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().insert(header::SET_COOKIE, value);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_text_is_escaped() {
        assert_eq!(escape("<script>\"x\"&'"), "&lt;script&gt;&quot;x&quot;&amp;&#39;");
    }
}
