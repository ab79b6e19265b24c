//! `_shrink`, `_split` and `_clone` (`PUT|POST /{index}/_<kind>/{target}`): the request's body
//! and parameters as OpenSearch's `RestResizeHandler` reads them; the work is the node's
//! ([`tessera_node::resize`]).

use std::sync::Arc;

use serde_json::{json, Value};
use tessera_common::settings::Settings;
use tessera_common::{Error, Result};
use tessera_index::aliases::{parse_aliases, Aliases};
use tessera_node::resize::{ResizeRequest, ResizeType};
use tessera_node::Node;

use super::indices::wait_for_active_copies;
use super::ActiveShards;
use crate::request::{key_position, RestRequest};
use crate::response::RestResponse;

/// `PUT|POST /{index}/_shrink/{target}`.
pub async fn shrink(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    resize(node, request, ResizeType::Shrink).await
}

/// `PUT|POST /{index}/_split/{target}`.
pub async fn split(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    resize(node, request, ResizeType::Split).await
}

/// `PUT|POST /{index}/_clone/{target}`.
pub async fn clone(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    resize(node, request, ResizeType::Clone).await
}

/// The body: `settings` and `aliases`, nothing else (OpenSearch's `resize_request` parser).
fn parse_body(body: Option<Value>, raw: &[u8]) -> Result<(Settings, Aliases)> {
    let mut settings = Settings::new();
    let mut aliases = Aliases::new();
    let fields = match body {
        None => return Ok((settings, aliases)),
        Some(Value::Object(fields)) => fields,
        Some(other) => {
            let found = if other.is_array() {
                "START_ARRAY"
            } else {
                "VALUE"
            };
            return Err(Error::x_content_parse(format!(
                "[1:1] [resize_request] Expected START_OBJECT but was: {found}"
            )));
        }
    };
    for (key, value) in &fields {
        match key.as_str() {
            "settings" => settings = Settings::from_json(value)?.with_prefix("index."),
            "aliases" => aliases = parse_aliases(value)?,
            other => {
                let (line, col) = key_position(raw, other);
                return Err(Error::x_content_parse(format!(
                    "[{line}:{col}] [resize_request] unknown field [{other}]"
                )));
            }
        }
    }
    Ok((settings, aliases))
}

async fn resize(node: Arc<Node>, request: RestRequest, kind: ResizeType) -> Result<RestResponse> {
    if request.param("copy_settings") == Some("false") {
        return Err(Error::illegal_argument(
            "parameter [copy_settings] can not be explicitly set to [false]",
        ));
    }
    request.param_bool("copy_settings", true)?;
    let (settings, aliases) = parse_body(request.json_body()?, &request.body)?;
    let wanted = request
        .param("wait_for_active_shards")
        .map(ActiveShards::parse)
        .transpose()?;
    let timeout = request
        .param_time("timeout")?
        .unwrap_or(std::time::Duration::from_secs(30));
    let resize = ResizeRequest {
        kind,
        source: request.path_param("index").to_string(),
        target: request.path_param("target").to_string(),
        settings,
        aliases,
    };
    let resizing = node.clone();
    let index = node
        .pools
        .management
        .run(move || resizing.resize(&resize))
        .await?;
    let meta = index.metadata();
    let wanted = match wanted {
        Some(wanted) => wanted,
        None => ActiveShards::parse(meta.setting("index.write.wait_for_active_shards"))?,
    };
    let shards_acknowledged = wait_for_active_copies(&node, &index, wanted, timeout).await;
    Ok(RestResponse::ok(json!({
        "acknowledged": true,
        "shards_acknowledged": shards_acknowledged,
        "index": meta.name,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_takes_settings_and_aliases_only() {
        let raw = br#"{"settings":{"number_of_shards":2},"aliases":{"a":{}}}"#;
        let (settings, aliases) =
            parse_body(Some(serde_json::from_slice(raw).unwrap()), raw).unwrap();
        assert_eq!(settings.get_str("index.number_of_shards"), Some("2"));
        assert!(aliases.contains_key("a"));
        let raw = br#"{"settings":{},"mappings":{}}"#;
        let error = parse_body(Some(serde_json::from_slice(raw).unwrap()), raw).unwrap_err();
        assert_eq!(
            error.reason(),
            "[1:16] [resize_request] unknown field [mappings]"
        );
        let error = parse_body(Some(json!([])), b"[]").unwrap_err();
        assert_eq!(
            error.reason(),
            "[1:1] [resize_request] Expected START_OBJECT but was: START_ARRAY"
        );
        let (settings, aliases) = parse_body(None, b"").unwrap();
        assert!(settings.is_empty() && aliases.is_empty());
    }
}
