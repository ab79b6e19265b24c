//! `_search` and `_count`: the body and URL parameters become one search request, which the
//! coordinator runs over the resolved indices' shards.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use tessera_common::{Error, Result};
use tessera_node::{SearchService, SearchTarget};
use tessera_search::coordinator::count_source;
use tessera_search::request::{parse_track_total_hits, TrackTotalHits};
use tessera_search::{ResponseOptions, SearchResponse};

use super::resolve_options;
use crate::request::{with_position, RestRequest};
use crate::response::RestResponse;

fn index_expression(request: &RestRequest) -> &str {
    request
        .path_params
        .get("index")
        .map(String::as_str)
        .unwrap_or("_all")
}

/// The body, parsed (so that a malformed body fails as OpenSearch fails it), and as the text
/// that travels to the shards: the request body, or the `source` parameter.
fn body(request: &RestRequest) -> Result<Option<(Value, String)>> {
    Ok(request.json_body()?.map(|value| {
        let text = if request.has_body() {
            String::from_utf8_lossy(&request.body).into_owned()
        } else {
            request.param("source").unwrap_or_default().to_string()
        };
        (value, text)
    }))
}

pub(crate) fn target(request: &RestRequest) -> Result<SearchTarget> {
    Ok(SearchTarget {
        expression: index_expression(request).to_string(),
        options: resolve_options(request, true)?,
        routing: request.param("routing").map(String::from),
        preference: tessera_node::preference::Preference::parse(request.param("preference"))?,
    })
}

/// `rest_total_hits_as_int=true` shows totals as plain numbers, which only exact counts can be
/// (OpenSearch's `checkRestTotalHits`): a search that says nothing of `track_total_hits` (in
/// its body or `params`) counts every hit, one that sets a limit is a 400.
pub(crate) fn check_rest_total_hits(
    total_hits_as_int: bool,
    body: Option<&Value>,
    params: &mut BTreeMap<String, String>,
) -> Result<()> {
    if !total_hits_as_int {
        return Ok(());
    }
    let given = match params.get("track_total_hits") {
        Some(text) => Some(match text.as_str() {
            "" | "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            other => Value::String(other.to_string()),
        }),
        None => body.and_then(|b| b.get("track_total_hits")).cloned(),
    };
    let Some(given) = given else {
        params.insert("track_total_hits".to_string(), "true".to_string());
        return Ok(());
    };
    match parse_track_total_hits(&given)? {
        TrackTotalHits::UpTo(n) if n != i32::MAX as u64 => Err(Error::illegal_argument(format!(
            "[rest_total_hits_as_int] cannot be used if the tracking of total hits is not accurate, got {n}"
        ))),
        _ => Ok(()),
    }
}

/// `GET|POST /_search`, `/{index}/_search`; with `scroll=` the first page of a scroll, with
/// `pit` in the body a search of that point in time.
pub async fn search(service: SearchService, request: RestRequest) -> Result<RestResponse> {
    let (value, text) = body(&request)?.unzip();
    let response = run_search(&service, &request, value, text, &request.body).await?;
    RestResponse::serialized(200, &response)
}

/// Runs the search whose body is `value` (`text` as written; `body` the bytes that error
/// positions point into) with the request's URL parameters: a search, the first page of a
/// scroll, or a search of a point in time.
pub(crate) async fn run_search(
    service: &SearchService,
    request: &RestRequest,
    value: Option<Value>,
    text: Option<String>,
    body: &[u8],
) -> Result<SearchResponse> {
    let options = ResponseOptions {
        total_hits_as_int: request.param_bool("rest_total_hits_as_int", false)?,
        typed_keys: request.param_bool("typed_keys", false)?,
    };
    let mut params = request.params.clone();
    check_rest_total_hits(options.total_hits_as_int, value.as_ref(), &mut params)?;
    let source = service.source(text, params);
    let search = service.prepare(source, value.as_ref(), |e| with_position(e, body))?;
    let scroll = request
        .param("scroll")
        .map(|value| super::scroll::keep_alive(value, "scroll"))
        .transpose()?;
    Ok(match (scroll, &search.request.pit) {
        (Some(keep_alive), _) => {
            service
                .open_scroll(&target(request)?, search, keep_alive, options)
                .await?
        }
        (None, Some(_)) => {
            if request.path_params.contains_key("index") {
                return Err(Error::new(
                    "action_request_validation_exception",
                    400,
                    "Validation Failed: 1: [indices] cannot be used with point in time;",
                ));
            }
            service.search_pit(search, options).await?
        }
        (None, None) => service.search(&target(request)?, search, options).await?,
    })
}

/// `GET|POST /_count`, `/{index}/_count`.
pub async fn count(service: SearchService, request: RestRequest) -> Result<RestResponse> {
    let mut query = None;
    if let Some(body) = request.json_body()? {
        let Value::Object(map) = &body else {
            return Err(Error::parsing("request body must be an object"));
        };
        for (key, value) in map {
            match key.as_str() {
                "query" => {
                    // parsed here for the error's position in the body
                    tessera_query::parse_query(value)
                        .map_err(|e| with_position(e, &request.body))?;
                    query = Some(value.clone());
                }
                other => {
                    return Err(with_position(
                        Error::parsing(format!("request does not support [{other}]")),
                        &request.body,
                    ))
                }
            }
        }
    }
    let min_score = request
        .param("min_score")
        .map(|m| m.parse::<f32>())
        .transpose()
        .map_err(|_| Error::illegal_argument("[min_score] must be a number"))?;
    let terminate_after = request
        .param_i64("terminate_after")?
        .filter(|n| *n > 0)
        .map(|n| n as u64);
    // the URL's `q` (and its `df`, `analyzer`, …) apply as for a search; the rest of a
    // search's parameters do not exist for `_count`
    let params = request
        .params
        .iter()
        .filter(|(k, _)| COUNT_QUERY_PARAMS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let source = service.complete(count_source(
        query.as_ref(),
        params,
        min_score,
        terminate_after,
    ));
    let search = service.prepare(source, None, |e| e)?;
    let (count, shards, terminated) = service.count(&target(&request)?, search).await?;
    let mut body = json!({ "count": count, "_shards": shards });
    if let Some(terminated) = terminated {
        body["terminated_early"] = json!(terminated);
    }
    Ok(RestResponse::ok(body))
}

/// The URL parameters of `_count` that shape its query.
const COUNT_QUERY_PARAMS: &[&str] = &[
    "q",
    "df",
    "default_operator",
    "analyzer",
    "lenient",
    "analyze_wildcard",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_as_numbers_need_exact_counts() {
        let check = |as_int: bool, body: Value, url: Option<&str>| {
            let mut params = BTreeMap::new();
            if let Some(url) = url {
                params.insert("track_total_hits".to_string(), url.to_string());
            }
            check_rest_total_hits(as_int, Some(&body), &mut params).map(|()| params)
        };
        // nothing said: every hit is counted
        let params = check(true, json!({}), None).unwrap();
        assert_eq!(params["track_total_hits"], "true");
        assert!(check(false, json!({}), None).unwrap().is_empty());
        for (body, url) in [
            (json!({"track_total_hits": true}), None),
            (json!({"track_total_hits": false}), None),
            (json!({"track_total_hits": 2147483647}), None),
            (json!({"track_total_hits": 10}), Some("true")),
        ] {
            let params = check(true, body.clone(), url).unwrap();
            assert_eq!(
                params.get("track_total_hits").map(String::as_str),
                url,
                "{body}"
            );
        }
        for (body, url, n) in [
            (json!({"track_total_hits": 100}), None, 100),
            (json!({}), Some("5"), 5),
            (json!({"track_total_hits": true}), Some("10000"), 10000),
        ] {
            assert_eq!(
                check(true, body, url).unwrap_err().reason(),
                format!("[rest_total_hits_as_int] cannot be used if the tracking of total hits is not accurate, got {n}")
            );
        }
    }
}
