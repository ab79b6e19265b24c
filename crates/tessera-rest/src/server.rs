//! The HTTP entry point: one axum fallback handler that applies OpenSearch's HTTP-level rules
//! (body size limit → 413, Content-Type checks → 406, routing → 400/405), runs the matched
//! handler, and renders its answer (pretty, filter_path) or its error.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, Method};
use axum::response::Response;
use axum::Router;
use tessera_cluster::Node;
use tessera_common::Error;

use crate::request::parse_query_string;
use crate::response::{plain_error, render, RenderOptions, RestResponse};
use crate::router::{self, Match, Route};

#[derive(Clone)]
struct AppState {
    node: Arc<Node>,
    routes: Arc<Vec<Route>>,
}

/// The router serving the whole REST API for `node`.
pub fn app(node: Arc<Node>) -> Router {
    let state = AppState {
        node,
        routes: Arc::new(crate::routes::all()),
    };
    Router::new().fallback(handle).with_state(state)
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
        return Some(render(
            RestResponse::error(&error),
            &RenderOptions::default(),
        ));
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

async fn handle(State(state): State<AppState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let limit = state.node.config.max_content_length;
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|len| len > limit) {
        return RestResponse::status_only(413).into_empty_response();
    }
    let body = match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => bytes,
        Err(_) => return RestResponse::status_only(413).into_empty_response(),
    };
    if !body.is_empty() {
        if let Some(rejection) = check_content_type(parts.headers.get(header::CONTENT_TYPE)) {
            return rejection;
        }
    }
    let path = parts.uri.path().to_string();
    let params = parse_query_string(parts.uri.query());
    let options = RenderOptions {
        pretty: params.get("pretty").is_some_and(|v| v != "false"),
        filter_path: params.get("filter_path").cloned(),
    };
    let method = parts.method.clone();
    match router::find(&state.routes, &method, &path) {
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
    axum::serve(listener, app(node))
        .with_graceful_shutdown(shutdown)
        .await
}
