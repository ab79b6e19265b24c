//! Scroll and point in time: `_search/scroll` (continue, clear) and
//! `_search/point_in_time` (create, list, delete). The search service pins and reads the
//! readers (`tessera_node::pinned_search`); this module reads the ids and keep-alives from
//! the URL and the body as OpenSearch does, and renders its answers.

use std::time::Duration;

use serde_json::{json, Value};
use tessera_common::error::json_token;
use tessera_common::{Error, Result};
use tessera_node::SearchService;
use tessera_search::ResponseOptions;

use crate::request::RestRequest;
use crate::response::RestResponse;

/// A keep-alive (`scroll`, `keep_alive`) as OpenSearch parses it; `-1` is not one.
pub fn keep_alive(value: &str, name: &str) -> Result<Duration> {
    tessera_common::time::parse_time_value(value, name)?
        .map(Duration::from_millis)
        .ok_or_else(|| {
            Error::illegal_argument(format!(
                "failed to parse setting [{name}] with value [{value}] as a time value: negative durations are not supported"
            ))
        })
}

fn validation(what: &str) -> Error {
    Error::new(
        "action_request_validation_exception",
        400,
        format!("Validation Failed: 1: {what};"),
    )
}

/// The ids a request names: the `scroll_id` path parameter (comma-separated), overridden by
/// the body's `scroll_id` (a string or a list), or a body that is the id itself; and its
/// keep-alive: the `scroll` parameter, overridden by the body's.
fn scroll_request(request: &RestRequest) -> Result<(Vec<String>, Option<String>)> {
    let mut scroll = request.param("scroll").map(String::from);
    let mut ids: Vec<String> = request
        .path_params
        .get("scroll_id")
        .map(|ids| ids.split(',').map(String::from).collect())
        .or_else(|| request.param("scroll_id").map(|id| vec![id.to_string()]))
        .unwrap_or_default();
    if request.has_body() {
        match request.json_body() {
            Ok(Some(Value::Object(body))) => {
                for (key, value) in &body {
                    match (key.as_str(), value) {
                        ("scroll_id", Value::String(id)) => ids = vec![id.clone()],
                        ("scroll_id", Value::Array(list)) => {
                            ids = list
                                .iter()
                                .map(|id| {
                                    id.as_str().map(String::from).ok_or_else(|| {
                                        Error::illegal_argument("scroll_id array element should only contain scroll_id")
                                    })
                                })
                                .collect::<Result<_>>()?;
                        }
                        ("scroll", value) => {
                            scroll = Some(value.as_str().map_or(value.to_string(), String::from));
                        }
                        (other, _) => {
                            return Err(Error::illegal_argument(format!(
                                "Unknown parameter [{other}] in request body or parameter is of the wrong type[{}] ",
                                json_token(value)
                            )))
                        }
                    }
                }
            }
            // a body that is not JSON is the id itself (the old form)
            _ => ids = vec![String::from_utf8_lossy(&request.body).trim().to_string()],
        }
    }
    let ids = ids.into_iter().filter(|id| !id.is_empty()).collect();
    Ok((ids, scroll))
}

/// `GET|POST /_search/scroll[/{scroll_id}]`.
pub async fn scroll(service: SearchService, request: RestRequest) -> Result<RestResponse> {
    let (ids, scroll) = scroll_request(&request)?;
    let Some(id) = ids.first() else {
        return Err(validation("scrollId is missing"));
    };
    let keep_alive = scroll.map(|s| keep_alive(&s, "scroll")).transpose()?;
    let options = ResponseOptions {
        total_hits_as_int: request.param_bool("rest_total_hits_as_int", false)?,
        // a scroll's later pages have no aggregations to name
        typed_keys: false,
    };
    let response = service.scroll(id, keep_alive, options).await?;
    RestResponse::serialized(200, &response)
}

/// `DELETE /_search/scroll[/{scroll_id}]`, `_all` for every scroll.
pub async fn clear_scroll(service: SearchService, request: RestRequest) -> Result<RestResponse> {
    let (ids, _) = scroll_request(&request)?;
    if ids.is_empty() {
        return Err(validation("no scroll ids specified"));
    }
    let all = ids.iter().any(|id| id == "_all");
    let freed = service
        .clear_scroll((!all).then_some(ids.as_slice()))
        .await?;
    // OpenSearch answers 404 when nothing was freed, with `succeeded` all the same
    let status = if freed == 0 { 404 } else { 200 };
    Ok(RestResponse::json(
        status,
        json!({"succeeded": true, "num_freed": freed}),
    ))
}

/// `POST /{index}/_search/point_in_time?keep_alive=`.
pub async fn create_pit(service: SearchService, request: RestRequest) -> Result<RestResponse> {
    let Some(value) = request.param("keep_alive") else {
        return Err(validation("keep alive not specified"));
    };
    let keep_alive = keep_alive(value, "keep_alive")?;
    let target = super::search::target(&request)?;
    Ok(RestResponse::ok(
        service.open_pit(&target, keep_alive).await?,
    ))
}

/// `DELETE /_search/point_in_time` (body `{"pit_id": [...]}`), `/_search/point_in_time/_all`.
pub async fn delete_pits(service: SearchService, request: RestRequest) -> Result<RestResponse> {
    if request.path.trim_end_matches('/').ends_with("/_all") {
        return Ok(RestResponse::ok(service.delete_pits(None).await?));
    }
    let body = request.required_json_body()?;
    let ids: Vec<String> = match &body["pit_id"] {
        Value::String(id) => vec![id.clone()],
        Value::Array(list) => list
            .iter()
            .filter_map(|id| id.as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    };
    if ids.is_empty() {
        return Err(validation("no pit ids specified"));
    }
    Ok(RestResponse::ok(service.delete_pits(Some(&ids)).await?))
}

/// `GET /_search/point_in_time/_all`.
pub async fn list_pits(service: SearchService, _request: RestRequest) -> Result<RestResponse> {
    let pits: Vec<Value> = service
        .list_pits()
        .await
        .into_iter()
        .map(|(id, created, keep_alive)| {
            json!({"pit_id": id, "creation_time": created, "keep_alive": keep_alive})
        })
        .collect();
    Ok(RestResponse::ok(json!({ "pits": pits })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_alives_parse_as_time_values() {
        assert_eq!(keep_alive("1m", "scroll").unwrap(), Duration::from_secs(60));
        assert_eq!(
            keep_alive("abc", "scroll").unwrap_err().reason(),
            "failed to parse setting [scroll] with value [abc] as a time value: unit is missing or unrecognized"
        );
        assert_eq!(keep_alive("-1", "keep_alive").unwrap_err().status(), 400);
    }
}
