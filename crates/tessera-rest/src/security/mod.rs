//! Running a node safely: optional HTTP basic authentication with roles (`users`, `actions`),
//! optional TLS (`tls`), Host and Origin checks against DNS rebinding and cross-site requests
//! (`host_check`), and the rule that a node reachable from other machines must have both
//! authentication and TLS unless the operator explicitly waives it.
//!
//! All of it sits in front of the REST API as one axum middleware ([`Security::layer`]), so the
//! API itself (`server::app`) knows nothing about it: every request passes, in order, the Host
//! check, the Origin check (answering CORS preflights), authentication (401) and the role check
//! (403) before it reaches the router. Rejections have OpenSearch security's body shape
//! (`security_exception`).
//!
//! The settings come from the node's config file ([`SecuritySettings::set`]); nothing is on by
//! default, which is safe because a default node listens on loopback only.

pub mod actions;
pub mod host_check;
pub mod tls;
pub mod users;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;
use axum::Router;
use serde_json::json;
use tessera_node::Node;

use crate::http_guard::GuardedListener;
use tessera_common::Error;
use tokio_rustls::rustls::ServerConfig;

use crate::response::{render, RenderOptions, RestResponse};
use host_check::{Cors, HostPolicy};
use users::Users;

/// The realm named in `WWW-Authenticate`.
const REALM: &str = "tessera";

/// The security keys of the config file, as written there.
#[derive(Debug, Clone, Default)]
pub struct SecuritySettings {
    /// `security.users_file`: turns on basic authentication.
    pub users_file: Option<PathBuf>,
    /// `http.tls.certificate`: PEM certificate chain; with `http.tls.key`, turns on TLS.
    pub tls_certificate: Option<PathBuf>,
    /// `http.tls.key`: PEM private key.
    pub tls_key: Option<PathBuf>,
    /// `http.allowed_hosts`: comma-separated host names accepted besides loopback ones.
    pub allowed_hosts: Vec<String>,
    /// `security.allow_insecure_non_loopback`: listen on a non-loopback address without
    /// authentication or TLS.
    pub allow_insecure_non_loopback: bool,
    /// `http.cors.enabled`.
    pub cors_enabled: bool,
    /// The other `http.cors.*` keys.
    pub cors: Cors,
}

fn parse_bool(key: &str, value: &str) -> Result<bool, String> {
    match value {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(format!(
            "invalid value [{value}] for [{key}]: expected true or false"
        )),
    }
}

fn parse_list(value: &str) -> Vec<String> {
    value
        .trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .map(|item| item.trim().trim_matches(['"', '\'']).to_string())
        .filter(|item| !item.is_empty())
        .collect()
}

impl SecuritySettings {
    /// Whether `key` is one of the settings kept here.
    pub fn is_key(key: &str) -> bool {
        matches!(
            key,
            "security.users_file"
                | "security.allow_insecure_non_loopback"
                | "http.tls.certificate"
                | "http.tls.key"
                | "http.allowed_hosts"
                | "http.cors.enabled"
                | "http.cors.allow-origin"
                | "http.cors.allow-methods"
                | "http.cors.allow-headers"
                | "http.cors.allow-credentials"
                | "http.cors.max-age"
        )
    }

    /// Sets one key of the config file (one that [`SecuritySettings::is_key`] accepts).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "security.users_file" => self.users_file = Some(PathBuf::from(value)),
            "security.allow_insecure_non_loopback" => {
                self.allow_insecure_non_loopback = parse_bool(key, value)?
            }
            "http.tls.certificate" => self.tls_certificate = Some(PathBuf::from(value)),
            "http.tls.key" => self.tls_key = Some(PathBuf::from(value)),
            "http.allowed_hosts" => {
                self.allowed_hosts = parse_list(value)
                    .into_iter()
                    .map(|h| h.to_ascii_lowercase())
                    .collect()
            }
            "http.cors.enabled" => self.cors_enabled = parse_bool(key, value)?,
            "http.cors.allow-origin" => self.cors.set_allow_origin(value)?,
            "http.cors.allow-methods" => self.cors.allow_methods = value.to_string(),
            "http.cors.allow-headers" => self.cors.allow_headers = value.to_string(),
            "http.cors.allow-credentials" => self.cors.allow_credentials = parse_bool(key, value)?,
            "http.cors.max-age" => {
                self.cors.max_age_seconds = value
                    .parse()
                    .map_err(|_| format!("invalid value [{value}] for [{key}]: expected seconds"))?
            }
            other => return Err(format!("unknown security setting [{other}]")),
        }
        Ok(())
    }
}

/// The security of a running node: loaded users, TLS configuration and request checks.
#[derive(Debug)]
pub struct Security {
    users: Option<Users>,
    /// Bounds the bcrypt verifications running at once (one per core), so that a flood of
    /// wrong passwords queues instead of starting a thread each and starving searches.
    verifications: tokio::sync::Semaphore,
    tls: Option<Arc<ServerConfig>>,
    hosts: HostPolicy,
    cors: Option<Cors>,
}

impl Security {
    /// Checks `settings` for a node listening on `bind` and loads the users file and the TLS
    /// files. Call it before binding: a node on a non-loopback address without authentication
    /// and TLS (and without the explicit waiver) is refused here, before it listens.
    pub fn load(settings: &SecuritySettings, bind: SocketAddr) -> Result<Security, String> {
        let tls_files = match (&settings.tls_certificate, &settings.tls_key) {
            (Some(cert), Some(key)) => Some((cert, key)),
            (None, None) => None,
            (Some(_), None) => return Err(
                "[http.tls.certificate] is set but [http.tls.key] is not; set both to serve HTTPS"
                    .into(),
            ),
            (None, Some(_)) => return Err(
                "[http.tls.key] is set but [http.tls.certificate] is not; set both to serve HTTPS"
                    .into(),
            ),
        };
        if !bind.ip().is_loopback()
            && !settings.allow_insecure_non_loopback
            && (settings.users_file.is_none() || tls_files.is_none())
        {
            let mut missing = Vec::new();
            if settings.users_file.is_none() {
                missing.push("authentication (security.users_file)");
            }
            if tls_files.is_none() {
                missing.push("TLS (http.tls.certificate and http.tls.key)");
            }
            return Err(format!(
                "refusing to listen on {bind}: a node reachable from other machines must require authentication and TLS, and this one lacks {}. Configure them in the config file, listen on a loopback address (--host 127.0.0.1), or set security.allow_insecure_non_loopback: true to accept the risk (see \"Running Tessera safely\" in the README)",
                missing.join(" and ")
            ));
        }
        let users = settings
            .users_file
            .as_deref()
            .map(Users::load)
            .transpose()?;
        let tls = tls_files
            .map(|(cert, key)| tls::server_config(cert, key))
            .transpose()?;
        if settings.cors_enabled && !settings.cors.allows_some() {
            return Err(
                "[http.cors.enabled] is true but [http.cors.allow-origin] is empty; name the origins allowed (*, a list, or /regex/)".into(),
            );
        }
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Ok(Security {
            users,
            verifications: tokio::sync::Semaphore::new(cores),
            tls,
            hosts: HostPolicy {
                loopback_only: bind.ip().is_loopback(),
                allowed: settings.allowed_hosts.clone(),
            },
            cors: settings.cors_enabled.then(|| settings.cors.clone()),
        })
    }

    /// `https` with TLS, else `http`.
    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() {
            "https"
        } else {
            "http"
        }
    }

    /// Puts the checks in front of `app`.
    pub fn layer(self: Arc<Self>, app: Router) -> Router {
        app.layer(axum::middleware::from_fn_with_state(self, guard))
    }
}

/// Serves the REST API for `node` on `listener` with `security` until `shutdown` completes;
/// every connection's request heads go through `http_guard` (after TLS, when it is on).
pub async fn serve(
    node: Arc<Node>,
    listener: tokio::net::TcpListener,
    security: Arc<Security>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let tls = security.tls.clone();
    let app = security.layer(crate::server::app(node));
    match tls {
        Some(config) => {
            let listener = GuardedListener(tls::TlsListener::new(listener, config)?);
            axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await
        }
        None => {
            axum::serve(GuardedListener(listener), app)
                .with_graceful_shutdown(shutdown)
                .await
        }
    }
}

fn security_error(status: u16, reason: String) -> Error {
    Error::new("security_exception", status, reason)
}

fn error_response(error: Error) -> Response {
    render(RestResponse::error(&error), &RenderOptions::default())
}

fn unauthorized(reason: String) -> Response {
    let challenge = format!("Basic realm=\"{REALM}\" charset=\"UTF-8\"");
    let error = security_error(401, reason)
        .with_meta("header", json!({ "WWW-Authenticate": challenge.clone() }));
    let mut response = error_response(error);
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

fn header_str(request: &Request, name: header::HeaderName) -> Option<&str> {
    request.headers().get(name).and_then(|v| v.to_str().ok())
}

/// The checks, in order: Host, Origin (and CORS preflights), authentication, role.
async fn guard(State(security): State<Arc<Security>>, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_string();
    let host = header_str(&request, header::HOST);
    if let Err(reason) = security.hosts.check(host) {
        drain(request).await;
        return error_response(security_error(403, reason));
    }
    let mut cors_headers = Vec::new();
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("").to_string();
        let tls = security.tls.is_some();
        if !host_check::same_origin(&origin, host, tls) {
            let Some(cors) = security.cors.as_ref().filter(|c| c.allows(&origin)) else {
                drain(request).await;
                return error_response(security_error(
                    403,
                    format!(
                        "cross-origin request from [{origin}] to [{path}] is not allowed; allow the origin with http.cors.enabled and http.cors.allow-origin"
                    ),
                ));
            };
            let preflight = request.method() == Method::OPTIONS
                && request
                    .headers()
                    .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
            cors_headers = cors.headers(&origin, preflight);
            if preflight {
                let mut response = Response::new(axum::body::Body::empty());
                add_headers(&mut response, &cors_headers);
                return response;
            }
        }
    }
    // owned: a `&Request` (its body is not `Sync`) cannot be held across an await
    let authorization = header_str(&request, header::AUTHORIZATION).map(str::to_string);
    let method = request.method().clone();
    let mut response = match authorize(&security, &method, authorization, &path).await {
        Ok(()) => next.run(request).await,
        Err(rejection) => {
            drain(request).await;
            rejection
        }
    };
    // an allowed origin may read rejections too (a browser app can tell a 401 from a network error)
    add_headers(&mut response, &cors_headers);
    response
}

/// Reads a rejected request's body (up to 1 MiB) before the answer goes out: a client still
/// sending it would otherwise see the connection reset instead of the 401/403.
async fn drain(request: Request) {
    let _ = axum::body::to_bytes(request.into_body(), 1 << 20).await;
}

/// With authentication on: the 401 or 403 answer unless the request's credentials name a user
/// whose roles permit it.
async fn authorize(
    security: &Arc<Security>,
    method: &Method,
    authorization: Option<String>,
    path: &str,
) -> Result<(), Response> {
    if security.users.is_none() {
        return Ok(());
    }
    let action = actions::classify(method, path);
    let user = authenticate(security, authorization, path).await?;
    if user.allows(&action) {
        return Ok(());
    }
    Err(error_response(security_error(
        403,
        format!(
            "no permissions for [{}] and User [name={}, roles={}]",
            action.name,
            user.name,
            user.role_list()
        ),
    )))
}

fn add_headers(response: &mut Response, headers: &[(&'static str, String)]) {
    for (name, value) in headers {
        if let Ok(value) = HeaderValue::from_str(value) {
            response.headers_mut().insert(*name, value);
        }
    }
}

/// The user named by the request's basic credentials, or the 401 answer.
async fn authenticate(
    security: &Arc<Security>,
    authorization: Option<String>,
    path: &str,
) -> Result<Arc<users::User>, Response> {
    let Some(authorization) = authorization.as_deref() else {
        return Err(unauthorized(format!(
            "missing authentication credentials for REST request [{path}]"
        )));
    };
    let users = security.users.as_ref().expect("authentication is on");
    if let Some(user) = users.cached(authorization) {
        return Ok(user);
    }
    let credentials = authorization
        .strip_prefix("Basic ")
        .or_else(|| authorization.strip_prefix("basic "))
        .and_then(|encoded| decode_base64(encoded.trim()))
        .and_then(|bytes| String::from_utf8(bytes).ok());
    let Some((name, password)) = credentials.as_deref().and_then(|c| c.split_once(':')) else {
        return Err(unauthorized(format!(
            "missing authentication credentials for REST request [{path}]"
        )));
    };
    let failed = || {
        unauthorized(format!(
            "unable to authenticate user [{name}] for REST request [{path}]"
        ))
    };
    // bcrypt is deliberately slow: keep it off the two HTTP threads, a core at most each
    let Ok(_permit) = security.verifications.acquire().await else {
        return Err(failed());
    };
    let (security, authorization) = (security.clone(), authorization.to_string());
    let (user, secret) = (name.to_string(), password.to_string());
    let verified = tokio::task::spawn_blocking(move || {
        let users = security.users.as_ref().expect("authentication is on");
        users.verify(&authorization, &user, &secret)
    })
    .await;
    verified.ok().flatten().ok_or_else(failed)
}

/// Standard base64 (with or without padding), as basic credentials are encoded.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    fn value(byte: u8) -> Option<u32> {
        Some(match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let text = text.trim_end_matches('=').as_bytes();
    if text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    for chunk in text.chunks(4) {
        let mut bits = 0u32;
        for (i, &byte) in chunk.iter().enumerate() {
            bits |= value(byte)? << (18 - 6 * i);
        }
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn base64_decoding() {
        assert_eq!(decode_base64("YWRtaW46czNjcmV0").unwrap(), b"admin:s3cret");
        assert_eq!(decode_base64("YQ==").unwrap(), b"a");
        assert_eq!(decode_base64("YWI").unwrap(), b"ab");
        assert_eq!(decode_base64("").unwrap(), b"");
        assert!(decode_base64("Y").is_none());
        assert!(decode_base64("YW*j").is_none());
    }

    #[test]
    fn settings_keys() {
        let mut settings = SecuritySettings::default();
        for (key, value) in [
            ("security.users_file", "/etc/tessera/users.yml"),
            ("http.allowed_hosts", "Search.Example.com, other"),
            ("http.cors.enabled", "true"),
            ("http.cors.allow-origin", "https://a.example.com"),
            ("http.cors.max-age", "60"),
        ] {
            assert!(SecuritySettings::is_key(key));
            settings.set(key, value).unwrap();
        }
        assert_eq!(settings.allowed_hosts, vec!["search.example.com", "other"]);
        assert_eq!(settings.cors.allow_origin, vec!["https://a.example.com"]);
        assert_eq!(settings.cors.max_age_seconds, 60);
        assert!(!SecuritySettings::is_key("http.port"));
        let error = settings
            .set("security.allow_insecure_non_loopback", "yes")
            .unwrap_err();
        assert!(error.contains("expected true or false"), "{error}");
    }

    #[test]
    fn non_loopback_needs_auth_and_tls_or_the_waiver() {
        let settings = SecuritySettings::default();
        assert!(Security::load(&settings, address("127.0.0.1:9200")).is_ok());
        assert!(Security::load(&settings, address("[::1]:9200")).is_ok());
        let error = Security::load(&settings, address("0.0.0.0:9200")).unwrap_err();
        assert!(
            error.contains("refusing to listen on 0.0.0.0:9200"),
            "{error}"
        );
        assert!(error.contains("security.users_file"), "{error}");
        assert!(error.contains("http.tls.certificate"), "{error}");
        assert!(
            error.contains("security.allow_insecure_non_loopback"),
            "{error}"
        );
        let waived = SecuritySettings {
            allow_insecure_non_loopback: true,
            ..SecuritySettings::default()
        };
        let security = Security::load(&waived, address("0.0.0.0:9200")).unwrap();
        assert!(!security.hosts.loopback_only);
        assert_eq!(security.scheme(), "http");
        let half = SecuritySettings {
            tls_certificate: Some("/c.pem".into()),
            ..SecuritySettings::default()
        };
        let error = Security::load(&half, address("127.0.0.1:9200")).unwrap_err();
        assert!(error.contains("http.tls.key"), "{error}");
    }
}
