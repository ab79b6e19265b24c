//! `POST /_reindex` as a [`BulkByScroll`] request: the documents of `source` (one index,
//! several, or a pattern; `query`, `_source` filtering, `size` per batch) are indexed into
//! `dest.index` under their own ids, created there like a `_bulk` creates an index. With
//! `dest.op_type: create` a document already there is a version conflict; `dest.routing`
//! keeps, discards or sets each document's routing.
//!
//! A `script` (`crate::hit_script`) runs on each document first: it may change the source,
//! skip the document (`ctx.op = "noop"`), delete the destination's copy (`delete`), or write it
//! elsewhere (`ctx._index`, `ctx._id`, `ctx._routing`).
//!
//! What Tessera lacks is refused with a 400 rather than ignored: `source.remote` (reindex from
//! another cluster) and `dest.pipeline` (no ingest node).

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value};
use tessera_common::error::json_token;
use tessera_common::ids::{index_id_problems, MAX_ID_BYTES};
use tessera_common::{Error, Result};
use tessera_index::{Conditions, DocWrite};
use tessera_script::Value as ScriptValue;
use tessera_search::coordinator::Hit;

use crate::bulk_by_scroll::{BulkByScroll, Conflicts, Kind, Options, ToWrite};
use crate::by_query::parse_max_docs;
use crate::hit_script::{HitOp, HitScript};
use crate::search_service::SearchTarget;
use crate::write::Operation;
use crate::{Node, ResolveOptions};

/// `dest.routing`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Routing {
    /// The source document's routing (the default).
    Keep,
    Discard,
    /// `=value`.
    Set(String),
}

impl Routing {
    pub fn parse(text: &str) -> Result<Routing> {
        match text {
            "keep" => Ok(Routing::Keep),
            "discard" => Ok(Routing::Discard),
            _ => match text.strip_prefix('=') {
                Some(value) => Ok(Routing::Set(value.to_string())),
                None => Err(Error::illegal_argument(format!(
                    "[routing] must be [keep], [discard] or [=<something>] but was [{text}]"
                ))),
            },
        }
    }

    fn of(&self, hit: &Hit) -> Option<String> {
        match self {
            Routing::Keep => hit._routing.clone(),
            Routing::Discard => None,
            Routing::Set(value) => Some(value.clone()),
        }
    }
}

/// The parsed `dest`.
#[derive(Clone, Debug)]
struct Dest {
    index: Option<String>,
    create: bool,
    routing: Routing,
}

fn unknown_field(object: &str, key: &str) -> Error {
    let inner = Error::x_content_parse(format!("[{object}] unknown field [{key}]"));
    if object == "reindex" {
        inner
    } else {
        Error::x_content_parse(format!("[reindex] failed to parse field [{object}]"))
            .caused_by(inner)
    }
}

fn string_of(value: &Value, field: &str) -> Result<String> {
    value.as_str().map(String::from).ok_or_else(|| {
        Error::x_content_parse(format!(
            "[{field}] expected a string but found [{}]",
            json_token(value)
        ))
    })
}

fn parse_dest(value: &Value) -> Result<Dest> {
    let object = value
        .as_object()
        .ok_or_else(|| Error::x_content_parse("[reindex] failed to parse field [dest]"))?;
    let mut dest = Dest {
        index: None,
        create: false,
        routing: Routing::Keep,
    };
    for (key, value) in object {
        match key.as_str() {
            "index" => dest.index = Some(string_of(value, "index")?),
            "op_type" => {
                dest.create = match value.as_str() {
                    Some("index") => false,
                    Some("create") => true,
                    _ => {
                        let found = value.as_str().map_or(value.to_string(), String::from);
                        return Err(Error::x_content_parse(
                            "[reindex] failed to parse field [dest]",
                        )
                        .caused_by(
                            Error::x_content_parse("[dest] failed to parse field [op_type]")
                                .caused_by(Error::illegal_argument(format!(
                                    "opType must be 'create' or 'index', found: [{found}]"
                                ))),
                        ));
                    }
                }
            }
            "routing" => dest.routing = Routing::parse(&string_of(value, "routing")?)?,
            "version_type" => match value.as_str() {
                Some("internal") => {}
                _ => {
                    return Err(Error::not_supported(&format!(
                        "[dest.version_type] other than [internal] (found [{}])",
                        value.as_str().map_or(value.to_string(), String::from)
                    )))
                }
            },
            "pipeline" => {
                return Err(Error::not_supported(
                    "[dest.pipeline] (Tessera has no ingest pipelines)",
                ))
            }
            "type" => {}
            other => return Err(unknown_field("dest", other)),
        }
    }
    Ok(dest)
}

/// The source's index names: a string (comma-separated) or a list.
fn source_indices(value: &Value) -> Result<Vec<String>> {
    let names: Vec<String> = match value {
        Value::String(text) => text.split(',').map(String::from).collect(),
        Value::Array(items) => items
            .iter()
            .map(|item| string_of(item, "index"))
            .collect::<Result<_>>()?,
        other => return Err(string_of(other, "index").unwrap_err()),
    };
    Ok(names
        .into_iter()
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .collect())
}

/// Parses a `_reindex` body (`options` holds the URL's parameters) into its request.
pub fn reindex(node: &Arc<Node>, body: &Value, mut options: Options) -> Result<BulkByScroll> {
    let object = body
        .as_object()
        .ok_or_else(|| Error::x_content_parse("[reindex] expected an object"))?;
    let mut indices: Vec<String> = Vec::new();
    let mut search = Map::new();
    let mut dest = None;
    let mut script = None;
    for (key, value) in object {
        match key.as_str() {
            "source" => {
                let source = value.as_object().ok_or_else(|| {
                    Error::x_content_parse("[reindex] failed to parse field [source]")
                })?;
                for (key, value) in source {
                    match key.as_str() {
                        "index" => indices = source_indices(value)?,
                        "remote" => {
                            return Err(Error::not_supported(
                                "reindex from a remote cluster ([source.remote])",
                            ))
                        }
                        "size" => {
                            options.batch_size =
                                value.as_u64().filter(|size| *size > 0).ok_or_else(|| {
                                    Error::illegal_argument(format!(
                                        "[size] must be a positive number, found [{value}]"
                                    ))
                                })?
                        }
                        "type" => {}
                        _ => {
                            search.insert(key.clone(), value.clone());
                        }
                    }
                }
            }
            "dest" => dest = Some(parse_dest(value)?),
            "max_docs" | "size" => options.max_docs = Some(parse_max_docs(value)?),
            "conflicts" => {
                options.conflicts = Conflicts::parse(&string_of(value, "conflicts")?)?;
            }
            "script" => script = Some(HitScript::new(node, "reindex", value)?),
            other => return Err(unknown_field("reindex", other)),
        }
    }
    let mut problems = Vec::new();
    if indices.is_empty() {
        problems.push("use _all if you really want to copy from all existing indexes".to_string());
    }
    let dest = dest.unwrap_or(Dest {
        index: None,
        create: false,
        routing: Routing::Keep,
    });
    let dest_index = dest.index.clone().unwrap_or_default();
    if dest_index.is_empty() {
        problems.push("index must be specified".to_string());
    }
    if !problems.is_empty() {
        return Err(Error::action_request_validation(&problems));
    }
    let expression = indices.join(",");
    let resolve = ResolveOptions {
        ignore_unavailable: false,
        allow_no_indices: true,
        document_api: false,
    };
    let resolved: Vec<String> = node
        .resolve(&expression, &resolve)?
        .iter()
        .map(|index| index.name())
        .collect();
    if resolved.contains(&dest_index) {
        return Err(Error::action_request_validation(&[format!(
            "reindex cannot write into an index its reading from [{dest_index}]"
        )]));
    }
    let to_write: ToWrite = {
        let dest_index = dest_index.clone();
        Arc::new(move |hit: &Hit| {
            let id = hit
                ._id
                .clone()
                .ok_or_else(|| Error::illegal_state("a hit without an _id"))?;
            let conditions = Conditions {
                create_only: dest.create,
                ..Conditions::default()
            };
            let Some(script) = &script else {
                let source = hit
                    ._source
                    .as_ref()
                    .map(|source| Bytes::copy_from_slice(source.get().as_bytes()))
                    .unwrap_or_else(|| Bytes::from_static(b"{}"));
                return Ok(Some(Operation {
                    index: dest_index.clone(),
                    write: DocWrite::Index {
                        id: Some(id),
                        auto_generated_id: false,
                        source,
                        routing: dest.routing.of(hit),
                        conditions,
                    },
                }));
            };
            let applied = script.apply(hit)?;
            let text = |value: ScriptValue| (!value.is_null()).then(|| value.to_java_string());
            let index = match applied.index {
                None => dest_index.clone(),
                Some(value) => text(value).ok_or_else(|| {
                    Error::illegal_argument("Can't reindex without a destination index!")
                })?,
            };
            let id = applied.id.map_or(Some(id), text);
            let routing = applied.routing.map_or_else(|| dest.routing.of(hit), text);
            let write = match applied.op {
                HitOp::Noop => return Ok(None),
                HitOp::Delete => DocWrite::Delete {
                    id: id.ok_or_else(|| {
                        Error::action_request_validation(&["id is missing".to_string()])
                    })?,
                    routing,
                    conditions,
                },
                // OpenSearch's bulk validation refuses the whole request for a long id
                HitOp::Index if id.as_deref().is_some_and(|id| id.len() > MAX_ID_BYTES) => {
                    let problems = index_id_problems(id.as_deref().unwrap_or_default());
                    return Err(Error::action_request_validation(&problems));
                }
                HitOp::Index => DocWrite::Index {
                    id,
                    auto_generated_id: false,
                    source: serde_json::to_vec(&applied.source)
                        .map_err(|e| Error::internal("write a document", e))?
                        .into(),
                    routing,
                    conditions,
                },
            };
            Ok(Some(Operation { index, write }))
        })
    };
    Ok(BulkByScroll {
        kind: Kind::Reindex,
        description: format!("reindex from [{}] to [{dest_index}]", indices.join(", ")),
        source: SearchTarget {
            expression,
            options: resolve,
            routing: None,
            preference: crate::preference::Preference::none(),
        },
        search,
        search_params: Default::default(),
        options,
        refresh_targets: vec![dest_index],
        written_to: Default::default(),
        to_write,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn routing_commands_parse() {
        assert_eq!(Routing::parse("keep").unwrap(), Routing::Keep);
        assert_eq!(Routing::parse("discard").unwrap(), Routing::Discard);
        assert_eq!(Routing::parse("=a").unwrap(), Routing::Set("a".into()));
        assert!(Routing::parse("other").is_err());
    }

    #[test]
    fn dest_is_parsed_with_opensearch_errors() {
        let dest =
            parse_dest(&json!({"index": "d", "op_type": "create", "routing": "=r"})).unwrap();
        assert_eq!(dest.index.as_deref(), Some("d"));
        assert!(dest.create);
        assert_eq!(dest.routing, Routing::Set("r".into()));
        let e = parse_dest(&json!({"index": "d", "op_type": "foo"})).unwrap_err();
        assert_eq!(e.kind(), "x_content_parse_exception");
        assert_eq!(
            e.cause().unwrap().cause().unwrap().reason(),
            "opType must be 'create' or 'index', found: [foo]"
        );
        let e = parse_dest(&json!({"index": "d", "bogus": 1})).unwrap_err();
        assert_eq!(e.cause().unwrap().reason(), "[dest] unknown field [bogus]");
        let e = parse_dest(&json!({"index": "d", "pipeline": "p"})).unwrap_err();
        assert_eq!(e.status(), 400);
    }

    #[test]
    fn source_indices_accept_strings_and_lists() {
        assert_eq!(source_indices(&json!("a, b")).unwrap(), ["a", "b"]);
        assert_eq!(source_indices(&json!(["a", "c*"])).unwrap(), ["a", "c*"]);
        assert!(source_indices(&json!(1)).is_err());
    }

    #[test]
    fn bodies_are_validated_before_anything_runs() {
        let dir = tempfile::tempdir().unwrap();
        let node = crate::write::tests::start(dir.path());
        crate::write::tests::create(&node, "src", 1);
        let problems = |body: Value| {
            reindex(&node, &body, Options::default())
                .err()
                .unwrap()
                .reason()
                .to_string()
        };
        assert_eq!(
            problems(json!({"source": {"index": "src"}})),
            "Validation Failed: 1: index must be specified;"
        );
        assert_eq!(
            problems(json!({"dest": {"index": "d"}})),
            "Validation Failed: 1: use _all if you really want to copy from all existing indexes;"
        );
        assert_eq!(
            problems(json!({"source": {"index": "src"}, "dest": {"index": "src"}})),
            "Validation Failed: 1: reindex cannot write into an index its reading from [src];"
        );
        assert_eq!(
            problems(json!({"source": {"index": "src"}, "dest": {"index": "d"}, "bogus": 1})),
            "[reindex] unknown field [bogus]"
        );
        assert!(problems(
            json!({"source": {"index": "src", "remote": {}}, "dest": {"index": "d"}})
        )
        .contains("not supported"));
        assert!(problems(
            json!({"source": {"index": "src"}, "dest": {"index": "d"}, "script": {"source": "ctx._id +"}})
        )
        .contains("compile error"));
        let request = reindex(
            &node,
            &json!({"source": {"index": "src", "size": 10, "query": {"match_all": {}}},
                    "dest": {"index": "d"}, "max_docs": 5, "conflicts": "proceed"}),
            Options::default(),
        )
        .ok()
        .unwrap();
        assert_eq!(request.options.batch_size, 10);
        assert_eq!(request.options.max_docs, Some(5));
        assert_eq!(request.options.conflicts, Conflicts::Proceed);
        assert_eq!(request.search.keys().collect::<Vec<_>>(), ["query"]);
        assert_eq!(request.refresh_targets, ["d"]);
    }
}
