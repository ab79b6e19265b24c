//! `_cluster/health` and `_cluster/settings`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tessera_common::settings::Settings;
use tessera_common::{Error, Result};
use tessera_node::cluster_settings::render_update;
use tessera_node::health::Status;
use tessera_node::Node;

use crate::request::RestRequest;
use crate::response::RestResponse;

pub async fn health(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let wait_for = match request.param("wait_for_status") {
        None => None,
        Some(text) => Some(Status::parse(text).ok_or_else(|| {
            Error::illegal_argument(format!("unknown cluster health status [{text}]"))
        })?),
    };
    let level = request.param("level").unwrap_or("cluster");
    if !["cluster", "indices", "shards"].contains(&level) {
        return Err(Error::illegal_argument(format!(
            "level [{level}] is not supported"
        )));
    }
    let expression = request.path_params.get("index").map(String::as_str);
    let timeout = request
        .param_time("timeout")?
        .unwrap_or(Duration::from_secs(30));
    // an index that does not exist yet is awaited until the timeout, as OpenSearch does
    let wait = if wait_for.is_some() || expression.is_some() {
        timeout
    } else {
        Duration::ZERO
    };
    let (health, timed_out) = node.wait_for_health(expression, wait_for, wait).await?;
    let body = health.to_json(&node.config.cluster_name, timed_out, level);
    Ok(RestResponse::json(if timed_out { 408 } else { 200 }, body))
}

pub async fn get_settings(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let flat = request.param_bool("flat_settings", false)?;
    let defaults = request.param_bool("include_defaults", false)?;
    Ok(RestResponse::ok(
        node.cluster_settings.render(flat, defaults),
    ))
}

pub async fn put_settings(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let body = request.required_json_body()?;
    let section = |name: &str| -> Result<Settings> {
        match body.get(name) {
            None | Some(Value::Null) => Ok(Settings::new()),
            Some(value) => Settings::from_json(value),
        }
    };
    if let Some(object) = body.as_object() {
        if let Some(key) = object
            .keys()
            .find(|k| *k != "persistent" && *k != "transient")
        {
            return Err(Error::illegal_argument(format!(
                "request body contains unknown key [{key}]"
            )));
        }
    }
    let persistent = section("persistent")?;
    let transient = section("transient")?;
    if persistent.is_empty() && transient.is_empty() {
        return Err(Error::action_request_validation(&[
            "no settings to update".into()
        ]));
    }
    for settings in [&persistent, &transient] {
        if let Some(value) = settings.get_str("cluster.routing.allocation.enable") {
            if !["all", "primaries", "new_primaries", "none"]
                .contains(&value.to_ascii_lowercase().as_str())
            {
                return Err(Error::illegal_argument(format!(
                    "Illegal allocation.enable value [{}]",
                    value.to_uppercase()
                )));
            }
        }
    }
    let (persistent, transient) = node.cluster_settings.update(&persistent, &transient)?;
    Ok(RestResponse::ok(json!({
        "acknowledged": true,
        "persistent": render_update(&persistent),
        "transient": render_update(&transient),
    })))
}
