//! The scripts of `bucket_script` and `bucket_selector`: Painless (`tessera-script`) in
//! OpenSearch's `bucket_aggregation` and `aggregation_selector` contexts. A bucket's
//! `buckets_path` values are the script's `params` (as doubles, `null` for a missing value)
//! beside the script's own. The script is compiled when the pipeline first runs, at the
//! coordinator after the final reduce (once per process: the shared script cache), so its
//! errors are those of OpenSearch's reduce phase.

use std::collections::HashMap;

use serde_json::Value as Json;
use tessera_common::Result;
use tessera_script::{Env, ScriptContext, ScriptSpec, Value};

/// A pipeline's script.
#[derive(Clone, Debug, PartialEq)]
pub struct Script {
    pub spec: ScriptSpec,
}

impl Script {
    /// Parses a `script` value (a string, or an object with `source` or `id`, `lang`,
    /// `params`).
    pub fn parse(agg: &str, value: &Json) -> Result<Script> {
        Ok(Script {
            spec: ScriptSpec::parse(agg, value)?,
        })
    }

    /// Runs the script in `context` with a bucket's `vars` (`None`: no value).
    pub fn run(
        &self,
        context: ScriptContext,
        vars: &HashMap<String, Option<f64>>,
    ) -> Result<Value> {
        let script = self.spec.compile(context)?;
        // the bucket's values are doubles, even when whole (`_count`)
        let params = self.spec.params_value();
        if let Value::Map(map) = &params {
            let mut map = tessera_script::value::lock(map);
            for (name, value) in vars {
                map.insert(Value::str(name), value.map_or(Value::Null, Value::Double));
            }
        }
        script
            .execute(&Env::new(&params))
            .map_err(|e| e.to_exception(script.source()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(context: ScriptContext, source: Json, vars: &[(&str, Option<f64>)]) -> Result<Value> {
        let vars = vars.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        Script::parse("bs", &source)?.run(context, &vars)
    }

    #[test]
    fn painless_over_the_bucket_values() {
        let v = run(
            ScriptContext::BucketScript,
            json!({"source": "double t = 0; for (int i = 0; i < params.c; i++) { t += params.s } return t + params.k", "params": {"k": 1}}),
            &[("s", Some(2.5)), ("c", Some(2.0))],
        )
        .unwrap();
        assert_eq!(v.to_java_string(), "6.0");
        let v = run(
            ScriptContext::BucketScript,
            json!("params.c"),
            &[("c", Some(3.0))],
        );
        assert_eq!(v.unwrap().to_java_string(), "3.0");
        let v = run(
            ScriptContext::BucketScript,
            json!("params.s"),
            &[("s", None)],
        );
        assert!(v.unwrap().is_null());
        let v = run(
            ScriptContext::BucketSelector,
            json!("params.s.intValue() % 2 == 0"),
            &[("s", Some(4.0))],
        );
        assert_eq!(v.unwrap().to_java_string(), "true");
    }

    #[test]
    fn return_types_as_painless_checks_them() {
        let reason = |context, source: &str| {
            let e = run(context, json!(source), &[("s", Some(1.0))]).unwrap_err();
            e.cause().unwrap().reason().to_string()
        };
        assert_eq!(
            reason(ScriptContext::BucketScript, "'x'"),
            "Cannot cast from [java.lang.String] to [java.lang.Number]."
        );
        assert_eq!(
            reason(ScriptContext::BucketScript, "params.s > 1"),
            "Cannot cast from [boolean] to [java.lang.Number]."
        );
        assert_eq!(
            reason(ScriptContext::BucketSelector, "params.s"),
            "cannot cast def [double] to boolean"
        );
        assert_eq!(
            reason(ScriptContext::BucketSelector, "1"),
            "Cannot cast from [int] to [boolean]."
        );
    }
}
