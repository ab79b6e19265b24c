//! `script`: runs a painless script on the document, as OpenSearch's ingest `script` processor
//! does. `ctx` is the document's fields with its metadata (`_index`, `_id`, `_routing`; not
//! `_ingest`) as a `HashMap`; what the script leaves in it is the document afterwards. An
//! inline script compiles when the pipeline is created (a compile error refuses the
//! pipeline); a stored one (`id`) is looked up when it runs, through the pipeline lookup,
//! and compiled once per source.
//!
//! [`Condition`] is the `if` option every processor has: a painless script over a read-only
//! `ctx` that must return a boolean.

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value as Json};
use tessera_common::{Error, Result};
use tessera_script::value::{lock, JavaMap};
use tessera_script::{Env, Script, ScriptContext, ScriptError, ScriptSpec, Value};

use super::{Flow, Outcome, Processor};
use crate::config::Config;
use crate::document::IngestDocument;
use crate::pipeline::Exec;

/// The keys of a `script` object.
const SCRIPT_KEYS: [&str; 6] = ["source", "inline", "id", "lang", "params", "options"];

/// A script an ingest option names, compiled once.
#[derive(Debug)]
struct IngestScript {
    spec: ScriptSpec,
    /// An inline script, compiled when the pipeline was parsed.
    inline: Option<Arc<Script>>,
    /// The stored script compiled last (its source decides whether it is still current).
    stored: Mutex<Option<Arc<Script>>>,
    params: Value,
}

impl IngestScript {
    fn new(spec: ScriptSpec, kind: &str) -> Result<IngestScript> {
        let inline = match &spec.source {
            Some(source) => {
                spec.check_lang()
                    .map_err(|e| e.with_meta("processor_type", kind.to_string()))?;
                Some(Arc::new(compile(source).map_err(|e| {
                    e.with_meta("processor_type", kind.to_string())
                })?))
            }
            None => None,
        };
        let params = spec.params_value();
        Ok(IngestScript {
            spec,
            inline,
            stored: Mutex::new(None),
            params,
        })
    }

    /// The compiled script: the inline one, or the stored one the lookup finds.
    fn script(&self, exec: &Exec<'_>) -> Result<Arc<Script>> {
        if let Some(script) = &self.inline {
            return Ok(script.clone());
        }
        let id = self.spec.id.as_deref().unwrap_or_default();
        let (lang, source) = exec
            .stored_script(id)
            .ok_or_else(|| tessera_script::spec::script_not_found(id))?;
        if lang != "painless" {
            return Err(Error::illegal_argument(format!(
                "script_lang not supported [{lang}]"
            )));
        }
        let mut stored = lock(&self.stored);
        if let Some(script) = stored.as_ref().filter(|s| s.source() == source) {
            return Ok(script.clone());
        }
        let script = Arc::new(compile(&source)?);
        *stored = Some(script.clone());
        Ok(script)
    }

    /// Runs the script with `ctx`.
    fn run(&self, exec: &Exec<'_>, ctx: &Value) -> Result<Value> {
        let script = self.script(exec)?;
        let env = Env {
            params: &self.params,
            doc: None,
            score: 0.0,
            ctx: Some(ctx),
            value: None,
        };
        script
            .execute(&env)
            .map_err(|e| e.to_exception(script.source()))
    }
}

fn compile(source: &str) -> Result<Script> {
    tessera_script::compile(source, ScriptContext::Update).map_err(|e| e.to_exception(source))
}

/// `ctx` for a script: the document's fields and metadata, in a map built as OpenSearch's
/// `IngestDocument` builds it (`putAll` of the source, then the metadata), so that it iterates
/// in the same order.
fn ctx_of(doc: &IngestDocument) -> Value {
    let is_metadata = |key: &str| crate::document::METADATA.contains(&key);
    let source = doc.ctx.iter().filter(|(k, _)| !is_metadata(k));
    let metadata = doc.ctx.iter().filter(|(k, _)| is_metadata(k));
    let mut map = JavaMap::sized_for_put_all(source.clone().count());
    for (key, value) in source.chain(metadata) {
        map.insert(Value::str(key), Value::from_json(value));
    }
    Value::new_map(map)
}

#[derive(Debug)]
pub struct ScriptProcessor {
    script: IngestScript,
}

impl ScriptProcessor {
    pub fn parse(config: &mut Config) -> Result<ScriptProcessor> {
        let mut object = Map::new();
        for key in SCRIPT_KEYS {
            if let Some(value) = config.take(key) {
                object.insert(key.to_string(), value);
            }
        }
        let spec = ScriptSpec::parse_object("script", &Json::Object(object))
            .map_err(|e| e.with_meta("processor_type", "script"))?;
        Ok(ScriptProcessor {
            script: IngestScript::new(spec, "script")?,
        })
    }
}

impl Processor for ScriptProcessor {
    fn execute(&self, doc: &mut IngestDocument, exec: &mut Exec<'_>) -> Outcome {
        let ctx = ctx_of(doc);
        self.script.run(exec, &ctx)?;
        match ctx.to_json() {
            Json::Object(fields) => {
                doc.ctx = fields;
                Ok(Flow::Continue)
            }
            _ => Err(Error::illegal_argument("[ctx] must stay a map").into()),
        }
    }
}

/// A processor's `if`.
#[derive(Debug)]
pub struct Condition {
    script: IngestScript,
}

impl Condition {
    /// Parses the `if` option of a processor of type `kind`: a script object or its source.
    pub fn parse(kind: &str, value: &Json) -> Result<Condition> {
        let spec = ScriptSpec::parse("if", value)
            .map_err(|e| e.with_meta("processor_type", kind.to_string()))?;
        Ok(Condition {
            script: IngestScript::new(spec, kind)?,
        })
    }

    /// The condition's source, as a verbose simulation shows it.
    pub fn source(&self) -> &str {
        self.script
            .spec
            .source
            .as_deref()
            .or(self.script.spec.id.as_deref())
            .unwrap_or_default()
    }

    /// Whether the processor runs on `doc`. The script may not change the document
    /// (OpenSearch's `ctx` is read-only here): a change is refused as OpenSearch refuses it.
    pub fn holds(&self, doc: &IngestDocument, exec: &Exec<'_>) -> Result<bool> {
        let ctx = ctx_of(doc);
        let result = self.script.run(exec, &ctx)?;
        let source = self.script.inline.as_ref().map_or("", |s| s.source());
        if ctx.to_json() != Json::Object(doc.ctx.clone()) {
            let mut error = ScriptError::runtime(
                0,
                "unsupported_operation_exception",
                "Mutating ingest documents in conditionals is not supported",
            );
            error.statement = Some((0, source.len()));
            return Err(error.to_exception(source));
        }
        match result {
            Value::Bool(holds) => Ok(holds),
            other => {
                let mut error = ScriptError::runtime(
                    0,
                    "class_cast_exception",
                    format!("cannot cast def [{}] to boolean", other.def_type_name()),
                );
                error.statement = Some((0, source.len()));
                Err(error.to_exception(source))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::pipeline::NoPipelines;

    fn doc(source: Json) -> IngestDocument {
        let Json::Object(source) = source else {
            panic!()
        };
        IngestDocument::new(source, "i", Some("1"), Some("r"), "now".into())
    }

    fn processor(config: Json) -> Result<ScriptProcessor> {
        let Json::Object(map) = config else { panic!() };
        let mut config = Config::new("script", map);
        let parsed = ScriptProcessor::parse(&mut config)?;
        config.finish()?;
        Ok(parsed)
    }

    #[test]
    fn a_script_changes_the_document_and_its_metadata() {
        let p = processor(json!({
            "source": "ctx.n = ctx.n + params.d; ctx.k = ctx.keySet().toString(); ctx._index = 'other'; ctx.remove('b')",
            "params": {"d": 5}
        }))
        .unwrap();
        let mut d = doc(json!({"b": 1, "a": 2, "n": 1}));
        let lookup = NoPipelines;
        let mut exec = Exec::new(&lookup, false);
        p.execute(&mut d, &mut exec).unwrap();
        assert_eq!(d.metadata("_index").as_deref(), Some("other"));
        assert_eq!(
            Json::Object(d.source()),
            json!({"a": 2, "n": 6, "k": "[_routing, a, b, _id, _index, n]"})
        );
    }

    #[test]
    fn errors_are_script_exceptions() {
        let e = processor(json!({"source": "ctx.x +"})).unwrap_err();
        assert_eq!(e.kind(), "script_exception");
        assert_eq!(e.meta("processor_type"), Some(&json!("script")));
        let e = processor(json!({"source": "1", "lang": "expression"})).unwrap_err();
        assert_eq!(e.reason(), "script_lang not supported [expression]");
        let e = processor(json!({"source": "1", "foo": 1})).unwrap_err();
        assert_eq!(e.status(), 400);
        let p = processor(json!({"source": "ctx.x = 1 / ctx.z"})).unwrap();
        let lookup = NoPipelines;
        let mut exec = Exec::new(&lookup, false);
        let failure = p.execute(&mut doc(json!({"z": 0})), &mut exec).unwrap_err();
        assert_eq!(failure.error.kind(), "script_exception");
        assert_eq!(failure.error.cause().unwrap().reason(), "/ by zero");
        let stored = processor(json!({"id": "nope"})).unwrap();
        let failure = stored.execute(&mut doc(json!({})), &mut exec).unwrap_err();
        assert_eq!(failure.error.kind(), "resource_not_found_exception");
    }

    #[test]
    fn conditions_read_the_document_and_return_a_boolean() {
        let lookup = NoPipelines;
        let exec = Exec::new(&lookup, false);
        let d = doc(json!({"z": 0}));
        let holds = |value: Json| Condition::parse("set", &value).unwrap().holds(&d, &exec);
        assert!(holds(json!("ctx.z == 0")).unwrap());
        assert!(!holds(json!("ctx.z != 0")).unwrap());
        assert!(holds(json!({"source": "ctx.z == params.v", "params": {"v": 0}})).unwrap());
        let e = holds(json!("ctx.z")).unwrap_err();
        assert_eq!(
            e.cause().unwrap().reason(),
            "cannot cast def [int] to boolean"
        );
        let e = holds(json!("ctx.z = 5; return true")).unwrap_err();
        assert_eq!(
            e.cause().unwrap().reason(),
            "Mutating ingest documents in conditionals is not supported"
        );
        let e = Condition::parse("set", &json!("ctx.z +")).unwrap_err();
        assert_eq!(e.meta("processor_type"), Some(&json!("set")));
    }
}
