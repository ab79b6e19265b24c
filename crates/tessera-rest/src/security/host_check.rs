//! Host and Origin checks: what keeps a web page from using the browser as a bridge to a node.
//!
//! - **DNS rebinding**: a page on `evil.example.com` re-points that name at 127.0.0.1 and then
//!   talks to a loopback node "same-origin". The browser still sends `Host: evil.example.com`,
//!   so a node bound to loopback accepts only Host names that are loopback (`localhost`,
//!   `127.x.x.x`, `[::1]`, any port) or listed in `http.allowed_hosts`. A node bound elsewhere
//!   checks the Host only when `http.allowed_hosts` is set (it cannot know its public names).
//! - **Cross-site requests**: a page may POST to any address without reading the answer
//!   (`/_all/_forcemerge` needs no body). Browsers send `Origin` on such requests, so a request
//!   whose `Origin` is neither the node itself (same scheme, host and port as the request) nor
//!   allowed by `http.cors.allow-origin` (with `http.cors.enabled: true`) is refused. Clients
//!   that are not browsers (curl, opensearch-py, `tessera bench`) send no `Origin`.

use std::net::IpAddr;

/// Which `Host` names a node accepts.
#[derive(Debug, Clone)]
pub struct HostPolicy {
    /// Bound to a loopback address: only loopback names and `allowed` pass.
    pub loopback_only: bool,
    /// `http.allowed_hosts`, lowercase, without ports.
    pub allowed: Vec<String>,
}

impl HostPolicy {
    /// `Err(reason)` when the `Host` header names a host this node must not answer for.
    /// A request without `Host` (HTTP/1.0) is not a browser's and passes.
    pub fn check(&self, host_header: Option<&str>) -> Result<(), String> {
        let Some(header) = host_header else {
            return Ok(());
        };
        if !self.loopback_only && self.allowed.is_empty() {
            return Ok(());
        }
        let Some(name) = host_name(header) else {
            return Err(format!("invalid host header [{header}]"));
        };
        let name = name.to_ascii_lowercase();
        let name = name.strip_suffix('.').unwrap_or(&name);
        let ip = name.parse::<IpAddr>().ok();
        let loopback = name == "localhost" || ip.is_some_and(|ip| ip.is_loopback());
        // an IP literal cannot be rebound, so a node reachable from outside accepts its addresses
        let literal = !self.loopback_only && ip.is_some();
        if loopback || literal || self.allowed.iter().any(|a| a == name) {
            return Ok(());
        }
        Err(if self.loopback_only {
            format!(
                "host [{name}] is not allowed: a node bound to a loopback address answers only to loopback host names (localhost, 127.0.0.1, [::1]) and to those listed in [http.allowed_hosts]"
            )
        } else {
            format!("host [{name}] is not allowed: it is not listed in [http.allowed_hosts]")
        })
    }
}

/// The host part of a `Host` header (`name`, `name:port`, `[v6]`, `[v6]:port`).
pub fn host_name(header: &str) -> Option<&str> {
    let header = header.trim();
    if let Some(rest) = header.strip_prefix('[') {
        let (inner, after) = rest.split_once(']')?;
        if !(after.is_empty() || valid_port(after.strip_prefix(':')?)) {
            return None;
        }
        return Some(inner);
    }
    let (name, port) = match header.rsplit_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (header, None),
    };
    if name.is_empty() || name.contains(':') || port.is_some_and(|p| !valid_port(p)) {
        return None;
    }
    Some(name)
}

fn valid_port(port: &str) -> bool {
    !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit())
}

/// `host:port` with the scheme's default port filled in, lowercase.
fn authority(host_header: &str, default_port: u16) -> Option<String> {
    let header = host_header.trim().to_ascii_lowercase();
    let name = host_name(&header)?.to_string();
    let port = match header.rsplit_once(':') {
        Some((_, port)) if !port.ends_with(']') && valid_port(port) => port.parse().ok()?,
        _ => default_port,
    };
    Some(format!("{name}:{port}"))
}

/// Whether `origin` (`scheme://host[:port]`) is the node itself: the scheme the node speaks and
/// the host and port the request was sent to.
pub fn same_origin(origin: &str, host_header: Option<&str>, tls: bool) -> bool {
    let (scheme, default_port) = if tls { ("https", 443) } else { ("http", 80) };
    let Some(rest) = origin
        .trim()
        .strip_prefix(scheme)
        .and_then(|r| r.strip_prefix("://"))
    else {
        return false;
    };
    let Some(host) = host_header else {
        return false;
    };
    match (authority(rest, default_port), authority(host, default_port)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// `http.cors.*`: which other origins may call the node from a browser, as in OpenSearch.
#[derive(Debug, Clone)]
pub struct Cors {
    /// `http.cors.allow-origin`: `*` or a comma-separated list of origins.
    pub allow_origin: Vec<String>,
    /// `http.cors.allow-origin` written `/regex/`: origins it matches whole.
    pub allow_origin_pattern: Option<regex::Regex>,
    pub allow_methods: String,
    pub allow_headers: String,
    pub allow_credentials: bool,
    pub max_age_seconds: u64,
}

impl Default for Cors {
    /// OpenSearch's defaults (allowing no origin).
    fn default() -> Self {
        Cors {
            allow_origin: Vec::new(),
            allow_origin_pattern: None,
            allow_methods: "OPTIONS,HEAD,GET,POST,PUT,DELETE".into(),
            allow_headers: "X-Requested-With,Content-Type,Content-Length,Authorization".into(),
            allow_credentials: false,
            max_age_seconds: 1_728_000,
        }
    }
}

impl Cors {
    pub fn allows(&self, origin: &str) -> bool {
        let origin = origin.trim().trim_end_matches('/');
        self.allow_origin
            .iter()
            .any(|allowed| allowed == "*" || allowed.eq_ignore_ascii_case(origin))
            || self
                .allow_origin_pattern
                .as_ref()
                .is_some_and(|pattern| pattern.is_match(origin))
    }

    /// Sets `http.cors.allow-origin`: `*`, a comma-separated list of origins, or, between
    /// slashes, a regular expression that must match the whole origin (as in OpenSearch).
    pub fn set_allow_origin(&mut self, value: &str) -> Result<(), String> {
        let value = value.trim();
        if let Some(inner) = value
            .strip_prefix('/')
            .and_then(|v| v.strip_suffix('/'))
            .filter(|inner| !inner.is_empty())
        {
            let pattern = regex::Regex::new(&format!("^(?:{inner})$")).map_err(|e| {
                format!("invalid regular expression in [http.cors.allow-origin]: {e}")
            })?;
            self.allow_origin_pattern = Some(pattern);
            self.allow_origin.clear();
        } else {
            self.allow_origin_pattern = None;
            self.allow_origin = value
                .split(',')
                .map(|origin| origin.trim().trim_end_matches('/').to_string())
                .filter(|origin| !origin.is_empty())
                .collect();
        }
        Ok(())
    }

    /// Whether any origin is allowed at all.
    pub fn allows_some(&self) -> bool {
        !self.allow_origin.is_empty() || self.allow_origin_pattern.is_some()
    }

    /// The `Access-Control-Allow-*` headers of an answer to an allowed `origin`; with
    /// `preflight`, also the methods, headers and max age of an `OPTIONS` preflight.
    pub fn headers(&self, origin: &str, preflight: bool) -> Vec<(&'static str, String)> {
        let any = self.allow_origin.iter().any(|a| a == "*");
        let mut headers = vec![(
            "access-control-allow-origin",
            if any && !self.allow_credentials {
                "*".to_string()
            } else {
                origin.to_string()
            },
        )];
        if !any || self.allow_credentials {
            headers.push(("vary", "Origin".to_string()));
        }
        if self.allow_credentials {
            headers.push(("access-control-allow-credentials", "true".to_string()));
        }
        if preflight {
            headers.push(("access-control-allow-methods", self.allow_methods.clone()));
            headers.push(("access-control-allow-headers", self.allow_headers.clone()));
            headers.push(("access-control-max-age", self.max_age_seconds.to_string()));
        }
        headers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback(allowed: &[&str]) -> HostPolicy {
        HostPolicy {
            loopback_only: true,
            allowed: allowed.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn loopback_nodes_accept_loopback_names_only() {
        let policy = loopback(&["search.internal"]);
        for ok in [
            "localhost",
            "localhost:9200",
            "LOCALHOST.:9200",
            "127.0.0.1:9200",
            "127.1.2.3",
            "[::1]:9200",
            "[::1]",
            "search.internal:80",
        ] {
            assert!(policy.check(Some(ok)).is_ok(), "{ok}");
        }
        assert!(policy.check(None).is_ok());
        for bad in [
            "evil.example.com",
            "evil.example.com:9200",
            "10.0.0.1:9200",
            "[::2]",
        ] {
            let reason = policy.check(Some(bad)).unwrap_err();
            assert!(reason.contains("http.allowed_hosts"), "{bad}: {reason}");
        }
        assert!(policy
            .check(Some("a:b:c"))
            .unwrap_err()
            .contains("invalid host"));
    }

    #[test]
    fn exposed_nodes_check_hosts_only_when_listed() {
        let open = HostPolicy {
            loopback_only: false,
            allowed: vec![],
        };
        assert!(open.check(Some("anything.example.com")).is_ok());
        let listed = HostPolicy {
            loopback_only: false,
            allowed: vec!["search.example.com".into()],
        };
        assert!(listed.check(Some("search.example.com:9200")).is_ok());
        assert!(listed.check(Some("10.1.2.3:9200")).is_ok());
        assert!(listed.check(Some("evil.example.com")).is_err());
    }

    #[test]
    fn host_names() {
        assert_eq!(host_name("a.b:1"), Some("a.b"));
        assert_eq!(host_name("[::1]:9200"), Some("::1"));
        assert_eq!(host_name("a.b:x"), None);
        assert_eq!(host_name("[::1]x"), None);
        assert_eq!(host_name(""), None);
    }

    #[test]
    fn same_origin_compares_scheme_host_and_port() {
        let host = Some("localhost:9200");
        assert!(same_origin("http://localhost:9200", host, false));
        assert!(!same_origin("https://localhost:9200", host, false));
        assert!(same_origin("https://localhost:9200", host, true));
        assert!(!same_origin("http://localhost:9201", host, false));
        assert!(!same_origin("http://evil.example.com", host, false));
        assert!(!same_origin("null", host, false));
        assert!(same_origin("http://localhost", Some("localhost:80"), false));
        assert!(!same_origin("http://localhost:9200", None, false));
    }

    #[test]
    fn cors_headers() {
        let cors = Cors {
            allow_origin: vec!["https://app.example.com".into()],
            ..Cors::default()
        };
        assert!(cors.allows("https://app.example.com"));
        assert!(!cors.allows("https://evil.example.com"));
        let headers = cors.headers("https://app.example.com", true);
        assert!(headers.contains(&(
            "access-control-allow-origin",
            "https://app.example.com".into()
        )));
        assert!(headers.iter().any(|(k, _)| *k == "access-control-max-age"));
        let any = Cors {
            allow_origin: vec!["*".into()],
            ..Cors::default()
        };
        assert!(any.allows("http://x"));
        let mut pattern = Cors::default();
        assert!(!pattern.allows_some());
        pattern
            .set_allow_origin(r"/https?:\/\/localhost(:[0-9]+)?/")
            .unwrap();
        assert!(pattern.allows_some());
        assert!(pattern.allows("http://localhost:5601"));
        assert!(pattern.allows("https://localhost"));
        assert!(!pattern.allows("http://localhost.evil.example.com"));
        assert!(pattern.set_allow_origin("/(/").is_err());
        pattern.set_allow_origin("http://a, http://b/").unwrap();
        assert!(pattern.allows("http://b") && !pattern.allows("http://localhost"));
        assert_eq!(
            any.headers("http://x", false),
            vec![("access-control-allow-origin", "*".into())]
        );
    }
}
