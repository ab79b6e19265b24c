//! Rollover (`POST /{target}/_rollover[/{new_index}]`): when its conditions hold (or when
//! there are none), a data stream gets its next backing index, or an alias's write index is
//! replaced by a new index (named after the old one's counter, `logs-000001` →
//! `logs-000002`, unless a name is given) that takes the alias's writes.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tessera_common::settings::Settings;
use tessera_common::{Error, Result};
use tessera_index::aliases::{parse_aliases, AliasMetadata, Aliases};
use tessera_index::IndexService;
use tessera_mapping::Mapping;

use crate::custom::CustomChange;
use crate::data_streams::{self, BackingIndex, DataStreamChange};
use crate::Node;

/// One condition, with the text it was given in (the response names it so).
#[derive(Clone, Debug, PartialEq)]
enum Condition {
    Docs(u64),
    Age(String, u64),
    Size(String, u64),
    PrimaryShardSize(String, u64),
}

impl Condition {
    fn label(&self) -> String {
        match self {
            Condition::Docs(n) => format!("[max_docs: {n}]"),
            Condition::Age(text, _) => format!("[max_age: {text}]"),
            Condition::Size(text, _) => format!("[max_size: {text}]"),
            Condition::PrimaryShardSize(text, _) => {
                format!("[max_primary_shard_size: {text}]")
            }
        }
    }

    fn met(&self, stats: &IndexStats) -> bool {
        match self {
            Condition::Docs(n) => stats.docs >= *n,
            Condition::Age(_, millis) => stats.age_millis >= *millis,
            Condition::Size(_, bytes) => stats.primary_bytes >= *bytes,
            Condition::PrimaryShardSize(_, bytes) => stats.largest_primary_shard >= *bytes,
        }
    }
}

/// The figures of the index being rolled over that the conditions look at.
#[derive(Clone, Copy, Debug, Default)]
struct IndexStats {
    docs: u64,
    age_millis: u64,
    primary_bytes: u64,
    largest_primary_shard: u64,
}

/// A rollover request's body.
#[derive(Debug, Default)]
pub struct RolloverRequest {
    conditions: Vec<Condition>,
    settings: Settings,
    mappings: Option<Mapping>,
    aliases: Aliases,
}

fn parse_error(reason: String) -> Error {
    Error::new("x_content_parse_exception", 400, reason)
}

impl RolloverRequest {
    pub fn parse(body: Option<&Value>) -> Result<RolloverRequest> {
        let mut request = RolloverRequest::default();
        let Some(body) = body else {
            return Ok(request);
        };
        let Some(object) = body.as_object() else {
            return Err(Error::parsing("request body must be an object"));
        };
        for (key, value) in object {
            match key.as_str() {
                "conditions" => request.conditions = parse_conditions(value)?,
                "settings" => request.settings = Settings::from_json(value)?.with_prefix("index."),
                "mappings" => request.mappings = Some(Mapping::parse(value)?),
                "aliases" => request.aliases = parse_aliases(value)?,
                other => {
                    return Err(parse_error(format!("[rollover] unknown field [{other}]")));
                }
            }
        }
        Ok(request)
    }
}

fn parse_conditions(value: &Value) -> Result<Vec<Condition>> {
    let Some(object) = value.as_object() else {
        return Err(parse_error("[conditions] must be an object".into()));
    };
    let text = |value: &Value| match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut out = Vec::new();
    for (key, value) in object {
        let condition = match key.as_str() {
            "max_docs" => Condition::Docs(
                value
                    .as_u64()
                    .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
                    .ok_or_else(|| Error::illegal_argument("[max_docs] must be a number"))?,
            ),
            "max_age" => {
                let text = text(value);
                let millis = tessera_common::time::parse_time_value(&text, "max_age")?
                    .ok_or_else(|| Error::illegal_argument("[max_age] must be positive"))?;
                Condition::Age(text, millis)
            }
            "max_size" => {
                let text = text(value);
                let bytes = tessera_common::settings::parse_byte_size(&text, "max_size")?;
                Condition::Size(text, bytes)
            }
            "max_primary_shard_size" => {
                let text = text(value);
                let bytes =
                    tessera_common::settings::parse_byte_size(&text, "max_primary_shard_size")?;
                Condition::PrimaryShardSize(text, bytes)
            }
            other => {
                return Err(
                    parse_error("[rollover] failed to parse field [conditions]".into())
                        .caused_by(parse_error(format!("[conditions] unknown field [{other}]"))),
                )
            }
        };
        out.push(condition);
    }
    Ok(out)
}

/// The name after `index` in its series: its trailing counter plus one, six digits.
pub fn next_index_name(index: &str) -> Result<String> {
    let counter = index
        .rsplit_once('-')
        .filter(|(_, digits)| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()));
    let Some((prefix, digits)) = counter else {
        return Err(Error::illegal_argument(format!(
            "index name [{index}] does not match pattern '^.*-\\d+$'"
        )));
    };
    let next = digits.parse::<u64>().map_err(|_| {
        Error::illegal_argument(format!("index name [{index}] has too large a counter"))
    })? + 1;
    Ok(format!("{prefix}-{next:06}"))
}

/// What a rollover's target is.
enum Target {
    Stream(data_streams::DataStream),
    Alias {
        alias: String,
        definition: AliasMetadata,
    },
}

impl Node {
    /// `POST /{target}/_rollover[/{new_index}]` (`dry_run`: only evaluate): the response.
    pub async fn rollover(
        self: &Arc<Self>,
        target: &str,
        new_index: Option<&str>,
        request: RolloverRequest,
        dry_run: bool,
    ) -> Result<Value> {
        let state = self.cluster_state();
        let (kind, old) = match data_streams::get(&state, target) {
            Some(stream) => {
                if new_index.is_some() {
                    return Err(Error::illegal_argument(format!(
                        "new index name [{}] is not allowed when rolling over the data stream [{target}]",
                        new_index.unwrap_or_default()
                    )));
                }
                let old = stream
                    .write_index()
                    .map(|b| b.index_name.clone())
                    .ok_or_else(|| data_streams::missing(target))?;
                (Target::Stream(stream), old)
            }
            None => {
                let aliases = self.alias_table();
                let written = if aliases.contains(target) {
                    aliases.write_index(target).map_err(|_| {
                        Error::illegal_argument(format!(
                            "rollover target [{target}] does not point to a write index"
                        ))
                    })?
                } else {
                    None
                };
                let Some((old, definition)) = written else {
                    return Err(Error::illegal_argument(format!(
                        "rollover target [{target}] does not exist"
                    )));
                };
                let kind = Target::Alias {
                    alias: target.to_string(),
                    definition: definition.clone(),
                };
                (kind, old.to_string())
            }
        };
        let new = match (&kind, new_index) {
            (Target::Stream(stream), _) => {
                data_streams::backing_index_name(&stream.name, stream.generation + 1)
            }
            (Target::Alias { .. }, Some(name)) => name.to_string(),
            (Target::Alias { .. }, None) => next_index_name(&old)?,
        };
        let old_index = self
            .index(&old)
            .ok_or_else(|| Error::index_not_found(&old))?;
        let stats = self.rollover_stats(&old_index).await?;
        let results: Map<String, Value> = request
            .conditions
            .iter()
            .map(|c| (c.label(), Value::Bool(c.met(&stats))))
            .collect();
        let roll =
            request.conditions.is_empty() || request.conditions.iter().any(|c| c.met(&stats));
        let answer = |rolled: bool| {
            json!({
                "acknowledged": rolled,
                "shards_acknowledged": rolled,
                "old_index": old,
                "new_index": new,
                "rolled_over": rolled,
                "dry_run": dry_run,
                "conditions": results,
            })
        };
        if dry_run || !roll {
            return Ok(answer(false));
        }
        if self.index_or_alias_exists(&new) {
            return Err(Error::resource_already_exists(
                &new,
                &self
                    .index(&new)
                    .map(|i| i.metadata().uuid.clone())
                    .unwrap_or_else(|| "_na_".into()),
            ));
        }
        let node = self.clone();
        let (old_name, new_name) = (old.clone(), new.clone());
        self.pools
            .management
            .run(move || node.roll(kind, &old_name, &new_name, request))
            .await?;
        Ok(answer(true))
    }

    async fn rollover_stats(self: &Arc<Self>, index: &Arc<IndexService>) -> Result<IndexStats> {
        let counts = self.shard_counts(vec![index.clone()]).await?;
        let mut stats = IndexStats {
            age_millis: (tessera_common::time::now_millis() - index.metadata().creation_date).max(0)
                as u64,
            ..IndexStats::default()
        };
        for counts in counts.values().filter(|c| c.primary) {
            stats.docs += counts.docs;
            stats.primary_bytes += counts.store_bytes;
            stats.largest_primary_shard = stats.largest_primary_shard.max(counts.store_bytes);
        }
        Ok(stats)
    }

    /// Makes the new index and moves the writes to it.
    fn roll(&self, kind: Target, old: &str, new: &str, request: RolloverRequest) -> Result<()> {
        match kind {
            Target::Stream(stream) => {
                let index = self.create_backing_index(&stream.name, new, &self.cluster_state())?;
                let change = DataStreamChange::AddBacking {
                    name: stream.name.clone(),
                    index: BackingIndex {
                        index_name: new.to_string(),
                        index_uuid: index.metadata().uuid.clone(),
                    },
                    generation: stream.generation + 1,
                };
                self.update_custom(CustomChange::DataStreams(change))
            }
            Target::Alias { alias, definition } => {
                let mapping = request.mappings.unwrap_or_default();
                self.create_index_with(new, request.settings, mapping, request.aliases)?;
                let mut moved = definition.to_json();
                moved["index"] = json!(new);
                moved["alias"] = json!(alias);
                let actions = if definition.is_write_index == Some(true) {
                    let mut kept = moved.clone();
                    kept["index"] = json!(old);
                    kept["is_write_index"] = json!(false);
                    json!([{"add": moved}, {"add": kept}])
                } else {
                    json!([{"remove": {"index": old, "alias": alias}}, {"add": moved}])
                };
                self.update_aliases(&json!({ "actions": actions }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_count_on() {
        assert_eq!(next_index_name("logs-000001").unwrap(), "logs-000002");
        assert_eq!(next_index_name("a-b-9").unwrap(), "a-b-000010");
        assert_eq!(
            next_index_name("r2").unwrap_err().reason(),
            "index name [r2] does not match pattern '^.*-\\d+$'"
        );
        assert!(next_index_name("logs-").is_err());
    }

    #[test]
    fn conditions_parse_and_evaluate() {
        let request = RolloverRequest::parse(Some(
            &json!({"conditions": {"max_docs": 5, "max_age": "1d", "max_size": "1gb"}}),
        ))
        .unwrap();
        let labels: Vec<String> = request.conditions.iter().map(Condition::label).collect();
        assert_eq!(
            labels,
            ["[max_docs: 5]", "[max_age: 1d]", "[max_size: 1gb]"],
            "in the order given"
        );
        let stats = IndexStats {
            docs: 5,
            ..IndexStats::default()
        };
        let met: Vec<bool> = request.conditions.iter().map(|c| c.met(&stats)).collect();
        assert_eq!(met, [true, false, false]);
        let unknown =
            RolloverRequest::parse(Some(&json!({"conditions": {"bogus": 1}}))).unwrap_err();
        assert_eq!(unknown.kind(), "x_content_parse_exception");
        assert!(RolloverRequest::parse(Some(&json!({"wat": 1}))).is_err());
    }
}
