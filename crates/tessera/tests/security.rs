//! Running a node safely: basic authentication and roles, TLS with a certificate generated here,
//! the refusal to listen on a non-loopback address without security, and the Host and Origin
//! checks, each against a real node on loopback.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{raw_http, raw_status, Node, Secure};
use serde_json::{json, Value};

/// `tessera hash-password --cost 4` (the cheapest cost, for fast tests) on `password`.
fn hash_password(password: &str) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["hash-password", "--cost", "4"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run tessera hash-password");
    writeln!(child.stdin.take().unwrap(), "{password}").unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "hash-password failed: {output:?}");
    let hash = String::from_utf8(output.stdout).unwrap().trim().to_string();
    assert!(hash.starts_with("$2b$04$"), "not a bcrypt hash: {hash}");
    hash
}

/// Writes a users file with `admin` (role admin) and `reader` (role readall) into `dir`.
fn users_file(dir: &Path) -> String {
    let path = dir.join("users.yml");
    let text = format!(
        "# test users\nadmin:\n  hash: \"{}\"\n  roles: [admin]\nreader:\n  hash: \"{}\"\n  roles: [readall]\n",
        hash_password("admin-pw"),
        hash_password("reader-pw")
    );
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// A self-signed certificate for `localhost` and 127.0.0.1 in `dir`: `(config lines, PEM)`.
fn tls_files(dir: &Path) -> (String, String) {
    let generated =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    std::fs::write(&cert, generated.cert.pem()).unwrap();
    std::fs::write(&key, generated.signing_key.serialize_pem()).unwrap();
    (
        format!(
            "http.tls.certificate: {}\nhttp.tls.key: {}\n",
            cert.display(),
            key.display()
        ),
        generated.cert.pem(),
    )
}

fn admin() -> Option<(String, String)> {
    Some(("admin".into(), "admin-pw".into()))
}

/// A raw HTTP/1.1 request with `headers` (Host included when wanted): status, head and body.
fn raw(port: u16, method: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String, String) {
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    let answer = raw_http(port, request.as_bytes(), Duration::from_secs(10));
    let status = raw_status(&answer).unwrap_or_else(|| panic!("not an HTTP answer: {answer:?}"));
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    (status, head.to_ascii_lowercase(), body.to_string())
}

fn security_exception(body: &str, status: u16) -> String {
    let body: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    common::assert_error_body(&body, status);
    assert_eq!(body["error"]["type"], "security_exception", "{body}");
    assert_eq!(
        body["error"]["root_cause"][0]["type"], "security_exception",
        "{body}"
    );
    body["error"]["reason"].as_str().unwrap().to_string()
}

#[test]
fn basic_authentication_and_roles() {
    let dir = tempfile::tempdir().unwrap();
    let config = format!("security.users_file: {}\n", users_file(dir.path()));
    let node = Node::start_secure(
        &config,
        Secure {
            tls_ca: None,
            credentials: admin(),
        },
    );
    let port = node.port();
    let host = format!("127.0.0.1:{port}");

    // no credentials: 401 with the challenge header and OpenSearch security's body
    let (status, head, body) = raw(port, "GET", "/_cluster/health", &[("Host", &host)]);
    assert_eq!(status, 401, "{head}\n{body}");
    assert!(
        head.contains("www-authenticate: basic realm=\"tessera\""),
        "{head}"
    );
    let reason = security_exception(&body, 401);
    assert_eq!(
        reason,
        "missing authentication credentials for REST request [/_cluster/health]"
    );
    let anonymous = node.client().with_credentials(None);
    anonymous
        .request("POST", "/_all/_forcemerge", None)
        .expect(401);

    // a wrong password and an unknown user get the same answer
    let wrong = node.client().with_credentials(Some(("admin", "nope")));
    let reason = security_exception(&wrong.get("/").expect(401).body, 401);
    assert_eq!(
        reason,
        "unable to authenticate user [admin] for REST request [/]"
    );
    let nobody = node.client().with_credentials(Some(("nobody", "admin-pw")));
    let reason = security_exception(&nobody.get("/").expect(401).body, 401);
    assert_eq!(
        reason,
        "unable to authenticate user [nobody] for REST request [/]"
    );

    // admin does everything
    node.put(
        "/logs",
        &json!({"mappings": {"properties": {"msg": {"type": "text"}}}}),
    )
    .ok();
    node.bulk(
        "/_bulk?refresh=true",
        "{\"index\":{\"_index\":\"logs\",\"_id\":\"1\"}}\n{\"msg\":\"hello world\"}\n",
    )
    .ok();
    node.post_empty("/_all/_forcemerge").ok();
    node.put(
        "/_cluster/settings",
        &json!({"persistent": {"search.concurrent_segment_search.mode": "auto"}}),
    )
    .ok();

    // the read-only user reads and searches, also with POST, but writes nothing
    let reader = node
        .client()
        .with_credentials(Some(("reader", "reader-pw")));
    let hits = reader.search("logs", &json!({"query": {"match": {"msg": "hello"}}}));
    assert_eq!(common::total_hits(&hits), 1);
    reader.post("/logs/_count", &json!({})).ok();
    reader
        .post("/_mget", &json!({"docs": [{"_index": "logs", "_id": "1"}]}))
        .ok();
    reader.get("/logs/_doc/1").ok();
    reader.get("/_cat/indices").ok();
    let denied = reader.bulk(
        "/_bulk",
        "{\"index\":{\"_index\":\"logs\",\"_id\":\"2\"}}\n{\"msg\":\"x\"}\n",
    );
    let reason = security_exception(&denied.expect(403).body, 403);
    assert_eq!(
        reason,
        "no permissions for [indices:data/write/bulk] and User [name=reader, roles=[readall]]"
    );
    for (method, path, action) in [
        ("PUT", "/logs/_doc/3", "indices:data/write/index"),
        ("DELETE", "/logs", "indices:admin/delete"),
        ("POST", "/_all/_forcemerge", "indices:admin/forcemerge"),
        ("GET", "/_refresh", "indices:admin/refresh"),
    ] {
        let body = if method == "PUT" {
            Some((&b"{\"msg\":\"y\"}"[..], "application/json"))
        } else {
            None
        };
        let resp = reader.request(method, path, body).expect(403);
        let reason = security_exception(&resp.body, 403);
        assert!(reason.contains(action), "{method} {path}: {reason}");
    }
    assert_eq!(node.count("logs"), 1, "nothing the reader sent was written");
}

#[test]
fn tls_with_authentication() {
    let dir = tempfile::tempdir().unwrap();
    let (tls_config, pem) = tls_files(dir.path());
    let config = format!(
        "{tls_config}security.users_file: {}\n",
        users_file(dir.path())
    );
    // the harness's readiness probe already completed a handshake trusting only this cert
    let node = Node::start_secure(
        &config,
        Secure {
            tls_ca: Some(pem),
            credentials: admin(),
        },
    );
    assert!(node.base_url().starts_with("https://"));
    assert!(node.log().contains("started on https://"), "{}", node.log());
    node.put("/secure-idx/_doc/1?refresh=true", &json!({"n": 1}))
        .ok();
    assert_eq!(node.count("secure-idx"), 1);
    node.client().with_credentials(None).get("/").expect(401);

    // plain HTTP to the TLS port gets no HTTP answer
    let answer = raw_http(
        node.port(),
        b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        Duration::from_secs(10),
    );
    assert_eq!(raw_status(&answer), None, "plain HTTP answered: {answer:?}");
    // a client that does not trust the self-signed certificate refuses the connection
    let untrusting = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(10)))
            .build(),
    );
    let url = format!("https://localhost:{}/", node.port());
    assert!(untrusting.get(&url).call().is_err());
}

/// Runs `tessera serve` with `args` (and `config`), expecting it to exit with an error
/// mentioning every one of `expected`, without creating its data directory.
fn expect_refusal(host: &str, config: Option<&str>, expected: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut command = Command::new(env!("CARGO_BIN_EXE_tessera"));
    command
        .args(["serve", "--host", host, "--port"])
        .arg(common::free_port().to_string())
        .arg("--data")
        .arg(&data);
    if let Some(text) = config {
        let path = dir.path().join("tessera.yml");
        std::fs::write(&path, text).unwrap();
        command.arg("-c").arg(path);
    }
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("tessera serve --host {host} did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "it started: {stderr}");
    for text in expected {
        assert!(stderr.contains(text), "missing [{text}] in: {stderr}");
    }
    assert!(!data.exists(), "the node started before refusing");
}

#[test]
fn refuses_non_loopback_addresses_without_security() {
    expect_refusal(
        "0.0.0.0",
        None,
        &[
            "refusing to listen on 0.0.0.0:",
            "authentication (security.users_file) and TLS (http.tls.certificate and http.tls.key)",
            "security.allow_insecure_non_loopback: true",
        ],
    );
    // authentication alone is not enough
    let dir = tempfile::tempdir().unwrap();
    let config = format!("security.users_file: {}\n", users_file(dir.path()));
    expect_refusal(
        "::",
        Some(&config),
        &["refusing to listen on [::]:", "lacks TLS"],
    );
}

#[test]
fn host_and_origin_checks() {
    let node = Node::start();
    let port = node.port();
    let local = format!("127.0.0.1:{port}");

    // DNS rebinding: a foreign name for a loopback node
    let (status, _, body) = raw(port, "GET", "/", &[("Host", "evil.example.com")]);
    assert_eq!(status, 403, "{body}");
    let reason = security_exception(&body, 403);
    assert!(
        reason.contains("host [evil.example.com] is not allowed"),
        "{reason}"
    );
    for host in [
        local.clone(),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        "localhost".to_string(),
    ] {
        assert_eq!(raw(port, "GET", "/", &[("Host", &host)]).0, 200, "{host}");
    }

    // a cross-site POST without a body is refused; same-origin and Origin-less pass
    let (status, _, body) = raw(
        port,
        "POST",
        "/_all/_forcemerge",
        &[("Host", &local), ("Origin", "http://evil.example.com")],
    );
    assert_eq!(status, 403, "{body}");
    let reason = security_exception(&body, 403);
    assert!(reason.contains("[http://evil.example.com]"), "{reason}");
    let same = format!("http://{local}");
    let (status, _, body) = raw(
        port,
        "POST",
        "/_all/_forcemerge",
        &[("Host", &local), ("Origin", &same)],
    );
    assert_eq!(status, 200, "{body}");
    // the harness (ureq, Host: 127.0.0.1:PORT) is unaffected
    node.get("/").ok();
    node.post_empty("/_all/_forcemerge").ok();
}

#[test]
fn cors_allows_configured_origins() {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "http.cors.enabled: true\nhttp.cors.allow-origin: https://app.example.com\nhttp.allowed_hosts: search.internal\nsecurity.users_file: {}\n",
        users_file(dir.path())
    );
    let node = Node::start_secure(
        &config,
        Secure {
            tls_ca: None,
            credentials: admin(),
        },
    );
    let auth = common::basic_auth("reader", "reader-pw");
    let port = node.port();
    let app = ("Origin", "https://app.example.com");
    let (status, head, _) = raw(
        port,
        "OPTIONS",
        "/_search",
        &[
            ("Host", "search.internal:9200"),
            app,
            ("Access-Control-Request-Method", "POST"),
        ],
    );
    assert_eq!(status, 200, "{head}");
    assert!(
        head.contains("access-control-allow-origin: https://app.example.com"),
        "{head}"
    );
    assert!(head.contains("access-control-allow-methods:"), "{head}");
    // browsers send preflights without credentials: they pass; the request itself needs them
    let (status, head, _) = raw(
        port,
        "GET",
        "/",
        &[("Host", "search.internal"), app, ("Authorization", &auth)],
    );
    assert_eq!(status, 200);
    assert!(
        head.contains("access-control-allow-origin: https://app.example.com"),
        "{head}"
    );
    // the allowed origin can read a rejection, too
    let (status, head, _) = raw(port, "GET", "/", &[("Host", "search.internal"), app]);
    assert_eq!(status, 401);
    assert!(
        head.contains("access-control-allow-origin: https://app.example.com"),
        "{head}"
    );
    let (status, _, body) = raw(
        port,
        "GET",
        "/",
        &[
            ("Host", "localhost"),
            ("Origin", "https://evil.example.com"),
        ],
    );
    assert_eq!(status, 403, "{body}");
}
