//! `_cat` tables: columns with aliases and alignment, rendered as OpenSearch's aligned text or
//! as JSON, with `v` (header), `h` (columns), `s` (sort), `bytes` (units) and `help`.

use std::cmp::Ordering;

use serde_json::{Map, Value};
use tessera_common::{Error, Result};

use crate::request::RestRequest;
use crate::response::RestResponse;

/// A column of a `_cat` table.
pub struct Column {
    pub name: &'static str,
    pub aliases: &'static str,
    pub description: &'static str,
    /// Right-aligned (numbers, sizes).
    pub numeric: bool,
    /// Shown when `h` is not given.
    pub default: bool,
}

pub const fn col(
    name: &'static str,
    aliases: &'static str,
    description: &'static str,
    numeric: bool,
    default: bool,
) -> Column {
    Column {
        name,
        aliases,
        description,
        numeric,
        default,
    }
}

/// A cell: text, a byte size (rendered per `bytes`), or nothing (`null`).
#[derive(Clone, Debug)]
pub enum Cell {
    Text(String),
    Bytes(u64),
    Null,
}

impl From<String> for Cell {
    fn from(s: String) -> Cell {
        Cell::Text(s)
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Cell {
        Cell::Text(s.to_string())
    }
}

macro_rules! cell_from_number {
    ($($t:ty),*) => {$(impl From<$t> for Cell { fn from(n: $t) -> Cell { Cell::Text(n.to_string()) } })*};
}
cell_from_number!(u32, u64, usize, i64);

pub use tessera_common::settings::human_bytes;

fn bytes_in(unit: &str, bytes: u64) -> Result<String> {
    let divisor: u64 = match unit {
        "b" => 1,
        "k" | "kb" => 1 << 10,
        "m" | "mb" => 1 << 20,
        "g" | "gb" => 1 << 30,
        "t" | "tb" => 1 << 40,
        "p" | "pb" => 1 << 50,
        other => {
            return Err(Error::illegal_argument(format!(
                "failed to parse [{other}] as a byte size unit"
            )))
        }
    };
    Ok((bytes / divisor).to_string())
}

impl Cell {
    fn render(&self, bytes_unit: Option<&str>) -> Result<Option<String>> {
        Ok(match self {
            Cell::Text(s) => Some(s.clone()),
            Cell::Bytes(n) => Some(match bytes_unit {
                Some(unit) => bytes_in(unit, *n)?,
                None => human_bytes(*n),
            }),
            Cell::Null => None,
        })
    }

    fn sort_key(&self) -> (Option<f64>, String) {
        match self {
            Cell::Text(s) => (s.trim_end_matches('%').parse::<f64>().ok(), s.clone()),
            Cell::Bytes(n) => (Some(*n as f64), String::new()),
            Cell::Null => (None, String::new()),
        }
    }
}

/// Parameters every `_cat` endpoint accepts.
pub const CAT_PARAMS: &[&str] = &[
    "format",
    "h",
    "help",
    "s",
    "v",
    "bytes",
    "time",
    "local",
    "master_timeout",
    "cluster_manager_timeout",
    "expand_wildcards",
    "ts",
    "pri",
    "health",
    "include_unloaded_segments",
    "full_id",
    "size",
    "allow_no_indices",
    "ignore_unavailable",
];

fn find(columns: &[Column], name: &str) -> Option<usize> {
    columns
        .iter()
        .position(|c| c.name == name || c.aliases.split(',').any(|a| a == name))
}

/// Renders rows of `columns` as the request asks.
pub fn render(
    request: &RestRequest,
    columns: &[Column],
    rows: Vec<Vec<Cell>>,
) -> Result<RestResponse> {
    if request.param("help").is_some() {
        if request.path_params.contains_key("index") {
            return Err(Error::illegal_argument(format!(
                "request [{}] contains unrecognized parameter: [index]",
                request.path
            )));
        }
        let name_width = columns.iter().map(|c| c.name.len()).max().unwrap_or(0);
        let alias_width = columns.iter().map(|c| c.aliases.len()).max().unwrap_or(0);
        let mut text = String::new();
        for column in columns {
            text.push_str(&format!(
                "{:name_width$} | {:alias_width$} | {}\n",
                column.name, column.aliases, column.description
            ));
        }
        return Ok(RestResponse::text(text));
    }
    let selected: Vec<usize> = match request.param("h") {
        Some(h) => h
            .split(',')
            .filter_map(|name| find(columns, name.trim()))
            .collect(),
        None => (0..columns.len()).filter(|&i| columns[i].default).collect(),
    };
    let mut rows = rows;
    if let Some(sort) = request.param("s") {
        let mut keys = Vec::new();
        for spec in sort.split(',') {
            let (name, desc) = match spec.rsplit_once(':') {
                Some((name, order)) => (name, order == "desc"),
                None => (spec, false),
            };
            let index = find(columns, name).ok_or_else(|| {
                Error::illegal_argument(format!("Unable to sort by unknown sort key `{name}`"))
            })?;
            keys.push((index, desc));
        }
        rows.sort_by(|a, b| {
            for (index, desc) in &keys {
                let (x, y) = (a[*index].sort_key(), b[*index].sort_key());
                let ordering = match (x.0, y.0) {
                    (Some(p), Some(q)) => p.total_cmp(&q),
                    _ => x.1.cmp(&y.1),
                };
                let ordering = if *desc { ordering.reverse() } else { ordering };
                if ordering != Ordering::Equal {
                    return ordering;
                }
            }
            Ordering::Equal
        });
    }
    let bytes_unit = request.param("bytes");
    let mut rendered: Vec<Vec<Option<String>>> = Vec::with_capacity(rows.len());
    for row in &rows {
        let mut cells = Vec::with_capacity(selected.len());
        for &i in &selected {
            cells.push(row[i].render(bytes_unit)?);
        }
        rendered.push(cells);
    }
    if request.param("format") == Some("json") {
        let array: Vec<Value> = rendered
            .into_iter()
            .map(|cells| {
                let mut object = Map::new();
                for (cell, &i) in cells.into_iter().zip(&selected) {
                    object.insert(
                        columns[i].name.to_string(),
                        cell.map(Value::String).unwrap_or(Value::Null),
                    );
                }
                Value::Object(object)
            })
            .collect();
        return Ok(RestResponse::ok(Value::Array(array)));
    }
    let verbose = request.param_bool("v", false)?;
    let mut widths: Vec<usize> = selected
        .iter()
        .map(|&i| if verbose { columns[i].name.len() } else { 0 })
        .collect();
    for cells in &rendered {
        for (w, cell) in widths.iter_mut().zip(cells) {
            *w = (*w).max(cell.as_deref().map(|c| c.chars().count()).unwrap_or(0));
        }
    }
    let mut text = String::new();
    let line = |cells: Vec<String>, text: &mut String| {
        let last = cells.len().saturating_sub(1);
        for (position, (cell, &i)) in cells.iter().zip(&selected).enumerate() {
            let width = widths[position];
            if columns[i].numeric {
                text.push_str(&format!("{cell:>width$}"));
            } else if position == last {
                // no trailing padding at the end of a line
                text.push_str(cell);
            } else {
                text.push_str(&format!("{cell:<width$}"));
            }
            if position != last {
                text.push(' ');
            }
        }
        text.push('\n');
    };
    if verbose {
        line(
            selected
                .iter()
                .map(|&i| columns[i].name.to_string())
                .collect(),
            &mut text,
        );
    }
    for cells in rendered {
        line(
            cells.into_iter().map(|c| c.unwrap_or_default()).collect(),
            &mut text,
        );
    }
    Ok(RestResponse::text(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_byte_sizes_match_opensearch() {
        assert_eq!(human_bytes(379), "379b");
        assert_eq!(human_bytes(3392), "3.3kb");
        assert_eq!(human_bytes(1024), "1kb");
        assert_eq!(human_bytes(5 * (1 << 20) + 1), "5mb");
        assert_eq!(human_bytes(0), "0b");
    }
}
