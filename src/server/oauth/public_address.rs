//! Which addresses a Client ID Metadata Document may be fetched from: public
//! unicast ones only, never loopback, private, link-local, shared (CGNAT),
//! multicast, documentation or other special-purpose ranges, so that a URL
//! sent by anyone who reaches the authorization endpoint cannot make kb-mcp
//! call into its own machine or network (SSRF).
//!
//! The check is made on the addresses the name resolves to, inside the HTTP
//! client's resolver ([`PublicOnly`]): the client then connects to exactly
//! the addresses that were checked, so a name that resolves to a public
//! address once and to a private one the next time (DNS rebinding) gains
//! nothing. Addresses written in the URL itself never reach a resolver and
//! are checked by [`allowed`] before the request.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Why a document's host was refused (found again in the HTTP client's error chain).
#[derive(Debug)]
pub(super) struct NotPublic(pub(super) String);

impl std::fmt::Display for NotPublic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} is not a public address", self.0)
    }
}

impl std::error::Error for NotPublic {}

/// Whether `ip` may be fetched from; loopback too when `loopback` (the tests' switch).
pub(super) fn allowed(ip: IpAddr, loopback: bool) -> bool {
    if loopback && ip.is_loopback() {
        return true;
    }
    match ip {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => public_v6(v6),
    }
}

fn public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_multicast()
        || a == 0 // "this network"
        || a >= 240 // reserved
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT), RFC 6598
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19))) // benchmarking, RFC 2544
}

fn public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return public_v4(v4);
    }
    let segments = ip.segments();
    // Global unicast is 2000::/3; everything else (loopback, unspecified,
    // unique local fc00::/7, link-local fe80::/10, multicast ff00::/8, the
    // IPv4-compatible and NAT64 forms) is refused.
    if segments[0] & 0xe000 != 0x2000 {
        return false;
    }
    match segments[0] {
        // 2001::/23 holds Teredo and other protocol assignments; 2001:db8::/32 is documentation.
        0x2001 => segments[1] >= 0x0200 && segments[1] != 0x0db8,
        // 6to4 carries an IPv4 address: judge that one.
        0x2002 => {
            let [a, b] = segments[1].to_be_bytes();
            let [c, d] = segments[2].to_be_bytes();
            public_v4(Ipv4Addr::new(a, b, c, d))
        }
        _ => true,
    }
}

/// A resolver that answers only with public addresses, and fails when a
/// name resolves to any other (see the module docs).
pub(super) struct PublicOnly {
    /// Loopback addresses are allowed too (the tests' switch).
    pub(super) loopback: bool,
}

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let loopback = self.loopback;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if let Some(bad) = found.iter().find(|addr| !allowed(addr.ip(), loopback)) {
                return Err(Box::new(NotPublic(format!("{host} ({})", bad.ip()))) as _);
            }
            if found.is_empty() {
                return Err(Box::new(NotPublic(format!("{host} (no address)"))) as _);
            }
            Ok(Box::new(found.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_unicast_addresses_are_allowed() {
        for good in ["93.184.215.14", "1.1.1.1", "2606:4700::1111", "2002:5db8:d70e::1", "::ffff:8.8.8.8"] {
            assert!(allowed(good.parse().unwrap(), false), "{good}");
        }
        for bad in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "192.0.2.1",
            "198.18.0.1",
            "240.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "ff02::1",
            "2001:db8::1",
            "2001::1",
            "2002:7f00:1::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
        ] {
            assert!(!allowed(bad.parse().unwrap(), false), "{bad}");
        }
        assert!(allowed("127.0.0.1".parse().unwrap(), true));
        assert!(allowed("::1".parse().unwrap(), true));
        assert!(!allowed("10.0.0.1".parse().unwrap(), true), "the switch allows loopback only");
    }
}
