//! The `script` of `_update_by_query` and `_reindex`, as OpenSearch's `ScriptApplier` runs it
//! on each hit before the hit is written: `ctx._source` (a `HashMap`, so the written document's
//! keys come out in Java's hash order, as OpenSearch writes them), `ctx.op` (`index`), and
//! `ctx._index`, `ctx._id`, `ctx._version` (-1: the scroll reads no versions), `ctx._routing`.
//!
//! After the script: `ctx.op` `noop` skips the hit (a noop), `delete` deletes it, `index` writes
//! it; another word, or a key the script added to `ctx`, fails the request. Changing `_index`,
//! `_id` or `_routing` is refused by an update-by-query and retargets the write of a reindex;
//! `_version` cannot change (Tessera has no external versioning). The script is resolved and
//! compiled once per request (through the node's cache) and shared by its slices.

use std::sync::Arc;

use serde_json::Value as Json;
use tessera_common::{Error, Result};
use tessera_script::value::{lock, JavaMap};
use tessera_script::{Env, Script, ScriptContext, ScriptSpec, Value};
use tessera_search::coordinator::Hit;

use crate::Node;

/// What the script decided for a hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HitOp {
    Index,
    Delete,
    Noop,
}

/// A hit after the script: its op, source and (as the script left them) index, id, routing.
#[derive(Debug)]
pub struct Applied {
    pub op: HitOp,
    pub source: Json,
    /// `None` when the script did not change it.
    pub index: Option<Value>,
    pub id: Option<Value>,
    pub routing: Option<Value>,
}

/// A compiled hit script with its parameters.
pub struct HitScript {
    script: Arc<Script>,
    /// One map for every hit, as OpenSearch shares the params of one request.
    params: Value,
}

impl std::fmt::Debug for HitScript {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HitScript")
            .field("source", &self.script.source())
            .finish()
    }
}

const KEYS: [&str; 6] = ["_index", "_id", "_version", "_routing", "_source", "op"];

impl HitScript {
    /// Parses a body's `script`, resolves a stored one and compiles it (`owner` names the
    /// request in parse errors).
    pub fn new(node: &Node, owner: &str, value: &Json) -> Result<HitScript> {
        let spec = ScriptSpec::parse(owner, value)?;
        let resolved = node.resolve_script(&spec)?;
        let source = resolved.painless("update")?;
        let script = node
            .config
            .resources
            .scripts
            .0
            .get_or_compile(source, ScriptContext::Update)
            .map_err(|e| e.to_exception(source))?;
        Ok(HitScript {
            script,
            params: Value::from_json(&Json::Object(resolved.params.clone())),
        })
    }

    /// Compiles `source` on its own (tests).
    #[cfg(test)]
    fn inline(source: &str, params: Json) -> HitScript {
        HitScript {
            script: Arc::new(tessera_script::compile(source, ScriptContext::Update).unwrap()),
            params: Value::from_json(&params),
        }
    }

    /// Runs the script on `hit`.
    pub fn apply(&self, hit: &Hit) -> Result<Applied> {
        self.apply_to(
            &hit._index,
            hit._id.as_deref(),
            hit._routing.as_deref(),
            hit._source.as_ref().map(|raw| raw.get()),
        )
    }

    /// Runs the script on a document of `index` (its `_source` as JSON text).
    fn apply_to(
        &self,
        index: &str,
        id: Option<&str>,
        routing: Option<&str>,
        source: Option<&str>,
    ) -> Result<Applied> {
        let source = match source {
            Some(text) => serde_json::from_str::<Json>(text)
                .map_err(|e| Error::internal("read a hit's _source", e))?,
            None => Json::Null,
        };
        let index = Value::str(index);
        let id = id.map(Value::str).unwrap_or_default();
        let routing = routing.map(Value::str).unwrap_or_default();
        let mut ctx = JavaMap::default();
        ctx.insert(Value::str("_index"), index.clone());
        ctx.insert(Value::str("_id"), id.clone());
        ctx.insert(Value::str("_version"), Value::Long(-1));
        ctx.insert(Value::str("_routing"), routing.clone());
        ctx.insert(Value::str("_source"), Value::from_json(&source));
        ctx.insert(Value::str("op"), Value::str("index"));
        let ctx = Value::new_map(ctx);
        let env = Env {
            params: &self.params,
            doc: None,
            score: 0.0,
            ctx: Some(&ctx),
            value: None,
        };
        self.script
            .execute(&env)
            .map_err(|e| e.to_exception(self.script.source()))?;
        let Value::Map(ctx) = ctx else {
            unreachable!("ctx is a map")
        };
        let ctx = lock(&ctx).clone();
        let get = |key: &str| ctx.get(&Value::str(key)).cloned().unwrap_or_default();
        let op = match get("op") {
            Value::Null => return Err(Error::illegal_argument("Script cleared operation type")),
            Value::Str(op) => op,
            other => {
                return Err(Error::illegal_argument(format!(
                    "Operation type [{}] not allowed, only [noop, index, delete] are allowed",
                    other.to_java_string()
                )))
            }
        };
        let changed = |key: &str, before: &Value| {
            let after = get(key);
            (!after.java_equals(before)).then_some(after)
        };
        let applied = Applied {
            op: match &*op {
                "index" => HitOp::Index,
                "delete" => HitOp::Delete,
                "noop" => HitOp::Noop,
                other => {
                    return Err(Error::illegal_argument(format!(
                    "Operation type [{other}] not allowed, only [noop, index, delete] are allowed"
                )))
                }
            },
            source: get("_source").to_json(),
            index: changed("_index", &index),
            id: changed("_id", &id),
            routing: changed("_routing", &routing),
        };
        if !get("_version").java_equals(&Value::Long(-1)) {
            return Err(Error::illegal_argument("Modifying [_version] not allowed"));
        }
        let added: Vec<String> = ctx
            .java_order()
            .into_iter()
            .map(|(key, _)| key.to_java_string())
            .filter(|key| !KEYS.contains(&key.as_str()))
            .collect();
        if !added.is_empty() {
            return Err(Error::illegal_argument(format!(
                "Invalid fields added to context [{}]",
                added.join(",")
            )));
        }
        Ok(applied)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn apply(script: &HitScript, source: Json) -> Result<Applied> {
        script.apply_to("q", Some("1"), Some("r"), Some(&source.to_string()))
    }

    #[test]
    fn the_script_sees_opensearchs_ctx_and_decides_the_op() {
        let script = HitScript::inline(
            "ctx._source.k = ctx.keySet().toString(); ctx._source.m = [ctx._index, ctx._id, ctx._version, ctx._routing, ctx.op].toString(); ctx._source.n += params.d",
            json!({"d": 10}),
        );
        let applied = apply(&script, json!({"b": 1, "a": 2, "n": 3})).unwrap();
        assert_eq!(applied.op, HitOp::Index);
        assert_eq!(
            serde_json::to_string(&applied.source).unwrap(),
            r#"{"a":2,"b":1,"k":"[_routing, op, _index, _source, _id, _version]","m":"[q, 1, -1, r, index]","n":13}"#
        );
        assert!(applied.index.is_none() && applied.id.is_none() && applied.routing.is_none());
        let op = |source: &str| apply(&HitScript::inline(source, json!({})), json!({}));
        assert_eq!(op("ctx.op = 'noop'").unwrap().op, HitOp::Noop);
        assert_eq!(op("ctx.op = 'delete'").unwrap().op, HitOp::Delete);
        let moved = op("ctx._index = 'other'; ctx._id = null; ctx._routing = 'x'").unwrap();
        assert_eq!(
            moved.index.map(|v| v.to_java_string()),
            Some("other".into())
        );
        assert!(moved.id.unwrap().is_null());
        assert_eq!(moved.routing.map(|v| v.to_java_string()), Some("x".into()));
        let reason = |source: &str| op(source).unwrap_err().reason().to_string();
        assert_eq!(
            reason("ctx.op = 'create'"),
            "Operation type [create] not allowed, only [noop, index, delete] are allowed"
        );
        assert_eq!(reason("ctx.op = null"), "Script cleared operation type");
        assert_eq!(
            reason("ctx.foo = 1"),
            "Invalid fields added to context [foo]"
        );
        assert_eq!(
            reason("ctx._version = 5"),
            "Modifying [_version] not allowed"
        );
        let runtime = op("int x = 1 / params.z").unwrap_err();
        assert_eq!(runtime.kind(), "script_exception");
    }
}
