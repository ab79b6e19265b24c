//! Index templates, as OpenSearch has them: composable index templates (`_index_template`,
//! built from component templates, `_component_template`, chosen by `priority`) and legacy
//! templates (`_template`, all that match applied in `order`). They are custom documents of
//! the cluster state (`index_template/<name>`, `component_template/<name>`,
//! `template/<name>`), changed by one decision of the cluster manager ([`TemplateChange`]),
//! and applied when an index is created, explicitly or by a write ([`for_new_index`]): the
//! templates' settings, mappings and aliases first, the request's on top.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tessera_cluster::ClusterState;
use tessera_common::settings::Settings;
use tessera_common::{Error, Result};
use tessera_index::aliases::{aliases_json, parse_aliases, Aliases};
use tessera_mapping::Mapping;

pub const INDEX_TEMPLATES: &str = "index_template/";
pub const COMPONENT_TEMPLATES: &str = "component_template/";
pub const LEGACY_TEMPLATES: &str = "template/";

/// The three kinds of templates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TemplateKind {
    Index,
    Component,
    Legacy,
}

impl TemplateKind {
    fn prefix(self) -> &'static str {
        match self {
            TemplateKind::Index => INDEX_TEMPLATES,
            TemplateKind::Component => COMPONENT_TEMPLATES,
            TemplateKind::Legacy => LEGACY_TEMPLATES,
        }
    }

    /// What OpenSearch's messages call this kind.
    fn noun(self) -> &'static str {
        match self {
            TemplateKind::Component => "component template",
            _ => "index template",
        }
    }

    fn missing(self, name: &str) -> Error {
        Error::new(
            "index_template_missing_exception",
            404,
            format!("index_template [{name}] missing"),
        )
    }
}

/// A change of the templates, decided by the cluster manager against the state.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum TemplateChange {
    /// Creates or replaces a template (`create`: only creates). The body is JSON text.
    Put {
        kind: TemplateKind,
        name: String,
        body: String,
        create: bool,
    },
    /// Deletes templates by name or pattern.
    Delete { kind: TemplateKind, names: String },
}

/// The template part (settings, mappings, aliases) shared by every kind, validated.
#[derive(Clone, Debug, Default, PartialEq)]
struct Parts {
    /// `index.`-prefixed, flat.
    settings: Settings,
    mappings: Option<Value>,
    aliases: Aliases,
}

impl Parts {
    fn parse(name: &str, settings: &Value, mappings: &Value, aliases: &Value) -> Result<Parts> {
        let invalid = |e: Error| {
            Error::new(
                "invalid_index_template_exception",
                400,
                format!("index_template [{name}] invalid, cause [{}]", e.reason()),
            )
        };
        let settings = match settings {
            Value::Null => Settings::new(),
            value => Settings::from_json(value)
                .map_err(invalid)?
                .with_prefix("index."),
        };
        tessera_index::index_settings::validate(&settings, false, name).map_err(|e| {
            invalid(Error::illegal_argument(format!(
                "Validation Failed: 1: {};",
                e.reason()
            )))
        })?;
        let mappings = match mappings {
            Value::Null => None,
            Value::Object(m) if m.is_empty() => None,
            value => {
                Mapping::parse(value).map_err(|e| {
                    Error::mapper_parsing(format!("Failed to parse mapping [_doc]: {}", e.reason()))
                        .caused_by(e)
                })?;
                Some(value.clone())
            }
        };
        let aliases = parse_aliases(aliases)?;
        for (alias, definition) in &aliases {
            tessera_index::aliases::validate_alias_name(alias)?;
            if let Some(filter) = &definition.filter {
                crate::aliases::check_filter(alias, filter)?;
            }
        }
        Ok(Parts {
            settings,
            mappings,
            aliases,
        })
    }

    fn from_stored(stored: &Value) -> Parts {
        Parts {
            settings: Settings::from_json(&stored["settings"]).unwrap_or_default(),
            mappings: stored.get("mappings").filter(|m| !m.is_null()).cloned(),
            aliases: parse_aliases(&stored["aliases"]).unwrap_or_default(),
        }
    }

    /// The stored form: flat settings.
    fn stored(&self) -> Value {
        let mut out = Map::new();
        if !self.settings.is_empty() {
            out.insert("settings".into(), self.settings.to_flat_json());
        }
        if let Some(mappings) = &self.mappings {
            out.insert("mappings".into(), mappings.clone());
        }
        if !self.aliases.is_empty() {
            out.insert("aliases".into(), aliases_json(&self.aliases));
        }
        Value::Object(out)
    }

    /// As OpenSearch renders it: nested settings with string values.
    fn rendered(&self, all: bool) -> Value {
        let mut out = Map::new();
        if all || !self.settings.is_empty() {
            out.insert("settings".into(), self.settings.to_nested_json());
        }
        if all || self.mappings.is_some() {
            out.insert(
                "mappings".into(),
                self.mappings.clone().unwrap_or_else(|| json!({})),
            );
        }
        if all || !self.aliases.is_empty() {
            out.insert("aliases".into(), aliases_json(&self.aliases));
        }
        Value::Object(out)
    }

    /// Lays `other` over this one: its settings and aliases win, its mappings merge in.
    fn layer(&mut self, other: &Parts) {
        self.settings.merge(&other.settings);
        if let Some(mappings) = &other.mappings {
            match &mut self.mappings {
                Some(current) => deep_merge(current, mappings),
                None => self.mappings = Some(mappings.clone()),
            }
        }
        for (alias, definition) in &other.aliases {
            self.aliases.insert(alias.clone(), definition.clone());
        }
    }
}

/// Merges `over` into `base`: objects key by key, anything else replaced.
fn deep_merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(key) {
                    Some(current) => deep_merge(current, value),
                    None => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (base, over) => *base = over.clone(),
    }
}

fn parse_error(reason: String) -> Error {
    Error::new("x_content_parse_exception", 400, reason)
}

fn patterns_of(value: &Value) -> Result<Vec<String>> {
    match value {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(String::from)
                    .ok_or_else(|| Error::illegal_argument("[index_patterns] must be strings"))
            })
            .collect(),
        Value::Null => Err(Error::illegal_argument("Required [index_patterns]")),
        _ => Err(Error::illegal_argument(
            "[index_patterns] must be a string or an array of strings",
        )),
    }
}

fn optional_number(body: &Value, key: &str) -> Result<Option<i64>> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_i64()
            .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
            .map(Some)
            .ok_or_else(|| Error::illegal_argument(format!("[{key}] must be a number"))),
    }
}

fn object_body(body: &str) -> Result<Map<String, Value>> {
    match serde_json::from_str::<Value>(body) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(Error::parsing("request body must be an object")),
        Err(e) => Err(Error::parsing(format!("failed to parse the template: {e}"))),
    }
}

fn check_keys(object: &Map<String, Value>, what: &str, known: &[&str]) -> Result<()> {
    match object.keys().find(|key| !known.contains(&key.as_str())) {
        Some(key) => Err(parse_error(format!("[{what}] unknown field [{key}]"))),
        None => Ok(()),
    }
}

/// The `template` of an index or component template: settings, mappings and aliases.
fn template_part(name: &str, template: &Value) -> Result<Parts> {
    if let Value::Object(t) = template {
        check_keys(t, "template", &["settings", "mappings", "aliases"])?;
    }
    Parts::parse(
        name,
        &template["settings"],
        &template["mappings"],
        &template["aliases"],
    )
}

/// A composable index template, validated, in its stored form.
fn parse_index_template(name: &str, body: &str) -> Result<Value> {
    let body = object_body(body)?;
    check_keys(
        &body,
        "index_template",
        &[
            "index_patterns",
            "template",
            "composed_of",
            "priority",
            "version",
            "_meta",
            "data_stream",
        ],
    )?;
    let data_stream = match body.get("data_stream") {
        None | Some(Value::Null) => None,
        Some(Value::Object(spec)) => {
            check_keys(spec, "data_stream", &["timestamp_field"])?;
            let field = spec
                .get("timestamp_field")
                .and_then(|f| f["name"].as_str())
                .unwrap_or(crate::data_streams::TIMESTAMP_FIELD);
            if field != crate::data_streams::TIMESTAMP_FIELD {
                return Err(Error::illegal_argument(format!(
                    "[timestamp_field] [{field}] is not supported: data streams use [{}]",
                    crate::data_streams::TIMESTAMP_FIELD
                )));
            }
            Some(json!({"timestamp_field": {"name": field}}))
        }
        Some(_) => return Err(parse_error("[data_stream] must be an object".into())),
    };
    let patterns = patterns_of(body.get("index_patterns").unwrap_or(&Value::Null))?;
    let template = body.get("template").cloned().unwrap_or(Value::Null);
    let parts = template_part(name, &template)?;
    let composed_of: Vec<String> = match body.get("composed_of") {
        None | Some(Value::Null) => Vec::new(),
        Some(value) => patterns_of(value)?,
    };
    let mut stored = Map::new();
    stored.insert("index_patterns".into(), json!(patterns));
    if !template.is_null() {
        stored.insert("template".into(), parts.stored());
    }
    stored.insert("composed_of".into(), json!(composed_of));
    if let Some(priority) = optional_number(&Value::Object(body.clone()), "priority")? {
        if priority < 0 {
            return Err(Error::illegal_argument(
                "index template priority requires a value greater than or equal to 0",
            ));
        }
        stored.insert("priority".into(), json!(priority));
    }
    if let Some(version) = optional_number(&Value::Object(body.clone()), "version")? {
        stored.insert("version".into(), json!(version));
    }
    if let Some(meta) = body.get("_meta") {
        stored.insert("_meta".into(), meta.clone());
    }
    if let Some(data_stream) = data_stream {
        stored.insert("data_stream".into(), data_stream);
    }
    Ok(Value::Object(stored))
}

fn parse_component_template(name: &str, body: &str) -> Result<Value> {
    let body = object_body(body)?;
    check_keys(
        &body,
        "component_template",
        &["template", "version", "_meta"],
    )?;
    let Some(template) = body.get("template") else {
        return Err(Error::illegal_argument("Required [template]"));
    };
    let parts = template_part(name, template)?;
    let mut stored = Map::new();
    stored.insert("template".into(), parts.stored());
    if let Some(version) = optional_number(&Value::Object(body.clone()), "version")? {
        stored.insert("version".into(), json!(version));
    }
    if let Some(meta) = body.get("_meta") {
        stored.insert("_meta".into(), meta.clone());
    }
    Ok(Value::Object(stored))
}

fn parse_legacy_template(name: &str, body: &str) -> Result<Value> {
    let body = object_body(body)?;
    check_keys(
        &body,
        "template",
        &[
            "index_patterns",
            "order",
            "version",
            "settings",
            "mappings",
            "aliases",
        ],
    )?;
    let whole = Value::Object(body.clone());
    let patterns = patterns_of(body.get("index_patterns").unwrap_or(&Value::Null))
        .map_err(|_| Error::action_request_validation(&["index patterns are missing".into()]))?;
    let parts = Parts::parse(
        name,
        &whole["settings"],
        &whole["mappings"],
        &whole["aliases"],
    )?;
    let mut stored = match parts.stored() {
        Value::Object(stored) => stored,
        _ => Map::new(),
    };
    stored.insert("index_patterns".into(), json!(patterns));
    stored.insert(
        "order".into(),
        json!(optional_number(&whole, "order")?.unwrap_or(0)),
    );
    if let Some(version) = optional_number(&whole, "version")? {
        stored.insert("version".into(), json!(version));
    }
    Ok(Value::Object(stored))
}

fn stored_patterns(template: &Value) -> Vec<String> {
    template["index_patterns"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p.as_str().map(String::from))
        .collect()
}

fn matches(pattern: &str, name: &str) -> bool {
    tessera_mapping::dynamic::simple_match(pattern, name)
}

/// Whether two index patterns can match a common name (OpenSearch's check: either matches
/// the other as a name).
fn overlap(a: &str, b: &str) -> bool {
    matches(a, b) || matches(b, a)
}

impl TemplateChange {
    /// The custom documents to write (`Some`) or delete (`None`), by key, given `state`.
    pub fn decide(&self, state: &ClusterState) -> Result<Vec<(String, Option<Value>)>> {
        match self {
            TemplateChange::Put {
                kind,
                name,
                body,
                create,
            } => {
                if name.is_empty() || name.contains(['*', ',', ' ']) || name.starts_with('_') {
                    return Err(Error::invalid_index_name(name, "invalid template name"));
                }
                let key = format!("{}{name}", kind.prefix());
                if *create && state.custom.contains_key(&key) {
                    return Err(Error::illegal_argument(format!(
                        "{} [{name}] already exists",
                        kind.noun()
                    )));
                }
                let stored = match kind {
                    TemplateKind::Index => {
                        let stored = parse_index_template(name, body)?;
                        check_index_template(name, &stored, state)?;
                        stored
                    }
                    TemplateKind::Component => parse_component_template(name, body)?,
                    TemplateKind::Legacy => parse_legacy_template(name, body)?,
                };
                Ok(vec![(key, Some(stored))])
            }
            TemplateChange::Delete { kind, names } => {
                let mut out = Vec::new();
                for pattern in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                    let found: Vec<String> = state
                        .custom_under(kind.prefix())
                        .filter(|(name, _)| *pattern == *"_all" || matches(pattern, name))
                        .map(|(name, _)| name.to_string())
                        .collect();
                    if found.is_empty() && !pattern.contains('*') {
                        return Err(kind.missing(pattern));
                    }
                    out.extend(found);
                }
                if *kind == TemplateKind::Component {
                    check_components_unused(&out, state)?;
                }
                Ok(out
                    .into_iter()
                    .map(|name| (format!("{}{name}", kind.prefix()), None))
                    .collect())
            }
        }
    }
}

/// An index template's components must exist, and no other template of the same priority
/// may match the same names.
fn check_index_template(name: &str, stored: &Value, state: &ClusterState) -> Result<()> {
    let missing: Vec<&str> = stored["composed_of"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|c| {
            !state
                .custom
                .contains_key(&format!("{COMPONENT_TEMPLATES}{c}"))
        })
        .collect();
    if !missing.is_empty() {
        return Err(Error::new(
            "invalid_index_template_exception",
            400,
            format!(
                "index_template [{name}] invalid, cause [index template [{name}] specifies component templates [{}] that do not exist]",
                missing.join(", ")
            ),
        ));
    }
    let priority = stored["priority"].as_i64().unwrap_or(0);
    let patterns = stored_patterns(stored);
    let clashes: Vec<(&str, Vec<String>)> = state
        .custom_under(INDEX_TEMPLATES)
        .filter(|(other, template)| {
            *other != name
                && template["priority"].as_i64().unwrap_or(0) == priority
                && stored_patterns(template)
                    .iter()
                    .any(|p| patterns.iter().any(|q| overlap(p, q)))
        })
        .map(|(other, template)| (other, stored_patterns(template)))
        .collect();
    if !clashes.is_empty() {
        let names: Vec<&str> = clashes.iter().map(|(n, _)| *n).collect();
        let listed: Vec<String> = clashes
            .iter()
            .map(|(n, p)| format!("{n} => [{}]", p.join(", ")))
            .collect();
        return Err(Error::illegal_argument(format!(
            "index template [{name}] has index patterns [{}] matching patterns from existing templates [{}] with patterns ({}) that have the same priority [{priority}], multiple index templates may not match during index creation, please use a different priority",
            patterns.join(", "),
            names.join(","),
            listed.join(",")
        )));
    }
    Ok(())
}

fn check_components_unused(components: &[String], state: &ClusterState) -> Result<()> {
    let users: Vec<&str> = state
        .custom_under(INDEX_TEMPLATES)
        .filter(|(_, template)| {
            template["composed_of"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| {
                    c.as_str()
                        .is_some_and(|c| components.iter().any(|x| x == c))
                })
        })
        .map(|(name, _)| name)
        .collect();
    if users.is_empty() {
        return Ok(());
    }
    Err(Error::illegal_argument(format!(
        "component templates [{}] cannot be removed as they are still in use by index templates [{}]",
        components.join(", "),
        users.join(", ")
    )))
}

/// The composable template a new index named `name` takes (the highest priority among those
/// that match), with its name.
pub(crate) fn matching_index_template<'a>(
    name: &str,
    state: &'a ClusterState,
) -> Option<(&'a str, &'a Value)> {
    state
        .custom_under(INDEX_TEMPLATES)
        .filter(|(_, template)| stored_patterns(template).iter().any(|p| matches(p, name)))
        .max_by_key(|(_, template)| template["priority"].as_i64().unwrap_or(0))
}

/// What the templates give a new index named `name`: the composable template that matches
/// (its components, then its own part), or else every legacy template that matches, in
/// `order`; `None` when no template matches.
pub fn for_new_index(name: &str, state: &ClusterState) -> Option<TemplateParts> {
    if let Some((_, template)) = matching_index_template(name, state) {
        let mut parts = Parts::default();
        for component in template["composed_of"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if let Some(stored) = state
                .custom
                .get(&format!("{COMPONENT_TEMPLATES}{component}"))
            {
                parts.layer(&Parts::from_stored(&stored.0["template"]));
            }
        }
        parts.layer(&Parts::from_stored(&template["template"]));
        return Some(TemplateParts(parts));
    }
    let mut legacy: Vec<&Value> = state
        .custom_under(LEGACY_TEMPLATES)
        .filter(|(_, template)| stored_patterns(template).iter().any(|p| matches(p, name)))
        .map(|(_, template)| template)
        .collect();
    if legacy.is_empty() {
        return None;
    }
    legacy.sort_by_key(|template| template["order"].as_i64().unwrap_or(0));
    let mut parts = Parts::default();
    for template in legacy {
        parts.layer(&Parts::from_stored(template));
    }
    Some(TemplateParts(parts))
}

/// The settings, mappings and aliases templates give a new index.
#[derive(Debug)]
pub struct TemplateParts(Parts);

impl TemplateParts {
    /// The index's settings, mapping and aliases: the templates', with the request's on top.
    pub fn under(
        self,
        settings: Settings,
        mapping: Mapping,
        aliases: Aliases,
    ) -> Result<(Settings, Mapping, Aliases)> {
        let mut parts = self.0;
        parts.layer(&Parts {
            settings,
            mappings: Some(mapping.to_json()),
            aliases,
        });
        let mapping = match &parts.mappings {
            Some(mappings) => Mapping::parse(mappings)?,
            None => Mapping::default(),
        };
        Ok((parts.settings, mapping, parts.aliases))
    }

    /// `_simulate_index`'s `template`.
    pub fn rendered(&self) -> Value {
        self.0.rendered(true)
    }
}

/// `GET /_index_template[/{name}]`, `GET /_component_template[/{name}]`: the templates whose
/// names match `names` (all when `None`), rendered as OpenSearch does.
pub fn list(kind: TemplateKind, names: Option<&str>, state: &ClusterState) -> Result<Value> {
    let selected = select(kind, names, state);
    if selected.is_empty() {
        if let Some(names) = names {
            return Err(Error::new(
                "resource_not_found_exception",
                404,
                format!("{} matching [{names}] not found", kind.noun()),
            ));
        }
    }
    let rendered: Vec<Value> = selected
        .iter()
        .map(|(name, stored)| match kind {
            TemplateKind::Index => {
                json!({"name": name, "index_template": render_index_template(stored)})
            }
            _ => json!({"name": name, "component_template": render_component_template(stored)}),
        })
        .collect();
    Ok(match kind {
        TemplateKind::Index => json!({ "index_templates": rendered }),
        _ => json!({ "component_templates": rendered }),
    })
}

/// `GET /_template[/{name}]`: `{name: template}`, empty when nothing matches.
pub fn list_legacy(names: Option<&str>, state: &ClusterState) -> Value {
    Value::Object(
        select(TemplateKind::Legacy, names, state)
            .into_iter()
            .map(|(name, stored)| (name, render_legacy_template(&stored)))
            .collect(),
    )
}

fn select(kind: TemplateKind, names: Option<&str>, state: &ClusterState) -> Vec<(String, Value)> {
    let patterns: Vec<&str> = names
        .map(|n| n.split(',').map(str::trim).collect())
        .unwrap_or_else(|| vec!["*"]);
    state
        .custom_under(kind.prefix())
        .filter(|(name, _)| patterns.iter().any(|p| *p == "_all" || matches(p, name)))
        .map(|(name, stored)| (name.to_string(), stored.clone()))
        .collect()
}

fn render_index_template(stored: &Value) -> Value {
    let mut out = Map::new();
    out.insert("index_patterns".into(), stored["index_patterns"].clone());
    if !stored["template"].is_null() {
        out.insert(
            "template".into(),
            Parts::from_stored(&stored["template"]).rendered(false),
        );
    }
    if stored["composed_of"]
        .as_array()
        .is_some_and(|components| !components.is_empty())
    {
        out.insert("composed_of".into(), stored["composed_of"].clone());
    }
    for key in ["priority", "version", "_meta", "data_stream"] {
        if !stored[key].is_null() {
            out.insert(key.into(), stored[key].clone());
        }
    }
    Value::Object(out)
}

fn render_component_template(stored: &Value) -> Value {
    let mut out = Map::new();
    out.insert(
        "template".into(),
        Parts::from_stored(&stored["template"]).rendered(false),
    );
    for key in ["version", "_meta"] {
        if !stored[key].is_null() {
            out.insert(key.into(), stored[key].clone());
        }
    }
    Value::Object(out)
}

fn render_legacy_template(stored: &Value) -> Value {
    let mut out = Map::new();
    out.insert("order".into(), stored["order"].clone());
    if !stored["version"].is_null() {
        out.insert("version".into(), stored["version"].clone());
    }
    out.insert("index_patterns".into(), stored["index_patterns"].clone());
    if let Value::Object(parts) = Parts::from_stored(stored).rendered(true) {
        out.extend(parts);
    }
    Value::Object(out)
}

/// One row of `_cat/templates`: name, patterns, order (or priority), version, composed_of.
pub fn cat_rows(state: &ClusterState) -> Vec<[String; 5]> {
    let list = |value: &Value| {
        let items: Vec<&str> = value
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        format!("[{}]", items.join(", "))
    };
    let number = |value: &Value| value.as_i64().map(|n| n.to_string()).unwrap_or_default();
    let mut rows: Vec<[String; 5]> = state
        .custom_under(LEGACY_TEMPLATES)
        .map(|(name, t)| {
            [
                name.to_string(),
                list(&t["index_patterns"]),
                number(&t["order"]),
                number(&t["version"]),
                String::new(),
            ]
        })
        .collect();
    rows.extend(state.custom_under(INDEX_TEMPLATES).map(|(name, t)| {
        [
            name.to_string(),
            list(&t["index_patterns"]),
            t["priority"].as_i64().unwrap_or(0).to_string(),
            number(&t["version"]),
            list(&t["composed_of"]),
        ]
    }));
    rows.sort();
    rows
}

/// `_simulate_index/{name}`: what a new index of that name would get, and the other templates
/// that match it (`overlapping`); `{}` when none matches.
pub fn simulate_index(name: &str, state: &ClusterState) -> Value {
    let Some(parts) = for_new_index(name, state) else {
        return json!({});
    };
    let chosen = matching_index_template(name, state).map(|(n, _)| n.to_string());
    let overlapping: Vec<Value> = state
        .custom_under(INDEX_TEMPLATES)
        .filter(|(other, template)| {
            Some(other.to_string()) != chosen
                && stored_patterns(template).iter().any(|p| matches(p, name))
        })
        .map(|(other, template)| json!({"name": other, "index_patterns": template["index_patterns"]}))
        .collect();
    json!({"template": parts.rendered(), "overlapping": overlapping})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(state: ClusterState, change: TemplateChange) -> Result<ClusterState> {
        let docs = change.decide(&state)?;
        let mut builder = state.builder();
        for (key, doc) in docs {
            builder = builder.put_custom(&key, doc);
        }
        Ok(builder.build())
    }

    fn put(kind: TemplateKind, name: &str, body: Value) -> TemplateChange {
        TemplateChange::Put {
            kind,
            name: name.to_string(),
            body: body.to_string(),
            create: false,
        }
    }

    fn state_with_templates() -> ClusterState {
        let mut state = ClusterState::empty("c", "u");
        for change in [
            put(
                TemplateKind::Component,
                "ct1",
                json!({"template": {"settings": {"number_of_shards": 2}, "mappings": {"properties": {"a": {"type": "keyword"}}}}}),
            ),
            put(
                TemplateKind::Component,
                "ct2",
                json!({"template": {"mappings": {"properties": {"b": {"type": "long"}}}, "aliases": {"ct-alias": {}}}}),
            ),
            put(
                TemplateKind::Index,
                "t1",
                json!({"index_patterns": ["tp-*"], "priority": 5, "composed_of": ["ct1", "ct2"],
                       "template": {"settings": {"index.refresh_interval": "5s"}, "mappings": {"properties": {"c": {"type": "date"}}}}}),
            ),
            put(
                TemplateKind::Legacy,
                "lg0",
                json!({"index_patterns": ["lg-*", "tp-*"], "order": 0, "settings": {"number_of_shards": 3, "refresh_interval": "7s"}}),
            ),
            put(
                TemplateKind::Legacy,
                "lg1",
                json!({"index_patterns": ["lg-*"], "order": 1, "settings": {"number_of_shards": 2}, "aliases": {"lg-al": {}}}),
            ),
        ] {
            state = apply(state, change).unwrap();
        }
        state
    }

    #[test]
    fn a_composable_template_layers_its_components_then_itself_then_the_request() {
        let state = state_with_templates();
        let parts = for_new_index("tp-1", &state).unwrap();
        let mut request = Settings::new();
        request.set("index.number_of_shards", "1");
        let mapping = Mapping::parse(&json!({"properties": {"d": {"type": "keyword"}}})).unwrap();
        let (settings, mapping, aliases) = parts.under(request, mapping, Aliases::new()).unwrap();
        assert_eq!(settings.get_str("index.number_of_shards"), Some("1"));
        assert_eq!(settings.get_str("index.refresh_interval"), Some("5s"));
        let fields: Vec<String> = mapping.to_json()["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(fields, ["a", "b", "c", "d"]);
        assert!(aliases.contains_key("ct-alias"));
    }

    #[test]
    fn legacy_templates_apply_in_order_when_no_composable_one_matches() {
        let state = state_with_templates();
        let parts = for_new_index("lg-1", &state).unwrap();
        let (settings, _, aliases) = parts
            .under(Settings::new(), Mapping::default(), Aliases::new())
            .unwrap();
        assert_eq!(settings.get_str("index.number_of_shards"), Some("2"));
        assert_eq!(settings.get_str("index.refresh_interval"), Some("7s"));
        assert!(aliases.contains_key("lg-al"));
        assert!(for_new_index("other", &state).is_none());
    }

    #[test]
    fn changes_are_validated_as_opensearch_does() {
        let state = state_with_templates();
        let same_priority = put(
            TemplateKind::Index,
            "t2",
            json!({"index_patterns": ["tp-x*"], "priority": 5}),
        )
        .decide(&state)
        .unwrap_err();
        assert!(same_priority
            .reason()
            .starts_with("index template [t2] has index patterns [tp-x*] matching patterns from existing templates [t1] with patterns (t1 => [tp-*]) that have the same priority [5]"));
        let missing = put(
            TemplateKind::Index,
            "t3",
            json!({"index_patterns": ["zz-*"], "composed_of": ["nope"]}),
        )
        .decide(&state)
        .unwrap_err();
        assert_eq!(missing.kind(), "invalid_index_template_exception");
        let in_use = TemplateChange::Delete {
            kind: TemplateKind::Component,
            names: "ct1".into(),
        }
        .decide(&state)
        .unwrap_err();
        assert_eq!(
            in_use.reason(),
            "component templates [ct1] cannot be removed as they are still in use by index templates [t1]"
        );
        let gone = TemplateChange::Delete {
            kind: TemplateKind::Index,
            names: "nope".into(),
        }
        .decide(&state)
        .unwrap_err();
        assert_eq!(gone.status(), 404);
        let create = TemplateChange::Put {
            kind: TemplateKind::Index,
            name: "t1".into(),
            body: json!({"index_patterns": ["qq-*"]}).to_string(),
            create: true,
        }
        .decide(&state)
        .unwrap_err();
        assert_eq!(create.reason(), "index template [t1] already exists");
        let unknown = put(
            TemplateKind::Index,
            "x",
            json!({"index_patterns": ["a"], "wat": 1}),
        )
        .decide(&state)
        .unwrap_err();
        assert_eq!(unknown.kind(), "x_content_parse_exception");
        let no_patterns = put(TemplateKind::Index, "x", json!({"template": {}}))
            .decide(&state)
            .unwrap_err();
        assert_eq!(no_patterns.reason(), "Required [index_patterns]");
    }

    #[test]
    fn listings_render_as_opensearch() {
        let state = state_with_templates();
        let listed = list(TemplateKind::Index, Some("t1"), &state).unwrap();
        assert_eq!(
            listed["index_templates"][0]["index_template"]["template"]["settings"],
            json!({"index": {"refresh_interval": "5s"}})
        );
        assert!(list(TemplateKind::Index, Some("nope"), &state).is_err());
        let legacy = list_legacy(Some("lg1"), &state);
        assert_eq!(
            legacy,
            json!({"lg1": {"order": 1, "index_patterns": ["lg-*"], "settings": {"index": {"number_of_shards": "2"}}, "mappings": {}, "aliases": {"lg-al": {}}}})
        );
        let rows = cat_rows(&state);
        assert_eq!(
            rows[2],
            ["t1", "[tp-*]", "5", "", "[ct1, ct2]"].map(String::from)
        );
        assert_eq!(simulate_index("nothing", &state), json!({}));
        assert_eq!(simulate_index("tp-1", &state)["overlapping"], json!([]));
    }
}
