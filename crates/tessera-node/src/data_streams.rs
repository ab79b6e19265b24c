//! Data streams, as OpenSearch has them: a name for an append-only series of hidden backing
//! indices (`.ds-<name>-000001`, …) created by an index template with `data_stream`. A search
//! of the stream reads every backing index; a write goes to the newest (the write index) and
//! must be a create carrying `@timestamp`; a rollover adds the next backing index.
//!
//! A stream is a custom document of the cluster state (`data_stream/<name>`); its backing
//! indices are ordinary indices. Creating a stream creates its first backing index, then
//! records the stream ([`DataStreamChange::Create`], refused if another node recorded it
//! first); a rollover likewise creates the next index, then records it.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tessera_cluster::ClusterState;
use tessera_common::settings::Settings;
use tessera_common::{Error, Result};
use tessera_index::aliases::Aliases;
use tessera_index::IndexService;
use tessera_mapping::Mapping;

use crate::custom::CustomChange;
use crate::Node;

pub const DATA_STREAMS: &str = "data_stream/";
/// The timestamp field of every stream (OpenSearch's only choice by default).
pub const TIMESTAMP_FIELD: &str = "@timestamp";

/// One backing index of a stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackingIndex {
    pub index_name: String,
    pub index_uuid: String,
}

/// A data stream: its backing indices, oldest first (the last is the write index).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataStream {
    pub name: String,
    pub indices: Vec<BackingIndex>,
    pub generation: u64,
    /// The index template that made it.
    pub template: String,
}

impl DataStream {
    pub fn write_index(&self) -> Option<&BackingIndex> {
        self.indices.last()
    }

    /// As `GET /_data_stream` shows it (the health comes from the caller).
    pub fn to_json(&self, status: &str) -> Value {
        json!({
            "name": self.name,
            "timestamp_field": {"name": TIMESTAMP_FIELD},
            "indices": self.indices,
            "generation": self.generation,
            "status": status,
            "template": self.template,
        })
    }
}

/// `.ds-<stream>-<generation, six digits>`.
pub fn backing_index_name(stream: &str, generation: u64) -> String {
    format!(".ds-{stream}-{generation:06}")
}

/// Every stream of `state`, by name.
pub fn streams(state: &ClusterState) -> BTreeMap<String, DataStream> {
    state
        .custom_under(DATA_STREAMS)
        .filter_map(|(name, doc)| {
            let stream = serde_json::from_value::<DataStream>(doc.clone());
            if let Err(e) = &stream {
                eprintln!("cannot read the data stream [{name}]: {e}");
            }
            stream.ok().map(|s| (name.to_string(), s))
        })
        .collect()
}

pub fn get(state: &ClusterState, name: &str) -> Option<DataStream> {
    let doc = state.custom.get(&format!("{DATA_STREAMS}{name}"))?;
    serde_json::from_value(doc.0.as_ref().clone()).ok()
}

/// The stream a backing index belongs to.
pub fn stream_of_index(state: &ClusterState, index: &str) -> Option<DataStream> {
    streams(state)
        .into_values()
        .find(|s| s.indices.iter().any(|b| b.index_name == index))
}

/// The name of the index template with `data_stream` that a stream named `name` takes.
pub fn template_for(name: &str, state: &ClusterState) -> Option<String> {
    crate::templates::matching_index_template(name, state)
        .filter(|(_, template)| !template["data_stream"].is_null())
        .map(|(template, _)| template.to_string())
}

/// The settings, mapping and aliases of a new backing index of the stream `name`: its
/// template's, hidden, with the timestamp field a date.
pub fn backing_index_parts(
    name: &str,
    state: &ClusterState,
) -> Result<(Settings, Mapping, Aliases)> {
    let mut settings = Settings::new();
    settings.set("index.hidden", "true");
    let mapping = Mapping::parse(&json!({"properties": {TIMESTAMP_FIELD: {"type": "date"}}}))?;
    match crate::templates::for_new_index(name, state) {
        Some(templates) => templates.under(settings, mapping, Aliases::new()),
        None => Err(no_template(name)),
    }
}

pub fn no_template(name: &str) -> Error {
    Error::illegal_argument(format!(
        "no matching index template found for data stream [{name}]"
    ))
}

/// A document written to a stream carries one timestamp (OpenSearch checks it when it parses
/// the document; a stream's writes are checked before they are routed).
pub fn check_timestamp(source: &[u8]) -> Result<()> {
    let missing = || {
        Error::mapper_parsing("failed to parse").caused_by(Error::illegal_argument(format!(
            "documents must contain a single-valued timestamp field '{TIMESTAMP_FIELD}' of date type"
        )))
    };
    let doc: Value = serde_json::from_slice(source).map_err(|_| missing())?;
    match doc.get(TIMESTAMP_FIELD) {
        Some(Value::String(_)) | Some(Value::Number(_)) => Ok(()),
        _ => Err(missing()),
    }
}

/// The only writes a stream takes: creates.
pub fn create_only() -> Error {
    Error::illegal_argument("only write ops with an op_type of create are allowed in data streams")
}

/// A change of the streams, decided against the state.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum DataStreamChange {
    /// Records a new stream (its first backing index already exists).
    Create { stream: DataStream },
    /// Records the next backing index of a rollover, as generation `generation`.
    AddBacking {
        name: String,
        index: BackingIndex,
        generation: u64,
    },
    /// Forgets a backing index that was deleted.
    RemoveBacking { name: String, index_name: String },
    /// Forgets streams (their backing indices are deleted by the caller).
    Delete { names: Vec<String> },
}

impl DataStreamChange {
    pub fn decide(&self, state: &ClusterState) -> Result<Vec<(String, Option<Value>)>> {
        let key = |name: &str| format!("{DATA_STREAMS}{name}");
        let doc = |stream: &DataStream| serde_json::to_value(stream).expect("a stream serialises");
        match self {
            DataStreamChange::Create { stream } => {
                if get(state, &stream.name).is_some() {
                    return Err(Error::new(
                        "resource_already_exists_exception",
                        400,
                        format!("data_stream [{}] already exists", stream.name),
                    ));
                }
                Ok(vec![(key(&stream.name), Some(doc(stream)))])
            }
            DataStreamChange::AddBacking {
                name,
                index,
                generation,
            } => {
                let mut stream = get(state, name).ok_or_else(|| missing(name))?;
                if stream.generation + 1 != *generation {
                    return Err(Error::new(
                        "concurrent_modification_exception",
                        409,
                        format!("data stream [{name}] was rolled over concurrently"),
                    ));
                }
                stream.indices.push(index.clone());
                stream.generation = *generation;
                Ok(vec![(key(name), Some(doc(&stream)))])
            }
            DataStreamChange::RemoveBacking { name, index_name } => {
                let Some(mut stream) = get(state, name) else {
                    return Ok(Vec::new());
                };
                stream.indices.retain(|b| b.index_name != *index_name);
                Ok(vec![(key(name), Some(doc(&stream)))])
            }
            DataStreamChange::Delete { names } => {
                Ok(names.iter().map(|name| (key(name), None)).collect())
            }
        }
    }
}

/// A stream that is not there (OpenSearch answers an index_not_found_exception).
pub fn missing(name: &str) -> Error {
    Error::index_not_found(name)
}

/// The streams whose names match `names` (all when `None`); a name without a wildcard that
/// matches none is missing.
pub fn select(state: &ClusterState, names: Option<&str>) -> Result<Vec<DataStream>> {
    let all = streams(state);
    let Some(names) = names else {
        return Ok(all.into_values().collect());
    };
    let mut out: Vec<DataStream> = Vec::new();
    for pattern in names.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let found: Vec<&DataStream> = all
            .values()
            .filter(|s| {
                pattern == "_all" || tessera_mapping::dynamic::simple_match(pattern, &s.name)
            })
            .collect();
        if found.is_empty() && !pattern.contains('*') && pattern != "_all" {
            return Err(missing(pattern));
        }
        for stream in found {
            if !out.iter().any(|s| s.name == stream.name) {
                out.push(stream.clone());
            }
        }
    }
    Ok(out)
}

/// What a node does with streams.
impl Node {
    /// `PUT /_data_stream/{name}`: creates the stream and its first backing index, from the
    /// index template with `data_stream` that matches the name.
    pub fn create_data_stream(&self, name: &str) -> Result<()> {
        crate::resolve::validate_index_name(name)?;
        let state = self.cluster_state();
        let template = template_for(name, &state).ok_or_else(|| no_template(name))?;
        if get(&state, name).is_some() {
            return Err(Error::new(
                "resource_already_exists_exception",
                400,
                format!("data_stream [{name}] already exists"),
            ));
        }
        if self.index_or_alias_exists(name) {
            return Err(Error::illegal_argument(format!(
                "data_stream [{name}] conflicts with an existing index or alias"
            )));
        }
        let backing = backing_index_name(name, 1);
        let index = self.create_backing_index(name, &backing, &state)?;
        let stream = DataStream {
            name: name.to_string(),
            indices: vec![BackingIndex {
                index_name: backing,
                index_uuid: index.metadata().uuid.clone(),
            }],
            generation: 1,
            template,
        };
        self.update_custom(CustomChange::DataStreams(DataStreamChange::Create {
            stream,
        }))
    }

    /// A backing index of the stream `name`: created, or taken as it is when it exists (a
    /// node that creates the same stream at the same time, or a creation cut short before
    /// the stream was recorded).
    pub(crate) fn create_backing_index(
        &self,
        name: &str,
        backing: &str,
        state: &ClusterState,
    ) -> Result<Arc<IndexService>> {
        let (settings, mapping, aliases) = backing_index_parts(name, state)?;
        match self.create_index_exact(backing, settings, mapping, aliases) {
            Ok(index) => Ok(index),
            Err(e) if e.kind() == "resource_already_exists_exception" => {
                self.index(backing).ok_or(e)
            }
            Err(e) => Err(e),
        }
    }

    /// Creates the stream a write to `name` makes, when a data stream template matches it and
    /// indices may be created automatically; whether there is a stream now.
    pub fn auto_create_data_stream(&self, name: &str) -> Result<bool> {
        if template_for(name, &self.cluster_state()).is_none() || !self.auto_create_allowed(name) {
            return Ok(false);
        }
        match self.create_data_stream(name) {
            Ok(()) => Ok(true),
            // made by another write meanwhile
            Err(e) if e.kind() == "resource_already_exists_exception" => Ok(true),
            Err(e) => Err(e),
        }
    }

    /// `DELETE /_data_stream/{name}`: the streams and all their backing indices.
    pub fn delete_data_streams(&self, names: &str) -> Result<()> {
        let streams = select(&self.cluster_state(), Some(names))?;
        let indices: Vec<String> = streams
            .iter()
            .flat_map(|s| s.indices.iter().map(|b| b.index_name.clone()))
            .collect();
        self.delete_names(&indices)?;
        let names = streams.into_iter().map(|s| s.name).collect();
        self.update_custom(CustomChange::DataStreams(DataStreamChange::Delete {
            names,
        }))
    }

    /// Before indices are deleted: the write index of a stream may not be; the streams that
    /// lose another backing index, to forget it afterwards.
    pub(crate) fn backing_indices_deleted(
        &self,
        names: &[String],
    ) -> Result<Vec<DataStreamChange>> {
        let state = self.cluster_state();
        let mut changes = Vec::new();
        for name in names {
            let Some(stream) = stream_of_index(&state, name) else {
                continue;
            };
            if stream.write_index().is_some_and(|w| w.index_name == *name) {
                return Err(Error::illegal_argument(format!(
                    "index [{name}] is the write index for data stream [{}] and cannot be deleted",
                    stream.name
                )));
            }
            changes.push(DataStreamChange::RemoveBacking {
                name: stream.name,
                index_name: name.clone(),
            });
        }
        Ok(changes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(generation: u64) -> DataStream {
        DataStream {
            name: "logs".into(),
            indices: (1..=generation)
                .map(|g| BackingIndex {
                    index_name: backing_index_name("logs", g),
                    index_uuid: format!("u{g}"),
                })
                .collect(),
            generation,
            template: "t".into(),
        }
    }

    fn state_with(stream: &DataStream) -> ClusterState {
        ClusterState::empty("c", "u")
            .builder()
            .put_custom(
                &format!("{DATA_STREAMS}{}", stream.name),
                Some(serde_json::to_value(stream).unwrap()),
            )
            .build()
    }

    #[test]
    fn names_and_rendering() {
        assert_eq!(backing_index_name("logs", 2), ".ds-logs-000002");
        let rendered = stream(2).to_json("GREEN");
        assert_eq!(rendered["indices"][1]["index_name"], ".ds-logs-000002");
        assert_eq!(rendered["timestamp_field"]["name"], "@timestamp");
        assert_eq!(stream(2).write_index().unwrap().index_uuid, "u2");
    }

    #[test]
    fn changes_see_the_state() {
        let state = state_with(&stream(1));
        assert_eq!(get(&state, "logs"), Some(stream(1)));
        let again = DataStreamChange::Create { stream: stream(1) }
            .decide(&state)
            .unwrap_err();
        assert_eq!(again.kind(), "resource_already_exists_exception");
        let next = DataStreamChange::AddBacking {
            name: "logs".into(),
            index: stream(2).indices[1].clone(),
            generation: 2,
        };
        let docs = next.decide(&state).unwrap();
        assert_eq!(docs[0].1.as_ref().unwrap()["generation"], 2);
        let stale = DataStreamChange::AddBacking {
            name: "logs".into(),
            index: stream(3).indices[2].clone(),
            generation: 3,
        };
        assert_eq!(stale.decide(&state).unwrap_err().status(), 409);
        assert_eq!(
            stream_of_index(&state, ".ds-logs-000001").unwrap().name,
            "logs"
        );
        assert!(select(&state, Some("nope")).is_err());
        assert_eq!(select(&state, Some("lo*")).unwrap().len(), 1);
    }

    #[test]
    fn timestamps_are_required() {
        assert!(check_timestamp(br#"{"@timestamp": "2026-01-01T00:00:00Z"}"#).is_ok());
        assert!(check_timestamp(br#"{"@timestamp": 1767225600000}"#).is_ok());
        let missing = check_timestamp(br#"{"m": 1}"#).unwrap_err();
        assert_eq!(missing.kind(), "mapper_parsing_exception");
        assert!(check_timestamp(br#"{"@timestamp": ["a", "b"]}"#).is_err());
    }
}
