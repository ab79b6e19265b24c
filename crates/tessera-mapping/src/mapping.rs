//! An index's mapping: parsed and validated from OpenSearch JSON, rendered back the way
//! OpenSearch renders it, merged with updates (`PUT _mapping`, dynamic mapping).
//!
//! Parameters are kept as the (validated, normalised) JSON the user gave, so that `GET _mapping`
//! shows exactly what was set and nothing else; typed accessors supply the defaults.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use tessera_common::{Error, Result};
use tessera_date::DateFormat;

use crate::analysis::ANALYZERS;
use crate::dynamic::DynamicTemplate;
use crate::field_type::{Dynamic, FieldType};

/// The default `format` of a date field.
pub const DEFAULT_DATE_FORMAT: &str = "strict_date_optional_time||epoch_millis";
/// The default `dynamic_date_formats`.
pub const DEFAULT_DYNAMIC_DATE_FORMATS: [&str; 2] = [
    "strict_date_optional_time",
    "yyyy/MM/dd HH:mm:ss Z||yyyy/MM/dd Z",
];
/// Keyword normalizers Tessera knows (OpenSearch's built-in one).
pub const NORMALIZERS: &[&str] = &["lowercase"];

/// Renders a JSON value the way Java's `toString` would in an error message.
pub fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One field of a mapping: a leaf with parameters and multi-fields, or an object.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldMapping {
    pub field_type: FieldType,
    /// Parameters as given (validated and normalised), without `type`, `fields`, `properties`.
    pub params: Map<String, Value>,
    /// Multi-fields (`title.keyword`).
    pub fields: BTreeMap<String, FieldMapping>,
    /// Children of an object.
    pub properties: BTreeMap<String, FieldMapping>,
}

impl FieldMapping {
    pub fn leaf(field_type: FieldType) -> FieldMapping {
        FieldMapping {
            field_type,
            params: Map::new(),
            fields: BTreeMap::new(),
            properties: BTreeMap::new(),
        }
    }

    pub fn object() -> FieldMapping {
        FieldMapping::leaf(FieldType::Object)
    }

    pub fn with_param(mut self, key: &str, value: Value) -> FieldMapping {
        self.params.insert(key.to_string(), value);
        self
    }

    fn bool_param(&self, key: &str, default: bool) -> bool {
        self.params
            .get(key)
            .and_then(Value::as_bool)
            .unwrap_or(default)
    }

    pub fn index(&self) -> bool {
        self.bool_param("index", true)
    }

    pub fn doc_values(&self) -> bool {
        !self.field_type.is_text() && self.bool_param("doc_values", true)
    }

    pub fn norms(&self) -> bool {
        self.bool_param("norms", self.field_type.is_text())
    }

    pub fn coerce(&self) -> bool {
        self.bool_param("coerce", true)
    }

    pub fn ignore_malformed(&self) -> bool {
        self.bool_param("ignore_malformed", false)
    }

    pub fn ignore_above(&self) -> Option<usize> {
        self.params
            .get("ignore_above")
            .and_then(Value::as_u64)
            .map(|n| n as usize)
    }

    pub fn null_value(&self) -> Option<&Value> {
        self.params.get("null_value").filter(|v| !v.is_null())
    }

    pub fn scaling_factor(&self) -> f64 {
        self.params
            .get("scaling_factor")
            .and_then(Value::as_f64)
            .unwrap_or(1.0)
    }

    pub fn analyzer(&self) -> &str {
        self.params
            .get("analyzer")
            .and_then(Value::as_str)
            .unwrap_or("standard")
    }

    pub fn search_analyzer(&self) -> &str {
        self.params
            .get("search_analyzer")
            .and_then(Value::as_str)
            .unwrap_or_else(|| self.analyzer())
    }

    pub fn normalizer(&self) -> Option<&str> {
        self.params.get("normalizer").and_then(Value::as_str)
    }

    pub fn format(&self) -> &str {
        self.params
            .get("format")
            .and_then(Value::as_str)
            .unwrap_or(DEFAULT_DATE_FORMAT)
    }

    /// `docs`, `freqs`, `positions` or `offsets`.
    pub fn index_options(&self) -> &str {
        let default = if self.field_type.is_text() {
            "positions"
        } else {
            "docs"
        };
        self.params
            .get("index_options")
            .and_then(Value::as_str)
            .unwrap_or(default)
    }

    /// The `copy_to` targets (read for every indexed value: no allocation).
    pub fn copy_to(&self) -> impl Iterator<Item = &str> {
        let (list, single) = match self.params.get("copy_to") {
            Some(Value::Array(items)) => (items.as_slice(), None),
            Some(Value::String(s)) => (&[][..], Some(s.as_str())),
            _ => (&[][..], None),
        };
        list.iter().filter_map(Value::as_str).chain(single)
    }

    pub fn dynamic(&self) -> Option<Dynamic> {
        self.params
            .get("dynamic")
            .and_then(|v| Dynamic::parse(v, "").ok())
    }

    /// For objects: `enabled: false` keeps the object in `_source` without parsing it.
    pub fn enabled(&self) -> bool {
        self.bool_param("enabled", true)
    }

    /// Parses one field definition found at `path` (a dotted path, for messages).
    pub fn parse(path: &str, definition: &Value) -> Result<FieldMapping> {
        let Value::Object(definition) = definition else {
            return Err(Error::mapper_parsing(format!(
                "Expected map for property [type] on field [{path}] but got a class java.lang.String"
            )));
        };
        let field_type = match definition.get("type") {
            Some(Value::String(name)) => FieldType::parse(name, path)?,
            Some(other) => {
                return Err(Error::mapper_parsing(format!(
                    "No handler for type [{}] declared on field [{path}]",
                    plain(other)
                )))
            }
            None if definition.contains_key("properties")
                || definition.contains_key("dynamic")
                || definition.contains_key("enabled") =>
            {
                FieldType::Object
            }
            None => {
                return Err(Error::mapper_parsing(format!(
                    "No type specified for field [{path}]"
                )))
            }
        };
        if field_type.is_range() {
            check_range_definition(path, field_type, definition)?;
        }
        let allowed = field_type.allowed_params();
        let mut mapping = FieldMapping::leaf(field_type);
        // types whose parameters their own module checks and fills in
        let given = || -> Result<Map<String, Value>> {
            let mut given = definition.clone();
            given.remove("type");
            match given.keys().find(|k| !allowed.contains(&k.as_str())) {
                Some(key) => Err(Error::mapper_parsing(format!(
                    "unknown parameter [{key}] on mapper [{path}] of type [{}]",
                    field_type.name()
                ))),
                None => Ok(given),
            }
        };
        if field_type == FieldType::KnnVector {
            mapping.params = crate::knn::normalise(path, &given()?)?;
            return Ok(mapping);
        }
        if field_type == FieldType::Completion {
            let given = given()?;
            if given.contains_key("fields") || given.contains_key("copy_to") {
                return Err(Error::mapper_parsing(format!(
                    "[{path}]: multi-fields and copy_to are not supported by Tessera on completion fields"
                )));
            }
            mapping.params = crate::completion::normalise(path, &given)?;
            return Ok(mapping);
        }
        for (key, value) in definition {
            if key == "type" {
                continue;
            }
            if !allowed.contains(&key.as_str()) {
                return Err(Error::mapper_parsing(format!(
                    "unknown parameter [{key}] on mapper [{path}] of type [{}]",
                    field_type.name()
                )));
            }
            match key.as_str() {
                "properties" => mapping.properties = parse_properties(path, value)?,
                "fields" => {
                    let Value::Object(subs) = value else {
                        return Err(Error::mapper_parsing(format!(
                            "Expected map for property [fields] on field [{path}] but got a {}",
                            plain(value)
                        )));
                    };
                    for (name, sub) in subs {
                        let sub_path = format!("{path}.{name}");
                        let sub_mapping = FieldMapping::parse(&sub_path, sub)?;
                        if sub_mapping.field_type.is_object() {
                            return Err(Error::mapper_parsing(format!(
                                "Type [{}] cannot be used in multi field [{sub_path}]",
                                sub_mapping.field_type.name()
                            )));
                        }
                        mapping.fields.insert(name.clone(), sub_mapping);
                    }
                }
                "format" if value.as_str() == Some(DEFAULT_DATE_FORMAT) => {
                    // OpenSearch does not show the default format even when it was given
                }
                _ => {
                    let normalised = validate_param(path, field_type, key, value)?;
                    mapping.params.insert(key.clone(), normalised);
                }
            }
        }
        if field_type == FieldType::ScaledFloat && !mapping.params.contains_key("scaling_factor") {
            return Err(Error::illegal_argument(
                "Field [scaling_factor] is required",
            ));
        }
        if let Some(null_value) = mapping.params.get("null_value").cloned() {
            check_null_value(path, field_type, &null_value, &mapping)?;
        }
        Ok(mapping)
    }

    /// Renders the definition as `GET _mapping` shows it.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        // An object shows its type only when it has no properties, as OpenSearch's
        // `ObjectMapper` renders it: `{"type": "object"}` rather than `{}`, which would not parse
        // again ("No type specified for field") when the saved mapping is read back.
        if self.field_type != FieldType::Object || self.properties.is_empty() {
            out.insert("type".into(), Value::String(self.field_type.name().into()));
        }
        for (key, value) in &self.params {
            out.insert(key.clone(), value.clone());
        }
        if !self.fields.is_empty() {
            let fields = self
                .fields
                .iter()
                .map(|(k, v)| (k.clone(), v.to_json()))
                .collect();
            out.insert("fields".into(), Value::Object(fields));
        }
        if !self.properties.is_empty() {
            let props = self
                .properties
                .iter()
                .map(|(k, v)| (k.clone(), v.to_json()))
                .collect();
            out.insert("properties".into(), Value::Object(props));
        }
        Value::Object(out)
    }

    /// Merges `update` into this definition (adding fields and changing updatable parameters).
    pub fn merge(&mut self, path: &str, update: &FieldMapping) -> Result<()> {
        if self.field_type != update.field_type {
            return Err(Error::illegal_argument(format!(
                "mapper [{path}] cannot be changed from type [{}] to [{}]",
                self.field_type.name(),
                update.field_type.name()
            )));
        }
        const UPDATABLE: &[&str] = &[
            "ignore_above",
            "meta",
            "boost",
            "dynamic",
            "search_analyzer",
            "search_quote_analyzer",
            "ignore_malformed",
            "copy_to",
        ];
        let mut conflicts = Vec::new();
        for (key, value) in &update.params {
            let current = self.params.get(key);
            if current == Some(value) {
                continue;
            }
            if key == "enabled" && self.field_type.is_object() {
                if value.as_bool() != Some(self.enabled()) {
                    return Err(Error::illegal_argument(format!(
                        "the [enabled] parameter can't be updated for the object mapping [{path}]"
                    )));
                }
                continue;
            }
            if UPDATABLE.contains(&key.as_str()) {
                self.params.insert(key.clone(), value.clone());
            } else {
                let from = current
                    .map(plain)
                    .unwrap_or_else(|| default_param_text(self, key));
                conflicts.push(format!(
                    "Cannot update parameter [{key}] from [{from}] to [{}]",
                    plain(value)
                ));
            }
        }
        if !conflicts.is_empty() {
            return Err(Error::illegal_argument(format!(
                "Mapper for [{path}] conflicts with existing mapper:\n\t{}",
                conflicts.join("\n\t")
            )));
        }
        for (name, sub) in &update.fields {
            match self.fields.get_mut(name) {
                Some(existing) => existing.merge(&format!("{path}.{name}"), sub)?,
                None => {
                    self.fields.insert(name.clone(), sub.clone());
                }
            }
        }
        merge_properties(path, &mut self.properties, &update.properties)
    }
}

/// What a range type's definition may not hold, with OpenSearch's message where it refuses it
/// too.
fn check_range_definition(
    path: &str,
    field_type: FieldType,
    definition: &Map<String, Value>,
) -> Result<()> {
    if field_type != FieldType::DateRange && definition.contains_key("format") {
        return Err(Error::illegal_argument(format!(
            "field [{path}] of type [range] should not define a dateTimeFormatter unless it is a DATE type"
        )));
    }
    for key in ["fields", "copy_to"] {
        if definition.contains_key(key) {
            return Err(Error::mapper_parsing(format!(
                "[{key}] on the range field [{path}] of type [{}] is not supported by Tessera",
                field_type.name()
            )));
        }
    }
    Ok(())
}

fn default_param_text(mapping: &FieldMapping, key: &str) -> String {
    match key {
        "analyzer" | "search_analyzer" => "default".to_string(),
        "index" => mapping.index().to_string(),
        "doc_values" => mapping.doc_values().to_string(),
        "norms" => mapping.norms().to_string(),
        "format" => mapping.format().to_string(),
        "index_options" => mapping.index_options().to_string(),
        _ => "null".to_string(),
    }
}

fn merge_properties(
    parent: &str,
    into: &mut BTreeMap<String, FieldMapping>,
    update: &BTreeMap<String, FieldMapping>,
) -> Result<()> {
    for (name, field) in update {
        let path = if parent.is_empty() {
            name.clone()
        } else {
            format!("{parent}.{name}")
        };
        match into.get_mut(name) {
            Some(existing) => existing.merge(&path, field)?,
            None => {
                into.insert(name.clone(), field.clone());
            }
        }
    }
    Ok(())
}

fn as_bool_param(path: &str, key: &str, value: &Value) -> Result<Value> {
    match value {
        Value::Bool(_) => Ok(value.clone()),
        Value::String(s) if s == "true" => Ok(Value::Bool(true)),
        Value::String(s) if s == "false" => Ok(Value::Bool(false)),
        other => Err(Error::mapper_parsing(format!(
            "Failed to parse mapping [_doc]: Cannot parse value [{}] for parameter [{key}] on field [{path}]: only [true] or [false] are allowed",
            plain(other)
        ))),
    }
}

fn as_number_param(path: &str, key: &str, value: &Value, integer: bool) -> Result<Value> {
    let parsed = match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match parsed {
        Some(n) if n.is_finite() && (!integer || (n.fract() == 0.0 && n >= 0.0)) => {
            Ok(if integer {
                Value::from(n as i64)
            } else {
                serde_json::Number::from_f64(n)
                    .map(Value::Number)
                    .unwrap_or(Value::Null)
            })
        }
        _ => Err(Error::mapper_parsing(format!(
            "Cannot parse value [{}] for parameter [{key}] on field [{path}]",
            plain(value)
        ))),
    }
}

fn validate_param(path: &str, field_type: FieldType, key: &str, value: &Value) -> Result<Value> {
    match key {
        "index" | "doc_values" | "store" | "norms" | "coerce" | "ignore_malformed" | "eager_global_ordinals"
        | "index_phrases" | "enabled" | "include_in_parent" | "include_in_root" | "ignore_z_value" | "split_queries_on_whitespace" => {
            as_bool_param(path, key, value)
        }
        "fielddata" => {
            let v = as_bool_param(path, key, value)?;
            if v == Value::Bool(true) {
                return Err(Error::mapper_parsing(format!(
                    "[fielddata] on text field [{path}] is not supported by Tessera: aggregate and sort on a keyword sub-field instead"
                )));
            }
            Ok(v)
        }
        "ignore_above" | "position_increment_gap" => as_number_param(path, key, value, true),
        "boost" => as_number_param(path, key, value, false),
        "scaling_factor" => {
            let v = as_number_param(path, key, value, false)?;
            if v.as_f64().is_none_or(|f| f <= 0.0) {
                return Err(Error::illegal_argument(format!(
                    "[scaling_factor] must be a positive number, got [{}]",
                    plain(value)
                )));
            }
            Ok(v)
        }
        "analyzer" | "search_analyzer" | "search_quote_analyzer" => match value.as_str() {
            Some(name) if ANALYZERS.contains(&name) => Ok(value.clone()),
            _ => Err(Error::mapper_parsing(format!(
                "analyzer [{}] has not been configured in mappings",
                plain(value)
            ))),
        },
        "normalizer" => match value.as_str() {
            Some(name) if NORMALIZERS.contains(&name) => Ok(value.clone()),
            _ => Err(Error::mapper_parsing(format!(
                "normalizer [{}] not found for field [{path}]",
                plain(value)
            ))),
        },
        "format" => {
            let spec = value.as_str().ok_or_else(|| {
                Error::mapper_parsing(format!("Invalid format: [{}] for field [{path}]", plain(value)))
            })?;
            DateFormat::parse(spec).map_err(|e| {
                // OpenSearch reports the chain of IllegalArgumentExceptions of its parser
                let detail = e.message.rsplit_once("]: ").map(|(_, d)| d.to_string()).unwrap_or_else(|| e.message.clone());
                Error::illegal_argument(format!("Error parsing [format] on field [{path}]: {}", e.message))
                    .caused_by(Error::illegal_argument(e.message.clone()).caused_by(Error::illegal_argument(detail)))
            })?;
            Ok(value.clone())
        }
        "index_options" => match value.as_str() {
            Some("docs" | "freqs" | "positions" | "offsets") => {
                if !field_type.is_text() && value.as_str() != Some("docs") && value.as_str() != Some("freqs") {
                    return Err(Error::mapper_parsing(format!(
                        "Unknown value [{}] for field [index_options] - accepted values are [docs, freqs]",
                        plain(value)
                    )));
                }
                Ok(value.clone())
            }
            _ => Err(Error::mapper_parsing(format!(
                "Unknown value [{}] for field [index_options] - accepted values are [positions, docs, offsets, freqs]",
                plain(value)
            ))),
        },
        "similarity" => match value.as_str() {
            Some("BM25") => Ok(value.clone()),
            _ => Err(Error::mapper_parsing(format!(
                "Unknown Similarity type [{}] for field [{path}]: Tessera scores with [BM25] only",
                plain(value)
            ))),
        },
        "copy_to" => match value {
            Value::String(s) => Ok(Value::Array(vec![Value::String(s.clone())])),
            Value::Array(items) if items.iter().all(Value::is_string) => Ok(value.clone()),
            other => Err(Error::mapper_parsing(format!(
                "Cannot parse value [{}] for parameter [copy_to] on field [{path}]",
                plain(other)
            ))),
        },
        "meta" => match value {
            Value::Object(entries) if entries.values().all(Value::is_string) => Ok(value.clone()),
            _ => Err(Error::mapper_parsing(format!(
                "[meta] values can only be strings, but got {} for field [{path}]",
                plain(value)
            ))),
        },
        "dynamic" => {
            Dynamic::parse(value, path)?;
            Ok(match value {
                Value::Bool(b) => Value::String(b.to_string()),
                other => other.clone(),
            })
        }
        "locale" | "print_format" | "term_vector" => Ok(value.clone()),
        "index_prefixes" | "fielddata_frequency_filter" => match value {
            Value::Object(_) => Ok(value.clone()),
            other => Err(Error::mapper_parsing(format!(
                "Cannot parse value [{}] for parameter [{key}] on field [{path}]",
                plain(other)
            ))),
        },
        _ => Ok(value.clone()),
    }
}

fn check_null_value(
    path: &str,
    field_type: FieldType,
    value: &Value,
    mapping: &FieldMapping,
) -> Result<()> {
    if value.is_null() {
        return Ok(());
    }
    let ok = match field_type {
        t if t.is_numeric() => crate::values::to_f64(value).is_some(),
        FieldType::Boolean => crate::values::to_bool(value).is_some(),
        FieldType::Date => match value {
            Value::String(s) => DateFormat::parse(mapping.format())
                .ok()
                .and_then(|f| f.parse_millis(s, None, false).ok())
                .is_some(),
            Value::Number(_) => true,
            _ => false,
        },
        FieldType::Ip => value
            .as_str()
            .is_some_and(|s| s.parse::<std::net::IpAddr>().is_ok()),
        FieldType::Keyword => !value.is_object() && !value.is_array(),
        FieldType::Text | FieldType::MatchOnlyText => {
            return Err(Error::mapper_parsing(format!(
                "unknown parameter [null_value] on mapper [{path}] of type [text]"
            )))
        }
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(Error::mapper_parsing(format!(
            "Failed to parse mapping [_doc]: Error parsing [null_value] on field [{path}]: [{}] is not a valid [{}]",
            plain(value),
            field_type.name()
        )))
    }
}

/// Parses a `properties` object. Dotted names (`"a.b": {...}`) become nested objects.
pub fn parse_properties(parent: &str, value: &Value) -> Result<BTreeMap<String, FieldMapping>> {
    let Value::Object(entries) = value else {
        return Err(Error::mapper_parsing(format!(
            "Expected map for property [properties] on field [{}] but got a {}",
            if parent.is_empty() { "_doc" } else { parent },
            plain(value)
        )));
    };
    let mut out: BTreeMap<String, FieldMapping> = BTreeMap::new();
    for (name, definition) in entries {
        if name.is_empty() || name.split('.').any(str::is_empty) {
            return Err(Error::mapper_parsing(format!(
                "field name cannot be an empty string{}",
                if name.is_empty() {
                    String::new()
                } else {
                    format!(" in [{name}]")
                }
            )));
        }
        let mut parts: Vec<&str> = name.split('.').collect();
        let leaf_name = parts.pop().expect("split yields one part");
        let path = if parent.is_empty() {
            name.clone()
        } else {
            format!("{parent}.{name}")
        };
        check_field_name(&path, leaf_name)?;
        let mut field = FieldMapping::parse(&path, definition)?;
        // wrap `a.b.c` as a → b → c
        let mut current_name = leaf_name.to_string();
        for part in parts.iter().rev() {
            let mut object = FieldMapping::object();
            object.properties.insert(current_name, field);
            field = object;
            current_name = part.to_string();
        }
        match out.get_mut(&current_name) {
            Some(existing) => existing.merge(&current_name, &field)?,
            None => {
                out.insert(current_name, field);
            }
        }
    }
    Ok(out)
}

const METADATA_FIELDS: &[&str] = &[
    "_id",
    "_source",
    "_index",
    "_routing",
    "_seq_no",
    "_version",
    "_primary_term",
    "_field_names",
    "_ignored",
    "_doc_count",
    "_data_stream_timestamp",
];

fn check_field_name(path: &str, name: &str) -> Result<()> {
    if METADATA_FIELDS.contains(&path) {
        return Err(Error::mapper_parsing(format!(
            "Field [{name}] is defined more than once: it is a metadata field"
        )));
    }
    Ok(())
}

/// A `nested` field of a mapping: its objects are indexed as child documents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NestedPath {
    /// The field's full dotted path.
    pub path: String,
    /// The nearest enclosing nested path (`None`: the root document).
    pub parent: Option<String>,
    /// Its values are also indexed in the parent document.
    pub include_in_parent: bool,
    /// Its values are also indexed in the root document.
    pub include_in_root: bool,
}

/// A whole mapping: root options and the tree of fields.
#[derive(Clone, Debug, PartialEq)]
pub struct Mapping {
    /// Root parameters as given (for rendering), without `properties`.
    root: Map<String, Value>,
    pub dynamic: Dynamic,
    pub date_detection: bool,
    pub numeric_detection: bool,
    pub dynamic_date_formats: Vec<String>,
    pub dynamic_templates: Vec<DynamicTemplate>,
    pub source_enabled: bool,
    pub source_includes: Vec<String>,
    pub source_excludes: Vec<String>,
    pub routing_required: bool,
    /// `_data_stream_timestamp`: when enabled, the field every document must hold exactly one
    /// date of (OpenSearch's `DataStreamFieldMapper`).
    pub data_stream_timestamp: Option<String>,
    pub properties: BTreeMap<String, FieldMapping>,
}

/// The default `_data_stream_timestamp.timestamp_field.name`.
pub const DEFAULT_TIMESTAMP_FIELD: &str = "@timestamp";

impl Default for Mapping {
    fn default() -> Self {
        Mapping {
            root: Map::new(),
            dynamic: Dynamic::True,
            date_detection: true,
            numeric_detection: false,
            dynamic_date_formats: DEFAULT_DYNAMIC_DATE_FORMATS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            dynamic_templates: Vec::new(),
            source_enabled: true,
            source_includes: Vec::new(),
            source_excludes: Vec::new(),
            routing_required: false,
            data_stream_timestamp: None,
            properties: BTreeMap::new(),
        }
    }
}

const ROOT_PARAMS: &[&str] = &[
    "_data_stream_timestamp",
    "_meta",
    "_routing",
    "_source",
    "dynamic",
    "dynamic_date_formats",
    "dynamic_templates",
    "date_detection",
    "numeric_detection",
    "_field_names",
];

impl Mapping {
    /// Parses the body of `mappings` (also accepts the legacy `{"_doc": {...}}` wrapper).
    pub fn parse(value: &Value) -> Result<Mapping> {
        let mut mapping = Mapping::default();
        mapping.apply_root(value)?;
        Ok(mapping)
    }

    /// Parses `value` as an update and merges it into this mapping.
    pub fn merge_json(&mut self, value: &Value) -> Result<()> {
        let mut merged = self.clone();
        merged.apply_root(value)?;
        *self = merged;
        Ok(())
    }

    fn apply_root(&mut self, value: &Value) -> Result<()> {
        let object = match value {
            Value::Object(o) => o,
            Value::Null => return Ok(()),
            other => {
                return Err(Error::mapper_parsing(format!(
                "Failed to parse mapping [_doc]: Expected map for property [mappings] but got a {}",
                plain(other)
            )))
            }
        };
        let object = match (object.len(), object.get("_doc")) {
            (1, Some(Value::Object(inner))) => inner,
            _ => object,
        };
        let mut unsupported = Vec::new();
        for (key, value) in object {
            if key == "properties" {
                let props = parse_properties("", value)?;
                merge_properties("", &mut self.properties, &props)?;
                continue;
            }
            if !ROOT_PARAMS.contains(&key.as_str()) {
                unsupported.push(format!("{key} : {}", plain(value)));
                continue;
            }
            if key == "_data_stream_timestamp" {
                // rendered from the parsed form: only what differs from the defaults
                match self.apply_data_stream_timestamp(value)? {
                    Some(rendered) => self.root.insert(key.clone(), rendered),
                    None => self.root.remove(key),
                };
                continue;
            }
            self.apply_root_param(key, value)?;
            let rendered = match (key.as_str(), value) {
                ("dynamic", Value::Bool(b)) => Value::String(b.to_string()),
                _ => value.clone(),
            };
            self.root.insert(key.clone(), rendered);
        }
        if !unsupported.is_empty() {
            return Err(Error::mapper_parsing(format!(
                "Root mapping definition has unsupported parameters:  [{}]",
                unsupported.join("] [")
            )));
        }
        Ok(())
    }

    /// Parses `_data_stream_timestamp` (`enabled`, `timestamp_field.name`) and returns what
    /// `GET _mapping` shows of it (`None` when everything is the default).
    fn apply_data_stream_timestamp(&mut self, value: &Value) -> Result<Option<Value>> {
        const NAME: &str = "_data_stream_timestamp";
        let Value::Object(params) = value else {
            return Err(Error::mapper_parsing(format!(
                "[{NAME}] must be an object, got [{}]",
                plain(value)
            )));
        };
        // an update that omits a parameter keeps its current value, as OpenSearch merges it
        let (mut enabled, mut field) = match &self.root.get(NAME) {
            Some(current) => (
                current["enabled"].as_bool().unwrap_or(false),
                current["timestamp_field"]["name"]
                    .as_str()
                    .unwrap_or(DEFAULT_TIMESTAMP_FIELD)
                    .to_string(),
            ),
            None => (false, DEFAULT_TIMESTAMP_FIELD.to_string()),
        };
        for (key, param) in params {
            match key.as_str() {
                "enabled" => {
                    enabled = match param {
                        Value::Bool(b) => *b,
                        Value::String(s) if s == "true" => true,
                        Value::String(s) if s == "false" => false,
                        other => {
                            return Err(Error::illegal_argument(format!(
                                "Failed to parse value [{}] as only [true] or [false] are allowed.",
                                plain(other)
                            )))
                        }
                    }
                }
                "timestamp_field" => match param.get("name") {
                    Some(Value::String(name)) if param.is_object() => field = name.clone(),
                    _ => {
                        return Err(Error::mapper_parsing(format!(
                        "[timestamp_field] of [{NAME}] must be an object with a [name], got [{}]",
                        plain(param)
                    )))
                    }
                },
                other => {
                    return Err(Error::mapper_parsing(format!(
                        "unknown parameter [{other}] on mapper [{NAME}] of type [null]"
                    )))
                }
            }
        }
        self.data_stream_timestamp = enabled.then(|| field.clone());
        let mut rendered = Map::new();
        if enabled {
            rendered.insert("enabled".into(), Value::Bool(true));
        }
        if field != DEFAULT_TIMESTAMP_FIELD {
            rendered.insert(
                "timestamp_field".into(),
                serde_json::json!({ "name": field }),
            );
        }
        Ok((!rendered.is_empty()).then_some(Value::Object(rendered)))
    }

    fn apply_root_param(&mut self, key: &str, value: &Value) -> Result<()> {
        match key {
            "dynamic" => self.dynamic = Dynamic::parse(value, "dynamic")?,
            "date_detection" => {
                self.date_detection = as_bool_param("_doc", key, value)? == Value::Bool(true)
            }
            "numeric_detection" => {
                self.numeric_detection = as_bool_param("_doc", key, value)? == Value::Bool(true)
            }
            "dynamic_date_formats" => {
                let formats: Vec<String> = match value {
                    Value::Array(items) => items.iter().map(plain).collect(),
                    Value::String(s) => vec![s.clone()],
                    other => {
                        return Err(Error::mapper_parsing(format!(
                            "Failed to parse mapping [_doc]: dynamic_date_formats must be a list, got [{}]",
                            plain(other)
                        )))
                    }
                };
                for f in &formats {
                    DateFormat::parse(f).map_err(|e| {
                        Error::mapper_parsing(format!("Invalid format: [{f}]: {}", e.message))
                    })?;
                }
                self.dynamic_date_formats = formats;
            }
            "dynamic_templates" => self.dynamic_templates = DynamicTemplate::parse_list(value)?,
            "_source" => {
                let Value::Object(source) = value else {
                    return Err(Error::mapper_parsing("[_source] must be an object"));
                };
                for (k, v) in source {
                    match k.as_str() {
                        "enabled" => {
                            self.source_enabled =
                                as_bool_param("_source", k, v)? == Value::Bool(true)
                        }
                        "includes" => self.source_includes = string_list(v),
                        "excludes" => self.source_excludes = string_list(v),
                        other => {
                            return Err(Error::mapper_parsing(format!(
                                "unknown parameter [{other}] on metadata field [_source]"
                            )))
                        }
                    }
                }
            }
            "_routing" => {
                self.routing_required = value
                    .get("required")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
            }
            _ => {}
        }
        Ok(())
    }

    /// Renders the mapping as `GET _mapping` shows it (only what was set).
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        for key in ROOT_PARAMS {
            if let Some(value) = self.root.get(*key) {
                out.insert(key.to_string(), value.clone());
            }
        }
        if !self.properties.is_empty() {
            let props = self
                .properties
                .iter()
                .map(|(k, v)| (k.clone(), v.to_json()))
                .collect();
            out.insert("properties".into(), Value::Object(props));
        }
        Value::Object(out)
    }

    /// Adds `properties` found by dynamic mapping.
    pub fn merge_properties(&mut self, properties: &BTreeMap<String, FieldMapping>) -> Result<()> {
        merge_properties("", &mut self.properties, properties)
    }

    /// The definition at a dotted path (`station.id`, or a multi-field `title.keyword`).
    pub fn field(&self, path: &str) -> Option<&FieldMapping> {
        lookup(&self.properties, path)
    }

    /// Every searchable leaf (including multi-fields) with its full path, in path order.
    pub fn leaves(&self) -> Vec<(String, &FieldMapping)> {
        let mut out = Vec::new();
        collect_leaves("", &self.properties, &mut out);
        out
    }

    /// Number of fields counted against `index.mapping.total_fields.limit` (objects included).
    pub fn total_fields(&self) -> usize {
        fn count(props: &BTreeMap<String, FieldMapping>) -> usize {
            props
                .values()
                .map(|f| 1 + f.fields.len() + count(&f.properties))
                .sum()
        }
        count(&self.properties)
    }

    /// Deepest object nesting, as OpenSearch counts it for `index.mapping.depth.limit`.
    pub fn depth(&self) -> usize {
        fn depth(props: &BTreeMap<String, FieldMapping>) -> usize {
            props
                .values()
                .map(|f| {
                    if f.properties.is_empty() {
                        1
                    } else {
                        1 + depth(&f.properties)
                    }
                })
                .max()
                .unwrap_or(0)
        }
        depth(&self.properties)
    }

    /// The nested object fields, outermost first (a path before the paths inside it).
    pub fn nested_paths(&self) -> Vec<NestedPath> {
        fn walk(
            prefix: &str,
            parent: Option<&str>,
            props: &BTreeMap<String, FieldMapping>,
            out: &mut Vec<NestedPath>,
        ) {
            for (name, field) in props {
                if !field.field_type.is_object() {
                    continue;
                }
                let path = if prefix.is_empty() {
                    name.clone()
                } else {
                    format!("{prefix}.{name}")
                };
                let mut inner_parent = parent.map(String::from);
                if field.field_type == FieldType::Nested {
                    out.push(NestedPath {
                        path: path.clone(),
                        parent: parent.map(String::from),
                        include_in_parent: field.bool_param("include_in_parent", false),
                        include_in_root: field.bool_param("include_in_root", false),
                    });
                    inner_parent = Some(path.clone());
                }
                walk(&path, inner_parent.as_deref(), &field.properties, out);
            }
        }
        let mut out = Vec::new();
        walk("", None, &self.properties, &mut out);
        out
    }

    /// Rejects more `nested` fields than `index.mapping.nested_fields.limit`, and k-NN vectors
    /// inside nested objects (the k-NN search finds documents, which would be hidden children).
    pub fn check_nested_limit(&self, nested_fields_limit: usize) -> Result<()> {
        let nested = self.nested_paths();
        if nested.len() > nested_fields_limit {
            return Err(Error::illegal_argument(format!(
                "Limit of nested fields [{nested_fields_limit}] has been exceeded"
            )));
        }
        for (path, field) in self.leaves() {
            let inside = nested.iter().find(|n| {
                path.len() > n.path.len()
                    && path.starts_with(n.path.as_str())
                    && path.as_bytes()[n.path.len()] == b'.'
            });
            if let (FieldType::KnnVector, Some(n)) = (field.field_type, inside) {
                return Err(Error::mapper_parsing(format!(
                    "[knn_vector] field [{path}] inside the nested field [{}] is not supported by Tessera",
                    n.path
                )));
            }
        }
        Ok(())
    }

    /// Rejects mappings over the index's field-count or depth limits.
    pub fn check_limits(&self, total_fields_limit: usize, depth_limit: usize) -> Result<()> {
        let total = self.total_fields();
        if total > total_fields_limit {
            return Err(Error::illegal_argument(format!(
                "Limit of total fields [{total_fields_limit}] has been exceeded"
            )));
        }
        let depth = self.depth();
        if depth > depth_limit {
            return Err(Error::illegal_argument(format!(
                "Limit of mapping depth [{depth_limit}] has been exceeded due to object field"
            )));
        }
        Ok(())
    }
}

fn string_list(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items.iter().map(plain).collect(),
        Value::String(s) => vec![s.clone()],
        _ => Vec::new(),
    }
}

fn lookup<'a>(props: &'a BTreeMap<String, FieldMapping>, path: &str) -> Option<&'a FieldMapping> {
    if let Some(field) = props.get(path) {
        return Some(field);
    }
    // names in `properties` never hold a dot (`parse_properties` expands `a.b` into objects), so
    // `a.b.c` is object a → `b.c`, or leaf a with multi-field `b.c`: one level per part, linear
    // in the depth of the path
    let (head, rest) = path.split_once('.')?;
    let field = props.get(head)?;
    lookup(&field.properties, rest).or_else(|| field.fields.get(rest))
}

fn collect_leaves<'a>(
    prefix: &str,
    props: &'a BTreeMap<String, FieldMapping>,
    out: &mut Vec<(String, &'a FieldMapping)>,
) {
    for (name, field) in props {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        if field.field_type.is_object() {
            collect_leaves(&path, &field.properties, out);
            continue;
        }
        out.push((path.clone(), field));
        for (sub_name, sub) in &field.fields {
            out.push((format!("{path}.{sub_name}"), sub));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_fields_parse_render_and_count() {
        let m = Mapping::parse(&json!({"properties": {
            "a": {"type": "nested", "include_in_parent": "true", "properties": {
                "b": {"type": "nested", "properties": {"k": {"type": "keyword"}}},
                "o": {"properties": {"n": {"type": "long"}}}
            }},
            "e": {"type": "nested"}
        }}))
        .unwrap();
        assert_eq!(
            m.to_json(),
            json!({"properties": {
                "a": {"type": "nested", "include_in_parent": true, "properties": {
                    "b": {"type": "nested", "properties": {"k": {"type": "keyword"}}},
                    "o": {"properties": {"n": {"type": "long"}}}
                }},
                "e": {"type": "nested"}
            }})
        );
        let paths: Vec<(String, Option<String>, bool)> = m
            .nested_paths()
            .into_iter()
            .map(|n| (n.path, n.parent, n.include_in_parent))
            .collect();
        assert_eq!(
            paths,
            [
                ("a".to_string(), None, true),
                ("a.b".to_string(), Some("a".to_string()), false),
                ("e".to_string(), None, false)
            ]
        );
        let leaves: Vec<String> = m.leaves().into_iter().map(|(p, _)| p).collect();
        assert_eq!(leaves, ["a.b.k", "a.o.n"]);
        assert!(m.check_nested_limit(3).is_ok());
        assert_eq!(
            m.check_nested_limit(2).unwrap_err().reason(),
            "Limit of nested fields [2] has been exceeded"
        );
        let bogus = Mapping::parse(&json!({"properties": {"a": {"type": "nested", "bogus": 1}}}));
        assert_eq!(
            bogus.unwrap_err().reason(),
            "unknown parameter [bogus] on mapper [a] of type [nested]"
        );
        let changed = m
            .clone()
            .merge_json(&json!({"properties": {"e": {"type": "object"}}}));
        assert!(changed.is_err());
    }

    #[test]
    fn parses_and_renders_only_what_was_set() {
        let body = json!({
            "dynamic": "strict",
            "properties": {
                "title": {"type": "text", "fields": {"raw": {"type": "keyword", "ignore_above": 256}}},
                "amount": {"type": "scaled_float", "scaling_factor": 100},
                "when": {"type": "date", "format": "yyyy-MM-dd HH:mm:ss"},
                "station": {"properties": {"id": {"type": "keyword"}}}
            }
        });
        let mapping = Mapping::parse(&body).unwrap();
        assert_eq!(mapping.dynamic, Dynamic::Strict);
        let mut expected = body.clone();
        expected["properties"]["amount"]["scaling_factor"] = json!(100.0);
        assert_eq!(
            mapping.to_json(),
            expected,
            "scaling_factor renders as a double, like OpenSearch"
        );
        assert_eq!(
            mapping.field("title.raw").unwrap().ignore_above(),
            Some(256)
        );
        assert_eq!(
            mapping.field("station.id").unwrap().field_type,
            FieldType::Keyword
        );
        let leaves: Vec<String> = mapping.leaves().into_iter().map(|(p, _)| p).collect();
        assert_eq!(
            leaves,
            ["amount", "station.id", "title", "title.raw", "when"]
        );
        assert_eq!(mapping.total_fields(), 6);
    }

    #[test]
    fn objects_without_properties_round_trip() {
        // big5's `"host": {"type": "object"}`: rendered as `{}`, the saved mapping would not parse
        let body = json!({"properties": {
            "host": {"type": "object"},
            "quiet": {"type": "object", "enabled": false},
            "strict": {"dynamic": "strict"},
            "agent": {"type": "object", "properties": {"name": {"type": "keyword"}}}
        }});
        let mapping = Mapping::parse(&body).unwrap();
        let rendered = mapping.to_json();
        assert_eq!(
            rendered,
            json!({"properties": {
                "agent": {"properties": {"name": {"type": "keyword"}}},
                "host": {"type": "object"},
                "quiet": {"type": "object", "enabled": false},
                "strict": {"type": "object", "dynamic": "strict"}
            }}),
            "the type shows only when there are no properties, as in OpenSearch"
        );
        let reparsed = Mapping::parse(&rendered).unwrap();
        assert_eq!(reparsed, mapping);
        assert_eq!(reparsed.to_json(), rendered);
        // an object that gains properties later renders without the type
        let mut grown = reparsed;
        grown
            .merge_json(
                &json!({"properties": {"host": {"properties": {"name": {"type": "keyword"}}}}}),
            )
            .unwrap();
        assert_eq!(
            grown.to_json()["properties"]["host"],
            json!({"properties": {"name": {"type": "keyword"}}})
        );
    }

    #[test]
    fn data_stream_timestamp_is_parsed_validated_and_rendered() {
        let mapping =
            Mapping::parse(&json!({"_data_stream_timestamp": {"enabled": true}})).unwrap();
        assert_eq!(mapping.data_stream_timestamp.as_deref(), Some("@timestamp"));
        assert_eq!(
            mapping.to_json(),
            json!({"_data_stream_timestamp": {"enabled": true}})
        );
        assert_eq!(Mapping::parse(&mapping.to_json()).unwrap(), mapping);
        let custom = Mapping::parse(&json!({"_data_stream_timestamp": {
            "enabled": "true", "timestamp_field": {"name": "ts"}
        }}))
        .unwrap();
        assert_eq!(custom.data_stream_timestamp.as_deref(), Some("ts"));
        assert_eq!(
            custom.to_json(),
            json!({"_data_stream_timestamp": {"enabled": true, "timestamp_field": {"name": "ts"}}})
        );
        assert_eq!(Mapping::parse(&custom.to_json()).unwrap(), custom);
        // disabled with the default field: nothing to show, as in OpenSearch
        let off = Mapping::parse(&json!({"_data_stream_timestamp": {"enabled": false}})).unwrap();
        assert_eq!(off.data_stream_timestamp, None);
        assert_eq!(off.to_json(), json!({}));
        let e = Mapping::parse(&json!({"_data_stream_timestamp": {"enabled": 1}})).unwrap_err();
        assert_eq!(e.kind(), "illegal_argument_exception");
        assert_eq!(
            e.reason(),
            "Failed to parse value [1] as only [true] or [false] are allowed."
        );
        let e = Mapping::parse(&json!({"_data_stream_timestamp": {"foo": 1}})).unwrap_err();
        assert_eq!(
            e.reason(),
            "unknown parameter [foo] on mapper [_data_stream_timestamp] of type [null]"
        );
        assert!(Mapping::parse(&json!({"_data_stream_timestamp": true})).is_err());
        assert!(
            Mapping::parse(&json!({"_data_stream_timestamp": {"timestamp_field": "ts"}})).is_err()
        );
        assert!(Mapping::parse(
            &json!({"_data_stream_timestamp": {"timestamp_field": {"nome": "ts"}}})
        )
        .is_err());
    }

    #[test]
    fn range_types_parse_with_their_parameters() {
        let body = json!({"properties": {
            "i": {"type": "integer_range", "coerce": false, "index": false, "boost": 2},
            "t": {"type": "date_range", "format": "yyyy-MM-dd", "locale": "en"},
            "d": {"type": "double_range"},
            "ip": {"type": "ip_range", "ignore_malformed": true}
        }});
        let mapping = Mapping::parse(&body).unwrap();
        assert_eq!(mapping.field("t").unwrap().field_type, FieldType::DateRange);
        assert_eq!(mapping.field("t").unwrap().format(), "yyyy-MM-dd");
        assert_eq!(Mapping::parse(&mapping.to_json()).unwrap(), mapping);
        let e = Mapping::parse(
            &json!({"properties": {"f": {"type": "integer_range", "format": "yyyy"}}}),
        )
        .unwrap_err();
        assert_eq!(
            e.reason(),
            "field [f] of type [range] should not define a dateTimeFormatter unless it is a DATE type"
        );
        let e =
            Mapping::parse(&json!({"properties": {"f": {"type": "long_range", "null_value": 1}}}))
                .unwrap_err();
        assert_eq!(
            e.reason(),
            "unknown parameter [null_value] on mapper [f] of type [long_range]"
        );
        let e =
            Mapping::parse(&json!({"properties": {"f": {"type": "long_range", "copy_to": "x"}}}))
                .unwrap_err();
        assert!(
            e.reason().contains("not supported by Tessera"),
            "{}",
            e.reason()
        );
    }

    #[test]
    fn dotted_names_become_objects() {
        let mapping = Mapping::parse(
            &json!({"properties": {"a.b": {"type": "long"}, "a.c": {"type": "keyword"}}}),
        )
        .unwrap();
        assert_eq!(
            mapping.to_json(),
            json!({"properties": {"a": {"properties": {"b": {"type": "long"}, "c": {"type": "keyword"}}}}})
        );
    }

    #[test]
    fn legacy_doc_wrapper_is_unwrapped() {
        let mapping =
            Mapping::parse(&json!({"_doc": {"properties": {"x": {"type": "long"}}}})).unwrap();
        assert!(mapping.field("x").is_some());
    }

    #[test]
    fn rejects_unknown_parameters_types_and_root_keys() {
        let e = Mapping::parse(
            &json!({"properties": {"k": {"type": "keyword", "analyzer": "standard"}}}),
        )
        .unwrap_err();
        assert_eq!(e.kind(), "mapper_parsing_exception");
        assert!(
            e.reason()
                .contains("unknown parameter [analyzer] on mapper [k] of type [keyword]"),
            "{}",
            e.reason()
        );
        let e = Mapping::parse(&json!({"properties": {"k": {"type": "strange"}}})).unwrap_err();
        assert!(e
            .reason()
            .contains("No handler for type [strange] declared on field [k]"));
        let e = Mapping::parse(&json!({"bogus": 1})).unwrap_err();
        assert_eq!(
            e.reason(),
            "Root mapping definition has unsupported parameters:  [bogus : 1]"
        );
        let e = Mapping::parse(&json!({"properties": {"k": {}}})).unwrap_err();
        assert!(e.reason().contains("No type specified for field [k]"));
        let e =
            Mapping::parse(&json!({"properties": {"s": {"type": "scaled_float"}}})).unwrap_err();
        assert!(e.reason().contains("Field [scaling_factor] is required"));
        let e = Mapping::parse(&json!({"properties": {"d": {"type": "date", "format": "yyyy-MM-dd||nonsense_format"}}})).unwrap_err();
        assert!(e.reason().contains("Invalid format"), "{}", e.reason());
    }

    #[test]
    fn merge_adds_fields_and_rejects_type_changes() {
        let mut mapping = Mapping::parse(&json!({"properties": {"n": {"type": "long"}}})).unwrap();
        mapping
            .merge_json(&json!({"properties": {"k": {"type": "keyword"}}}))
            .unwrap();
        assert!(mapping.field("k").is_some());
        let e = mapping
            .merge_json(&json!({"properties": {"n": {"type": "keyword"}}}))
            .unwrap_err();
        assert_eq!(
            e.reason(),
            "mapper [n] cannot be changed from type [long] to [keyword]"
        );
        assert!(
            mapping.field("n").unwrap().field_type == FieldType::Long,
            "a failed merge leaves the mapping untouched"
        );
        // updatable parameter
        mapping
            .merge_json(&json!({"properties": {"k": {"type": "keyword", "ignore_above": 10}}}))
            .unwrap();
        assert_eq!(mapping.field("k").unwrap().ignore_above(), Some(10));
        // non-updatable parameter
        let e = mapping
            .merge_json(&json!({"properties": {"k": {"type": "keyword", "index": false}}}))
            .unwrap_err();
        assert!(
            e.reason()
                .contains("Cannot update parameter [index] from [true] to [false]"),
            "{}",
            e.reason()
        );
    }

    #[test]
    fn limits() {
        let mapping = Mapping::parse(&json!({"properties": {"a": {"properties": {"b": {"properties": {"c": {"type": "long"}}}}}}})).unwrap();
        assert_eq!(mapping.depth(), 3);
        assert!(mapping.check_limits(1000, 2).is_err());
        assert!(mapping.check_limits(2, 20).is_err());
        mapping.check_limits(1000, 20).unwrap();
    }

    #[test]
    fn lookup_of_deep_paths_walks_one_level_per_part() {
        // 80 levels: trying every split of the path at every level would never finish
        let depth = 80;
        let mut definition = json!({"type": "keyword", "fields": {"raw": {"type": "keyword"}}});
        for _ in 0..depth {
            definition = json!({"properties": {"o": definition}});
        }
        let mapping = Mapping::parse(&json!({"properties": {"o": definition}})).unwrap();
        let leaf = vec!["o"; depth + 1].join(".");
        assert_eq!(mapping.field(&leaf).unwrap().field_type, FieldType::Keyword);
        assert!(
            mapping.field(&format!("{leaf}.raw")).is_some(),
            "a multi-field"
        );
        assert!(mapping.field(&format!("{leaf}.nope")).is_none());
        assert!(mapping
            .field(&format!("{}.x.o.o", vec!["o"; depth].join(".")))
            .is_none());
    }
}
