//! The interface between a compiled script and the document it runs on. The search side
//! implements [`DocValues`] over its columns; the compiler has already turned each
//! `doc['literal']` into a slot (see `Script::fields`), so a per-document read is an index into
//! the implementation's columns, never a lookup by name.

use crate::value::Value;

/// A geo point, as `doc['location'].value` gives it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GeoPoint {
    pub lat: f64,
    pub lon: f64,
}

impl GeoPoint {
    /// OpenSearch's `GeoUtils.arcDistance`: the haversine distance in meters on a sphere of the
    /// earth's mean radius.
    pub fn arc_distance(&self, lat: f64, lon: f64) -> f64 {
        const EARTH_MEAN_RADIUS: f64 = 6_371_008.771_4;
        let (lat1, lat2) = (self.lat.to_radians(), lat.to_radians());
        let dlat = lat2 - lat1;
        let dlon = (lon - self.lon).to_radians();
        let h = (dlat / 2.0).sin().powi(2) + lat1.cos() * lat2.cos() * (dlon / 2.0).sin().powi(2);
        2.0 * EARTH_MEAN_RADIUS * h.sqrt().min(1.0).asin()
    }
}

/// The doc values of the current document, by the field slots of `Script::fields`.
pub trait DocValues {
    /// How many values field `slot` has in the current document (0 when it has none).
    fn count(&self, slot: u32) -> usize;

    /// Value `index` (`< count`) of field `slot`, in doc-values order: `Long` or `Double` for
    /// numbers, `Str` for keywords, `Date` (epoch millis) for dates, `Bool`, `Geo`.
    fn value(&self, slot: u32, index: usize) -> Value;

    /// Whether field `slot` is mapped (`doc.containsKey('field')`).
    fn has_field(&self, slot: u32) -> bool;
}

/// Documents held in memory, for tests and for `_execute` with a given document: one list of
/// values per field slot.
#[derive(Debug, Clone, Default)]
pub struct MemoryDoc {
    pub fields: Vec<Vec<Value>>,
}

impl DocValues for MemoryDoc {
    fn count(&self, slot: u32) -> usize {
        self.fields.get(slot as usize).map_or(0, Vec::len)
    }

    fn value(&self, slot: u32, index: usize) -> Value {
        self.fields[slot as usize][index].clone()
    }

    fn has_field(&self, slot: u32) -> bool {
        (slot as usize) < self.fields.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arc_distance_is_haversine_in_meters() {
        let p = GeoPoint {
            lat: 40.7128,
            lon: -74.0060,
        };
        let d = p.arc_distance(51.5074, -0.1278);
        assert!((d - 5_570_230.0).abs() < 1_000.0, "{d}");
        assert_eq!(p.arc_distance(p.lat, p.lon), 0.0);
    }

    #[test]
    fn memory_doc() {
        let doc = MemoryDoc {
            fields: vec![vec![Value::Long(3)], vec![]],
        };
        assert_eq!(doc.count(0), 1);
        assert_eq!(doc.count(1), 0);
        assert_eq!(doc.count(7), 0);
        assert!(matches!(doc.value(0, 0), Value::Long(3)));
    }
}
