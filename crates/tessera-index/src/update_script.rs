//! Scripted updates (`_update` and bulk `update` with a `script`), as OpenSearch's
//! `UpdateHelper` runs them: on the primary, under the shard's write lock, so reading the
//! document, running the script and writing the result are one step (no version conflict can
//! come between them).
//!
//! The script sees `ctx._source` (the stored document, its key order kept), `ctx.op` (`index`)
//! and, read-only, `ctx._index`, `ctx._id`, `ctx._version`, `ctx._routing`, `ctx._now`. What it
//! leaves in `ctx.op` decides the write: `index`, `delete`, anything else a noop (`none`,
//! `noop`, and unknown words, as OpenSearch's lenient reading does). With `scripted_upsert` a
//! missing document's `upsert` runs through the script with `ctx.op = "create"` (and only
//! `ctx._source`, `ctx.op`, `ctx._now`): `create` indexes it, anything else is a noop.

use std::sync::Arc;

use serde_json::Value as Json;
use tessera_common::{Error, Result};
use tessera_script::source::Document;
use tessera_script::value::{lock, JavaMap};
use tessera_script::{Env, ScriptCache, ScriptContext, ScriptError, Value};

use crate::wire;

/// The node's compiled scripts, which its indices share (`NodeResources::scripts`), under
/// the process's compile limits (`script.max_size_in_bytes`, the compilation rates).
#[derive(Clone)]
pub struct SharedScripts(pub Arc<ScriptCache>);

impl Default for SharedScripts {
    fn default() -> Self {
        SharedScripts(Arc::new(ScriptCache::following_shared(100)))
    }
}

impl std::fmt::Debug for SharedScripts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedScripts")
            .field("compilations", &self.0.compilations())
            .finish()
    }
}

/// An update's script, resolved to its painless source (stored scripts are looked up by the
/// node that took the request).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct UpdateScript {
    pub source: String,
    /// The script's `params` (an object), if any.
    #[serde(with = "wire::json_text")]
    pub params: Option<Json>,
}

/// The document the update names, as the script's `ctx` shows it.
pub struct Current<'a> {
    pub index: &'a str,
    pub id: &'a str,
    pub version: u64,
    pub routing: Option<&'a str>,
    pub source: &'a Json,
}

/// What the script decided for an existing document, with the source it left.
#[derive(Debug, PartialEq)]
pub enum Scripted {
    Index(Json),
    Delete(Json),
    Noop(Json),
}

/// What a scripted upsert decided for a missing document.
#[derive(Debug, PartialEq)]
pub enum Upserted {
    Create(Json),
    Noop,
}

/// OpenSearch's answer to a script that failed to compile or run in an update: an
/// `illegal_argument_exception` caused by the `script_exception`.
pub fn failed(cause: Error) -> Error {
    let head = Error::illegal_argument("failed to execute script");
    head.clone().caused_by(cause).with_root_causes(vec![head])
}

fn script_failed(script: &UpdateScript, error: ScriptError) -> Error {
    failed(error.to_exception(&script.source))
}

/// Runs `script` (compiled through `cache`) with `ctx`, returning `ctx` after it.
fn run(cache: &ScriptCache, script: &UpdateScript, ctx: JavaMap) -> Result<JavaMap> {
    let compiled = cache
        .get_or_compile(&script.source, ScriptContext::Update)
        .map_err(|e| script_failed(script, e))?;
    let params = Value::from_json(
        script
            .params
            .as_ref()
            .unwrap_or(&Json::Object(Default::default())),
    );
    let ctx = Value::new_map(ctx);
    let env = Env {
        params: &params,
        doc: None,
        score: 0.0,
        ctx: Some(&ctx),
        value: None,
    };
    compiled
        .execute(&env)
        .map_err(|e| script_failed(script, e))?;
    let Value::Map(map) = ctx else {
        unreachable!("ctx is a map")
    };
    let after = lock(&map).clone();
    Ok(after)
}

fn put(ctx: &mut JavaMap, key: &str, value: Value) {
    ctx.insert(Value::str(key), value);
}

fn get(ctx: &JavaMap, key: &str) -> Value {
    ctx.get(&Value::str(key)).cloned().unwrap_or_default()
}

/// `ctx.op` after the script: a string (a `null` or another value is refused with a 400,
/// where OpenSearch fails with a null pointer or a class cast).
fn op_of(ctx: &JavaMap) -> Result<String> {
    match get(ctx, "op") {
        Value::Str(op) => Ok(op.to_string()),
        other => Err(Error::illegal_argument(format!(
            "[ctx.op] must be a string, the script left [{}]",
            other.to_java_string()
        ))),
    }
}

/// `ctx._source` after the script: an object (a `null` fails as OpenSearch fails to parse an
/// empty document).
fn source_of(ctx: &JavaMap, document: &Document) -> Result<Json> {
    match get(ctx, "_source") {
        value @ Value::Map(_) => Ok(document.write(&value)),
        Value::Null => Err(Error::mapper_parsing("failed to parse").caused_by(Error::new(
            "not_x_content_exception",
            400,
            "Compressor detection can only be called on some xcontent bytes or compressed xcontent bytes",
        ))),
        other => Err(Error::illegal_argument(format!(
            "[ctx._source] must be a map, the script left a [{}]",
            other.java_class()
        ))),
    }
}

/// Runs `script` on an existing document.
pub fn run_update(
    cache: &ScriptCache,
    script: &UpdateScript,
    current: &Current<'_>,
    now_millis: i64,
) -> Result<Scripted> {
    let mut document = Document::default();
    let mut ctx = JavaMap::default();
    put(&mut ctx, "op", Value::str("index"));
    put(&mut ctx, "_index", Value::str(current.index));
    put(&mut ctx, "_id", Value::str(current.id));
    put(&mut ctx, "_version", Value::Long(current.version as i64));
    put(
        &mut ctx,
        "_routing",
        current.routing.map(Value::str).unwrap_or_default(),
    );
    put(&mut ctx, "_source", document.read(current.source));
    put(&mut ctx, "_now", Value::Long(now_millis));
    let ctx = run(cache, script, ctx)?;
    let op = op_of(&ctx)?;
    let source = source_of(&ctx, &document)?;
    Ok(match op.as_str() {
        "index" => Scripted::Index(source),
        "delete" => Scripted::Delete(source),
        _ => Scripted::Noop(source),
    })
}

/// Runs `script` on the `upsert` document of a missing one (`scripted_upsert`). OpenSearch
/// reads the upsert document into a `HashMap`: its keys come out in Java's hash order.
pub fn run_upsert(
    cache: &ScriptCache,
    script: &UpdateScript,
    upsert: &Json,
    now_millis: i64,
) -> Result<Upserted> {
    let document = Document::default();
    let mut ctx = JavaMap::default();
    put(&mut ctx, "op", Value::str("create"));
    put(&mut ctx, "_source", Value::from_json(upsert));
    put(&mut ctx, "_now", Value::Long(now_millis));
    let ctx = run(cache, script, ctx)?;
    let op = op_of(&ctx)?;
    let source = source_of(&ctx, &document)?;
    Ok(match op.as_str() {
        "create" => Upserted::Create(source),
        _ => Upserted::Noop,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn script(source: &str, params: Option<Json>) -> UpdateScript {
        UpdateScript {
            source: source.into(),
            params,
        }
    }

    fn current(source: &Json) -> Current<'_> {
        Current {
            index: "u",
            id: "1",
            version: 3,
            routing: Some("r1"),
            source,
        }
    }

    #[test]
    fn the_script_changes_the_source_and_keeps_its_order() {
        let cache = ScriptCache::default();
        let source = json!({"b": 1, "a": 2, "counter": 1});
        let out = run_update(
            &cache,
            &script(
                "ctx._source.counter += params.n; ctx._source.z = [ctx._index, ctx._id, ctx._version, ctx._routing, ctx._now]",
                Some(json!({"n": 4})),
            ),
            &current(&source),
            42,
        )
        .unwrap();
        assert_eq!(
            out,
            Scripted::Index(json!({"b": 1, "a": 2, "counter": 5, "z": ["u", "1", 3, "r1", 42]}))
        );
        let Scripted::Index(json) = out else { panic!() };
        assert_eq!(
            serde_json::to_string(&json).unwrap(),
            r#"{"b":1,"a":2,"counter":5,"z":["u","1",3,"r1",42]}"#
        );
    }

    #[test]
    fn ctx_op_decides_the_write() {
        let cache = ScriptCache::default();
        let source = json!({"a": 1});
        let op = |text: &str| {
            run_update(
                &cache,
                &script(&format!("ctx.op = '{text}'; ctx._source.a = 2"), None),
                &current(&source),
                0,
            )
            .unwrap()
        };
        assert_eq!(op("index"), Scripted::Index(json!({"a": 2})));
        assert_eq!(op("delete"), Scripted::Delete(json!({"a": 2})));
        for noop in ["noop", "none", "create", "bogus"] {
            assert_eq!(op(noop), Scripted::Noop(json!({"a": 2})));
        }
        // the ctx keys are OpenSearch's, in its HashMap's order
        let keys = run_update(
            &cache,
            &script("ctx._source.k = ctx.keySet().toString()", None),
            &current(&source),
            0,
        )
        .unwrap();
        assert_eq!(
            keys,
            Scripted::Index(
                json!({"a": 1, "k": "[_routing, op, _index, _source, _id, _now, _version]"})
            )
        );
        // compiled once
        assert_eq!(cache.compilations(), 7);
    }

    #[test]
    fn scripted_upserts_create_or_do_nothing() {
        let cache = ScriptCache::default();
        let upsert = json!({"x": 1});
        let created = run_upsert(
            &cache,
            &script(
                "ctx._source.counter = 5; ctx._source.op = ctx.op; ctx._source.keys = ctx.keySet().size()",
                None,
            ),
            &upsert,
            0,
        )
        .unwrap();
        let Upserted::Create(json) = created else {
            panic!()
        };
        // a HashMap's order, as OpenSearch shows it
        assert_eq!(
            serde_json::to_string(&json).unwrap(),
            r#"{"op":"create","keys":3,"x":1,"counter":5}"#
        );
        for op in ["none", "index", "delete"] {
            let out = run_upsert(
                &cache,
                &script(&format!("ctx.op = '{op}'"), None),
                &upsert,
                0,
            );
            assert_eq!(out.unwrap(), Upserted::Noop);
        }
    }

    #[test]
    fn failures_are_opensearch_errors() {
        let cache = ScriptCache::default();
        let source = json!({"a": 1});
        let error = run_update(
            &cache,
            &script("int x = 1/params.z;", Some(json!({"z": 0}))),
            &current(&source),
            0,
        )
        .unwrap_err();
        let body = error.to_body();
        assert_eq!(body["error"]["type"], "illegal_argument_exception");
        assert_eq!(body["error"]["reason"], "failed to execute script");
        assert_eq!(
            body["error"]["root_cause"],
            json!([{"type": "illegal_argument_exception", "reason": "failed to execute script"}])
        );
        assert_eq!(body["error"]["caused_by"]["type"], "script_exception");
        assert_eq!(
            body["error"]["caused_by"]["caused_by"]["type"],
            "arithmetic_exception"
        );
        let compile = run_update(
            &cache,
            &script("ctx._source.a +", None),
            &current(&source),
            0,
        )
        .unwrap_err()
        .to_body();
        assert_eq!(compile["error"]["caused_by"]["reason"], "compile error");
        let null_source = run_update(
            &cache,
            &script("ctx._source = null", None),
            &current(&source),
            0,
        )
        .unwrap_err();
        assert_eq!(null_source.kind(), "mapper_parsing_exception");
        let null_op =
            run_update(&cache, &script("ctx.op = null", None), &current(&source), 0).unwrap_err();
        assert_eq!(null_op.status(), 400);
    }
}
