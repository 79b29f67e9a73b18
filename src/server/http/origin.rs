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

/// The `Host` values allowed, judged as rmcp judges them (which checks again
/// after the gate): the host name without case or IPv6 brackets, and the port
/// when the allowed entry names one. The gate checks first so that a refusal
/// is logged and says which flag allows the host.
pub(super) struct HostAllowList(Vec<(String, Option<u16>)>);

impl HostAllowList {
    pub(super) fn new(allowed: &[String]) -> HostAllowList {
        HostAllowList(allowed.iter().filter_map(|entry| authority(entry)).collect())
    }

    /// Whether a `Host` header's value is allowed; `None` when it is no
    /// host at all (rmcp answers that with 400).
    pub(super) fn allows(&self, host: &str) -> Option<bool> {
        let (name, port) = authority(host)?;
        Some(
            self.0.iter().any(|(allowed, allowed_port)| {
                *allowed == name && allowed_port.is_none_or(|p| Some(p) == port)
            }),
        )
    }
}

/// The name of a `Host` value, as `--allowed-host` takes it (no port, no brackets).
pub(super) fn host_name(host: &str) -> String {
    authority(host).map_or_else(|| host.to_owned(), |(name, _)| name)
}

/// `host[:port]` as a lowercase name without IPv6 brackets, and the port.
fn authority(text: &str) -> Option<(String, Option<u16>)> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let (host, port) = match ::http::uri::Authority::try_from(text) {
        Ok(parsed) => (parsed.host().to_owned(), parsed.port_u16()),
        Err(_) => (text.to_owned(), None),
    };
    Some((host.trim_matches(['[', ']']).to_ascii_lowercase(), port))
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
    fn hosts_match_name_and_port_when_one_is_given() {
        let hosts = HostAllowList::new(&allowed_hosts(
            "127.0.0.1:8765".parse().unwrap(),
            &["kb.example.com".to_owned(), "tunnel.example:8443".to_owned()],
        ));
        for (host, allowed) in [
            ("127.0.0.1:8765", true),
            ("localhost", true),
            ("[::1]:8765", true),
            ("KB.example.com:443", true),
            ("tunnel.example:8443", true),
            ("tunnel.example:443", false),
            ("evil.example", false),
            ("kb.example.com.evil", false),
        ] {
            assert_eq!(hosts.allows(host), Some(allowed), "{host}");
        }
        assert_eq!(hosts.allows(""), None);
        assert_eq!(host_name("Tunnel.Example:443"), "tunnel.example");
        assert_eq!(host_name("[2001:db8::1]:8765"), "2001:db8::1");
    }

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
