//! `_msearch`: several searches in one request, as NDJSON pairs of a header line (where the
//! search goes: `index`, `routing`, `preference`, index options…) and a body line (the
//! `_search` body). Each search runs through the same [`SearchService`] as `_search`, so a
//! multi search works wherever a search does, a cluster included.
//!
//! OpenSearch reads the whole request before running anything: a malformed line, an unknown
//! header key or a body that does not parse fails the whole request (400), while a search that
//! fails when it runs (a missing index, a bad preference, failed shards; under
//! `_msearch/template`, a template that does not render) becomes
//! `{"error": …, "status": …}` in its place among the 200's `responses`, the others unaffected.
//! At most `max_concurrent_searches` run at once; the default is OpenSearch's (data nodes ×
//! the search pool's size, at most 10 per node).

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;
use tessera_common::{Error, Result};
use tessera_node::preference::Preference;
use tessera_node::{ResolveOptions, SearchService, SearchTarget};
use tessera_search::{ResponseOptions, Search, SearchResponse};
use tokio::task::JoinSet;

use super::resolve_options;
use crate::request::{parse_json, with_position, RestRequest};
use crate::response::RestResponse;

/// The URL parameters of `_msearch`.
pub const MSEARCH_PARAMS: &[&str] = &[
    "max_concurrent_searches",
    "max_concurrent_shard_requests",
    "pre_filter_shard_size",
    "rest_total_hits_as_int",
    "typed_keys",
    "search_type",
    "ccs_minimize_roundtrips",
    "routing",
    "cancel_after_time_interval",
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
    "ignore_throttled",
];

/// The values of `expand_wildcards` OpenSearch knows.
const WILDCARD_STATES: &[&str] = &["open", "closed", "hidden", "none", "all"];

/// One search of a multi search, parsed: where it goes (the preference is parsed when it
/// runs: a bad one fails only this search, as in OpenSearch) and the prepared search, or why
/// there is none (a template that failed to render, or rendered to a search that does not
/// parse: only that search fails).
struct Item {
    expression: String,
    options: ResolveOptions,
    routing: Option<String>,
    preference: Option<String>,
    search: Result<Search>,
}

/// One entry of `responses`.
#[derive(Serialize)]
#[serde(untagged)]
enum ItemResponse {
    Response {
        #[serde(flatten)]
        response: Box<SearchResponse>,
        status: u16,
    },
    /// The error body (`{"error": …, "status": …}`).
    Failure(Value),
}

#[derive(Serialize)]
struct MultiSearchResponse {
    took: u64,
    responses: Vec<ItemResponse>,
}

/// `GET|POST /_msearch`, `/{index}/_msearch`.
pub async fn msearch(service: SearchService, request: RestRequest) -> Result<RestResponse> {
    multi_search(service, request, None).await
}

/// The searches of an NDJSON body, their bodies first passed through `render` when given
/// (`_msearch/template`).
pub(crate) async fn multi_search(
    service: SearchService,
    request: RestRequest,
    render: Option<BodyRender<'_>>,
) -> Result<RestResponse> {
    let started = Instant::now();
    let max_concurrent = match request.param_i64("max_concurrent_searches")? {
        Some(n) if n < 1 => {
            return Err(Error::illegal_argument(
                "maxConcurrentSearchRequests must be positive",
            ))
        }
        Some(n) => n as usize,
        None => service.default_max_concurrent_searches(),
    };
    let options = ResponseOptions {
        total_hits_as_int: request.param_bool("rest_total_hits_as_int", false)?,
        typed_keys: request.param_bool("typed_keys", false)?,
    };
    // read (and so checked) as OpenSearch reads them; Tessera has no remote clusters and
    // bounds its shard requests by its pools
    request.param_bool("ccs_minimize_roundtrips", true)?;
    request.param_i64("max_concurrent_shard_requests")?;
    request.param_time("cancel_after_time_interval")?;
    let data = body(&request)?;
    let items = parse_items(&service, &request, &data, render)?;
    if items.is_empty() {
        return Err(Error::new(
            "action_request_validation_exception",
            400,
            "Validation Failed: 1: no requests added;",
        ));
    }
    let responses = run(service, items, max_concurrent, options).await;
    let response = MultiSearchResponse {
        took: started.elapsed().as_millis() as u64,
        responses,
    };
    RestResponse::serialized(200, &response)
}

/// The NDJSON text: the body, or the `source` parameter. Unlike a search, a body of blank
/// lines is a body (with no searches in it).
fn body(request: &RestRequest) -> Result<Vec<u8>> {
    if !request.body.is_empty() {
        return Ok(request.body.to_vec());
    }
    match request.param("source") {
        Some(source) => Ok(source.as_bytes().to_vec()),
        None => Err(Error::new(
            "parse_exception",
            400,
            "request body or source parameter is required",
        )),
    }
}

/// Splits `data` into (header, body) line pairs as OpenSearch reads them: every line ends with
/// a newline, a newline at the very start is skipped, a header without its body line is
/// dropped, and an empty header line means "no header".
fn line_pairs(data: &[u8]) -> Result<Vec<(&[u8], &[u8])>> {
    let next_newline = |from: usize| -> Result<Option<usize>> {
        match memchr::memchr(b'\n', &data[from..]) {
            Some(offset) => Ok(Some(from + offset)),
            None if from != data.len() => Err(Error::illegal_argument(
                "The msearch request must be terminated by a newline [\n]",
            )),
            None => Ok(None),
        }
    };
    let mut pairs = Vec::new();
    let mut from = 0;
    while let Some(header_end) = next_newline(from)? {
        if header_end == 0 {
            from = 1;
            continue;
        }
        let header = &data[from..header_end];
        from = header_end + 1;
        let Some(body_end) = next_newline(from)? else {
            break;
        };
        pairs.push((header, &data[from..body_end]));
        from = body_end + 1;
    }
    Ok(pairs)
}

/// Turns a body line into the search body it stands for (`_msearch/template` renders it):
/// the outer error fails the whole request (a line that is no template request), the inner
/// one only its search (a template that does not render).
pub(crate) type BodyRender<'a> = &'a (dyn Fn(&[u8]) -> Result<Result<Vec<u8>>> + Sync);

/// Parses every pair into an [`Item`]. Without `render` the first error fails the whole
/// request; with it, as OpenSearch's multi search template does, a template that fails to
/// render or renders to a search that does not parse fails only its own search.
fn parse_items(
    service: &SearchService,
    request: &RestRequest,
    data: &[u8],
    render: Option<BodyRender<'_>>,
) -> Result<Vec<Item>> {
    let defaults = Header::defaults(request)?;
    let total_hits_as_int = request.param_bool("rest_total_hits_as_int", false)?;
    let mut items = Vec::new();
    for (header_line, body_line) in line_pairs(data)? {
        let header = defaults.clone().read(header_line)?;
        let prepare = |body_line: &[u8]| -> Result<Search> {
            let body = body_object(body_line)?;
            let text = String::from_utf8_lossy(body_line).into_owned();
            let mut params = header.search_params();
            super::search::check_rest_total_hits(total_hits_as_int, Some(&body), &mut params)?;
            let source = service.source(Some(text), params);
            service.prepare(source, Some(&body), |e| with_position(e, body_line))
        };
        let search = match render {
            None => Ok(prepare(body_line)?),
            Some(render) => render(body_line)?.and_then(|rendered| prepare(&rendered)),
        };
        items.push(Item {
            expression: header.indices.unwrap_or_else(|| "_all".to_string()),
            options: ResolveOptions {
                ignore_unavailable: header.ignore_unavailable,
                allow_no_indices: header.allow_no_indices,
                document_api: false,
            },
            routing: header.routing,
            preference: header.preference,
            search,
        });
    }
    Ok(items)
}

/// A body line: a JSON object, or OpenSearch's parser's complaint about what it found.
fn body_object(line: &[u8]) -> Result<Value> {
    let found = |token: &str, col: u32| {
        Error::parsing(format!("Expected [START_OBJECT] but found [{token}]"))
            .with_meta("line", 1)
            .with_meta("col", col)
    };
    if line.iter().all(u8::is_ascii_whitespace) {
        return Err(found("null", 0));
    }
    match parse_json(line)? {
        value @ Value::Object(_) => Ok(value),
        Value::Array(_) => Err(found("START_ARRAY", 1)),
        Value::String(_) => Err(found("VALUE_STRING", 1)),
        Value::Number(_) => Err(found("VALUE_NUMBER", 1)),
        Value::Bool(_) => Err(found("VALUE_BOOLEAN", 1)),
        Value::Null => Err(found("VALUE_NULL", 1)),
    }
}

/// What a header line sets, over the defaults the URL gives.
#[derive(Clone, Debug, Default, PartialEq)]
struct Header {
    /// The index expression (`None`: all indices).
    indices: Option<String>,
    routing: Option<String>,
    preference: Option<String>,
    search_type: Option<String>,
    pre_filter_shard_size: Option<String>,
    allow_partial_search_results: Option<bool>,
    ignore_unavailable: bool,
    allow_no_indices: bool,
}

impl Header {
    /// The URL's index, routing, search type and index options, which every header starts from.
    fn defaults(request: &RestRequest) -> Result<Header> {
        let options = resolve_options(request, true)?;
        if let Some(states) = request.param("expand_wildcards") {
            check_expand_wildcards(&Value::String(states.to_string()))?;
        }
        request.param_bool("ignore_throttled", true)?;
        let indices = request
            .path_params
            .get("index")
            .filter(|index| !index.is_empty())
            .cloned();
        Ok(Header {
            indices,
            routing: request.param("routing").map(String::from),
            search_type: request.param("search_type").map(String::from),
            pre_filter_shard_size: request.param("pre_filter_shard_size").map(String::from),
            ignore_unavailable: options.ignore_unavailable,
            allow_no_indices: options.allow_no_indices,
            ..Header::default()
        })
    }

    /// Applies a header line. A line that is valid JSON but not an object sets nothing, as in
    /// OpenSearch; an unknown key is its `illegal_argument_exception`.
    fn read(mut self, line: &[u8]) -> Result<Header> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(self);
        }
        let Value::Object(map) = parse_json(line)? else {
            return Ok(self);
        };
        for (key, value) in &map {
            match key.as_str() {
                // an empty list or string is every index, whatever the path names
                "index" | "indices" => {
                    self.indices = Some(index_expression(key, value)?).filter(|e| !e.is_empty())
                }
                "search_type" | "searchType" => self.search_type = string_value(value),
                "ccs_minimize_roundtrips" | "ccsMinimizeRoundtrips" => {
                    bool_value(value, None)?;
                }
                "request_cache" | "requestCache" => {
                    bool_value(value, Some(key))?;
                }
                "preference" => self.preference = string_value(value),
                "routing" => self.routing = string_value(value),
                "allow_partial_search_results" => {
                    self.allow_partial_search_results = Some(bool_value(value, Some("null"))?)
                }
                "expand_wildcards" | "expandWildcards" => check_expand_wildcards(value)?,
                "ignore_unavailable" | "ignoreUnavailable" => {
                    self.ignore_unavailable = bool_value(value, Some("ignore_unavailable"))?
                }
                "allow_no_indices" | "allowNoIndices" => {
                    self.allow_no_indices = bool_value(value, Some("allow_no_indices"))?
                }
                "ignore_throttled" | "ignoreThrottled" => {
                    bool_value(value, Some("ignore_throttled"))?;
                }
                "cancel_after_time_interval" | "cancelAfterTimeInterval" => {
                    if let Some(text) = string_value(value) {
                        tessera_common::time::parse_time_value(&text, key)?;
                    }
                }
                "phase_took" => {
                    bool_value(value, None)?;
                }
                other => {
                    return Err(Error::illegal_argument(format!(
                        "key [{other}] is not supported in the metadata section"
                    )))
                }
            }
        }
        Ok(self)
    }

    /// The URL parameters the search itself reads (see `tessera_search::url_params`).
    fn search_params(&self) -> BTreeMap<String, String> {
        let mut params = BTreeMap::new();
        if let Some(search_type) = &self.search_type {
            params.insert("search_type".to_string(), search_type.clone());
        }
        if let Some(size) = &self.pre_filter_shard_size {
            params.insert("pre_filter_shard_size".to_string(), size.clone());
        }
        if let Some(allow) = self.allow_partial_search_results {
            params.insert(
                "allow_partial_search_results".to_string(),
                allow.to_string(),
            );
        }
        params
    }
}

/// A header value read as a string (OpenSearch's `nodeStringValue`: any scalar's text).
fn string_value(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    }
}

/// `index`: a string (comma-separated) or an array of names.
fn index_expression(key: &str, value: &Value) -> Result<String> {
    let names: Vec<String> = match value {
        Value::Array(items) => items.iter().filter_map(string_value).collect(),
        Value::Null | Value::Object(_) => {
            return Err(Error::illegal_argument(format!(
                "[{key}] in the metadata section must be a string or an array of strings"
            )))
        }
        scalar => string_value(scalar).into_iter().collect(),
    };
    Ok(names.join(","))
}

/// A header boolean (`true`/`false`, or their strings), with OpenSearch's messages: named
/// ones say which key could not be converted.
fn bool_value(value: &Value, name: Option<&str>) -> Result<bool> {
    let text = match value {
        Value::Bool(b) => return Ok(*b),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    match text.as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => {
            let error = Error::illegal_argument(format!(
                "Failed to parse value [{text}] as only [true] or [false] are allowed."
            ));
            Err(match name {
                Some(name) => {
                    Error::illegal_argument(format!("Could not convert [{name}] to boolean"))
                        .caused_by(error)
                }
                None => error,
            })
        }
    }
}

/// `expand_wildcards`: a comma-separated string or an array of OpenSearch's states.
fn check_expand_wildcards(value: &Value) -> Result<()> {
    let states: Vec<String> = match value {
        Value::Array(items) => items.iter().filter_map(string_value).collect(),
        other => string_value(other)
            .map(|text| text.split(',').map(|s| s.trim().to_string()).collect())
            .unwrap_or_default(),
    };
    match states
        .iter()
        .find(|s| !WILDCARD_STATES.contains(&s.as_str()))
    {
        Some(bad) => Err(Error::illegal_argument(format!(
            "No valid expand wildcard value [{bad}]"
        ))),
        None => Ok(()),
    }
}

/// Runs the searches, at most `max_concurrent` at once, and answers each in request order.
/// The searches are tasks of a `JoinSet`, which aborts them if the request is dropped; a search
/// whose task panicked is a 500 item, as a panicking `_search` is a 500 answer.
async fn run(
    service: SearchService,
    items: Vec<Item>,
    max_concurrent: usize,
    options: ResponseOptions,
) -> Vec<ItemResponse> {
    let count = items.len();
    let mut results: Vec<Option<Result<SearchResponse>>> = (0..count).map(|_| None).collect();
    let mut positions: HashMap<tokio::task::Id, usize> = HashMap::new();
    let mut pending = items.into_iter().enumerate();
    let mut running = JoinSet::new();
    let mut start_next =
        |running: &mut JoinSet<Result<SearchResponse>>,
         positions: &mut HashMap<tokio::task::Id, usize>| {
            if let Some((position, item)) = pending.next() {
                let service = service.clone();
                let task = running.spawn(async move { run_one(&service, item, options).await });
                positions.insert(task.id(), position);
            }
        };
    for _ in 0..max_concurrent.min(count) {
        start_next(&mut running, &mut positions);
    }
    while let Some(joined) = running.join_next_with_id().await {
        let (id, result) = match joined {
            Ok((id, result)) => (id, result),
            Err(e) => (
                e.id(),
                Err(Error::new(
                    "exception",
                    500,
                    format!("a search of the multi search failed: {e}"),
                )),
            ),
        };
        if let Some(position) = positions.remove(&id) {
            results[position] = Some(result);
        }
        start_next(&mut running, &mut positions);
    }
    results
        .into_iter()
        .map(|result| match result {
            Some(Ok(response)) => ItemResponse::Response {
                response: Box::new(response),
                status: 200,
            },
            Some(Err(error)) => ItemResponse::Failure(error.to_body()),
            None => ItemResponse::Failure(
                Error::new("exception", 500, "a search of the multi search was lost").to_body(),
            ),
        })
        .collect()
}

async fn run_one(
    service: &SearchService,
    item: Item,
    options: ResponseOptions,
) -> Result<SearchResponse> {
    let search = item.search?;
    let target = SearchTarget {
        expression: item.expression,
        options: item.options,
        routing: item.routing,
        preference: Preference::parse(item.preference.as_deref())?,
    };
    service.search(&target, search, options).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pairs(data: &str) -> Result<Vec<(String, String)>> {
        Ok(line_pairs(data.as_bytes())?
            .into_iter()
            .map(|(h, b)| {
                (
                    String::from_utf8_lossy(h).into_owned(),
                    String::from_utf8_lossy(b).into_owned(),
                )
            })
            .collect())
    }

    #[test]
    fn lines_pair_up_as_opensearch_reads_them() {
        assert_eq!(
            pairs("{\"index\":\"a\"}\n{}\n{}\n{\"size\":0}\n").unwrap(),
            [
                ("{\"index\":\"a\"}".to_string(), "{}".to_string()),
                ("{}".to_string(), "{\"size\":0}".to_string())
            ]
        );
        // a leading newline is skipped, an empty header line is no header, a header
        // without a body line is dropped
        assert_eq!(
            pairs("\n{}\n{}\n\n{\"size\":1}\n{}\n").unwrap(),
            [
                ("{}".to_string(), "{}".to_string()),
                (String::new(), "{\"size\":1}".to_string())
            ]
        );
        assert!(pairs("").unwrap().is_empty());
        assert!(pairs("\n").unwrap().is_empty());
        for unterminated in ["{}\n{}", "{}"] {
            assert_eq!(
                pairs(unterminated).unwrap_err().reason(),
                "The msearch request must be terminated by a newline [\n]"
            );
        }
    }

    #[test]
    fn headers_set_targets_and_reject_unknown_keys() {
        let header = Header::default()
            .read(br#"{"index": ["a", "b*"], "routing": 1, "preference": "_local", "search_type": "query_then_fetch", "ignore_unavailable": "true", "request_cache": true, "expand_wildcards": ["open", "hidden"]}"#)
            .unwrap();
        assert_eq!(header.indices.as_deref(), Some("a,b*"));
        assert_eq!(header.routing.as_deref(), Some("1"));
        assert_eq!(header.preference.as_deref(), Some("_local"));
        assert!(header.ignore_unavailable);
        assert_eq!(
            header.search_params(),
            BTreeMap::from([("search_type".to_string(), "query_then_fetch".to_string())])
        );
        let path_index = Header {
            indices: Some("logs".to_string()),
            ..Header::default()
        };
        for every_index in [r#"{"index": []}"#, r#"{"index": ""}"#] {
            let header = path_index.clone().read(every_index.as_bytes()).unwrap();
            assert_eq!(header.indices, None, "{every_index}");
        }
        // a scalar or array line sets nothing, as in OpenSearch
        assert_eq!(Header::default().read(b"[]").unwrap(), Header::default());
        assert_eq!(Header::default().read(b"  ").unwrap(), Header::default());
        for (line, reason) in [
            (
                r#"{"bogus": 1}"#,
                "key [bogus] is not supported in the metadata section",
            ),
            (
                r#"{"ignore_unavailable": 1}"#,
                "Could not convert [ignore_unavailable] to boolean",
            ),
            (
                r#"{"request_cache": "yes"}"#,
                "Could not convert [request_cache] to boolean",
            ),
            (
                r#"{"ccs_minimize_roundtrips": "x"}"#,
                "Failed to parse value [x] as only [true] or [false] are allowed.",
            ),
            (
                r#"{"expand_wildcards": "open,x"}"#,
                "No valid expand wildcard value [x]",
            ),
        ] {
            let e = Header::default().read(line.as_bytes()).unwrap_err();
            assert_eq!((e.status(), e.reason()), (400, reason), "{line}");
        }
        assert_eq!(
            Header::default().read(b"{bad").unwrap_err().kind(),
            "json_parse_exception"
        );
        assert_eq!(
            Header::default()
                .read(br#"{"index": null}"#)
                .unwrap_err()
                .status(),
            400
        );
    }

    #[test]
    fn body_lines_must_be_objects() {
        assert_eq!(body_object(b"{\"size\": 0}").unwrap(), json!({"size": 0}));
        for (line, found, col) in [
            ("", "null", 0),
            ("  ", "null", 0),
            ("[]", "START_ARRAY", 1),
            ("\"x\"", "VALUE_STRING", 1),
            ("5", "VALUE_NUMBER", 1),
            ("null", "VALUE_NULL", 1),
        ] {
            let body = body_object(line.as_bytes()).unwrap_err().to_body();
            let error = &body["error"];
            assert_eq!(
                error["reason"],
                format!("Expected [START_OBJECT] but found [{found}]")
            );
            assert_eq!(error["col"], col, "{line:?}");
        }
    }
}
