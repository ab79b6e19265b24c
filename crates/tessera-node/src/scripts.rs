//! Stored scripts (`PUT/GET/DELETE /_scripts/{id}`): custom documents of the cluster state
//! (`script/<id>`, holding `lang`, `source` and `options` as OpenSearch's
//! `StoredScriptSource`), so they travel with the cluster's metadata and survive a restart;
//! and [`Node::resolve_script`], which turns a request's `script` (inline or `id`) into the
//! source to compile.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tessera_cluster::ClusterState;
use tessera_common::error::json_token;
use tessera_common::{Error, Result};
use tessera_script::spec::{script_not_found, ResolvedScript};
use tessera_script::{ScriptCache, ScriptContext, ScriptSpec};

use crate::custom::CustomChange;
use crate::Node;

/// The key prefix of stored scripts among the custom documents.
pub const STORED_SCRIPTS: &str = "script/";

/// The languages a stored script may be in (OpenSearch's: those with a script engine that
/// stores; `expression` does not).
const STORED_LANGS: &[&str] = &["painless", "mustache"];

/// The script contexts OpenSearch knows (`GET _script_context`).
const CONTEXTS: &[&str] = &[
    "aggregation_selector",
    "aggs",
    "aggs_combine",
    "aggs_init",
    "aggs_map",
    "aggs_reduce",
    "analysis",
    "bucket_aggregation",
    "derived_field",
    "field",
    "filter",
    "ingest",
    "interval",
    "moving-function",
    "number_sort",
    "painless_test",
    "processor_conditional",
    "score",
    "script_heuristic",
    "search",
    "similarity",
    "similarity_weight",
    "string_sort",
    "template",
    "terms_set",
    "update",
];

/// The compiled painless scripts, by source and context: one cache per process, shared by
/// every request and shard (OpenSearch's `script.cache.max_size` is 100).
pub fn script_cache() -> &'static ScriptCache {
    tessera_script::cache::shared()
}

/// A stored script, as `GET /_scripts/{id}` shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredScript {
    pub lang: String,
    pub source: String,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub options: Map<String, Value>,
}

impl StoredScript {
    /// Reads a `PUT /_scripts/{id}` body as OpenSearch's `StoredScriptSource.parse` does.
    /// The parse errors that OpenSearch positions (`line`, `col`) are the caller's to place.
    pub fn parse(body: &Value) -> Result<StoredScript> {
        let Value::Object(fields) = body else {
            return Err(Error::parsing(format!(
                "unexpected token [{}], expected [{{]",
                json_token(body)
            )));
        };
        let Some((first, script)) = fields.iter().next() else {
            // an empty body is an empty mustache template, as in OpenSearch
            return Ok(StoredScript {
                lang: "mustache".to_string(),
                source: String::new(),
                options: Map::new(),
            });
        };
        if first != "script" {
            return Err(Error::parsing(format!(
                "unexpected field [{first}], expected [script]"
            )));
        }
        let Value::Object(script) = script else {
            return Err(Error::parsing(format!(
                "unexpected token [{}], expected [{{, <source>]",
                json_token(script)
            )));
        };
        let mut options = Map::new();
        let source = match script.get("source").or_else(|| script.get("code")) {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(value @ Value::Object(_)) => {
                options.insert(
                    "content_type".to_string(),
                    Value::from("application/json; charset=UTF-8"),
                );
                Some(value.to_string())
            }
            Some(other) => {
                return Err(Error::x_content_parse(format!(
                    "[stored script source] source doesn't support values of type: {}",
                    json_token(other)
                )))
            }
        };
        let lang = match script.get("lang") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                return Err(Error::x_content_parse(format!(
                    "[stored script source] lang doesn't support values of type: {}",
                    json_token(other)
                )))
            }
        };
        match script.get("options") {
            None | Some(Value::Null) => {}
            Some(Value::Object(given)) => options.extend(given.clone()),
            Some(other) => {
                return Err(Error::x_content_parse(format!(
                    "[stored script source] options doesn't support values of type: {}",
                    json_token(other)
                )))
            }
        }
        let Some(lang) = lang else {
            return Err(Error::illegal_argument(
                "must specify lang for stored script",
            ));
        };
        if lang.is_empty() {
            return Err(Error::illegal_argument("lang cannot be empty"));
        }
        let Some(source) = source else {
            return Err(Error::illegal_argument(
                "must specify source for stored script",
            ));
        };
        if source.is_empty() && lang != "mustache" {
            return Err(Error::illegal_argument("source cannot be empty"));
        }
        let illegal: Vec<String> = options
            .iter()
            .filter(|(key, _)| *key != "content_type")
            .map(|(key, value)| match value {
                Value::String(s) => format!("{key}={s}"),
                other => format!("{key}={other}"),
            })
            .collect();
        if !illegal.is_empty() {
            return Err(Error::illegal_argument(format!(
                "illegal compiler options [{{{}}}] specified",
                illegal.join(", ")
            )));
        }
        Ok(StoredScript {
            lang,
            source,
            options,
        })
    }

    /// Compiles it in `context` (a `PUT /_scripts/{id}/{context}`), as OpenSearch checks a
    /// stored script against the context it names.
    fn check_context(&self, id: &str, context: &str) -> Result<()> {
        let failed =
            || Error::illegal_argument(format!("failed to parse/compile stored script [{id}]"));
        if !CONTEXTS.contains(&context) {
            return Err(failed().caused_by(Error::illegal_argument(format!(
                "Unknown context [{context}]"
            ))));
        }
        if self.lang == "mustache" {
            if context == "template" {
                return Ok(());
            }
            return Err(failed().caused_by(Error::illegal_argument(format!(
                "mustache engine does not know how to handle context [{context}]"
            ))));
        }
        let compile_as = match context {
            "painless_test" => ScriptContext::PainlessTest,
            "score" | "aggs" | "terms_set" => ScriptContext::Score,
            "filter" | "field" | "bucket_aggregation" | "aggregation_selector" => {
                ScriptContext::Filter
            }
            "number_sort" => ScriptContext::NumberSort,
            "string_sort" => ScriptContext::StringSort,
            "update" | "ingest" => ScriptContext::Update,
            "aggs_init" => ScriptContext::MetricInit,
            "aggs_map" => ScriptContext::MetricMap,
            "aggs_combine" => ScriptContext::MetricCombine,
            "aggs_reduce" => ScriptContext::MetricReduce,
            // the other contexts' variables are not Tessera's yet: checked when used
            _ => return Ok(()),
        };
        script_cache()
            .get_or_compile(&self.source, compile_as)
            .map(|_| ())
            .map_err(|e| e.to_exception(&self.source))
    }
}

/// A change of the stored scripts. The script travels as JSON text (the transport's binary
/// encoding cannot carry JSON values).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ScriptChange {
    Put { id: String, script: String },
    Delete { id: String },
}

impl ScriptChange {
    /// The custom documents to write (`Some`) or delete (`None`), by key, given `state`.
    pub fn decide(&self, state: &ClusterState) -> Result<Vec<(String, Option<Value>)>> {
        match self {
            ScriptChange::Put { id, script } => Ok(vec![(
                key(id),
                Some(
                    serde_json::from_str(script)
                        .map_err(|e| Error::internal("read a stored script", e))?,
                ),
            )]),
            ScriptChange::Delete { id } => {
                if !state.custom.contains_key(&key(id)) {
                    return Err(missing_for_delete(id));
                }
                Ok(vec![(key(id), None)])
            }
        }
    }
}

fn key(id: &str) -> String {
    format!("{STORED_SCRIPTS}{id}")
}

fn missing_for_delete(id: &str) -> Error {
    Error::new(
        "resource_not_found_exception",
        404,
        format!("stored script [{id}] does not exist and cannot be deleted"),
    )
}

/// The stored script `id` of `state`.
pub fn stored(state: &ClusterState, id: &str) -> Option<StoredScript> {
    state
        .custom_under(STORED_SCRIPTS)
        .find(|(name, _)| *name == id)
        .and_then(|(_, doc)| serde_json::from_value(doc.clone()).ok())
}

impl Node {
    /// `PUT /_scripts/{id}[/{context}]`: validated (and compiled when a context is named),
    /// then stored as cluster metadata.
    pub fn put_stored_script(&self, id: &str, body: &Value, context: Option<&str>) -> Result<()> {
        let script = StoredScript::parse(body)?;
        if !STORED_LANGS.contains(&script.lang.as_str()) {
            return Err(Error::illegal_argument(format!(
                "unable to put stored script with unsupported lang [{}]",
                script.lang
            )));
        }
        if let Some(context) = context {
            script.check_context(id, context)?;
        }
        let script = serde_json::to_string(&script)
            .map_err(|e| Error::internal("write a stored script", e))?;
        self.update_custom(CustomChange::Scripts(ScriptChange::Put {
            id: id.to_string(),
            script,
        }))
    }

    /// `GET /_scripts/{id}`.
    pub fn stored_script(&self, id: &str) -> Option<StoredScript> {
        stored(&self.cluster_state(), id)
    }

    /// `DELETE /_scripts/{id}`: 404 when there is none.
    pub fn delete_stored_script(&self, id: &str) -> Result<()> {
        if self.stored_script(id).is_none() {
            return Err(missing_for_delete(id));
        }
        self.update_custom(CustomChange::Scripts(ScriptChange::Delete {
            id: id.to_string(),
        }))
    }

    /// The source of a request's script: its own, or the stored script its `id` names
    /// (OpenSearch's `resource_not_found_exception` when there is none).
    pub fn resolve_script(&self, spec: &ScriptSpec) -> Result<ResolvedScript> {
        resolve(&self.cluster_state(), spec)
    }

    /// Renders a search template (`_search/template`, `_render/template`): the inline
    /// `source`, or the stored mustache script `id`, with `params`.
    pub fn render_template(
        &self,
        source: Option<&str>,
        id: Option<&str>,
        params: &Value,
    ) -> Result<String> {
        let source = match (source, id) {
            (Some(source), _) => source.to_string(),
            (None, Some(id)) => {
                let script =
                    stored(&self.cluster_state(), id).ok_or_else(|| script_not_found(id))?;
                if script.lang != "mustache" {
                    return Err(Error::illegal_argument(format!(
                        "the stored script [{id}] is a [{}] script, not a mustache template",
                        script.lang
                    )));
                }
                script.source
            }
            (None, None) => return Err(Error::new(
                "action_request_validation_exception",
                400,
                "Validation Failed: 1: template is missing;2: template's script type is missing;",
            )),
        };
        let template = tessera_script::mustache::Template::compile(&source)
            .map_err(|e| e.to_exception(&source))?;
        template.render(params).map_err(|e| e.to_exception(&source))
    }
}

/// [`Node::resolve_script`] against `state`.
pub fn resolve(state: &ClusterState, spec: &ScriptSpec) -> Result<ResolvedScript> {
    match (&spec.source, &spec.id) {
        (Some(source), _) => Ok(ResolvedScript {
            lang: spec.lang().to_string(),
            source: source.clone(),
            stored: None,
            params: spec.params.clone(),
        }),
        (None, Some(id)) => {
            let script = stored(state, id).ok_or_else(|| script_not_found(id))?;
            Ok(ResolvedScript {
                lang: script.lang,
                source: script.source,
                stored: Some(id.clone()),
                params: spec.params.clone(),
            })
        }
        (None, None) => Err(Error::illegal_argument(
            "must specify either [source] for an inline script or [id] for a stored script",
        )),
    }
}

/// Replaces, anywhere in a search body, a `script` object naming a stored script (`id`) by
/// the inline script it stands for (the stored `source` and `lang`, the request's `params`),
/// so the shards, which have no cluster state, compile it like any inline script. An `id`
/// with no stored script is left for the shard to refuse as OpenSearch does. Whether anything
/// changed.
pub fn inline_stored_scripts(state: &ClusterState, body: &mut Value) -> bool {
    let mut changed = false;
    match body {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if key == "script" {
                    if let Some(inline) = stored_as_inline(state, value) {
                        *value = inline;
                        changed = true;
                        continue;
                    }
                }
                changed |= inline_stored_scripts(state, value);
            }
        }
        Value::Array(items) => {
            for item in items {
                changed |= inline_stored_scripts(state, item);
            }
        }
        _ => {}
    }
    changed
}

fn stored_as_inline(state: &ClusterState, script: &Value) -> Option<Value> {
    let object = script.as_object()?;
    let id = object.get("id")?.as_str()?;
    // a stored script named with its own source, `lang` or `options` is left for the parser
    // to refuse as OpenSearch does ("illegally specified <lang> for a stored script")
    if ["source", "inline", "lang", "options"]
        .iter()
        .any(|key| object.contains_key(*key))
    {
        return None;
    }
    let stored = stored(state, id)?;
    let mut inline = Map::new();
    inline.insert("source".into(), Value::from(stored.source));
    inline.insert("lang".into(), Value::from(stored.lang));
    for (key, value) in object {
        if key != "id" {
            inline.insert(key.clone(), value.clone());
        }
    }
    Some(Value::Object(inline))
}

/// `GET /_scripts/{id}`'s body.
pub fn get_response(id: &str, script: Option<&StoredScript>) -> Value {
    match script {
        Some(script) => json!({"_id": id, "found": true, "script": script}),
        None => json!({"_id": id, "found": false}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: Value) -> Result<StoredScript> {
        StoredScript::parse(&body)
    }

    #[test]
    fn stored_script_bodies_as_opensearch_reads_them() {
        let s = parse(json!({"script": {"lang": "painless", "source": "1", "params": {"a": 1}}}))
            .unwrap();
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            json!({"lang": "painless", "source": "1"})
        );
        let s = parse(json!({"script": {"lang": "mustache", "source": {"query": {}}}})).unwrap();
        assert_eq!(s.source, r#"{"query":{}}"#);
        assert_eq!(s.options["content_type"], "application/json; charset=UTF-8");
        assert_eq!(parse(json!({})).unwrap().lang, "mustache");
        let reason = |body| parse(body).unwrap_err().reason().to_string();
        assert_eq!(
            reason(json!({"script": {"source": "1"}})),
            "must specify lang for stored script"
        );
        assert_eq!(
            reason(json!({"script": {"lang": "painless"}})),
            "must specify source for stored script"
        );
        assert_eq!(
            reason(json!({"script": {"lang": "painless", "source": ""}})),
            "source cannot be empty"
        );
        assert_eq!(
            reason(json!({"script": "1"})),
            "unexpected token [VALUE_STRING], expected [{, <source>]"
        );
        assert_eq!(
            reason(json!({"foo": 1, "script": {}})),
            "unexpected field [foo], expected [script]"
        );
        assert_eq!(
            reason(json!({"script": {"lang": "painless", "source": "1", "options": {"a": "b"}}})),
            "illegal compiler options [{a=b}] specified"
        );
    }

    #[test]
    fn contexts_compile_or_refuse() {
        let s = parse(json!({"script": {"lang": "painless", "source": "x"}})).unwrap();
        let e = s.check_context("a", "score").unwrap_err();
        assert_eq!(e.kind(), "script_exception");
        let e = s.check_context("a", "nocontext").unwrap_err();
        assert_eq!(e.cause().unwrap().reason(), "Unknown context [nocontext]");
        let m = parse(json!({"script": {"lang": "mustache", "source": "x"}})).unwrap();
        assert!(m.check_context("a", "template").is_ok());
        assert!(m.check_context("a", "score").is_err());
        let ok = parse(json!({"script": {"lang": "painless", "source": "_score * 2"}})).unwrap();
        assert!(ok.check_context("a", "score").is_ok());
    }
}
