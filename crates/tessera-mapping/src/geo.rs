//! Geo points: parsing every form OpenSearch accepts, Lucene's 32-bit quantization (so stored
//! coordinates, doc values and distances match OpenSearch's), geohashes, distance units and
//! the haversine distance.

use serde_json::Value;
use tessera_common::{Error, Result};

/// A point in degrees.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GeoPoint {
    pub lat: f64,
    pub lon: f64,
}

const LAT_DECODE: f64 = 90.0 / (1u64 << 31) as f64;
const LON_DECODE: f64 = 180.0 / (1u64 << 31) as f64;

/// Lucene's `GeoEncodingUtils`: latitudes and longitudes are kept as 32-bit integers.
pub fn quantize(point: GeoPoint) -> GeoPoint {
    let lat = if point.lat == 90.0 {
        i32::MAX
    } else {
        (point.lat / LAT_DECODE).floor() as i32
    };
    let lon = if point.lon == 180.0 {
        i32::MAX
    } else {
        (point.lon / LON_DECODE).floor() as i32
    };
    GeoPoint {
        lat: lat as f64 * LAT_DECODE,
        lon: lon as f64 * LON_DECODE,
    }
}

const BASE32: &[u8] = b"0123456789bcdefghjkmnpqrstuvwxyz";

/// The latitude and longitude ranges of a geohash's cell.
fn geohash_cell(hash: &str) -> Result<((f64, f64), (f64, f64))> {
    let (mut lat, mut lon) = ((-90.0f64, 90.0f64), (-180.0f64, 180.0f64));
    let mut even = true;
    for c in hash.chars() {
        let bits = BASE32
            .iter()
            .position(|&b| b as char == c.to_ascii_lowercase())
            .ok_or_else(|| {
                Error::illegal_argument(format!("unsupported symbol [{c}] in geohash [{hash}]"))
            })?;
        for shift in (0..5).rev() {
            let bit = (bits >> shift) & 1 == 1;
            let range = if even { &mut lon } else { &mut lat };
            let mid = (range.0 + range.1) / 2.0;
            if bit {
                range.0 = mid;
            } else {
                range.1 = mid;
            }
            even = !even;
        }
    }
    Ok((lat, lon))
}

/// The centre of a geohash's cell.
pub fn decode_geohash(hash: &str) -> Result<GeoPoint> {
    let (lat, lon) = geohash_cell(hash)?;
    Ok(GeoPoint {
        lat: (lat.0 + lat.1) / 2.0,
        lon: (lon.0 + lon.1) / 2.0,
    })
}

/// The point a geohash stands for as a geo point value: its cell's lower-left corner, as
/// OpenSearch's `GeoPoint.resetFromGeoHash` reads it (a document's location, an origin).
pub fn geohash_point(hash: &str) -> Result<GeoPoint> {
    let (lat, lon) = geohash_cell(hash)?;
    Ok(GeoPoint {
        lat: lat.0,
        lon: lon.0,
    })
}

/// The `5 × precision` interleaved bits (longitude first) of the geohash of `point` with
/// `precision` characters (1..=12).
pub fn geohash_bits(point: GeoPoint, precision: usize) -> u64 {
    let (mut lat, mut lon) = ((-90.0f64, 90.0f64), (-180.0f64, 180.0f64));
    let mut bits = 0u64;
    for i in 0..precision * 5 {
        let (range, value) = match i % 2 == 0 {
            true => (&mut lon, point.lon),
            false => (&mut lat, point.lat),
        };
        let mid = (range.0 + range.1) / 2.0;
        bits <<= 1;
        if value >= mid {
            bits |= 1;
            range.0 = mid;
        } else {
            range.1 = mid;
        }
    }
    bits
}

/// The geohash of `point` with `precision` characters (1..=12).
pub fn encode_geohash(point: GeoPoint, precision: usize) -> String {
    let bits = geohash_bits(point, precision);
    (0..precision)
        .map(|i| BASE32[((bits >> ((precision - 1 - i) * 5)) & 31) as usize] as char)
        .collect()
}

/// The (up to) eight cells around a geohash cell, at its precision, as Lucene's
/// `Geohash.addNeighbors` finds them: longitudes wrap around, latitudes stop at the poles.
pub fn geohash_neighbours(hash: &str) -> Result<Vec<String>> {
    let centre = decode_geohash(hash)?;
    let bits = hash.len() * 5;
    // the cell's size: longitude takes the odd bit of an odd count
    let lon_bits = bits.div_ceil(2) as i32;
    let lat_bits = (bits / 2) as i32;
    let (width, height) = (360.0 / 2f64.powi(lon_bits), 180.0 / 2f64.powi(lat_bits));
    let mut out = Vec::with_capacity(8);
    for dy in [-1.0, 0.0, 1.0] {
        for dx in [-1.0, 0.0, 1.0] {
            if dx == 0.0 && dy == 0.0 {
                continue;
            }
            let lat = centre.lat + dy * height;
            if !(-90.0..=90.0).contains(&lat) {
                continue;
            }
            let lon = (centre.lon + dx * width + 540.0).rem_euclid(360.0) - 180.0;
            out.push(encode_geohash(GeoPoint { lat, lon }, hash.len()));
        }
    }
    Ok(out)
}

/// OpenSearch's `geoHashLevelsForPrecision`: the geohash length whose cells are at most
/// `meters` wide.
pub fn geohash_levels_for(meters: f64) -> i64 {
    const EQUATOR: f64 = 2.0 * std::f64::consts::PI * 6_378_137.0;
    const POLAR_DISTANCE: f64 = std::f64::consts::PI * 6_356_752.314_245;
    if meters == 0.0 {
        return 12;
    }
    let ratio = 1.0 + POLAR_DISTANCE / EQUATOR;
    let width = (meters * meters / (ratio * ratio)).sqrt();
    let part = (EQUATOR / width).ceil();
    if part == 1.0 {
        return 1;
    }
    let bits = part.log2().ceil() as i64;
    let (full, left) = (bits / 5, bits % 5);
    let even = full + i64::from(left > 0);
    let odd = full + i64::from(left > 3);
    even + odd
}

fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Parses `[lon, lat]`, `"lat,lon"`, `{"lat": .., "lon": ..}`, a geohash or WKT `POINT (lon lat)`,
/// and checks the ranges.
pub fn parse_point(value: &Value) -> Result<GeoPoint> {
    checked(parse_point_unchecked(value)?)
}

/// A point in any of the forms [`parse_point`] takes, its range unchecked (a query's
/// `validation_method` decides what an out-of-range corner means).
pub fn parse_point_unchecked(value: &Value) -> Result<GeoPoint> {
    let bad = |why: String| Error::illegal_argument(why);
    let point = match value {
        Value::Array(items) => {
            from_lon_lat(items, Value::as_f64).ok_or_else(|| bad("geo_point expected".into()))?
        }
        Value::Object(o) => {
            let lat = o
                .get("lat")
                .and_then(number)
                .ok_or_else(|| bad("field [lat] missing".into()))?;
            let lon = o
                .get("lon")
                .and_then(number)
                .ok_or_else(|| bad("field [lon] missing".into()))?;
            GeoPoint { lat, lon }
        }
        Value::String(s) => {
            let s = s.trim();
            let upper = s.to_ascii_uppercase();
            if let Some(rest) = upper.strip_prefix("POINT") {
                let inner = rest.trim().trim_start_matches('(').trim_end_matches(')');
                let mut parts = inner.split_whitespace().map(|p| p.parse::<f64>().ok());
                match (parts.next().flatten(), parts.next().flatten()) {
                    (Some(lon), Some(lat)) => GeoPoint { lat, lon },
                    _ => return Err(bad(format!("failed to parse WKT point [{s}]"))),
                }
            } else if let Some((a, b)) = s.split_once(',') {
                let lat = a
                    .trim()
                    .parse::<f64>()
                    .map_err(|_| bad(format!("latitude must be a number [{a}]")))?;
                let lon = b
                    .trim()
                    .parse::<f64>()
                    .map_err(|_| bad(format!("longitude must be a number [{b}]")))?;
                GeoPoint { lat, lon }
            } else if !s.is_empty() && s.len() <= 12 {
                geohash_point(s)?
            } else {
                return Err(bad(format!("unsupported symbol in geohash [{s}]")));
            }
        }
        _ => return Err(bad("geo_point expected".into())),
    };
    Ok(point)
}

/// The point of a `[lon, lat]` array (GeoJSON's order; a third number, the altitude, is
/// ignored), reading each number with `number`; `None` when `items` is not such an array.
pub fn from_lon_lat<T>(items: &[T], number: impl Fn(&T) -> Option<f64>) -> Option<GeoPoint> {
    if !(2..=3).contains(&items.len()) || !items.iter().all(|item| number(item).is_some()) {
        return None;
    }
    Some(GeoPoint {
        lat: number(&items[1])?,
        lon: number(&items[0])?,
    })
}

/// `point` if its latitude and longitude are in range.
pub fn checked(point: GeoPoint) -> Result<GeoPoint> {
    let bad = |why: String| Error::illegal_argument(why);
    if !(-90.0..=90.0).contains(&point.lat) {
        return Err(bad(format!(
            "illegal latitude value [{}] for geo_point",
            point.lat
        )));
    }
    if !(-180.0..=180.0).contains(&point.lon) {
        return Err(bad(format!(
            "illegal longitude value [{}] for geo_point",
            point.lon
        )));
    }
    Ok(point)
}

/// The mean earth radius Lucene's haversine uses, in meters.
pub(crate) const EARTH_RADIUS_METERS: f64 = 6_371_008.771_4;

/// Great-circle distance in meters.
pub fn haversine_meters(a: GeoPoint, b: GeoPoint) -> f64 {
    let (lat1, lat2) = (a.lat.to_radians(), b.lat.to_radians());
    let dlat = lat2 - lat1;
    let dlon = (b.lon - a.lon).to_radians();
    let h = (dlat / 2.0).sin().powi(2) + lat1.cos() * lat2.cos() * (dlon / 2.0).sin().powi(2);
    2.0 * EARTH_RADIUS_METERS * h.sqrt().min(1.0).asin()
}

/// OpenSearch's `plane` distance in meters: flat-earth Pythagoras on the equirectangular
/// projection at the points' mean latitude, cheaper and less accurate than [`haversine_meters`].
pub fn plane_meters(a: GeoPoint, b: GeoPoint) -> f64 {
    let x = (b.lon - a.lon).to_radians() * ((a.lat + b.lat) / 2.0).to_radians().cos();
    let y = (b.lat - a.lat).to_radians();
    (x * x + y * y).sqrt() * EARTH_RADIUS_METERS
}

/// A geo distance in meters as OpenSearch computes it: `arc` is Lucene's sloppy haversine
/// (see [`crate::sloppy_math`]), `plane` the equirectangular approximation.
pub fn distance_meters(a: GeoPoint, b: GeoPoint, plane: bool) -> f64 {
    match plane {
        true => plane_meters(a, b),
        false => crate::sloppy_math::haversin_meters(a.lat, a.lon, b.lat, b.lon),
    }
}

/// OpenSearch's distance units and their length in meters, longest names first so that a
/// suffix match picks `nmi` over `mi` and `mm` over `m`.
const DISTANCE_UNITS: &[(&str, f64)] = &[
    ("NM", 1852.0),
    ("nauticalmiles", 1852.0),
    ("nmi", 1852.0),
    ("kilometers", 1000.0),
    ("km", 1000.0),
    ("miles", 1609.344),
    ("mi", 1609.344),
    ("yards", 0.9144),
    ("yd", 0.9144),
    ("feet", 0.3048),
    ("ft", 0.3048),
    ("inch", 0.0254),
    ("in", 0.0254),
    ("centimeters", 0.01),
    ("cm", 0.01),
    ("millimeters", 0.001),
    ("mm", 0.001),
    ("meters", 1.0),
    ("m", 1.0),
];

/// The length in meters of a distance unit named as OpenSearch names it (`km`, `kilometers`,
/// `mi`, `NM`, ...); `None` for an unknown name.
pub fn unit_meters(name: &str) -> Option<f64> {
    DISTANCE_UNITS
        .iter()
        .find(|(unit, _)| *unit == name)
        .map(|&(_, meters)| meters)
}

/// Parses a distance (`100km`, `12mi`, `500m`, or a number of meters).
pub fn parse_distance(value: &Value) -> Result<f64> {
    let text = match value {
        Value::Number(n) => {
            return n
                .as_f64()
                .ok_or_else(|| Error::illegal_argument("invalid distance"))
        }
        Value::String(s) => s.trim().to_ascii_lowercase(),
        other => {
            return Err(Error::illegal_argument(format!(
                "failed to parse distance [{other}]"
            )))
        }
    };
    for (suffix, factor) in DISTANCE_UNITS {
        if let Some(number) = text.strip_suffix(suffix) {
            if let Ok(n) = number.trim().parse::<f64>() {
                return Ok(n * factor);
            }
        }
    }
    text.parse::<f64>()
        .map_err(|_| Error::illegal_argument(format!("failed to parse distance [{text}]")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_geohash_value_is_its_cells_lower_left_corner() {
        // the reference node indexes "u173z" as this point (its docvalue_fields show it)
        let point = parse_point(&json!("u173z")).unwrap();
        assert_eq!((point.lat, point.lon), (52.3388671875, 4.8779296875));
        assert_eq!(quantize(point), point);
        let centre = decode_geohash("u173z").unwrap();
        assert_eq!((centre.lat, centre.lon), (52.36083984375, 4.89990234375));
    }

    #[test]
    fn parses_every_form() {
        let expected = GeoPoint {
            lat: 40.7,
            lon: -73.9,
        };
        for form in [
            json!([-73.9, 40.7]),
            json!("40.7,-73.9"),
            json!({"lat": 40.7, "lon": -73.9}),
            json!("POINT (-73.9 40.7)"),
        ] {
            assert_eq!(parse_point(&form).unwrap(), expected, "{form}");
        }
        let hashed = parse_point(&json!("dr5regw3pp")).unwrap();
        assert!(
            (hashed.lat - 40.7128).abs() < 0.001 && (hashed.lon + 74.006).abs() < 0.001,
            "{hashed:?}"
        );
        assert!(parse_point(&json!([10.0, 100.0])).is_err());
        assert!(parse_point(&json!(true)).is_err());
        // an altitude is ignored; other arrays are not points
        assert_eq!(parse_point(&json!([-73.9, 40.7, 12])).unwrap(), expected);
        for array in [json!([1.0]), json!([1.0, "2"]), json!([1, 2, 3, 4])] {
            let e = parse_point(&array).unwrap_err();
            assert_eq!(e.reason(), "geo_point expected", "{array}");
        }
    }

    #[test]
    fn geohashes_encode_and_find_their_neighbours() {
        let toronto = GeoPoint {
            lat: 43.662,
            lon: -79.380,
        };
        // OpenSearch indexes this point as `dpz8` at precision 4
        assert_eq!(encode_geohash(toronto, 4), "dpz8");
        assert_eq!(encode_geohash(GeoPoint { lat: 1.0, lon: 2.0 }, 6), "s01mtw");
        let mut around = geohash_neighbours("dpz8").unwrap();
        around.sort();
        // the cells around `8` in its parent `dpz`, and the top row of `dpx` below it
        assert_eq!(
            around,
            ["dpxr", "dpxx", "dpxz", "dpz2", "dpz3", "dpz9", "dpzb", "dpzc"]
        );
        // at the antimeridian the cells wrap; at a pole there is nothing above
        assert!(geohash_neighbours("2").unwrap().contains(&"r".to_string()));
        assert_eq!(geohash_neighbours("z").unwrap().len(), 5);
        assert_eq!(geohash_levels_for(1000.0), 7);
        assert_eq!(geohash_levels_for(0.0), 12);
    }

    #[test]
    fn quantization_matches_lucene() {
        // OpenSearch 2.19 renders these doc values for (52.52, 13.4) and (48.85, 2.35)
        let q = quantize(GeoPoint {
            lat: 52.52,
            lon: 13.4,
        });
        assert_eq!(
            format!("{}, {}", q.lat, q.lon),
            "52.51999998930842, 13.399999989196658"
        );
        let q = quantize(GeoPoint {
            lat: 48.85,
            lon: 2.35,
        });
        assert_eq!(
            format!("{}, {}", q.lat, q.lon),
            "48.8499999884516, 2.3499999940395355"
        );
    }

    #[test]
    fn distances() {
        let berlin = GeoPoint {
            lat: 52.52,
            lon: 13.405,
        };
        let paris = GeoPoint {
            lat: 48.8566,
            lon: 2.3522,
        };
        let d = haversine_meters(berlin, paris);
        assert!((d - 877_500.0).abs() < 2_000.0, "{d}");
        assert_eq!(parse_distance(&json!("100km")).unwrap(), 100_000.0);
        assert_eq!(parse_distance(&json!("1mi")).unwrap(), 1609.344);
        assert_eq!(parse_distance(&json!(250)).unwrap(), 250.0);
        assert!(parse_distance(&json!("far")).is_err());
    }
}
