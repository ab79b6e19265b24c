//! The HTTP entry point: one axum fallback handler that applies OpenSearch's HTTP-level rules
//! (body size limit → 413, Content-Type checks → 406, routing → 400/405; a HEAD of a path no
//! route matches → a bare 404, OPTIONS → 200 with `Allow`), runs the matched handler, and
//! renders its answer (pretty, filter_path) or its error.
//!
//! Every answer is OpenSearch-shaped: heads hyper would refuse with an empty body are checked
//! first by `http_guard` (its rejection arrives here as a private header), and a panic anywhere
//! in a request's handling on the `http` runtime becomes a 500 with an error body and a log
//! line instead of a dropped connection (`CatchPanic`).
//!
//! Backpressure: at most `http.max_in_flight_requests` requests are handled at once (more are
//! answered 429 `rejected_execution_exception` at once rather than queued without bound), and
//! the body of a document write is charged to the node's indexing pressure (429 past
//! `indexing_pressure.memory.limit`) before it is read when its length is declared.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::{Request, State};
use axum::http::{header, Method};
use axum::response::Response;
use axum::Router;
use tessera_common::Error;
use tessera_node::Node;

use crate::http_guard::{GuardedListener, Rejection, REJECTION_HEADER};
use crate::request::parse_query_string;
use crate::response::{plain_error, render, RenderOptions, RestResponse};
use crate::router::{self, Match, Route};

#[derive(Clone)]
struct AppState {
    node: Arc<Node>,
    routes: Arc<Vec<Route>>,
    /// Requests being handled now (admission, `handle`).
    in_flight: Arc<AtomicUsize>,
}

/// The router serving the whole REST API for `node`; installs the node-local reports the
/// cluster-wide APIs fan out (`handlers::reports`).
pub fn app(node: Arc<Node>) -> Router {
    app_with_routes(node, crate::routes::all())
}

fn app_with_routes(node: Arc<Node>, routes: Vec<Route>) -> Router {
    crate::handlers::reports::install(&node);
    let state = AppState {
        node,
        routes: Arc::new(routes),
        in_flight: Arc::default(),
    };
    Router::new().fallback(handle).with_state(state)
}

/// Polls a future, turning a panic while polling it into `Err(the panic's message)`.
struct CatchPanic<T>(Pin<Box<dyn Future<Output = T> + Send>>);

impl<T> Future for CatchPanic<T> {
    type Output = std::result::Result<T, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match std::panic::catch_unwind(AssertUnwindSafe(|| self.0.as_mut().poll(cx))) {
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(panic_message(payload.as_ref()))),
        }
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        text.to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Whether a matched request is a document write (bulk, index, create, update, delete), whose
/// body counts against indexing pressure.
fn is_write(matched: &Match<'_>, method: &Method) -> bool {
    if method == Method::GET || method == Method::HEAD {
        return false;
    }
    match matched {
        Match::Found(route, _) => route
            .pattern
            .split('/')
            .any(|part| matches!(part, "_bulk" | "_doc" | "_create" | "_update")),
        _ => false,
    }
}

/// Reads a body to its end, discarding it.
async fn drain(body: &mut axum::body::Body) {
    use axum::body::HttpBody;
    while let Some(Ok(_)) = std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await {}
}

/// One request being handled; gives its place back when dropped.
struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Admits the request (at most `http.max_in_flight_requests` at once, else 429), then runs
/// [`dispatch`]; a panic becomes a 500 with an OpenSearch body, logged with the request.
async fn handle(state: State<AppState>, request: Request) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let count = state.in_flight.fetch_add(1, Ordering::AcqRel) + 1;
    let _slot = InFlight(state.in_flight.clone());
    let max = state.node.config.max_in_flight_requests;
    if count > max {
        return render_error(&Error::rejected_execution(format!(
            "rejected execution of request [{method} {path}]: [{count}] requests in flight, more than [http.max_in_flight_requests] = [{max}]"
        )));
    }
    match CatchPanic(Box::pin(dispatch(state, request))).await {
        Ok(response) => response,
        Err(message) => {
            eprintln!("[tessera] {method} {path} panicked: {message}");
            let error = Error::new(
                "exception",
                500,
                format!("the request [{method} {path}] failed: {message}"),
            );
            render(RestResponse::error(&error), &RenderOptions::default())
        }
    }
}

/// The answer to `OPTIONS`: 200, no body, `Allow` listing `allowed` when there are any.
fn options_response(allowed: &[&Method]) -> Response {
    let mut response = render(RestResponse::text(String::new()), &RenderOptions::default());
    if !allowed.is_empty() {
        let names: Vec<&str> = allowed.iter().map(|m| m.as_str()).collect();
        if let Ok(value) = header::HeaderValue::from_str(&names.join(",")) {
            response.headers_mut().insert(header::ALLOW, value);
        }
    }
    response
}

fn render_error(error: &Error) -> Response {
    render(RestResponse::error(error), &RenderOptions::default())
}

const JSON_TYPES: &[&str] = &[
    "application/json",
    "application/x-ndjson",
    "application/vnd.opensearch+json",
    "application/vnd.opensearch+x-ndjson",
    "application/vnd.elasticsearch+json",
    "application/vnd.elasticsearch+x-ndjson",
];

/// `None` when the body's Content-Type is acceptable, else the error response.
fn check_content_type(value: Option<&header::HeaderValue>) -> Option<Response> {
    let Some(value) = value else {
        return Some(plain_error(406, "Content-Type header is missing", true));
    };
    let text = value.to_str().unwrap_or("").trim();
    if text.is_empty() {
        let error = Error::new(
            "content_type_header_exception",
            400,
            "java.lang.IllegalArgumentException: invalid Content-Type header []",
        )
        .caused_by(Error::illegal_argument("invalid Content-Type header []"));
        return Some(render_error(&error));
    }
    let media = text
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if JSON_TYPES.contains(&media.as_str()) {
        None
    } else {
        Some(plain_error(
            406,
            &format!("Content-Type header [{text}] is not supported"),
            true,
        ))
    }
}

async fn dispatch(State(state): State<AppState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    if let Some(rejection) = parts
        .headers
        .get(REJECTION_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(Rejection::from_header)
    {
        let error = Error::new(rejection.kind, rejection.status, rejection.reason);
        let mut response = render_error(&error);
        response.headers_mut().insert(
            header::CONNECTION,
            header::HeaderValue::from_static("close"),
        );
        return response;
    }
    let limit = state.node.config.max_content_length;
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|len| len > limit) {
        return RestResponse::status_only(413).into_empty_response();
    }
    // a write is charged to indexing pressure before its body is read when its length is
    // declared (a chunked one once read); the permit lives until the answer is built
    let matched = router::find(&state.routes, &parts.method, parts.uri.path());
    let write = is_write(&matched, &parts.method);
    let mut permit = None;
    let mut body = body;
    if let (true, Some(len)) = (write, declared) {
        match state.node.indexing_pressure.acquire(len as u64) {
            Ok(p) => permit = Some(p),
            Err(error) => {
                // read and drop the body, keeping none of it: a client still sending would
                // otherwise see the connection reset instead of the 429
                drain(&mut body).await;
                return render_error(&error);
            }
        }
    }
    let body = match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => bytes,
        Err(_) => return RestResponse::status_only(413).into_empty_response(),
    };
    if write && permit.is_none() {
        match state.node.indexing_pressure.acquire(body.len() as u64) {
            Ok(p) => permit = Some(p),
            Err(error) => return render_error(&error),
        }
    }
    if !body.is_empty() {
        if let Some(rejection) = check_content_type(parts.headers.get(header::CONTENT_TYPE)) {
            return rejection;
        }
    }
    let path = parts.uri.path().to_string();
    let params = match parse_query_string(parts.uri.query()) {
        Ok(params) => params,
        Err(error) => return render_error(&error),
    };
    let options = RenderOptions {
        pretty: params.get("pretty").is_some_and(|v| v != "false"),
        filter_path: params.get("filter_path").cloned(),
    };
    let method = parts.method.clone();
    match matched {
        // a HEAD asks whether something exists: where Tessera has no such API (aliases,
        // templates), nothing of the kind exists, and a 404 lets clients' `exists_*` say so
        // instead of raising on OpenSearch's 400
        Match::NotFound if method == Method::HEAD => {
            RestResponse::status_only(404).into_empty_response()
        }
        // OPTIONS names the methods the path allows, as OpenSearch answers it (none for a
        // path no route matches)
        Match::NotFound if method == Method::OPTIONS => options_response(&[]),
        Match::WrongMethod(allowed) if method == Method::OPTIONS => options_response(&allowed),
        Match::NotFound => plain_error(
            400,
            &format!("no handler found for uri [{path}] and method [{method}]"),
            false,
        ),
        Match::WrongMethod(allowed) => {
            let allowed: Vec<&str> = allowed.iter().map(|m| m.as_str()).collect();
            plain_error(
                405,
                &format!(
                    "Incorrect HTTP method for uri [{path}] and method [{method}], allowed: [{}]",
                    allowed.join(", ")
                ),
                true,
            )
        }
        Match::Found(route, path_params) => {
            let request = router::request(method.clone(), &path, path_params, params, body);
            let outcome = match request.check_params(route.params) {
                Ok(()) => (route.handler)(state.node.clone(), request).await,
                Err(e) => Err(e),
            };
            drop(permit);
            let response = match outcome {
                Ok(response) => response,
                Err(error) => {
                    if error.status() >= 500 {
                        eprintln!("[tessera] {method} {path} failed: {error}");
                    }
                    RestResponse::error(&error)
                }
            };
            let mut rendered = render(response, &options);
            if method == Method::HEAD {
                // HEAD answers with the length the body would have, and no body
                let length = rendered.headers().get(header::CONTENT_LENGTH).cloned();
                let (mut parts, _) = rendered.into_parts();
                if let Some(length) = length {
                    parts.headers.insert(header::CONTENT_LENGTH, length);
                }
                rendered = Response::from_parts(parts, axum::body::Body::empty());
            }
            rendered
        }
    }
}

impl RestResponse {
    fn into_empty_response(self) -> Response {
        let mut response = Response::new(axum::body::Body::empty());
        *response.status_mut() = self.status;
        response
    }
}

/// Serves the API on `listener` until `shutdown` completes.
pub async fn serve(
    node: Arc<Node>,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(GuardedListener(listener), app(node))
        .with_graceful_shutdown(shutdown)
        .await
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;
    use crate::request::RestRequest;
    use tessera_node::NodeConfig;

    async fn panics(_: Arc<Node>, request: RestRequest) -> tessera_common::Result<RestResponse> {
        if request.param("inline").is_some() {
            panic!("a test panic on the http runtime");
        }
        Ok(RestResponse::ok(serde_json::json!({"ok": true})))
    }

    /// Serves `routes` with the guarded listener on a loopback port; sends each raw request on
    /// its own connection and returns the raw answers.
    fn exchange(requests: &[&[u8]]) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::start(NodeConfig {
            data_path: dir.path().join("data"),
            cluster_setting_defaults: tessera_node::disk::one_free_byte(),
            ..NodeConfig::default()
        })
        .unwrap();
        let routes = vec![Route {
            methods: &[Method::GET],
            pattern: "/_test_panic",
            params: &["inline"],
            handler: crate::handler!(panics),
        }];
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let app = app_with_routes(node.clone(), routes);
        runtime.spawn(async move { axum::serve(GuardedListener(listener), app).await });
        let answers = requests
            .iter()
            .map(|request| {
                let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
                stream
                    .set_read_timeout(Some(std::time::Duration::from_secs(10)))
                    .unwrap();
                stream.write_all(request).unwrap();
                let mut answer = Vec::new();
                let _ = stream.read_to_end(&mut answer);
                String::from_utf8_lossy(&answer).into_owned()
            })
            .collect();
        runtime.shutdown_background();
        node.shutdown();
        answers
    }

    fn body_of(answer: &str) -> serde_json::Value {
        let (_, body) = answer.split_once("\r\n\r\n").expect("a complete answer");
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {answer}"))
    }

    #[test]
    fn a_panicking_handler_answers_500_and_the_server_goes_on() {
        let answers = exchange(&[
            b"GET /_test_panic?inline HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            b"GET /_test_panic HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        ]);
        assert!(answers[0].starts_with("HTTP/1.1 500"), "{}", answers[0]);
        let body = body_of(&answers[0]);
        assert_eq!(body["status"], 500);
        assert_eq!(body["error"]["type"], "exception");
        assert!(body["error"]["reason"]
            .as_str()
            .unwrap()
            .contains("a test panic on the http runtime"));
        assert!(answers[1].starts_with("HTTP/1.1 200"), "{}", answers[1]);
    }

    #[test]
    fn unknown_routes_answer_no_handler_found_and_a_head_of_one_a_bare_404() {
        let methods = ["GET", "POST", "PUT", "DELETE", "PATCH"];
        let requests: Vec<Vec<u8>> = methods
            .iter()
            .chain(&["HEAD"])
            .map(|method| {
                format!("{method} /_bogus/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    .into_bytes()
            })
            .collect();
        let answers = exchange(&requests.iter().map(Vec::as_slice).collect::<Vec<_>>());
        for (method, answer) in methods.iter().zip(&answers) {
            assert!(answer.starts_with("HTTP/1.1 400"), "{method}: {answer}");
            assert_eq!(
                body_of(answer),
                serde_json::json!({
                    "error": format!("no handler found for uri [/_bogus/x] and method [{method}]")
                })
            );
        }
        let head = &answers[methods.len()];
        assert!(head.starts_with("HTTP/1.1 404"), "{head}");
        assert_eq!(head.split_once("\r\n\r\n").map(|(_, body)| body), Some(""));
    }

    #[test]
    fn options_answers_200_with_the_allowed_methods() {
        let answers = exchange(&[
            b"OPTIONS /_test_panic HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            b"OPTIONS /_bogus/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        ]);
        for answer in &answers {
            assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
            assert!(answer.ends_with("\r\n\r\n"), "no body: {answer}");
        }
        assert!(
            answers[0]
                .to_ascii_lowercase()
                .contains("\r\nallow: get\r\n"),
            "{}",
            answers[0]
        );
        assert!(
            !answers[1].to_ascii_lowercase().contains("\r\nallow:"),
            "{}",
            answers[1]
        );
    }

    #[test]
    fn heads_hyper_refuses_get_opensearch_bodies() {
        let long = format!("GET /?q={} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(5000));
        let answers = exchange(&[
            b"GET /_test_panic?q=price:>10 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            b"GARBAGE\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
            long.as_bytes(),
            b"GET /_test_panic?q=%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        ]);
        // `q` is not a parameter of the test route: the answer names it, decoded
        assert!(answers[0].starts_with("HTTP/1.1 400"), "{}", answers[0]);
        assert_eq!(
            body_of(&answers[0])["error"]["reason"],
            "request [/_test_panic] contains unrecognized parameter: [q]"
        );
        for (answer, kind, reason) in [
            (
                &answers[1],
                "illegal_argument_exception",
                "text is empty (possibly HTTP/0.9)",
            ),
            (&answers[2], "illegal_argument_exception", "No colon found"),
            (
                &answers[3],
                "illegal_argument_exception",
                "Content-Length value is not a number: abc",
            ),
            (
                &answers[4],
                "too_long_http_line_exception",
                "An HTTP line is larger than 4096 bytes.",
            ),
            (
                &answers[5],
                "bad_parameter_exception",
                "java.lang.IllegalArgumentException: invalid escape sequence `%zz' at index 0 of: %zz",
            ),
        ] {
            assert!(answer.starts_with("HTTP/1.1 400"), "{reason}: {answer}");
            let body = body_of(answer);
            assert_eq!(body["status"], 400, "{body}");
            assert_eq!(body["error"]["type"], kind, "{body}");
            assert_eq!(body["error"]["reason"], reason, "{body}");
            assert_eq!(body["error"]["root_cause"][0]["type"], kind, "{body}");
        }
    }
}
