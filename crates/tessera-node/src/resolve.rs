//! Index names: validation on create, and resolution of index expressions (`a,b`, `logs-*`,
//! `_all`, `-excluded`, aliases) with OpenSearch's `ignore_unavailable` / `allow_no_indices`
//! rules.

use std::collections::BTreeMap;

use tessera_common::{Error, Result};

/// Options that change how missing indices are treated.
#[derive(Clone, Copy, Debug)]
pub struct ResolveOptions {
    pub ignore_unavailable: bool,
    pub allow_no_indices: bool,
    /// For document APIs OpenSearch names the resource `index_expression`.
    pub document_api: bool,
}

impl Default for ResolveOptions {
    fn default() -> Self {
        ResolveOptions {
            ignore_unavailable: false,
            allow_no_indices: true,
            document_api: false,
        }
    }
}

/// Rejects names OpenSearch would reject, with its messages.
pub fn validate_index_name(name: &str) -> Result<()> {
    const FORBIDDEN: &[char] = &['\\', '/', '*', '?', '"', '<', '>', '|', ' ', ',', '#', ':'];
    if name.is_empty() {
        return Err(Error::invalid_index_name(name, "must not be empty"));
    }
    if name.chars().any(|c| FORBIDDEN.contains(&c)) {
        return Err(Error::invalid_index_name(
            name,
            "must not contain the following characters [ , \", *, \\, <, |, ,, >, /, ?]",
        ));
    }
    if name.contains('#') {
        return Err(Error::invalid_index_name(name, "must not contain '#'"));
    }
    if name.starts_with(['_', '-', '+']) {
        return Err(Error::invalid_index_name(
            name,
            "must not start with '_', '-', or '+'",
        ));
    }
    if name.chars().any(|c| c.is_uppercase()) {
        return Err(Error::invalid_index_name(name, "must be lowercase"));
    }
    if name == "." || name == ".." {
        return Err(Error::invalid_index_name(name, "must not be '.' or '..'"));
    }
    if name.len() > 255 {
        return Err(Error::invalid_index_name(
            name,
            &format!("index name is too long, ({} > 255)", name.len()),
        ));
    }
    Ok(())
}

fn wildcard_match(pattern: &str, name: &str) -> bool {
    tessera_mapping::dynamic::simple_match(pattern, name)
}

/// The index names an expression selects, in the order given (deduplicated); aliases are not
/// looked at (see [`select`]).
pub fn resolve_names(
    expression: &str,
    existing: &[String],
    options: &ResolveOptions,
) -> Result<Vec<String>> {
    Ok(select(expression, existing, &AliasNames::new(), options)?.indices)
}

/// Each alias with the indices it points to.
pub type AliasNames = BTreeMap<String, Vec<String>>;

/// What an index expression selects.
#[derive(Debug, Default, PartialEq)]
pub struct Selection {
    /// The concrete indices, in the order given (deduplicated).
    pub indices: Vec<String>,
    /// For each index selected only through aliases, those aliases (an index also named
    /// itself, or matched by a wildcard, is not here: it is searched whole).
    pub through: BTreeMap<String, Vec<String>>,
}

impl Selection {
    fn add_index(&mut self, name: &str) {
        self.through.remove(name);
        if !self.indices.iter().any(|n| n == name) {
            self.indices.push(name.to_string());
        }
    }

    fn add_alias(&mut self, alias: &str, indices: &[String]) {
        for index in indices {
            if !self.indices.iter().any(|n| n == index) {
                self.indices.push(index.clone());
                self.through.insert(index.clone(), Vec::new());
            }
            if let Some(aliases) = self.through.get_mut(index) {
                if !aliases.iter().any(|a| a == alias) {
                    aliases.push(alias.to_string());
                }
            }
        }
    }

    fn exclude(&mut self, pattern: &str, aliases: &AliasNames) {
        let mut excluded: Vec<&String> = Vec::new();
        for (alias, indices) in aliases {
            if wildcard_match(pattern, alias) {
                excluded.extend(indices);
            }
        }
        self.indices
            .retain(|name| !wildcard_match(pattern, name) && !excluded.contains(&name));
        let indices = &self.indices;
        self.through.retain(|name, _| indices.contains(name));
    }
}

/// Resolves an expression (`a,b`, `logs-*`, `_all`, `-excluded`) over the indices and the
/// aliases: a name is an index or an alias (which selects its indices), a wildcard matches
/// both, as in OpenSearch.
pub fn select(
    expression: &str,
    existing: &[String],
    aliases: &AliasNames,
    options: &ResolveOptions,
) -> Result<Selection> {
    let mut out = Selection::default();
    let expression = expression.trim();
    let parts: Vec<&str> = if expression.is_empty() || expression == "_all" {
        vec!["*"]
    } else {
        expression
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect()
    };
    let all = parts == ["*"];
    let mut wildcard_seen = false;
    for part in parts {
        if let Some(excluded) = part.strip_prefix('-').filter(|_| wildcard_seen) {
            out.exclude(excluded, aliases);
            continue;
        }
        if part == "_all" || part.contains('*') {
            wildcard_seen = true;
            let visible = |name: &str| !name.starts_with('.') || part.starts_with('.');
            for name in existing {
                if visible(name) && wildcard_match(part, name) {
                    out.add_index(name);
                }
            }
            // `_all` means every index, whole: its aliases add nothing
            if !all && part != "_all" {
                for (alias, indices) in aliases {
                    if visible(alias) && wildcard_match(part, alias) {
                        out.add_alias(alias, indices);
                    }
                }
            }
            continue;
        }
        if existing.iter().any(|n| n == part) {
            out.add_index(part);
        } else if let Some(indices) = aliases.get(part) {
            out.add_alias(part, indices);
        } else if !options.ignore_unavailable {
            let mut error = Error::index_not_found(part);
            if options.document_api {
                error = Error::new(
                    "index_not_found_exception",
                    404,
                    format!("no such index [{part}]"),
                )
                .with_meta("index", part)
                .with_meta("resource.id", part)
                .with_meta("resource.type", "index_expression")
                .with_meta("index_uuid", "_na_");
            }
            return Err(error);
        }
    }
    if out.indices.is_empty() && !options.allow_no_indices {
        return Err(Error::index_not_found(expression));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        ["logs-1", "logs-2", "metrics", ".hidden"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    #[test]
    fn validation_messages() {
        assert!(validate_index_name("logs").is_ok());
        assert_eq!(
            validate_index_name("Logs").unwrap_err().reason(),
            "Invalid index name [Logs], must be lowercase"
        );
        assert!(validate_index_name("_x")
            .unwrap_err()
            .reason()
            .contains("must not start with '_', '-', or '+'"));
        assert!(validate_index_name("a*b")
            .unwrap_err()
            .reason()
            .contains("must not contain"));
        assert!(validate_index_name("..").is_err());
        assert!(validate_index_name(&"a".repeat(256)).is_err());
    }

    #[test]
    fn resolution() {
        let opts = ResolveOptions::default();
        assert_eq!(
            resolve_names("logs-*", &names(), &opts).unwrap(),
            ["logs-1", "logs-2"]
        );
        assert_eq!(
            resolve_names("_all", &names(), &opts).unwrap(),
            ["logs-1", "logs-2", "metrics"]
        );
        assert_eq!(
            resolve_names("*,-logs-2", &names(), &opts).unwrap(),
            ["logs-1", "metrics"]
        );
        assert_eq!(
            resolve_names("metrics,logs-1,metrics", &names(), &opts).unwrap(),
            ["metrics", "logs-1"]
        );
        assert_eq!(
            resolve_names("missing", &names(), &opts)
                .unwrap_err()
                .status(),
            404
        );
        let lenient = ResolveOptions {
            ignore_unavailable: true,
            ..opts
        };
        assert_eq!(
            resolve_names("missing,metrics", &names(), &lenient).unwrap(),
            ["metrics"]
        );
        assert!(resolve_names("nothing-*", &names(), &opts)
            .unwrap()
            .is_empty());
        let strict = ResolveOptions {
            allow_no_indices: false,
            ..opts
        };
        assert!(resolve_names("nothing-*", &names(), &strict).is_err());
        assert_eq!(
            resolve_names(".hid*", &names(), &opts).unwrap(),
            [".hidden"]
        );
    }

    #[test]
    fn aliases_select_their_indices_and_remember_the_way() {
        let aliases: AliasNames = [
            (
                "logs".to_string(),
                vec!["logs-1".to_string(), "logs-2".to_string()],
            ),
            ("recent".to_string(), vec!["logs-2".to_string()]),
        ]
        .into_iter()
        .collect();
        let opts = ResolveOptions::default();
        let picked = select("logs", &names(), &aliases, &opts).unwrap();
        assert_eq!(picked.indices, ["logs-1", "logs-2"]);
        assert_eq!(picked.through["logs-2"], ["logs"]);
        // named itself too: searched whole
        let picked = select("logs,logs-1", &names(), &aliases, &opts).unwrap();
        assert!(!picked.through.contains_key("logs-1"));
        assert_eq!(picked.through["logs-2"], ["logs"]);
        // two aliases reach the same index
        let picked = select("re*,logs", &names(), &aliases, &opts).unwrap();
        assert_eq!(picked.indices, ["logs-2", "logs-1"]);
        assert_eq!(picked.through["logs-2"], ["recent", "logs"]);
        // a wildcard that matches the index's own name
        let picked = select("logs*", &names(), &aliases, &opts).unwrap();
        assert!(picked.through.is_empty());
        // `_all` is every index, whole
        let picked = select("_all", &names(), &aliases, &opts).unwrap();
        assert!(picked.through.is_empty());
        let picked = select("*,-recent", &names(), &aliases, &opts).unwrap();
        assert_eq!(picked.indices, ["logs-1", "metrics"]);
    }
}
