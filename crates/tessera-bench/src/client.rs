//! HTTP to an OpenSearch-compatible endpoint (Tessera or a reference engine): keep-alive
//! connections, a timeout on every call, and error messages that say what failed and why.
//!
//! Every measuring thread gets its own [`Client::fresh`] connection pool, so clients never queue
//! behind each other in the load generator.

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;
use std::time::Duration;
use ureq::Agent;

/// Largest response body read (aggregations over many buckets can be big).
const MAX_BODY: u64 = 1 << 30;

/// A response: status and body, whatever the status.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Response {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    pub fn json(&self) -> Result<Value> {
        serde_json::from_slice(&self.body).context("parse response body as JSON")
    }

    /// A one-line description of an error response: `HTTP 400 parsing_exception: reason`.
    pub fn error_summary(&self) -> String {
        let detail = match serde_json::from_slice::<Value>(&self.body) {
            Ok(v) => {
                let e = &v["error"];
                let root = &e["root_cause"][0];
                let kind = e["type"].as_str().or(root["type"].as_str());
                let reason = e["reason"].as_str().or(root["reason"].as_str());
                let root_reason = root["reason"].as_str().filter(|r| Some(*r) != reason);
                match (kind, reason, e.as_str()) {
                    (Some(k), Some(r), _) => match root_reason {
                        Some(rr) => format!(
                            "{k}: {r} (root cause: {}: {rr})",
                            root["type"].as_str().unwrap_or("error")
                        ),
                        None => format!("{k}: {r}"),
                    },
                    (Some(k), None, _) => k.to_string(),
                    (None, Some(r), _) => r.to_string(),
                    (None, None, Some(s)) => s.to_string(),
                    _ => excerpt(&self.body),
                }
            }
            Err(_) => excerpt(&self.body),
        };
        format!("HTTP {} {}", self.status, detail)
    }
}

fn excerpt(body: &[u8]) -> String {
    let s = String::from_utf8_lossy(body);
    let s = s.trim();
    if s.len() > 300 {
        format!(
            "{}…",
            &s[..s.char_indices().nth(300).map_or(s.len(), |(i, _)| i)]
        )
    } else {
        s.to_string()
    }
}

/// An endpoint and a connection pool.
#[derive(Clone)]
pub struct Client {
    base: String,
    agent: Agent,
    timeout: Duration,
}

impl Client {
    /// A client for `base` (`http://host:port`) whose calls fail after `timeout`.
    pub fn new(base: &str, timeout: Duration) -> Result<Client> {
        let base = base.trim_end_matches('/').to_string();
        if base.starts_with("https://") {
            bail!("{base}: https is not supported by tessera bench (use http://host:port)");
        }
        let base = if base.starts_with("http://") {
            base
        } else {
            format!("http://{base}")
        };
        let rest = &base["http://".len()..];
        if rest.is_empty() || rest.contains(char::is_whitespace) {
            bail!("invalid target URL {base:?} (expected http://host:port)");
        }
        Ok(Client {
            agent: agent(timeout),
            base,
            timeout,
        })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Same endpoint, own connection pool.
    pub fn fresh(&self) -> Client {
        Client {
            agent: agent(self.timeout),
            base: self.base.clone(),
            timeout: self.timeout,
        }
    }

    /// Same endpoint, another timeout (e.g. for a force merge), own connection pool.
    pub fn with_timeout(&self, timeout: Duration) -> Client {
        Client {
            agent: agent(timeout),
            base: self.base.clone(),
            timeout,
        }
    }

    fn url(&self, path: &str) -> String {
        if path.starts_with('/') {
            format!("{}{}", self.base, path)
        } else {
            format!("{}/{}", self.base, path)
        }
    }

    /// Sends a request; `Err` only when no HTTP response came back (refused, timed out, …).
    pub fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<(&[u8], &str)>,
    ) -> Result<Response> {
        let url = self.url(path);
        let result = match (method, body) {
            ("GET", None) => self.agent.get(&url).call(),
            ("DELETE", None) => self.agent.delete(&url).call(),
            ("HEAD", None) => self.agent.head(&url).call(),
            ("POST", None) => self.agent.post(&url).send_empty(),
            ("PUT", None) => self.agent.put(&url).send_empty(),
            ("POST", Some((b, ct))) => self.agent.post(&url).content_type(ct).send(b),
            ("PUT", Some((b, ct))) => self.agent.put(&url).content_type(ct).send(b),
            ("GET", Some((b, ct))) => self
                .agent
                .get(&url)
                .force_send_body()
                .content_type(ct)
                .send(b),
            _ => bail!("unsupported request {method} {path}"),
        };
        let mut resp = result.map_err(|e| self.transport_error(method, &url, e))?;
        let status = resp.status().as_u16();
        let body = if method == "HEAD" {
            Vec::new()
        } else {
            resp.body_mut()
                .with_config()
                .limit(MAX_BODY)
                .read_to_vec()
                .map_err(|e| self.transport_error(method, &url, e))?
        };
        Ok(Response { status, body })
    }

    fn transport_error(&self, method: &str, url: &str, e: ureq::Error) -> anyhow::Error {
        match e {
            ureq::Error::Timeout(_) => anyhow!(
                "{method} {url} timed out after {:.0?} (is {} overloaded or stuck?)",
                self.timeout,
                self.base
            ),
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                anyhow!(
                    "cannot reach {}: connection refused (is the node running?)",
                    self.base
                )
            }
            ureq::Error::HostNotFound => anyhow!("cannot reach {}: host not found", self.base),
            ureq::Error::ConnectionFailed => {
                anyhow!("cannot reach {}: connection failed", self.base)
            }
            other => anyhow!("{method} {url} failed: {other}"),
        }
    }

    /// A JSON request that must succeed; returns the parsed response.
    pub fn json(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
        let bytes = body.map(|b| serde_json::to_vec(b).expect("serialise JSON"));
        let resp = self.request(
            method,
            path,
            bytes.as_deref().map(|b| (b, "application/json")),
        )?;
        if !resp.is_success() {
            bail!(
                "{method} {}{path} was refused: {}",
                self.base,
                resp.error_summary()
            );
        }
        if resp.body.is_empty() {
            return Ok(Value::Null);
        }
        resp.json()
            .with_context(|| format!("{method} {}{path}", self.base))
    }

    pub fn get_json(&self, path: &str) -> Result<Value> {
        self.json("GET", path, None)
    }
}

fn agent(timeout: Duration) -> Agent {
    Agent::config_builder()
        // Measure the target, not a proxy that the environment may name.
        .proxy(None)
        .http_status_as_error(false)
        .timeout_global(Some(timeout))
        .timeout_connect(Some(timeout.min(Duration::from_secs(5))))
        .max_idle_connections(256)
        .max_idle_connections_per_host(256)
        .user_agent(concat!("tessera-bench/", env!("CARGO_PKG_VERSION")))
        .build()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    /// A one-shot HTTP server answering `reply` to the first request.
    fn serve_once(reply: &'static str) -> String {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = l.accept() {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let _ = s.write_all(reply.as_bytes());
            }
        });
        format!("http://{addr}")
    }

    #[test]
    fn refused_connections_are_clear_errors() {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let c = Client::new(&format!("127.0.0.1:{port}"), Duration::from_secs(2)).unwrap();
        let e = c.get_json("/").unwrap_err().to_string();
        assert!(e.contains("cannot reach") || e.contains("failed"), "{e}");
    }

    #[test]
    fn silent_servers_time_out() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let c = Client::new(&format!("http://{addr}"), Duration::from_millis(300)).unwrap();
        let t = std::time::Instant::now();
        let e = c.get_json("/").unwrap_err().to_string();
        assert!(t.elapsed() < Duration::from_secs(3), "no timeout");
        assert!(e.contains("timed out"), "{e}");
        drop(l);
    }

    #[test]
    fn error_responses_are_summarised() {
        let body = r#"{"error":{"root_cause":[{"type":"x","reason":"y"}],"type":"parsing_exception","reason":"unknown query [foo]"},"status":400}"#;
        let reply = Box::leak(
            format!(
                "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{}",
                body.len(),
                body
            )
            .into_boxed_str(),
        );
        let url = serve_once(reply);
        let c = Client::new(&url, Duration::from_secs(2)).unwrap();
        let e = c
            .json("POST", "/i/_search", Some(&serde_json::json!({})))
            .unwrap_err();
        let e = e.to_string();
        assert!(
            e.contains("HTTP 400 parsing_exception: unknown query [foo] (root cause: x: y)"),
            "{e}"
        );
        assert!(Client::new("https://x:1", Duration::from_secs(1)).is_err());
    }
}
