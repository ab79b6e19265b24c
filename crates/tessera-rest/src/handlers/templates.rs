//! Template APIs: `_index_template`, `_component_template`, legacy `_template`,
//! `_index_template/_simulate_index/{name}` and `_cat/templates`. Changes go to the node
//! (`tessera_node::templates`), which has them decided as one cluster change.

use std::sync::Arc;

use serde_json::{json, Value};
use tessera_common::Result;
use tessera_node::custom::CustomChange;
use tessera_node::templates::{self, TemplateChange, TemplateKind};
use tessera_node::Node;

use crate::cat_table::{col, render, Cell, Column};
use crate::request::RestRequest;
use crate::response::RestResponse;

fn kind_of(request: &RestRequest) -> TemplateKind {
    if request.path.starts_with("/_index_template") {
        TemplateKind::Index
    } else if request.path.starts_with("/_component_template") {
        TemplateKind::Component
    } else {
        TemplateKind::Legacy
    }
}

async fn change(node: Arc<Node>, change: TemplateChange) -> Result<RestResponse> {
    let updating = node.clone();
    node.pools
        .management
        .run(move || updating.update_custom(CustomChange::Templates(change)))
        .await?;
    Ok(RestResponse::ok(json!({"acknowledged": true})))
}

/// `PUT|POST /_index_template/{name}` (and the component and legacy ones); `create=true` only
/// creates. A legacy template's `order` may come as a parameter.
pub async fn put(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let kind = kind_of(&request);
    let mut body = request.json_body()?.unwrap_or_else(|| json!({}));
    if let (TemplateKind::Legacy, Some(order), Value::Object(object)) =
        (kind, request.param("order"), &mut body)
    {
        object.insert("order".into(), Value::String(order.to_string()));
    }
    let put = TemplateChange::Put {
        kind,
        name: request.path_param("name").to_string(),
        body: body.to_string(),
        create: request.param_bool("create", false)?,
    };
    change(node, put).await
}

/// `DELETE /_index_template/{name}` (and the component and legacy ones).
pub async fn delete(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let delete = TemplateChange::Delete {
        kind: kind_of(&request),
        names: request.path_param("name").to_string(),
    };
    change(node, delete).await
}

/// `GET /_index_template[/{name}]` (and the component and legacy ones).
pub async fn get(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let state = node.cluster_state();
    let names = request.path_params.get("name").map(String::as_str);
    match kind_of(&request) {
        TemplateKind::Legacy => {
            let listed = templates::list_legacy(names, &state);
            let status = if names.is_some() && listed.as_object().is_some_and(|o| o.is_empty()) {
                404
            } else {
                200
            };
            Ok(RestResponse::json(status, listed))
        }
        kind => Ok(RestResponse::ok(templates::list(kind, names, &state)?)),
    }
}

/// `HEAD /_index_template/{name}` (and the component and legacy ones).
pub async fn exists(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let state = node.cluster_state();
    let names = Some(request.path_param("name"));
    let found = match kind_of(&request) {
        TemplateKind::Legacy => templates::list_legacy(names, &state)
            .as_object()
            .is_some_and(|o| !o.is_empty()),
        kind => templates::list(kind, names, &state).is_ok(),
    };
    Ok(RestResponse::status_only(if found { 200 } else { 404 }))
}

/// `POST /_index_template/_simulate_index/{name}`.
pub async fn simulate_index(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let state = node.cluster_state();
    Ok(RestResponse::ok(templates::simulate_index(
        request.path_param("name"),
        &state,
    )))
}

static CAT_TEMPLATES: &[Column] = &[
    col("name", "n", "template name", false, true),
    col(
        "index_patterns",
        "t",
        "template index patterns",
        false,
        true,
    ),
    col(
        "order",
        "o,p",
        "template application order/priority number",
        false,
        true,
    ),
    col("version", "v", "version", false, true),
    col(
        "composed_of",
        "c",
        "component templates comprising index template",
        false,
        true,
    ),
];

/// `GET /_cat/templates[/{name}]`.
pub async fn cat(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let state = node.cluster_state();
    let pattern = request.path_params.get("name");
    let rows = templates::cat_rows(&state)
        .into_iter()
        .filter(|row| pattern.is_none_or(|p| tessera_mapping::dynamic::simple_match(p, &row[0])))
        .map(|row| row.into_iter().map(Cell::from).collect())
        .collect();
    render(&request, CAT_TEMPLATES, rows)
}
