//! Search templates: `_render/template` (what a template renders to), `_search/template`
//! (the search it renders to, run like `_search`) and `_msearch/template` (an NDJSON of
//! headers and templates, run like `_msearch`). A template is a mustache script, inline
//! (`source`, a string or a JSON object) or stored (`id`), rendered with `params` by
//! `tessera_script::mustache`.

use serde_json::{Map, Value};
use tessera_common::error::json_token;
use tessera_common::{Error, Result};
use tessera_node::SearchService;

use crate::request::{key_position, parse_json, value_position, RestRequest};
use crate::response::{Body, RestResponse};

/// A `search_template` request body.
#[derive(Debug, Default, PartialEq)]
struct TemplateRequest {
    source: Option<String>,
    id: Option<String>,
    params: Value,
    explain: Option<bool>,
    profile: Option<bool>,
}

impl TemplateRequest {
    /// Reads `value`, parsed from `body` (which error positions point into).
    fn parse(value: &Value, body: &[u8]) -> Result<TemplateRequest> {
        let Value::Object(fields) = value else {
            return Err(Error::x_content_parse(format!(
                "[search_template] Expected START_OBJECT but was: {}",
                json_token(value)
            )));
        };
        let mut request = TemplateRequest {
            params: Value::Object(Map::new()),
            ..TemplateRequest::default()
        };
        let wrong = |key: &str, value: &Value| {
            let (line, col) = value_position(body, key);
            Error::x_content_parse(format!(
                "[{line}:{col}] [search_template] {key} doesn't support values of type: {}",
                json_token(value)
            ))
        };
        for (key, value) in fields {
            match (key.as_str(), value) {
                ("source" | "inline", Value::String(source)) => {
                    request.source = Some(source.clone())
                }
                // a template written as JSON is the JSON's text
                ("source" | "inline", Value::Object(_)) => request.source = Some(value.to_string()),
                ("id", Value::String(id)) => request.id = Some(id.clone()),
                ("params", Value::Object(_)) => request.params = value.clone(),
                ("params", Value::Null) => {}
                ("explain", Value::Bool(b)) => request.explain = Some(*b),
                ("profile", Value::Bool(b)) => request.profile = Some(*b),
                ("source" | "inline" | "id" | "params" | "explain" | "profile", other) => {
                    return Err(wrong(key, other))
                }
                (other, _) => {
                    let (line, col) = key_position(body, other);
                    return Err(Error::x_content_parse(format!(
                        "[{line}:{col}] [search_template] unknown field [{other}]"
                    )));
                }
            }
        }
        Ok(request)
    }

    fn render(&self, service: &SearchService) -> Result<String> {
        service.render_template(self.source.as_deref(), self.id.as_deref(), &self.params)
    }

    /// The rendered search body, with the request's `explain` and `profile`.
    fn search_body(&self, service: &SearchService) -> Result<Vec<u8>> {
        let rendered = self.render(service)?;
        if self.explain.is_none() && self.profile.is_none() {
            return Ok(rendered.into_bytes());
        }
        let mut body = parse_json(rendered.as_bytes())?;
        if let Value::Object(fields) = &mut body {
            for (key, value) in [("explain", self.explain), ("profile", self.profile)] {
                if let Some(value) = value {
                    fields.insert(key.to_string(), Value::Bool(value));
                }
            }
        }
        Ok(body.to_string().into_bytes())
    }
}

/// The body of a template request (a missing one is an empty template request).
fn template_request(request: &RestRequest) -> Result<TemplateRequest> {
    let value = request
        .json_body()?
        .unwrap_or_else(|| Value::Object(Map::new()));
    TemplateRequest::parse(&value, &request.body)
}

/// `GET|POST /_render/template`, `/_render/template/{id}`: `{"template_output": …}`, the
/// rendered text as it is (OpenSearch writes it into the response unparsed).
pub async fn render(service: SearchService, request: RestRequest) -> Result<RestResponse> {
    let mut template = template_request(&request)?;
    if let Some(id) = request.path_params.get("id") {
        template.id = Some(id.clone());
        template.source = None;
    }
    let rendered = template.render(&service)?;
    let mut out = Vec::with_capacity(rendered.len() + 20);
    out.extend_from_slice(b"{\"template_output\":");
    out.extend_from_slice(rendered.as_bytes());
    out.push(b'}');
    Ok(RestResponse {
        status: axum::http::StatusCode::OK,
        body: Body::Raw(out),
    })
}

/// `GET|POST /_search/template`, `/{index}/_search/template`: the rendered search, run with
/// the request's URL parameters; the response is a search response with its `status`.
pub async fn search(service: SearchService, request: RestRequest) -> Result<RestResponse> {
    let template = template_request(&request)?;
    let body = template.search_body(&service)?;
    let value = parse_json(&body)?;
    let text = String::from_utf8_lossy(&body).into_owned();
    let response =
        super::search::run_search(&service, &request, Some(value), Some(text), &body).await?;
    let mut out =
        serde_json::to_vec(&response).map_err(|e| Error::internal("write a search response", e))?;
    // `{…}` → `{…,"status":200}`
    if out.last() == Some(&b'}') {
        out.pop();
        out.extend_from_slice(b",\"status\":200}");
    }
    Ok(RestResponse {
        status: axum::http::StatusCode::OK,
        body: Body::Raw(out),
    })
}

/// `GET|POST /_msearch/template`, `/{index}/_msearch/template`. A line that is no template
/// request fails the request; a template that does not render fails its own search.
pub async fn msearch(service: SearchService, request: RestRequest) -> Result<RestResponse> {
    let renderer = service.clone();
    let render = move |line: &[u8]| -> Result<Result<Vec<u8>>> {
        let value = parse_json(line)?;
        Ok(TemplateRequest::parse(&value, line)?.search_body(&renderer))
    };
    super::msearch::multi_search(service, request, Some(&render)).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_as_opensearch() {
        let parse = |v: Value| TemplateRequest::parse(&v, v.to_string().as_bytes());
        let r = parse(json!({"source": {"query": {"match": {"k": "{{q}}"}}}, "params": {"q": "a"}, "explain": true})).unwrap();
        assert_eq!(
            r.source.as_deref(),
            Some(r#"{"query":{"match":{"k":"{{q}}"}}}"#)
        );
        assert_eq!((r.params["q"].as_str(), r.explain), (Some("a"), Some(true)));
        let err = |v: Value| parse(v).unwrap_err().reason().to_string();
        assert_eq!(
            err(json!({"source": "x", "foo": 1})),
            "[1:15] [search_template] unknown field [foo]"
        );
        assert_eq!(
            err(json!({"source": "x", "params": "bad"})),
            "[1:24] [search_template] params doesn't support values of type: VALUE_STRING"
        );
    }
}
