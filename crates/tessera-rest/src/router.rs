//! Routing with OpenSearch's rules: the most specific pattern wins (`/_search` beats
//! `/{index}`); a path no pattern matches is a 400 "no handler found" (a HEAD of one, a bare
//! 404: `server::dispatch`); a matching path with another method is a 405 listing the allowed
//! methods.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::http::Method;
use tessera_common::Result;
use tessera_node::Node;

use crate::request::{decode_path_segment, RestRequest};
use crate::response::RestResponse;

pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<RestResponse>> + Send>>;
pub type Handler = fn(Arc<Node>, RestRequest) -> HandlerFuture;

/// One endpoint.
pub struct Route {
    pub methods: &'static [Method],
    pub pattern: &'static str,
    /// Query parameters the endpoint accepts (besides the global ones).
    pub params: &'static [&'static str],
    pub handler: Handler,
}

/// Wraps an `async fn(Arc<Node>, RestRequest) -> Result<RestResponse>` as a [`Handler`];
/// `handler!(write: f)` wraps an `async fn(Arc<WriteService>, RestRequest)` and
/// `handler!(search: f)` an `async fn(SearchService, RestRequest)`: the services, not the node.
#[macro_export]
macro_rules! handler {
    // a document write handler: `async fn(Arc<WriteService>, RestRequest)`, given the node's
    // write service rather than the node
    (write: $f:path) => {{
        fn boxed(
            node: std::sync::Arc<tessera_node::Node>,
            request: $crate::request::RestRequest,
        ) -> $crate::router::HandlerFuture {
            Box::pin($f(node.write_service(), request))
        }
        boxed as $crate::router::Handler
    }};
    ($f:path) => {{
        fn boxed(
            node: std::sync::Arc<tessera_node::Node>,
            request: $crate::request::RestRequest,
        ) -> $crate::router::HandlerFuture {
            Box::pin($f(node, request))
        }
        boxed as $crate::router::Handler
    }};
    // a search handler: given the node's search service rather than the node
    (search: $f:path) => {{
        fn boxed(
            node: std::sync::Arc<tessera_node::Node>,
            request: $crate::request::RestRequest,
        ) -> $crate::router::HandlerFuture {
            Box::pin($f(node.search_service(), request))
        }
        boxed as $crate::router::Handler
    }};
}

/// What matching a request found.
pub enum Match<'a> {
    Found(&'a Route, BTreeMap<&'static str, String>),
    /// The path exists with other methods.
    WrongMethod(Vec<&'static Method>),
    NotFound,
}

fn match_pattern(
    pattern: &'static str,
    segments: &[&str],
) -> Option<(usize, BTreeMap<&'static str, String>)> {
    let parts: Vec<&'static str> = pattern.split('/').filter(|p| !p.is_empty()).collect();
    if parts.len() != segments.len() {
        return None;
    }
    let mut literals = 0;
    let mut params = BTreeMap::new();
    for (part, segment) in parts.iter().zip(segments) {
        if let Some(name) = part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
            params.insert(name, decode_path_segment(segment));
        } else if part == segment {
            literals += 1;
        } else {
            return None;
        }
    }
    Some((literals, params))
}

/// Finds the route for `method` and `path` among `routes`.
pub fn find<'a>(routes: &'a [Route], method: &Method, path: &str) -> Match<'a> {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let mut best: Option<usize> = None;
    let mut candidates: Vec<(usize, &'a Route, BTreeMap<&'static str, String>)> = Vec::new();
    for route in routes {
        if let Some((literals, params)) = match_pattern(route.pattern, &segments) {
            best = Some(best.map_or(literals, |b| b.max(literals)));
            candidates.push((literals, route, params));
        }
    }
    let Some(best) = best else {
        return Match::NotFound;
    };
    let mut allowed: Vec<&'static Method> = Vec::new();
    for (literals, route, params) in candidates {
        if literals != best {
            continue;
        }
        if route.methods.contains(method) {
            return Match::Found(route, params);
        }
        for m in route.methods {
            if !allowed.contains(&m) {
                allowed.push(m);
            }
        }
    }
    Match::WrongMethod(allowed)
}

/// Builds a request for a matched route.
pub fn request(
    method: Method,
    path: &str,
    path_params: BTreeMap<&'static str, String>,
    params: BTreeMap<String, String>,
    body: axum::body::Bytes,
) -> RestRequest {
    RestRequest {
        method,
        path: path.to_string(),
        path_params,
        params,
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn nothing(_: Arc<Node>, _: RestRequest) -> Result<RestResponse> {
        Ok(RestResponse::status_only(200))
    }

    fn routes() -> Vec<Route> {
        vec![
            Route {
                methods: &[Method::GET, Method::DELETE, Method::HEAD, Method::PUT],
                pattern: "/{index}",
                params: &[],
                handler: handler!(nothing),
            },
            Route {
                methods: &[Method::GET, Method::POST],
                pattern: "/_search",
                params: &[],
                handler: handler!(nothing),
            },
            Route {
                methods: &[Method::GET, Method::POST],
                pattern: "/{index}/_search",
                params: &[],
                handler: handler!(nothing),
            },
            Route {
                methods: &[Method::GET],
                pattern: "/_cat/indices/{index}",
                params: &[],
                handler: handler!(nothing),
            },
        ]
    }

    #[test]
    fn literal_segments_win_over_parameters() {
        let routes = routes();
        assert!(
            matches!(find(&routes, &Method::GET, "/_search"), Match::Found(r, _) if r.pattern == "/_search")
        );
        match find(&routes, &Method::GET, "/logs/_search") {
            Match::Found(r, params) => {
                assert_eq!(r.pattern, "/{index}/_search");
                assert_eq!(params["index"], "logs");
            }
            _ => panic!("expected a match"),
        }
        match find(&routes, &Method::GET, "/_cat/indices/logs%2A") {
            Match::Found(_, params) => assert_eq!(params["index"], "logs*"),
            _ => panic!("expected a match"),
        }
    }

    #[test]
    fn wrong_methods_and_missing_paths() {
        let routes = routes();
        match find(&routes, &Method::DELETE, "/logs/_search") {
            Match::WrongMethod(allowed) => assert_eq!(allowed, [&Method::GET, &Method::POST]),
            _ => panic!("expected 405"),
        }
        assert!(matches!(
            find(&routes, &Method::POST, "/_bogus"),
            Match::WrongMethod(_)
        ));
        assert!(matches!(
            find(&routes, &Method::GET, "/logs/_bogus/x"),
            Match::NotFound
        ));
    }
}
