//! Snapshot repositories (`PUT /_snapshot/{repo}`): named places to keep snapshots. Only
//! OpenSearch's `fs` type exists: a directory under one of the node's `path.repo` roots, which
//! every node of a cluster must see at the same path (a shared file system). A repository is a
//! custom document of the cluster state (`repository/<name>`), so every node knows it and it
//! outlives restarts; its snapshots live in its directory (`super::store`).

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tessera_cluster::ClusterState;
use tessera_common::{Error, Result};

pub const REPOSITORIES: &str = "repository/";

/// A registered repository, as `GET /_snapshot` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repository {
    #[serde(rename = "type")]
    pub kind: String,
    /// The settings as given, every value a string.
    pub settings: Map<String, Value>,
}

impl Repository {
    /// A `PUT /_snapshot/{name}` body, checked: type `fs`, a `location` under one of
    /// `path_repo`.
    pub fn parse(name: &str, body: &Value, path_repo: &[PathBuf]) -> Result<Repository> {
        let Some(object) = body.as_object() else {
            return Err(Error::parsing("request body is required"));
        };
        for key in object.keys() {
            if key != "type" && key != "settings" {
                return Err(Error::parsing(format!("unknown field [{key}]")));
            }
        }
        let kind = match &body["type"] {
            Value::String(kind) => kind.clone(),
            _ => {
                return Err(Error::new(
                    "action_request_validation_exception",
                    400,
                    "Validation Failed: 1: type is missing;",
                ))
            }
        };
        if kind != "fs" {
            return Err(repository_exception(
                name,
                format!("repository type [{kind}] does not exist"),
            ));
        }
        let mut settings = Map::new();
        if let Some(given) = body["settings"].as_object() {
            flatten("", given, &mut settings);
        }
        let repository = Repository { kind, settings };
        repository
            .location(name, path_repo)
            .map_err(|e| repository_exception(name, "failed to create repository").caused_by(e))?;
        Ok(repository)
    }

    /// The repository's directory: `location`, relative to the first `path.repo` root when not
    /// absolute, and under one of the roots.
    pub fn location(&self, name: &str, path_repo: &[PathBuf]) -> Result<PathBuf> {
        let Some(location) = self.settings.get("location").and_then(Value::as_str) else {
            return Err(repository_exception(name, "missing location"));
        };
        let outside = || {
            repository_exception(
                name,
                format!(
                    "location [{location}] doesn't match any of the locations specified by path.repo"
                ),
            )
        };
        let given = Path::new(location);
        let resolved = match (given.is_absolute(), path_repo.first()) {
            (true, _) => normalize(given),
            (false, Some(root)) => normalize(&root.join(given)),
            (false, None) => return Err(outside()),
        };
        if path_repo
            .iter()
            .any(|root| resolved.starts_with(normalize(root)))
        {
            Ok(resolved)
        } else {
            Err(outside())
        }
    }

    pub fn to_json(&self) -> Value {
        serde_json::json!({"type": self.kind, "settings": self.settings})
    }
}

/// Nested settings as dotted keys, every value a string (as OpenSearch shows them).
fn flatten(prefix: &str, object: &Map<String, Value>, out: &mut Map<String, Value>) {
    for (key, value) in object {
        let key = format!("{prefix}{key}");
        match value {
            Value::Object(inner) => flatten(&format!("{key}."), inner, out),
            Value::String(s) => {
                out.insert(key, Value::String(s.clone()));
            }
            Value::Array(items) => {
                let items = items
                    .iter()
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                    .map(Value::String)
                    .collect();
                out.insert(key, Value::Array(items));
            }
            other => {
                out.insert(key, Value::String(other.to_string()));
            }
        }
    }
}

/// `path` without `.` and `..` components (lexically: a location may not exist yet).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

pub fn repository_exception(name: &str, reason: impl std::fmt::Display) -> Error {
    Error::new("repository_exception", 500, format!("[{name}] {reason}"))
}

pub fn repository_missing(name: &str) -> Error {
    Error::new(
        "repository_missing_exception",
        404,
        format!("[{name}] missing"),
    )
}

/// Every repository of `state`, by name.
pub fn repositories(state: &ClusterState) -> Vec<(String, Repository)> {
    state
        .custom_under(REPOSITORIES)
        .filter_map(|(name, doc)| {
            serde_json::from_value::<Repository>(doc.clone())
                .ok()
                .map(|r| (name.to_string(), r))
        })
        .collect()
}

pub fn get(state: &ClusterState, name: &str) -> Result<Repository> {
    let doc = state
        .custom
        .get(&format!("{REPOSITORIES}{name}"))
        .ok_or_else(|| repository_missing(name))?;
    serde_json::from_value(doc.0.as_ref().clone()).map_err(|_| repository_missing(name))
}

/// The repositories `names` selects (`_all`, `*`, patterns, a list; all when `None`); a name
/// without a wildcard that matches none is missing.
pub fn select(state: &ClusterState, names: Option<&str>) -> Result<Vec<(String, Repository)>> {
    let all = repositories(state);
    let Some(names) = names else {
        return Ok(all);
    };
    let mut out: Vec<(String, Repository)> = Vec::new();
    for pattern in names.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let wildcard = pattern == "_all" || pattern.contains('*');
        let found: Vec<_> = all
            .iter()
            .filter(|(name, _)| {
                pattern == "_all" || tessera_mapping::dynamic::simple_match(pattern, name)
            })
            .collect();
        if found.is_empty() && !wildcard {
            return Err(repository_missing(pattern));
        }
        for (name, repository) in found {
            if !out.iter().any(|(n, _)| n == name) {
                out.push((name.clone(), repository.clone()));
            }
        }
    }
    Ok(out)
}

/// `POST /_snapshot/{repo}/_verify`: the directory exists (created if needed) and takes a
/// file written and removed.
pub fn verify(name: &str, location: &Path) -> Result<()> {
    let failed = |e: std::io::Error| {
        Error::new(
            "repository_verification_exception",
            500,
            format!("[{name}] cannot write to [{}]: {e}", location.display()),
        )
    };
    std::fs::create_dir_all(location).map_err(failed)?;
    let probe = location.join(format!("tests-{}.dat", tessera_common::ids::random_uuid()));
    std::fs::write(&probe, b"verify").map_err(failed)?;
    std::fs::remove_file(&probe).map_err(failed)
}

/// What a node does with repositories.
impl crate::Node {
    /// `PUT /_snapshot/{name}`: registers (or replaces) a repository; its directory is created.
    pub fn put_repository(&self, name: &str, body: &Value) -> Result<()> {
        let repository = Repository::parse(name, body, &self.config.path_repo)?;
        let location = repository.location(name, &self.config.path_repo)?;
        verify(name, &location)
            .map_err(|e| repository_exception(name, "failed to create repository").caused_by(e))?;
        self.update_custom(crate::custom::CustomChange::Snapshots(
            super::SnapshotChange::put_repository(name, &repository),
        ))
    }

    /// `DELETE /_snapshot/{names}`: unregisters repositories (their directories stay).
    pub fn delete_repositories(&self, names: &str) -> Result<()> {
        let names = select(&self.cluster_state(), Some(names))?
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        self.update_custom(crate::custom::CustomChange::Snapshots(
            super::SnapshotChange::DeleteRepository { names },
        ))
    }

    /// `POST /_snapshot/{name}/_verify`: this node can write to the repository's directory.
    pub fn verify_repository(&self, name: &str) -> Result<()> {
        let repository = get(&self.cluster_state(), name)?;
        verify(name, &repository.location(name, &self.config.path_repo)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn locations_must_be_under_path_repo() {
        let roots = vec![PathBuf::from("/srv/repos")];
        let parse = |body: Value| Repository::parse("r", &body, &roots);
        let fs =
            parse(json!({"type": "fs", "settings": {"location": "a", "compress": true}})).unwrap();
        assert_eq!(fs.settings["compress"], "true");
        assert_eq!(
            fs.location("r", &roots).unwrap(),
            PathBuf::from("/srv/repos/a")
        );
        let outside = parse(json!({"type": "fs", "settings": {"location": "/tmp/x"}})).unwrap_err();
        assert_eq!(outside.kind(), "repository_exception");
        assert_eq!(outside.reason(), "[r] failed to create repository");
        let escape = parse(json!({"type": "fs", "settings": {"location": "../x"}})).unwrap_err();
        assert_eq!(escape.kind(), "repository_exception");
        let unknown = parse(json!({"type": "s3x", "settings": {}})).unwrap_err();
        assert_eq!(unknown.reason(), "[r] repository type [s3x] does not exist");
        assert!(parse(json!({"type": "fs", "settings": {}})).is_err());
        assert!(Repository::parse(
            "r",
            &json!({"type": "fs", "settings": {"location": "a"}}),
            &[]
        )
        .is_err());
    }

    #[test]
    fn selection_by_name_and_pattern() {
        let doc = json!({"type": "fs", "settings": {"location": "a"}});
        let state = ClusterState::empty("c", "u")
            .builder()
            .put_custom("repository/one", Some(doc.clone()))
            .put_custom("repository/two", Some(doc))
            .build();
        assert_eq!(select(&state, None).unwrap().len(), 2);
        assert_eq!(select(&state, Some("_all")).unwrap().len(), 2);
        assert_eq!(select(&state, Some("t*")).unwrap()[0].0, "two");
        assert_eq!(select(&state, Some("nope")).unwrap_err().status(), 404);
        assert!(select(&state, Some("n*")).unwrap().is_empty());
        assert_eq!(get(&state, "one").unwrap().kind, "fs");
    }

    #[test]
    fn verify_writes_and_removes_a_probe() {
        let dir = tempfile::tempdir().unwrap();
        verify("r", &dir.path().join("new")).unwrap();
        assert_eq!(
            std::fs::read_dir(dir.path().join("new")).unwrap().count(),
            0
        );
    }
}
