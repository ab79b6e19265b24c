//! Test harness: starts the real `tessera` binary on a loopback port with its own data
//! directory and talks to it over HTTP.
//!
//! Each integration test file includes this module with `mod common;`; not every file uses every
//! helper, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod cluster;

use std::fs::{File, OpenOptions};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;
use ureq::http;

/// How long a node may take to answer `GET /` after it was spawned.
const START_DEADLINE: Duration = Duration::from_secs(30);
/// How long a node may take to exit after SIGTERM.
const STOP_DEADLINE: Duration = Duration::from_secs(30);
/// The longest any single HTTP request may take: a hang is a failure, not a stuck test.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// One HTTP answer: status and body (JSON when the server sent JSON).
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub body: String,
}

impl Resp {
    /// The body as JSON; panics (with the body) when it is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| {
            panic!(
                "response body is not JSON ({e}); status {}: {}",
                self.status, self.body
            )
        })
    }

    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// Panics unless the status is `expected`.
    #[track_caller]
    pub fn expect(self, expected: u16) -> Self {
        assert_eq!(
            self.status, expected,
            "unexpected status; body: {}",
            self.body
        );
        self
    }

    /// Panics unless the status is 2xx.
    #[track_caller]
    pub fn ok(self) -> Self {
        assert!(
            self.is_success(),
            "expected a 2xx answer, got {}: {}",
            self.status,
            self.body
        );
        self
    }

    /// Asserts an OpenSearch error answer: the given status, a JSON body with `status`,
    /// `error.type` == `error_type` and a non-empty `error.reason`. Returns the body.
    #[track_caller]
    pub fn expect_error(&self, status: u16, error_type: &str) -> Value {
        assert_eq!(
            self.status, status,
            "expected a {status} {error_type}; body: {}",
            self.body
        );
        let body = self.json();
        assert_error_body(&body, status);
        assert_eq!(
            body["error"]["type"], error_type,
            "wrong error type; body: {body}"
        );
        body
    }
}

/// Asserts the OpenSearch error shape: `{"error": {"type", "reason", "root_cause"...}, "status"}`.
#[track_caller]
pub fn assert_error_body(body: &Value, status: u16) {
    assert_eq!(
        body["status"].as_u64(),
        Some(u64::from(status)),
        "error body lacks status {status}: {body}"
    );
    let error = &body["error"];
    assert!(error.is_object(), "error is not an object: {body}");
    assert!(
        error["type"].as_str().is_some_and(|t| !t.is_empty()),
        "error.type missing: {body}"
    );
    assert!(
        error["reason"].as_str().is_some_and(|r| !r.is_empty()),
        "error.reason missing: {body}"
    );
}

/// A free TCP port on the loopback interface (bound then released).
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().unwrap().port()
}

/// An agent that answers HTTP errors as responses; with `tls_ca` (PEM), it trusts only that
/// certificate for HTTPS.
fn agent_with(tls_ca: Option<&str>, timeout: Duration) -> ureq::Agent {
    let mut config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(timeout));
    if let Some(pem) = tls_ca {
        let cert = ureq::tls::Certificate::from_pem(pem.as_bytes()).expect("a PEM certificate");
        let tls = ureq::tls::TlsConfig::builder()
            .root_certs(ureq::tls::RootCerts::new_with_certs(&[cert]))
            .build();
        config = config.tls_config(tls);
    }
    ureq::Agent::new_with_config(config.build())
}

fn new_agent() -> ureq::Agent {
    agent_with(None, REQUEST_TIMEOUT)
}

/// How a test talks to a node with security on: HTTPS trusting `tls_ca`, and/or basic
/// credentials sent with every request of the harness (the readiness probe included).
#[derive(Debug, Clone, Default)]
pub struct Secure {
    /// The PEM certificate the node serves (self-signed), to trust; `None`: plain HTTP.
    pub tls_ca: Option<String>,
    /// `(user, password)` for basic authentication.
    pub credentials: Option<(String, String)>,
}

/// The `Authorization` header value of basic credentials.
pub fn basic_auth(user: &str, password: &str) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = format!("{user}:{password}").into_bytes();
    let mut out = String::from("Basic ");
    for chunk in bytes.chunks(3) {
        let mut n = 0u32;
        for (i, b) in chunk.iter().enumerate() {
            n |= u32::from(*b) << (16 - 8 * i);
        }
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The lines every test node's config file starts with (see the file).
pub const TEST_NODE_SETTINGS: &str = include_str!("../../../../tests/test-node.yml");

/// A `tessera serve` child process with its own temporary data directory.
pub struct Node {
    dir: TempDir,
    child: Option<Child>,
    port: u16,
    config_file: PathBuf,
    agent: ureq::Agent,
    starts: u32,
    secure: Secure,
}

impl Node {
    /// Starts a node with default settings.
    pub fn start() -> Node {
        Self::start_with_config(None)
    }

    /// Starts a node with a config file (`key: value` lines) written into its temp dir.
    pub fn start_with_config_text(text: &str) -> Node {
        Self::start_with_config(Some(text))
    }

    /// Starts a node after `prepare` has run on its (created, empty) data directory, e.g. to
    /// mount a small file system there.
    pub fn start_with_data_dir(prepare: impl FnOnce(&Path)) -> Node {
        Self::start_with(None, Secure::default(), prepare)
    }

    /// Starts a node with a config file that turns security on; the harness talks to it as
    /// `secure` says.
    pub fn start_secure(config: &str, secure: Secure) -> Node {
        Self::start_with(Some(config), secure, |_| {})
    }

    fn start_with_config(config: Option<&str>) -> Node {
        Self::start_with(config, Secure::default(), |_| {})
    }

    fn start_with(config: Option<&str>, secure: Secure, prepare: impl FnOnce(&Path)) -> Node {
        let dir = tempfile::tempdir().expect("create a temp dir");
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).expect("create the data directory");
        prepare(&data);
        let config_file = dir.path().join("tessera.yml");
        let text = format!("{TEST_NODE_SETTINGS}{}", config.unwrap_or(""));
        std::fs::write(&config_file, text).expect("write the config file");
        let mut node = Node {
            dir,
            child: None,
            port: free_port(),
            config_file,
            agent: agent_with(secure.tls_ca.as_deref(), REQUEST_TIMEOUT),
            starts: 0,
            secure,
        };
        node.spawn_and_wait();
        node
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn base_url(&self) -> String {
        let scheme = if self.secure.tls_ca.is_some() {
            "https"
        } else {
            "http"
        };
        // with TLS, the name the generated certificate is for
        let host = if self.secure.tls_ca.is_some() {
            "localhost"
        } else {
            "127.0.0.1"
        };
        format!("{scheme}://{host}:{}", self.port)
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("node.log")
    }

    /// Everything the node printed so far (all runs).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Spawns the binary; on a port clash (someone grabbed our port between runs) it retries
    /// on a fresh port. Panics, printing the log, if the node does not come up in time.
    fn spawn_and_wait(&mut self) {
        for attempt in 0..3 {
            self.spawn();
            match self.wait_ready() {
                Ok(()) => return,
                Err(exit) => {
                    let log = self.log();
                    if attempt < 2 && exit.is_some() && log.contains("listen on") {
                        // the port was taken: try another one
                        self.port = free_port();
                        continue;
                    }
                    self.kill_child();
                    panic!(
                        "tessera did not start (exit: {exit:?}) within {START_DEADLINE:?}\n--- node log ---\n{log}"
                    );
                }
            }
        }
    }

    fn spawn(&mut self) {
        self.starts += 1;
        let log: File = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("open the node log");
        use std::io::Write;
        let mut banner = log.try_clone().unwrap();
        writeln!(
            banner,
            "=== test harness: start #{} on port {} ===",
            self.starts, self.port
        )
        .unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_tessera"));
        command
            .arg("serve")
            .arg("--host")
            .arg("127.0.0.1")
            .arg("--port")
            .arg(self.port.to_string())
            .arg("--data")
            .arg(self.data_dir());
        let names_itself = std::fs::read_to_string(&self.config_file)
            .is_ok_and(|text| text.contains("node.name:"));
        if !names_itself {
            command.arg("--node-name").arg("test-node");
        }
        command.arg("-c").arg(&self.config_file);
        let child = command
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn the tessera binary");
        self.child = Some(child);
        // a fresh agent: pooled connections to a previous process are dead
        self.agent = agent_with(self.secure.tls_ca.as_deref(), REQUEST_TIMEOUT);
    }

    /// Polls `GET /` until it answers 200. `Err(Some(status))` when the process exited,
    /// `Err(None)` on timeout.
    fn wait_ready(&mut self) -> Result<(), Option<ExitStatus>> {
        let deadline = Instant::now() + START_DEADLINE;
        let probe = Client {
            agent: agent_with(self.secure.tls_ca.as_deref(), Duration::from_secs(2)),
            base: self.base_url(),
            auth: self.auth_header(),
        };
        while Instant::now() < deadline {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().expect("poll the child"))
            {
                return Err(Some(status));
            }
            // up, and every shard found at start opened (started or failed): shards open after
            // the node answers, and tests read their documents right away
            if let Ok(response) = probe.try_request("GET", "/", None) {
                if response.status == 200 && !shards_initializing(&probe) {
                    return Ok(());
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(None)
    }

    fn kill_child(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Graceful stop: SIGTERM, then wait for the process to exit. Returns its exit status.
    pub fn stop(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("the node is running");
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status()
            .expect("run kill -TERM");
        assert!(status.success(), "kill -TERM failed");
        let deadline = Instant::now() + STOP_DEADLINE;
        loop {
            if let Some(status) = child.try_wait().expect("poll the child") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "tessera did not exit within {STOP_DEADLINE:?} of SIGTERM\n--- node log ---\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Graceful restart on the same data directory (and, when possible, the same port).
    /// Asserts the node exited cleanly.
    pub fn restart(&mut self) {
        let status = self.stop();
        assert!(
            status.success(),
            "tessera exited with {status} after SIGTERM\n--- node log ---\n{}",
            self.log()
        );
        self.spawn_and_wait();
    }

    /// SIGKILL the process (no chance to flush anything) and wait for it to be gone.
    pub fn kill_9(&mut self) {
        let mut child = self.child.take().expect("the node is running");
        child.kill().expect("SIGKILL the node");
        child.wait().expect("reap the node");
    }

    /// Starts the node again after [`Node::kill_9`] or [`Node::stop`].
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "the node is still running");
        self.spawn_and_wait();
    }

    /// The process id of the running node.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the child process is still alive.
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(child) => child.try_wait().expect("poll the child").is_none(),
            None => false,
        }
    }

    /// A cloneable HTTP client for this node, usable from other threads.
    pub fn client(&self) -> Client {
        Client {
            agent: self.agent.clone(),
            base: self.base_url(),
            auth: self.auth_header(),
        }
    }

    fn auth_header(&self) -> Option<String> {
        let (user, password) = self.secure.credentials.as_ref()?;
        Some(basic_auth(user, password))
    }

    pub fn get(&self, path: &str) -> Resp {
        self.client().get(path)
    }
    pub fn head(&self, path: &str) -> Resp {
        self.client().request("HEAD", path, None)
    }
    pub fn delete(&self, path: &str) -> Resp {
        self.client().delete(path)
    }
    pub fn put(&self, path: &str, body: &Value) -> Resp {
        self.client().put(path, body)
    }
    pub fn post(&self, path: &str, body: &Value) -> Resp {
        self.client().post(path, body)
    }
    pub fn post_empty(&self, path: &str) -> Resp {
        self.client().request("POST", path, None)
    }
    /// A raw body with an explicit Content-Type (malformed JSON, NDJSON...).
    pub fn send_raw(&self, method: &str, path: &str, body: &[u8], content_type: &str) -> Resp {
        self.client()
            .request(method, path, Some((body, content_type)))
    }
    pub fn bulk(&self, path: &str, ndjson: &str) -> Resp {
        self.client().bulk(path, ndjson)
    }
    pub fn search(&self, index: &str, body: &Value) -> Value {
        self.client().search(index, body)
    }
    pub fn refresh(&self, index: &str) {
        self.post_empty(&format!("/{index}/_refresh")).ok();
    }
    /// `_count` of `index` (after the caller's refresh, if any).
    pub fn count(&self, index: &str) -> u64 {
        let resp = self.get(&format!("/{index}/_count")).expect(200);
        resp.json()["count"]
            .as_u64()
            .unwrap_or_else(|| panic!("no count in {}", resp.body))
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill_child();
        if std::thread::panicking() {
            eprintln!(
                "--- tessera node log ({}) ---\n{}--- end of node log ---",
                self.log_path().display(),
                self.log()
            );
        }
    }
}

/// An HTTP client bound to one node's address.
#[derive(Clone)]
pub struct Client {
    agent: ureq::Agent,
    base: String,
    /// The `Authorization` header sent with every request.
    auth: Option<String>,
}

impl Client {
    /// The same client sending `user`'s basic credentials (`None`: no credentials).
    pub fn with_credentials(&self, credentials: Option<(&str, &str)>) -> Client {
        Client {
            auth: credentials.map(|(user, password)| basic_auth(user, password)),
            ..self.clone()
        }
    }

    /// Sends a request; `body` is `(bytes, content type)`. Transport errors (refused, reset,
    /// timeout) are returned as `Err`.
    pub fn try_request(
        &self,
        method: &str,
        path: &str,
        body: Option<(&[u8], &str)>,
    ) -> Result<Resp, ureq::Error> {
        let url = format!("{}{}", self.base, path);
        let mut builder = http::Request::builder().method(method).uri(&url);
        if let Some(auth) = &self.auth {
            builder = builder.header("authorization", auth);
        }
        let response = match body {
            Some((bytes, content_type)) => {
                let request = builder
                    .header("content-type", content_type)
                    .body(bytes.to_vec())
                    .expect("build the request");
                self.agent.run(request)?
            }
            None => {
                let request = builder.body(()).expect("build the request");
                self.agent.run(request)?
            }
        };
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .into_with_config()
            .limit(256 << 20)
            .read_to_string()?;
        Ok(Resp { status, body })
    }

    /// Like [`Client::try_request`] but panics on a transport error (a hang or a crash is
    /// always a failure).
    #[track_caller]
    pub fn request(&self, method: &str, path: &str, body: Option<(&[u8], &str)>) -> Resp {
        match self.try_request(method, path, body) {
            Ok(resp) => resp,
            Err(e) => panic!("{method} {path}: transport error: {e}"),
        }
    }

    #[track_caller]
    pub fn get(&self, path: &str) -> Resp {
        self.request("GET", path, None)
    }
    #[track_caller]
    pub fn delete(&self, path: &str) -> Resp {
        self.request("DELETE", path, None)
    }
    #[track_caller]
    pub fn put(&self, path: &str, body: &Value) -> Resp {
        let bytes = serde_json::to_vec(body).unwrap();
        self.request("PUT", path, Some((&bytes, "application/json")))
    }
    #[track_caller]
    pub fn post(&self, path: &str, body: &Value) -> Resp {
        let bytes = serde_json::to_vec(body).unwrap();
        self.request("POST", path, Some((&bytes, "application/json")))
    }
    #[track_caller]
    pub fn bulk(&self, path: &str, ndjson: &str) -> Resp {
        self.request(
            "POST",
            path,
            Some((ndjson.as_bytes(), "application/x-ndjson")),
        )
    }
    /// `POST /{index}/_search`, asserting a 200; returns the JSON body.
    #[track_caller]
    pub fn search(&self, index: &str, body: &Value) -> Value {
        self.post(&format!("/{index}/_search"), body)
            .expect(200)
            .json()
    }
}

/// The `_id`s of a search response's hits, in order.
/// True while `_cat/shards` lists a shard still opening (or cannot be read).
fn shards_initializing(probe: &Client) -> bool {
    match probe.try_request("GET", "/_cat/shards?h=state", None) {
        Ok(response) if response.status == 200 => response.body.contains("INITIALIZING"),
        _ => true,
    }
}

/// The uuid of `index` (its directory name under `data/indices`).
pub fn index_uuid(node: &Node, index: &str) -> String {
    let settings = node.get(&format!("/{index}/_settings")).expect(200).json();
    settings[index]["settings"]["index"]["uuid"]
        .as_str()
        .unwrap_or_else(|| panic!("no uuid in {settings}"))
        .to_string()
}

pub fn hit_ids(response: &Value) -> Vec<String> {
    response["hits"]["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("no hits in {response}"))
        .iter()
        .map(|hit| hit["_id"].as_str().expect("hit _id").to_string())
        .collect()
}

/// `hits.total.value` of a search response.
pub fn total_hits(response: &Value) -> u64 {
    response["hits"]["total"]["value"]
        .as_u64()
        .unwrap_or_else(|| panic!("no hits.total.value in {response}"))
}

/// Sends raw bytes on a fresh TCP connection and returns everything the server answers until it
/// closes the connection (or `timeout` passes). For requests that no HTTP client would send.
pub fn raw_http(port: u16, request: &[u8], timeout: Duration) -> String {
    use std::io::{Read, Write};
    let mut stream =
        std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to the node");
    stream.set_read_timeout(Some(timeout)).unwrap();
    stream.set_write_timeout(Some(timeout)).unwrap();
    // the server may answer (and close) before it read everything: ignore write errors
    let _ = stream.write_all(request);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

/// The status code of a raw HTTP/1.1 answer (`HTTP/1.1 413 ...`), if any.
pub fn raw_status(answer: &str) -> Option<u16> {
    answer
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
}
