//! Origins and hosts: the browser origins and `Host` names a request may
//! carry (loopback always, others when configured), and the pattern syntax.

use std::net::{IpAddr, SocketAddr};

/// Browser origins always allowed: pages served from this machine.
pub(super) const LOOPBACK_ORIGINS: [&str; 3] = ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

/// `Host` names always allowed.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The `Host` values rmcp accepts: loopback names, the bound address, and the extras.
pub(super) fn allowed_hosts(local: SocketAddr, extra: &[String]) -> Vec<String> {
    let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect();
    if !local.ip().is_unspecified() && !local.ip().is_loopback() {
        hosts.push(local.ip().to_string());
    }
    hosts.extend(extra.iter().cloned());
    hosts
}

/// An allowed browser origin: `scheme://host[:port]`, or `:*` for any port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct OriginPattern {
    pub(super) scheme: String,
    host: String,
    /// `None`: any port.
    port: Option<u16>,
}

impl OriginPattern {
    pub(super) fn parse(text: &str) -> Option<OriginPattern> {
        let text = text.trim().trim_end_matches('/').to_ascii_lowercase();
        if let Some(base) = text.strip_suffix(":*") {
            let (scheme, host) = Self::split(base)?;
            return Some(OriginPattern { scheme, host, port: None });
        }
        let (scheme, host, port) = Self::parse_origin(&text)?;
        Some(OriginPattern { scheme, host, port: Some(port) })
    }

    /// `scheme://host[:port]` with the scheme's default port filled in.
    fn parse_origin(text: &str) -> Option<(String, String, u16)> {
        let (scheme, authority) = Self::split(text)?;
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !port.contains(']') => (host.to_owned(), port.parse().ok()?),
            _ => {
                let default = match scheme.as_str() {
                    "http" => 80,
                    "https" => 443,
                    _ => return None,
                };
                (authority, default)
            }
        };
        Some((scheme, host, port))
    }

    fn split(text: &str) -> Option<(String, String)> {
        let (scheme, rest) = text.split_once("://")?;
        if scheme.is_empty() || rest.is_empty() || rest.contains('/') {
            return None;
        }
        Some((scheme.to_owned(), rest.to_owned()))
    }

    pub(super) fn matches(&self, origin: &str) -> bool {
        let origin = origin.trim().to_ascii_lowercase();
        let Some((scheme, host, port)) = Self::parse_origin(&origin) else { return false };
        scheme == self.scheme && host == self.host && self.port.is_none_or(|p| p == port)
    }
}

/// Whether `text` is a valid allowed-origin entry: `scheme://host[:port]` or
/// `scheme://host:*` (any port).
pub fn is_valid_origin_pattern(text: &str) -> bool {
    OriginPattern::parse(text).is_some()
}

/// Whether an address is on this machine only.
pub fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_match_scheme_host_and_port() {
        let patterns: Vec<OriginPattern> =
            ["http://localhost:*", "https://chat.example.com", "http://[::1]:*"]
                .iter()
                .filter_map(|p| OriginPattern::parse(p))
                .collect();
        let allowed = |o: &str| patterns.iter().any(|p| p.matches(o));
        assert!(allowed("http://localhost:3000"));
        assert!(allowed("http://LOCALHOST"));
        assert!(allowed("https://chat.example.com"));
        assert!(allowed("https://chat.example.com:443"));
        assert!(allowed("http://[::1]:8080"));
        assert!(!allowed("https://chat.example.com:8443"));
        assert!(!allowed("http://chat.example.com"));
        assert!(!allowed("https://localhost:3000"));
        assert!(!allowed("http://localhost.evil.com"));
        assert!(!allowed("null"));
        assert!(!allowed("http://evil.com"));
    }
}
