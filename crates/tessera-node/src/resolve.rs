//! Index names: validation on create, and resolution of index expressions (`a,b`, `logs-*`,
//! `_all`, `-excluded`) with OpenSearch's `ignore_unavailable` / `allow_no_indices` rules.

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

/// The index names an expression selects, in the order given (deduplicated).
pub fn resolve_names(
    expression: &str,
    existing: &[String],
    options: &ResolveOptions,
) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
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
    let mut wildcard_seen = false;
    for part in parts {
        if let Some(excluded) = part.strip_prefix('-').filter(|_| wildcard_seen) {
            out.retain(|name| !wildcard_match(excluded, name));
            continue;
        }
        if part == "_all" || part.contains('*') {
            wildcard_seen = true;
            for name in existing {
                let visible = !name.starts_with('.') || part.starts_with('.');
                if visible && wildcard_match(part, name) && !out.contains(name) {
                    out.push(name.clone());
                }
            }
            continue;
        }
        if existing.iter().any(|n| n == part) {
            if !out.iter().any(|n| n == part) {
                out.push(part.to_string());
            }
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
    if out.is_empty() && !options.allow_no_indices {
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
}
