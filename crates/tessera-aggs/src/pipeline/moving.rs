//! moving_fn's `script`: OpenSearch's built-in `MovingFunctions.*` calls, recognised by shape
//! and computed natively (there is no scripting engine to run anything else).

use serde_json::Value;
use tessera_common::{Error, Result};

/// One recognised `MovingFunctions` call.
#[derive(Clone, Debug, PartialEq)]
pub enum MovingFunction {
    Max,
    Min,
    Sum,
    UnweightedAvg,
    LinearWeightedAvg,
    Ewma {
        alpha: f64,
    },
    Holt {
        alpha: f64,
        beta: f64,
    },
    /// `stdDev(values, MovingFunctions.unweightedAvg(values))`.
    StdDev,
}

fn unsupported(source: &str) -> Error {
    Error::illegal_argument(format!(
        "the moving_fn script [{source}] is not supported: only MovingFunctions.max, min, sum, unweightedAvg, linearWeightedAvg, ewma(values, alpha), holt(values, alpha, beta) and stdDev(values, MovingFunctions.unweightedAvg(values)) run (full scripting is not supported yet)"
    ))
}

impl MovingFunction {
    /// Parses the `script` (a string or `{"source": ...}`).
    pub fn parse(value: &Value) -> Result<MovingFunction> {
        let source = match value {
            Value::String(s) => s.clone(),
            Value::Object(map) => match map.get("source").or_else(|| map.get("inline")) {
                Some(Value::String(s)) => s.clone(),
                _ => return Err(unsupported(&value.to_string())),
            },
            other => return Err(unsupported(&other.to_string())),
        };
        let compact: String = source.chars().filter(|c| !c.is_whitespace()).collect();
        let body = compact.strip_prefix("return").unwrap_or(&compact);
        let body = body.trim_end_matches(';');
        let Some(call) = body.strip_prefix("MovingFunctions.") else {
            return Err(unsupported(&source));
        };
        let Some((name, rest)) = call.split_once('(') else {
            return Err(unsupported(&source));
        };
        let Some(args) = rest.strip_suffix(')') else {
            return Err(unsupported(&source));
        };
        let args: Vec<&str> = args.split(',').collect();
        let number = |s: &str| s.parse::<f64>().map_err(|_| unsupported(&source));
        if args.first() != Some(&"values") {
            return Err(unsupported(&source));
        }
        Ok(match (name, args.len()) {
            ("max", 1) => MovingFunction::Max,
            ("min", 1) => MovingFunction::Min,
            ("sum", 1) => MovingFunction::Sum,
            ("unweightedAvg", 1) => MovingFunction::UnweightedAvg,
            ("linearWeightedAvg", 1) => MovingFunction::LinearWeightedAvg,
            ("ewma", 2) => MovingFunction::Ewma {
                alpha: number(args[1])?,
            },
            ("holt", 3) => MovingFunction::Holt {
                alpha: number(args[1])?,
                beta: number(args[2])?,
            },
            ("stdDev", 2) if args[1] == "MovingFunctions.unweightedAvg(values)" => {
                MovingFunction::StdDev
            }
            _ => return Err(unsupported(&source)),
        })
    }

    /// The function over one window (gaps already left out).
    pub fn compute(&self, values: &[f64]) -> f64 {
        match self {
            MovingFunction::Max => values.iter().copied().reduce(f64::max).unwrap_or(f64::NAN),
            MovingFunction::Min => values.iter().copied().reduce(f64::min).unwrap_or(f64::NAN),
            MovingFunction::Sum => values.iter().sum(),
            MovingFunction::UnweightedAvg => unweighted_avg(values),
            MovingFunction::LinearWeightedAvg => {
                // weights 1, 2, ... n, the newest heaviest; the divisor starts at 1
                let mut total = 0.0;
                let mut weights = 1.0;
                for (i, v) in values.iter().enumerate() {
                    let w = (i + 1) as f64;
                    total += v * w;
                    weights += w;
                }
                if values.is_empty() {
                    f64::NAN
                } else {
                    total / weights
                }
            }
            MovingFunction::Ewma { alpha } => {
                let mut avg = f64::NAN;
                for (i, v) in values.iter().enumerate() {
                    avg = if i == 0 {
                        *v
                    } else {
                        v * alpha + avg * (1.0 - alpha)
                    };
                }
                avg
            }
            MovingFunction::Holt { alpha, beta } => {
                // double exponential smoothing; the forecast one step ahead is the level
                let (mut level, mut trend) = (0.0, 0.0);
                for (i, v) in values.iter().enumerate() {
                    if i == 0 {
                        level = *v;
                        trend = 0.0;
                    } else {
                        let last_level = level;
                        level = alpha * v + (1.0 - alpha) * (last_level + trend);
                        trend = beta * (level - last_level) + (1.0 - beta) * trend;
                    }
                }
                if values.is_empty() {
                    f64::NAN
                } else {
                    level
                }
            }
            MovingFunction::StdDev => {
                let avg = unweighted_avg(values);
                if avg.is_nan() {
                    return f64::NAN;
                }
                let squares: f64 = values.iter().map(|v| (v - avg).powi(2)).sum();
                (squares / values.len() as f64).sqrt()
            }
        }
    }
}

fn unweighted_avg(values: &[f64]) -> f64 {
    if values.is_empty() {
        f64::NAN
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(source: &str) -> MovingFunction {
        MovingFunction::parse(&json!(source)).unwrap()
    }

    #[test]
    fn recognises_the_builtin_calls() {
        assert_eq!(f("MovingFunctions.max(values)"), MovingFunction::Max);
        assert_eq!(
            f(" return MovingFunctions.sum( values );"),
            MovingFunction::Sum
        );
        assert_eq!(
            f("MovingFunctions.holt(values, 0.3, 0.1)"),
            MovingFunction::Holt {
                alpha: 0.3,
                beta: 0.1
            }
        );
        assert_eq!(
            f("MovingFunctions.stdDev(values, MovingFunctions.unweightedAvg(values))"),
            MovingFunction::StdDev
        );
        for bad in [
            "MovingFunctions.holtWinters(values, 0.3, 0.1, 0.1, 2, true)",
            "values[0]",
            "MovingFunctions.ewma(values, params.alpha)",
            "MovingFunctions.stdDev(values, 3)",
        ] {
            let e = MovingFunction::parse(&json!(bad)).unwrap_err();
            assert!(e.reason().contains("not supported"), "{bad}");
        }
    }

    #[test]
    fn computes_windows() {
        let v = [1.0, 2.0, 4.0];
        assert_eq!(MovingFunction::Max.compute(&v), 4.0);
        assert_eq!(MovingFunction::Min.compute(&v), 1.0);
        assert_eq!(MovingFunction::Sum.compute(&v), 7.0);
        assert_eq!(MovingFunction::Sum.compute(&[]), 0.0);
        assert!(MovingFunction::Max.compute(&[]).is_nan());
        assert!((MovingFunction::UnweightedAvg.compute(&v) - 7.0 / 3.0).abs() < 1e-12);
        // (1*1 + 2*2 + 4*3) / (1 + 1 + 2 + 3)
        assert_eq!(MovingFunction::LinearWeightedAvg.compute(&v), 17.0 / 7.0);
        // 1 -> 0.5*2 + 0.5*1 = 1.5 -> 0.5*4 + 0.5*1.5 = 2.75
        assert_eq!(MovingFunction::Ewma { alpha: 0.5 }.compute(&v), 2.75);
        let sd = MovingFunction::StdDev.compute(&[2.0, 4.0]);
        assert_eq!(sd, 1.0);
    }
}
