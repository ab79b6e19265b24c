//! What the operators and methods do at run time, with Java's semantics: numeric promotion
//! (int → long → float → double), wrapping integer arithmetic, `/ by zero`, `Math.*`, and the
//! whitelisted methods of strings, lists, maps, dates, geo points and `doc[...]` fields. The
//! compiler calls these directly for `def` values and for the operations it does not
//! specialise; errors carry Painless's exception type and message.

use std::sync::{Arc, Mutex};

use crate::ast::BinOp;
use crate::doc::DocValues;
use crate::error::ScriptError;
use crate::regex::{GroupError, Matcher};
use crate::value::{lock, JavaMap, Value};

pub type Trap = Box<ScriptError>;
pub type R<T = Value> = Result<T, Trap>;

/// The most elements a list or map, and the most bytes a string, may hold.
pub const MAX_COLLECTION: usize = 1 << 24;

pub fn trap(pos: usize, kind: &'static str, reason: impl Into<String>) -> Trap {
    Box::new(ScriptError::runtime(pos, kind, reason))
}

/// The null-pointer exception of a `def` call, field or operator on null.
pub fn npe(pos: usize, what: &str) -> Trap {
    trap(
        pos,
        "null_pointer_exception",
        format!("Cannot invoke \"Object.getClass()\" because \"{what}\" is null"),
    )
}

/// The numeric rank of a value for promotion: int 0, long 1, float 2, double 3.
fn rank(v: &Value) -> Option<u8> {
    Some(match v {
        Value::Int(_) => 0,
        Value::Long(_) => 1,
        Value::Float(_) => 2,
        Value::Double(_) => 3,
        _ => return None,
    })
}

fn as_i64(v: &Value) -> i64 {
    match *v {
        Value::Int(x) => x as i64,
        Value::Long(x) => x,
        Value::Float(x) => x as i64,
        Value::Double(x) => x as i64,
        _ => 0,
    }
}

fn as_f32(v: &Value) -> f32 {
    match *v {
        Value::Int(x) => x as f32,
        Value::Long(x) => x as f32,
        Value::Float(x) => x,
        Value::Double(x) => x as f32,
        _ => 0.0,
    }
}

fn as_f64(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

fn cannot_apply(pos: usize, op: BinOp, a: &Value, b: &Value) -> Trap {
    trap(
        pos,
        "class_cast_exception",
        format!(
            "Cannot apply [{}] operation to types [{}] and [{}].",
            op.symbol(),
            a.java_class(),
            b.java_class()
        ),
    )
}

fn div_zero(pos: usize) -> Trap {
    trap(pos, "arithmetic_exception", "/ by zero")
}

/// Concatenation: Java's `String.valueOf` of both sides.
pub fn concat(pos: usize, a: &Value, b: &Value) -> R {
    let mut s = String::new();
    a.write_java(&mut s);
    b.write_java(&mut s);
    if s.len() > MAX_COLLECTION {
        return Err(too_large(pos, "string"));
    }
    Ok(Value::Str(Arc::from(s)))
}

pub fn too_large(pos: usize, what: &str) -> Trap {
    trap(
        pos,
        "painless_error",
        format!("a script's {what} may hold at most {MAX_COLLECTION} elements"),
    )
}

/// A binary operator on two values, with Java's promotion (`def` semantics; the static
/// cases agree because statically typed locals always hold values of their type).
pub fn binary(op: BinOp, pos: usize, a: &Value, b: &Value) -> R {
    match op {
        BinOp::Eq => return Ok(Value::Bool(equals(a, b))),
        BinOp::Ne => return Ok(Value::Bool(!equals(a, b))),
        BinOp::Add if matches!(a, Value::Str(_)) || matches!(b, Value::Str(_)) => {
            return concat(pos, a, b)
        }
        _ => {}
    }
    if a.is_null() {
        return Err(npe(pos, "left"));
    }
    if b.is_null() {
        return Err(npe(pos, "right"));
    }
    if let (Value::Bool(x), Value::Bool(y)) = (a, b) {
        return match op {
            BinOp::BitAnd => Ok(Value::Bool(x & y)),
            BinOp::BitOr => Ok(Value::Bool(x | y)),
            BinOp::BitXor => Ok(Value::Bool(x ^ y)),
            _ => Err(cannot_apply(pos, op, a, b)),
        };
    }
    let (Some(ra), Some(rb)) = (rank(a), rank(b)) else {
        return Err(cannot_apply(pos, op, a, b));
    };
    if matches!(op, BinOp::Shl | BinOp::Shr | BinOp::Ushr) {
        // the shift distance does not promote the left operand
        if ra >= 2 || rb >= 2 {
            return Err(cannot_apply(pos, op, a, b));
        }
        let n = as_i64(b);
        return Ok(match a {
            Value::Int(x) => Value::Int(match op {
                BinOp::Shl => x.wrapping_shl(n as u32 & 31),
                BinOp::Shr => x.wrapping_shr(n as u32 & 31),
                _ => ((*x as u32) >> (n as u32 & 31)) as i32,
            }),
            _ => {
                let x = as_i64(a);
                Value::Long(match op {
                    BinOp::Shl => x.wrapping_shl(n as u32 & 63),
                    BinOp::Shr => x.wrapping_shr(n as u32 & 63),
                    _ => ((x as u64) >> (n as u32 & 63)) as i64,
                })
            }
        });
    }
    match ra.max(rb) {
        0 => int_op(op, pos, as_i64(a) as i32, as_i64(b) as i32),
        1 => long_op(op, pos, as_i64(a), as_i64(b)),
        2 => {
            let (x, y) = (as_f32(a), as_f32(b));
            Ok(match op {
                BinOp::Mul => Value::Float(x * y),
                BinOp::Div => Value::Float(x / y),
                BinOp::Rem => Value::Float(x % y),
                BinOp::Add => Value::Float(x + y),
                BinOp::Sub => Value::Float(x - y),
                BinOp::Lt => Value::Bool(x < y),
                BinOp::Le => Value::Bool(x <= y),
                BinOp::Gt => Value::Bool(x > y),
                BinOp::Ge => Value::Bool(x >= y),
                _ => return Err(cannot_apply(pos, op, a, b)),
            })
        }
        _ => double_op(op, pos, as_f64(a), as_f64(b)).ok_or_else(|| cannot_apply(pos, op, a, b)),
    }
}

pub fn int_op(op: BinOp, pos: usize, x: i32, y: i32) -> R {
    Ok(match op {
        BinOp::Mul => Value::Int(x.wrapping_mul(y)),
        BinOp::Div if y == 0 => return Err(div_zero(pos)),
        BinOp::Div => Value::Int(x.wrapping_div(y)),
        BinOp::Rem if y == 0 => return Err(div_zero(pos)),
        BinOp::Rem => Value::Int(x.wrapping_rem(y)),
        BinOp::Add => Value::Int(x.wrapping_add(y)),
        BinOp::Sub => Value::Int(x.wrapping_sub(y)),
        BinOp::Lt => Value::Bool(x < y),
        BinOp::Le => Value::Bool(x <= y),
        BinOp::Gt => Value::Bool(x > y),
        BinOp::Ge => Value::Bool(x >= y),
        BinOp::BitAnd => Value::Int(x & y),
        BinOp::BitOr => Value::Int(x | y),
        BinOp::BitXor => Value::Int(x ^ y),
        BinOp::Eq => Value::Bool(x == y),
        BinOp::Ne => Value::Bool(x != y),
        BinOp::Shl | BinOp::Shr | BinOp::Ushr => {
            return binary(op, pos, &Value::Int(x), &Value::Int(y))
        }
    })
}

pub fn long_op(op: BinOp, pos: usize, x: i64, y: i64) -> R {
    Ok(match op {
        BinOp::Mul => Value::Long(x.wrapping_mul(y)),
        BinOp::Div if y == 0 => return Err(div_zero(pos)),
        BinOp::Div => Value::Long(x.wrapping_div(y)),
        BinOp::Rem if y == 0 => return Err(div_zero(pos)),
        BinOp::Rem => Value::Long(x.wrapping_rem(y)),
        BinOp::Add => Value::Long(x.wrapping_add(y)),
        BinOp::Sub => Value::Long(x.wrapping_sub(y)),
        BinOp::Lt => Value::Bool(x < y),
        BinOp::Le => Value::Bool(x <= y),
        BinOp::Gt => Value::Bool(x > y),
        BinOp::Ge => Value::Bool(x >= y),
        BinOp::BitAnd => Value::Long(x & y),
        BinOp::BitOr => Value::Long(x | y),
        BinOp::BitXor => Value::Long(x ^ y),
        BinOp::Eq => Value::Bool(x == y),
        BinOp::Ne => Value::Bool(x != y),
        BinOp::Shl | BinOp::Shr | BinOp::Ushr => {
            return binary(op, pos, &Value::Long(x), &Value::Long(y))
        }
    })
}

/// A double operation; `None` for the operators doubles do not have.
pub fn double_op(op: BinOp, _pos: usize, x: f64, y: f64) -> Option<Value> {
    Some(match op {
        BinOp::Mul => Value::Double(x * y),
        BinOp::Div => Value::Double(x / y),
        BinOp::Rem => Value::Double(x % y),
        BinOp::Add => Value::Double(x + y),
        BinOp::Sub => Value::Double(x - y),
        BinOp::Lt => Value::Bool(x < y),
        BinOp::Le => Value::Bool(x <= y),
        BinOp::Gt => Value::Bool(x > y),
        BinOp::Ge => Value::Bool(x >= y),
        BinOp::Eq => Value::Bool(x == y),
        BinOp::Ne => Value::Bool(x != y),
        _ => return None,
    })
}

/// Painless's `==`: numbers compare by value after promotion, everything else by `equals`.
pub fn equals(a: &Value, b: &Value) -> bool {
    match (rank(a), rank(b)) {
        (Some(ra), Some(rb)) => match ra.max(rb) {
            0 | 1 => as_i64(a) == as_i64(b),
            2 => as_f32(a) == as_f32(b),
            _ => as_f64(a) == as_f64(b),
        },
        _ => a.java_equals(b),
    }
}

/// The target of an implicit or explicit conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Int,
    Long,
    Float,
    Double,
    Bool,
    Str,
    List,
    Map,
}

impl Target {
    pub fn name(self) -> &'static str {
        match self {
            Target::Int => "int",
            Target::Long => "long",
            Target::Float => "float",
            Target::Double => "double",
            Target::Bool => "boolean",
            Target::Str => "java.lang.String",
            Target::List => "java.util.List",
            Target::Map => "java.util.Map",
        }
    }

    fn rank(self) -> Option<u8> {
        Some(match self {
            Target::Int => 0,
            Target::Long => 1,
            Target::Float => 2,
            Target::Double => 3,
            _ => return None,
        })
    }
}

/// A number converted to a numeric target, as Java's primitive conversions do.
pub fn convert_number(v: &Value, to: Target) -> Value {
    match to {
        Target::Int => Value::Int(match *v {
            Value::Int(x) => x,
            Value::Long(x) => x as i32,
            Value::Float(x) => x as i32,
            Value::Double(x) => x as i32,
            _ => 0,
        }),
        Target::Long => Value::Long(as_i64(v)),
        Target::Float => Value::Float(as_f32(v)),
        _ => Value::Double(as_f64(v)),
    }
}

/// A `def` value assigned to a typed variable: only widening conversions are implicit.
pub fn implicit_cast(pos: usize, v: Value, to: Target) -> R {
    let ok = match (&v, to) {
        (Value::Null, Target::Str | Target::List | Target::Map) => true,
        (Value::Bool(_), Target::Bool) => true,
        (Value::Str(_), Target::Str) => true,
        (Value::List(_), Target::List) => true,
        (Value::Map(_), Target::Map) => true,
        _ => match (rank(&v), to.rank()) {
            (Some(from), Some(target)) if from <= target => {
                return Ok(convert_number(&v, to));
            }
            _ => false,
        },
    };
    if ok {
        return Ok(v);
    }
    if matches!(v, Value::Str(_) | Value::List(_) | Value::Map(_)) && to.rank().is_none() {
        // a reference checked by the JVM's checkcast, in its words
        let (from, to) = (v.java_class(), to.name());
        return Err(trap(
            pos,
            "class_cast_exception",
            format!("class {from} cannot be cast to class {to} ({from} and {to} are in module java.base of loader 'bootstrap')"),
        ));
    }
    Err(trap(
        pos,
        "class_cast_exception",
        format!(
            "cannot implicitly cast def [{}] to {}",
            v.def_type_name(),
            to.name()
        ),
    ))
}

/// `(type) value` on a `def` value: any number to any number, otherwise the same class.
pub fn explicit_cast(pos: usize, v: Value, to: Target) -> R {
    if rank(&v).is_some() && to.rank().is_some() {
        return Ok(convert_number(&v, to));
    }
    match (&v, to) {
        (Value::Null, Target::Str | Target::List | Target::Map)
        | (Value::Bool(_), Target::Bool)
        | (Value::Str(_), Target::Str)
        | (Value::List(_), Target::List)
        | (Value::Map(_), Target::Map) => Ok(v),
        _ => Err(trap(
            pos,
            "class_cast_exception",
            format!(
                "cannot explicitly cast def [{}] to {}",
                v.def_type_name(),
                to.name()
            ),
        )),
    }
}

pub fn truthy(pos: usize, v: &Value) -> R<bool> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::Null => Err(trap(
            pos,
            "null_pointer_exception",
            "Cannot invoke \"java.lang.Boolean.booleanValue()\" because \"value\" is null",
        )),
        other => Err(trap(
            pos,
            "class_cast_exception",
            format!("cannot cast def [{}] to boolean", other.def_type_name()),
        )),
    }
}

/// Unary minus, plus and bitwise not.
pub fn negate(pos: usize, v: &Value) -> R {
    Ok(match *v {
        Value::Int(x) => Value::Int(x.wrapping_neg()),
        Value::Long(x) => Value::Long(x.wrapping_neg()),
        Value::Float(x) => Value::Float(-x),
        Value::Double(x) => Value::Double(-x),
        Value::Null => return Err(npe(pos, "unary")),
        ref other => return Err(unary_error(pos, "-", other)),
    })
}

pub fn bit_not(pos: usize, v: &Value) -> R {
    Ok(match *v {
        Value::Int(x) => Value::Int(!x),
        Value::Long(x) => Value::Long(!x),
        Value::Null => return Err(npe(pos, "unary")),
        ref other => return Err(unary_error(pos, "~", other)),
    })
}

pub fn unary_error(pos: usize, symbol: &str, v: &Value) -> Trap {
    trap(
        pos,
        "class_cast_exception",
        format!(
            "Cannot apply [{symbol}] operation to type [{}].",
            v.java_class()
        ),
    )
}

/// The index of `list[i]`: Painless counts a negative index from the end.
fn list_index(pos: usize, len: usize, i: &Value) -> R<usize> {
    let i = match *i {
        Value::Int(x) => x as i64,
        Value::Long(x) => x,
        ref other => {
            return Err(trap(
                pos,
                "class_cast_exception",
                format!(
                    "cannot implicitly cast def [{}] to int",
                    other.def_type_name()
                ),
            ))
        }
    };
    let effective = if i < 0 { i + len as i64 } else { i };
    if effective < 0 || effective >= len as i64 {
        return Err(out_of_bounds(pos, i, len));
    }
    Ok(effective as usize)
}

fn out_of_bounds(pos: usize, i: i64, len: usize) -> Trap {
    trap(
        pos,
        "index_out_of_bounds_exception",
        format!("Index {i} out of bounds for length {len}"),
    )
}

/// `obj[index]`.
pub fn index_get(pos: usize, obj: &Value, index: &Value, doc: Option<&dyn DocValues>) -> R {
    match obj {
        Value::List(l) => {
            let l = lock(l);
            let i = list_index(pos, l.len(), index)?;
            Ok(l[i].clone())
        }
        Value::Map(m) => Ok(lock(m).get(index).cloned().unwrap_or_default()),
        Value::DocField(slot) => {
            let Some(doc) = doc else {
                return Ok(Value::Null);
            };
            let n = doc.count(*slot);
            let i = match *index {
                Value::Int(x) => x as i64,
                Value::Long(x) => x,
                _ => -1,
            };
            if i < 0 || i >= n as i64 {
                return Err(out_of_bounds(pos, i, n));
            }
            Ok(doc.value(*slot, i as usize))
        }
        Value::Null => Err(npe(pos, "callArgs[0]")),
        other => Err(trap(
            pos,
            "illegal_argument_exception",
            format!(
                "Attempting to address a non-array-like type [{}] as an array.",
                other.java_class()
            ),
        )),
    }
}

/// `obj[index] = value`.
pub fn index_set(pos: usize, obj: &Value, index: &Value, value: Value) -> R<()> {
    match obj {
        Value::List(l) => {
            let mut l = lock(l);
            let i = list_index(pos, l.len(), index)?;
            l[i] = value;
            Ok(())
        }
        Value::Map(m) => map_put(pos, &mut lock(m), index.clone(), value).map(|_| ()),
        Value::Null => Err(npe(pos, "callArgs[0]")),
        other => Err(trap(
            pos,
            "illegal_argument_exception",
            format!(
                "Attempting to address a non-array-like type [{}] as an array.",
                other.java_class()
            ),
        )),
    }
}

fn map_put(pos: usize, m: &mut JavaMap, k: Value, v: Value) -> R {
    if m.len() >= MAX_COLLECTION {
        return Err(too_large(pos, "map"));
    }
    Ok(m.insert(k, v))
}

/// `obj.name`: a map's key, or the getter `getName()`/`isName()` (Painless's shortcut).
pub fn field_get(pos: usize, obj: &Value, name: &str, doc: Option<&dyn DocValues>) -> R {
    match obj {
        Value::Map(m) => Ok(lock(m).get(&Value::str(name)).cloned().unwrap_or_default()),
        Value::Null => Err(npe(pos, "callArgs[0]")),
        Value::Geo(g) if name == "lat" => Ok(Value::Double(g.lat)),
        Value::Geo(g) if name == "lon" => Ok(Value::Double(g.lon)),
        _ => {
            let mut chars = name.chars();
            let capital = match chars.next() {
                Some(c) => c.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            };
            for getter in [format!("get{capital}"), format!("is{capital}")] {
                if has_method(obj, &getter, 0) {
                    return call_method(pos, obj, &getter, &[], doc);
                }
            }
            Err(trap(
                pos,
                "illegal_argument_exception",
                format!("dynamic getter [{}, {name}] not found", obj.java_class()),
            ))
        }
    }
}

/// `obj.name = value`: only maps have settable fields in the subset.
pub fn field_set(pos: usize, obj: &Value, name: &str, value: Value) -> R<()> {
    match obj {
        Value::Map(m) => map_put(pos, &mut lock(m), Value::str(name), value).map(|_| ()),
        Value::Null => Err(npe(pos, "callArgs[0]")),
        other => Err(trap(
            pos,
            "illegal_argument_exception",
            format!("dynamic setter [{}, {name}] not found", other.java_class()),
        )),
    }
}

/// The methods each receiver class has, by name and arity, for compile-time checks of
/// statically typed receivers and for `def` dispatch.
pub fn methods_of(class: &str) -> &'static [(&'static str, usize)] {
    match class {
        "java.lang.String" => &[
            ("length", 0),
            ("substring", 1),
            ("substring", 2),
            ("indexOf", 1),
            ("indexOf", 2),
            ("lastIndexOf", 1),
            ("contains", 1),
            ("startsWith", 1),
            ("endsWith", 1),
            ("toLowerCase", 0),
            ("toUpperCase", 0),
            ("trim", 0),
            ("replace", 2),
            ("equals", 1),
            ("equalsIgnoreCase", 1),
            ("charAt", 1),
            ("isEmpty", 0),
            ("compareTo", 1),
            ("toString", 0),
            ("hashCode", 0),
            ("splitOnToken", 1),
        ],
        "java.util.List" | "java.util.ArrayList" => &[
            ("add", 1),
            ("add", 2),
            ("get", 1),
            ("set", 2),
            ("size", 0),
            ("isEmpty", 0),
            ("contains", 1),
            ("indexOf", 1),
            ("remove", 1),
            ("clear", 0),
            ("equals", 1),
            ("toString", 0),
            ("hashCode", 0),
            ("getLength", 0),
        ],
        "java.util.Map" | "java.util.HashMap" => &[
            ("put", 2),
            ("get", 1),
            ("getOrDefault", 2),
            ("containsKey", 1),
            ("containsValue", 1),
            ("remove", 1),
            ("size", 0),
            ("isEmpty", 0),
            ("keySet", 0),
            ("values", 0),
            ("clear", 0),
            ("equals", 1),
            ("toString", 0),
            ("hashCode", 0),
        ],
        "org.opensearch.script.JodaCompatibleZonedDateTime" => &[
            ("getYear", 0),
            ("getMonthValue", 0),
            ("getDayOfMonth", 0),
            ("getDayOfYear", 0),
            ("getHour", 0),
            ("getMinute", 0),
            ("getSecond", 0),
            ("getNano", 0),
            ("getMillis", 0),
            ("toInstant", 0),
            ("toEpochMilli", 0),
            ("toString", 0),
            ("equals", 1),
            ("hashCode", 0),
            ("isBefore", 1),
            ("isAfter", 1),
        ],
        "org.opensearch.common.geo.GeoPoint" => &[
            ("getLat", 0),
            ("getLon", 0),
            ("toString", 0),
            ("equals", 1),
            ("hashCode", 0),
        ],
        "org.opensearch.index.fielddata.ScriptDocValues" => &[
            ("getValue", 0),
            ("getValues", 0),
            ("size", 0),
            ("isEmpty", 0),
            ("get", 1),
            ("getLength", 0),
            ("contains", 1),
            ("arcDistance", 2),
            ("getLat", 0),
            ("getLon", 0),
            ("toString", 0),
        ],
        "java.lang.Integer" | "java.lang.Long" | "java.lang.Float" | "java.lang.Double" => &[
            ("intValue", 0),
            ("longValue", 0),
            ("floatValue", 0),
            ("doubleValue", 0),
            ("toString", 0),
            ("equals", 1),
            ("hashCode", 0),
            ("compareTo", 1),
        ],
        "java.lang.Boolean" => &[
            ("booleanValue", 0),
            ("toString", 0),
            ("equals", 1),
            ("hashCode", 0),
        ],
        "java.util.regex.Pattern" => &[
            ("matcher", 1),
            ("pattern", 0),
            ("toString", 0),
            ("equals", 1),
            ("hashCode", 0),
        ],
        "java.util.regex.Matcher" => &[
            ("find", 0),
            ("find", 1),
            ("matches", 0),
            ("group", 0),
            ("group", 1),
            ("namedGroup", 1),
            ("groupCount", 0),
            ("start", 0),
            ("start", 1),
            ("end", 0),
            ("end", 1),
            ("reset", 0),
            ("toString", 0),
            ("equals", 1),
            ("hashCode", 0),
        ],
        _ => &[],
    }
}

pub fn has_method(obj: &Value, name: &str, arity: usize) -> bool {
    methods_of(obj.java_class()).contains(&(name, arity))
}

fn arg_str(pos: usize, v: &Value) -> R<&str> {
    match v {
        Value::Str(s) => Ok(s),
        Value::Null => Err(npe(pos, "callArgs[1]")),
        other => Err(trap(
            pos,
            "class_cast_exception",
            format!(
                "cannot implicitly cast def [{}] to java.lang.String",
                other.def_type_name()
            ),
        )),
    }
}

fn arg_int(pos: usize, v: &Value) -> R<i32> {
    match *v {
        Value::Int(x) => Ok(x),
        ref other => Err(trap(
            pos,
            "class_cast_exception",
            format!(
                "cannot implicitly cast def [{}] to int",
                other.def_type_name()
            ),
        )),
    }
}

fn arg_f64(pos: usize, v: &Value) -> R<f64> {
    v.as_f64().ok_or_else(|| {
        trap(
            pos,
            "class_cast_exception",
            format!(
                "cannot implicitly cast def [{}] to double",
                v.def_type_name()
            ),
        )
    })
}

/// String indexes are UTF-16 code units in Java; the subset counts chars, which agree for
/// text in the basic multilingual plane.
fn char_range(pos: usize, s: &str, begin: i32, end: i32) -> R {
    let chars: Vec<char> = s.chars().collect();
    let len = chars.len() as i32;
    if begin < 0 || end > len || begin > end {
        return Err(trap(
            pos,
            "string_index_out_of_bounds_exception",
            format!("begin {begin}, end {end}, length {len}"),
        ));
    }
    Ok(Value::str(
        &chars[begin as usize..end as usize]
            .iter()
            .collect::<String>(),
    ))
}

fn char_index(s: &str, byte: Option<usize>) -> Value {
    Value::Int(byte.map_or(-1, |b| s[..b].chars().count() as i32))
}

/// `obj.name(args)`.
pub fn call_method(
    pos: usize,
    obj: &Value,
    name: &str,
    args: &[Value],
    doc: Option<&dyn DocValues>,
) -> R {
    if obj.is_null() {
        return Err(npe(pos, "callArgs[0]"));
    }
    if !has_method(obj, name, args.len()) {
        return Err(trap(
            pos,
            "illegal_argument_exception",
            format!(
                "dynamic method [{}, {name}/{}] not found",
                obj.java_class(),
                args.len()
            ),
        ));
    }
    match (name, args) {
        ("toString", []) => return Ok(Value::str(&obj.to_java_string())),
        ("equals", [other]) => return Ok(Value::Bool(obj.java_equals(other))),
        ("hashCode", []) => return Ok(Value::Int(obj.java_hash())),
        _ => {}
    }
    match obj {
        Value::Str(s) => string_method(pos, s, name, args),
        Value::List(l) => {
            let mut l = lock(l);
            Ok(match (name, args) {
                ("add", [v]) => {
                    if l.len() >= MAX_COLLECTION {
                        return Err(too_large(pos, "list"));
                    }
                    l.push(v.clone());
                    Value::Bool(true)
                }
                ("add", [i, v]) => {
                    let i = arg_int(pos, i)?;
                    if i < 0 || i as usize > l.len() {
                        return Err(out_of_bounds(pos, i as i64, l.len()));
                    }
                    l.insert(i as usize, v.clone());
                    Value::Null
                }
                ("get", [i]) => {
                    let i = arg_int(pos, i)?;
                    if i < 0 || i as usize >= l.len() {
                        return Err(out_of_bounds(pos, i as i64, l.len()));
                    }
                    l[i as usize].clone()
                }
                ("set", [i, v]) => {
                    let i = arg_int(pos, i)?;
                    if i < 0 || i as usize >= l.len() {
                        return Err(out_of_bounds(pos, i as i64, l.len()));
                    }
                    std::mem::replace(&mut l[i as usize], v.clone())
                }
                ("remove", [i]) => {
                    let i = arg_int(pos, i)?;
                    if i < 0 || i as usize >= l.len() {
                        return Err(out_of_bounds(pos, i as i64, l.len()));
                    }
                    l.remove(i as usize)
                }
                ("size" | "getLength", []) => Value::Int(l.len() as i32),
                ("isEmpty", []) => Value::Bool(l.is_empty()),
                ("contains", [v]) => Value::Bool(l.iter().any(|x| x.java_equals(v))),
                ("indexOf", [v]) => Value::Int(
                    l.iter()
                        .position(|x| x.java_equals(v))
                        .map_or(-1, |p| p as i32),
                ),
                ("clear", []) => {
                    l.clear();
                    Value::Null
                }
                _ => unreachable!("listed in methods_of"),
            })
        }
        Value::Map(m) => {
            let mut m = lock(m);
            Ok(match (name, args) {
                ("put", [k, v]) => map_put(pos, &mut m, k.clone(), v.clone())?,
                ("get", [k]) => m.get(k).cloned().unwrap_or_default(),
                ("getOrDefault", [k, d]) => m.get(k).cloned().unwrap_or_else(|| d.clone()),
                ("containsKey", [k]) => Value::Bool(m.get(k).is_some()),
                ("containsValue", [v]) => Value::Bool(m.entries.values().any(|x| x.java_equals(v))),
                ("remove", [k]) => m.remove(k),
                ("size", []) => Value::Int(m.len() as i32),
                ("isEmpty", []) => Value::Bool(m.is_empty()),
                ("keySet", []) => {
                    Value::new_list(m.java_order().into_iter().map(|(k, _)| k).collect())
                }
                ("values", []) => {
                    Value::new_list(m.java_order().into_iter().map(|(_, v)| v).collect())
                }
                ("clear", []) => {
                    m.clear();
                    Value::Null
                }
                _ => unreachable!("listed in methods_of"),
            })
        }
        Value::Date(ms) => date_method(pos, *ms, name, args),
        Value::Geo(g) => Ok(match name {
            "getLat" => Value::Double(g.lat),
            _ => Value::Double(g.lon),
        }),
        Value::DocField(slot) => doc_method(pos, *slot, name, args, doc),
        Value::Int(_) | Value::Long(_) | Value::Float(_) | Value::Double(_) => match name {
            "intValue" => Ok(convert_number(obj, Target::Int)),
            "longValue" => Ok(convert_number(obj, Target::Long)),
            "floatValue" => Ok(convert_number(obj, Target::Float)),
            "doubleValue" => Ok(convert_number(obj, Target::Double)),
            _ => {
                let (a, b) = (obj, &args[0]);
                let less = binary(BinOp::Lt, pos, a, b)?;
                let more = binary(BinOp::Gt, pos, a, b)?;
                Ok(Value::Int(match (less, more) {
                    (Value::Bool(true), _) => -1,
                    (_, Value::Bool(true)) => 1,
                    _ => 0,
                }))
            }
        },
        Value::Bool(b) => Ok(Value::Bool(*b)),
        Value::Pattern(p) => match name {
            "matcher" => {
                let text = Arc::from(arg_str(pos, &args[0])?);
                Ok(Value::Matcher(Arc::new(Mutex::new(Matcher::new(
                    p.clone(),
                    text,
                )))))
            }
            _ => Ok(Value::str(p.source())),
        },
        Value::Matcher(m) => matcher_method(pos, &mut lock(m), name, args),
        Value::Null => Err(npe(pos, "callArgs[0]")),
    }
}

/// The methods of a `java.util.regex.Matcher`.
fn matcher_method(pos: usize, m: &mut Matcher, name: &str, args: &[Value]) -> R {
    let group_error = |e: GroupError| match e {
        GroupError::NoMatch => trap(pos, "illegal_state_exception", "No match found"),
        GroupError::NoGroup(n) => trap(
            pos,
            "index_out_of_bounds_exception",
            format!("No group {n}"),
        ),
    };
    let text = |t: Option<&str>| t.map_or(Value::Null, Value::str);
    Ok(match (name, args) {
        ("find", []) => Value::Bool(m.find()),
        ("find", [start]) => {
            let start = arg_int(pos, start)?;
            Value::Bool(
                m.find_from(start).ok_or_else(|| {
                    trap(pos, "index_out_of_bounds_exception", "Illegal start index")
                })?,
            )
        }
        ("matches", []) => Value::Bool(m.matches()),
        ("group", []) => text(m.group(0).map_err(group_error)?),
        ("group", [n]) => text(m.group(arg_int(pos, n)?).map_err(group_error)?),
        ("namedGroup", [group]) => {
            let group = arg_str(pos, group)?;
            match m.named_group(group) {
                Ok(found) => text(found),
                Err(Some(e)) => return Err(group_error(e)),
                Err(None) => {
                    return Err(trap(
                        pos,
                        "illegal_argument_exception",
                        format!("No group with name <{group}>"),
                    ))
                }
            }
        }
        ("groupCount", []) => Value::Int(m.pattern().group_count() as i32),
        ("start" | "end", []) => Value::Int(m.bound(0, name == "end").map_err(group_error)?),
        ("start" | "end", [n]) => Value::Int(
            m.bound(arg_int(pos, n)?, name == "end")
                .map_err(group_error)?,
        ),
        ("reset", []) => {
            m.reset();
            Value::Null
        }
        _ => unreachable!("listed in methods_of"),
    })
}

fn string_method(pos: usize, s: &str, name: &str, args: &[Value]) -> R {
    Ok(match (name, args) {
        ("length", []) => Value::Int(s.encode_utf16().count() as i32),
        ("substring", [b]) => {
            let b = arg_int(pos, b)?;
            char_range(pos, s, b, s.chars().count() as i32)?
        }
        ("substring", [b, e]) => char_range(pos, s, arg_int(pos, b)?, arg_int(pos, e)?)?,
        ("indexOf", [x]) => char_index(s, s.find(arg_str(pos, x)?)),
        ("indexOf", [x, from]) => {
            let from = arg_int(pos, from)?.max(0) as usize;
            let start = s.char_indices().nth(from).map_or(s.len(), |(b, _)| b);
            char_index(s, s[start..].find(arg_str(pos, x)?).map(|b| b + start))
        }
        ("lastIndexOf", [x]) => char_index(s, s.rfind(arg_str(pos, x)?)),
        ("contains", [x]) => Value::Bool(s.contains(arg_str(pos, x)?)),
        ("startsWith", [x]) => Value::Bool(s.starts_with(arg_str(pos, x)?)),
        ("endsWith", [x]) => Value::Bool(s.ends_with(arg_str(pos, x)?)),
        ("toLowerCase", []) => Value::str(&s.to_lowercase()),
        ("toUpperCase", []) => Value::str(&s.to_uppercase()),
        ("trim", []) => Value::str(s.trim_matches(|c: char| c <= ' ')),
        ("replace", [a, b]) => Value::str(&s.replace(arg_str(pos, a)?, arg_str(pos, b)?)),
        ("equalsIgnoreCase", [x]) => Value::Bool(match x {
            Value::Str(x) => x.to_lowercase() == s.to_lowercase(),
            _ => false,
        }),
        ("isEmpty", []) => Value::Bool(s.is_empty()),
        // a char, shown as itself (the subset has no char type)
        ("charAt", [i]) => {
            let i = arg_int(pos, i)?;
            let len = s.chars().count() as i32;
            if i < 0 || i >= len {
                return Err(trap(
                    pos,
                    "string_index_out_of_bounds_exception",
                    format!("Index {i} out of bounds for length {len}"),
                ));
            }
            char_range(pos, s, i, i + 1)?
        }
        ("compareTo", [x]) => {
            let x = arg_str(pos, x)?;
            // Java compares UTF-16 code units: the first difference, else the length difference
            let (a, b): (Vec<u16>, Vec<u16>) =
                (s.encode_utf16().collect(), x.encode_utf16().collect());
            let diff = a.iter().zip(&b).find(|(p, q)| p != q);
            Value::Int(match diff {
                Some((p, q)) => *p as i32 - *q as i32,
                None => a.len() as i32 - b.len() as i32,
            })
        }
        ("splitOnToken", [t]) => {
            let t = arg_str(pos, t)?;
            if t.is_empty() {
                return Err(trap(
                    pos,
                    "illegal_argument_exception",
                    "Cannot split on empty token",
                ));
            }
            Value::new_list(s.split(t).map(Value::str).collect())
        }
        _ => unreachable!("listed in methods_of"),
    })
}

fn doc_method(pos: usize, slot: u32, name: &str, args: &[Value], doc: Option<&dyn DocValues>) -> R {
    let Some(doc) = doc else {
        return Err(trap(
            pos,
            "illegal_argument_exception",
            "no document in this context",
        ));
    };
    let n = doc.count(slot);
    Ok(match (name, args) {
        ("size" | "getLength", []) => Value::Int(n as i32),
        ("isEmpty", []) => Value::Bool(n == 0),
        ("getValues", []) => Value::new_list((0..n).map(|i| doc.value(slot, i)).collect()),
        ("contains", [v]) => Value::Bool((0..n).any(|i| doc.value(slot, i).java_equals(v))),
        ("get", [i]) => return index_get(pos, &Value::DocField(slot), i, Some(doc)),
        ("getValue", []) => first_value(pos, slot, doc)?,
        ("getLat" | "getLon", []) => {
            let v = first_value(pos, slot, doc)?;
            call_method(pos, &v, name, &[], None)?
        }
        ("arcDistance", [lat, lon]) => {
            let Value::Geo(g) = first_value(pos, slot, doc)? else {
                return Err(trap(
                    pos,
                    "illegal_argument_exception",
                    "arcDistance needs a geo_point field",
                ));
            };
            Value::Double(g.arc_distance(arg_f64(pos, lat)?, arg_f64(pos, lon)?))
        }
        _ => unreachable!("listed in methods_of"),
    })
}

/// `doc['f'].value`: the first value, or OpenSearch's error for a document without one.
pub fn first_value(pos: usize, slot: u32, doc: &dyn DocValues) -> R {
    if doc.count(slot) == 0 {
        return Err(trap(
            pos,
            "illegal_state_exception",
            "A document doesn't have a value for a field! Use doc[<field>].size()==0 to check if a document is missing a field!",
        ));
    }
    Ok(doc.value(slot, 0))
}

/// Days since 1970-01-01 → (year, month, day), the proleptic Gregorian calendar.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

struct DateParts {
    year: i64,
    month: u32,
    day: u32,
    day_of_year: u32,
    hour: u32,
    minute: u32,
    second: u32,
    millis: u32,
}

fn date_parts(ms: i64) -> DateParts {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    DateParts {
        year,
        month,
        day,
        day_of_year: (days - civil_days(year, 1, 1)) as u32 + 1,
        hour: (in_day / 3_600_000) as u32,
        minute: (in_day / 60_000 % 60) as u32,
        second: (in_day / 1000 % 60) as u32,
        millis: (in_day % 1000) as u32,
    }
}

fn civil_days(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `ZonedDateTime.toString()` in UTC: seconds and fractions only when not zero.
pub fn date_to_string(ms: i64) -> String {
    let p = date_parts(ms);
    let mut s = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}",
        p.year, p.month, p.day, p.hour, p.minute
    );
    if p.second != 0 || p.millis != 0 {
        s.push_str(&format!(":{:02}", p.second));
        if p.millis != 0 {
            s.push_str(&format!(".{:03}", p.millis));
        }
    }
    s.push('Z');
    s
}

fn date_method(pos: usize, ms: i64, name: &str, args: &[Value]) -> R {
    let p = date_parts(ms);
    Ok(match name {
        "getYear" => Value::Int(p.year as i32),
        "getMonthValue" => Value::Int(p.month as i32),
        "getDayOfMonth" => Value::Int(p.day as i32),
        "getDayOfYear" => Value::Int(p.day_of_year as i32),
        "getHour" => Value::Int(p.hour as i32),
        "getMinute" => Value::Int(p.minute as i32),
        "getSecond" => Value::Int(p.second as i32),
        "getNano" => Value::Int(p.millis as i32 * 1_000_000),
        "getMillis" | "toEpochMilli" => Value::Long(ms),
        "toInstant" => Value::Date(ms),
        "isBefore" | "isAfter" => {
            let Value::Date(other) = args[0] else {
                return Err(trap(
                    pos,
                    "class_cast_exception",
                    format!(
                        "cannot implicitly cast def [{}] to java.time.chrono.ChronoZonedDateTime",
                        args[0].def_type_name()
                    ),
                ));
            };
            Value::Bool(if name == "isBefore" {
                ms < other
            } else {
                ms > other
            })
        }
        _ => unreachable!("listed in methods_of"),
    })
}

/// The static methods and constants the subset has: `Math.*` (without `random`), and the
/// parse/valueOf helpers of the boxed classes. Returns the arities each name accepts.
pub fn static_method_arity(class: &str, name: &str) -> &'static [usize] {
    match (class, name) {
        (
            "Math",
            "abs" | "sqrt" | "cbrt" | "log" | "log10" | "log1p" | "exp" | "expm1" | "floor"
            | "ceil" | "round" | "signum" | "sin" | "cos" | "tan" | "asin" | "acos" | "atan"
            | "sinh" | "cosh" | "tanh" | "toRadians" | "toDegrees" | "rint",
        ) => &[1],
        ("Math", "max" | "min" | "pow" | "atan2" | "hypot") => &[2],
        ("Integer", "parseInt" | "valueOf") | ("Long", "parseLong" | "valueOf") => &[1],
        ("Double", "parseDouble" | "valueOf") | ("Float", "parseFloat") => &[1],
        ("Boolean", "parseBoolean") | ("String", "valueOf") => &[1],
        _ => &[],
    }
}

/// The static constants: `Math.PI`, `Integer.MAX_VALUE`, ...
pub fn static_field(class: &str, name: &str) -> Option<Value> {
    Some(match (class, name) {
        ("Math", "PI") => Value::Double(std::f64::consts::PI),
        ("Math", "E") => Value::Double(std::f64::consts::E),
        ("Integer", "MAX_VALUE") => Value::Int(i32::MAX),
        ("Integer", "MIN_VALUE") => Value::Int(i32::MIN),
        ("Long", "MAX_VALUE") => Value::Long(i64::MAX),
        ("Long", "MIN_VALUE") => Value::Long(i64::MIN),
        ("Double", "MAX_VALUE") => Value::Double(f64::MAX),
        ("Double", "MIN_VALUE") => Value::Double(f64::from_bits(1)),
        ("Double", "POSITIVE_INFINITY") => Value::Double(f64::INFINITY),
        ("Double", "NEGATIVE_INFINITY") => Value::Double(f64::NEG_INFINITY),
        ("Double", "NaN") => Value::Double(f64::NAN),
        _ => return None,
    })
}

/// Java's `Math.round(double)`: the closest long, ties toward positive infinity.
fn java_round(x: f64) -> i64 {
    let floor = x.floor();
    (if x - floor >= 0.5 { floor + 1.0 } else { floor }) as i64
}

fn number_format(pos: usize, s: &str) -> Trap {
    trap(
        pos,
        "number_format_exception",
        format!("For input string: \"{s}\""),
    )
}

/// A static method call (the class, name and arity already checked by the compiler).
pub fn call_static(pos: usize, class: &str, name: &str, args: &[Value]) -> R {
    let a = &args[0];
    match (class, name) {
        // Painless's Math has the double methods only: ints and longs are widened
        ("Math", "abs") => Ok(Value::Double(arg_f64(pos, a)?.abs())),
        ("Math", "max" | "min") => {
            let (x, y) = (arg_f64(pos, a)?, arg_f64(pos, &args[1])?);
            Ok(Value::Double(java_minmax(x, y, name == "max")))
        }
        ("Math", "round") => Ok(Value::Long(java_round(arg_f64(pos, a)?))),
        ("Math", "signum") => {
            let x = arg_f64(pos, a)?;
            Ok(Value::Double(if x == 0.0 || x.is_nan() {
                x
            } else {
                x.signum()
            }))
        }
        ("Math", _) if args.len() == 2 => {
            let (x, y) = (arg_f64(pos, a)?, arg_f64(pos, &args[1])?);
            Ok(Value::Double(match name {
                "pow" => java_pow(x, y),
                "atan2" => x.atan2(y),
                _ => x.hypot(y),
            }))
        }
        ("Math", _) => {
            let x = arg_f64(pos, a)?;
            Ok(Value::Double(match name {
                "sqrt" => x.sqrt(),
                "cbrt" => x.cbrt(),
                "log" => x.ln(),
                "log10" => x.log10(),
                "log1p" => x.ln_1p(),
                "exp" => x.exp(),
                "expm1" => x.exp_m1(),
                "floor" => x.floor(),
                "ceil" => x.ceil(),
                "rint" => x.round_ties_even(),
                "sin" => x.sin(),
                "cos" => x.cos(),
                "tan" => x.tan(),
                "asin" => x.asin(),
                "acos" => x.acos(),
                "atan" => x.atan(),
                "sinh" => x.sinh(),
                "cosh" => x.cosh(),
                "tanh" => x.tanh(),
                "toRadians" => x.to_radians(),
                _ => x.to_degrees(),
            }))
        }
        ("String", "valueOf") => Ok(Value::str(&a.to_java_string())),
        (_, _) => {
            let s = match a {
                Value::Str(s) => s.to_string(),
                other if class == "Boolean" || name == "valueOf" => other.to_java_string(),
                other => {
                    return Err(trap(
                        pos,
                        "class_cast_exception",
                        format!(
                            "cannot implicitly cast def [{}] to java.lang.String",
                            other.def_type_name()
                        ),
                    ))
                }
            };
            match (class, name) {
                ("Integer", _) => s
                    .parse::<i32>()
                    .map(Value::Int)
                    .map_err(|_| number_format(pos, &s)),
                ("Long", _) => s
                    .parse::<i64>()
                    .map(Value::Long)
                    .map_err(|_| number_format(pos, &s)),
                ("Boolean", _) => Ok(Value::Bool(s.eq_ignore_ascii_case("true"))),
                ("Float", _) => parse_java_float(&s)
                    .map(|v| Value::Float(v as f32))
                    .ok_or_else(|| number_format(pos, &s)),
                _ => parse_java_float(&s)
                    .map(Value::Double)
                    .ok_or_else(|| number_format(pos, &s)),
            }
        }
    }
}

/// Java's `Math.max`/`min` on doubles: NaN wins, and -0.0 is less than 0.0.
pub fn java_minmax(x: f64, y: f64, max: bool) -> f64 {
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if x == y {
        return if max == x.is_sign_negative() { y } else { x };
    }
    if (x > y) == max {
        x
    } else {
        y
    }
}

/// Java's `Math.pow`: as IEEE `pow`, except that `pow(1, NaN)` and `pow(±1, ±∞)` are NaN.
fn java_pow(x: f64, y: f64) -> f64 {
    if y.is_nan() || (x.abs() == 1.0 && y.is_infinite()) {
        return f64::NAN;
    }
    x.powf(y)
}

/// `Double.parseDouble`: leading and trailing whitespace allowed, a `d`/`f` suffix allowed.
fn parse_java_float(s: &str) -> Option<f64> {
    let t = s.trim();
    let t = t.strip_suffix(['d', 'D', 'f', 'F']).unwrap_or(t);
    match t {
        "NaN" => Some(f64::NAN),
        "Infinity" | "+Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ if t.chars().all(|c| c.is_ascii_digit() || "+-.eE".contains(c)) => t.parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_arithmetic() {
        let v = binary(BinOp::Add, 0, &Value::Int(i32::MAX), &Value::Int(1)).unwrap();
        assert!(matches!(v, Value::Int(i32::MIN)));
        let v = binary(BinOp::Div, 0, &Value::Int(-7), &Value::Int(2)).unwrap();
        assert!(matches!(v, Value::Int(-3)));
        let v = binary(BinOp::Rem, 0, &Value::Int(-7), &Value::Int(3)).unwrap();
        assert!(matches!(v, Value::Int(-1)));
        let e = binary(BinOp::Div, 4, &Value::Long(1), &Value::Int(0)).unwrap_err();
        assert_eq!(
            (e.cause_type, e.reason.as_str(), e.offset),
            ("arithmetic_exception", "/ by zero", 4)
        );
        let v = binary(BinOp::Div, 0, &Value::Double(1.0), &Value::Int(0)).unwrap();
        assert!(matches!(v, Value::Double(x) if x == f64::INFINITY));
        let v = binary(BinOp::Mul, 0, &Value::Float(1.5), &Value::Long(2)).unwrap();
        assert!(matches!(v, Value::Float(x) if x == 3.0));
        let v = binary(BinOp::Ushr, 0, &Value::Int(-1), &Value::Int(28)).unwrap();
        assert!(matches!(v, Value::Int(15)));
        let e = binary(BinOp::Add, 0, &Value::Null, &Value::Int(1)).unwrap_err();
        assert_eq!(
            e.reason,
            "Cannot invoke \"Object.getClass()\" because \"left\" is null"
        );
        let v = binary(BinOp::Add, 0, &Value::str("a"), &Value::Float(1.0)).unwrap();
        assert_eq!(v.to_java_string(), "a1.0");
    }

    #[test]
    fn equality_promotes_numbers() {
        assert!(equals(&Value::Int(1), &Value::Double(1.0)));
        assert!(equals(&Value::str("ab"), &Value::str("ab")));
        assert!(!equals(&Value::Null, &Value::Int(0)));
    }

    #[test]
    fn casts() {
        assert!(matches!(
            implicit_cast(0, Value::Int(1), Target::Double),
            Ok(Value::Double(_))
        ));
        let e = implicit_cast(0, Value::Double(2.5), Target::Int).unwrap_err();
        assert_eq!(e.reason, "cannot implicitly cast def [double] to int");
        assert!(matches!(
            explicit_cast(0, Value::Double(3.9), Target::Int),
            Ok(Value::Int(3))
        ));
        let e = explicit_cast(0, Value::Int(1), Target::Str).unwrap_err();
        assert_eq!(
            e.reason,
            "cannot explicitly cast def [int] to java.lang.String"
        );
    }

    #[test]
    fn math() {
        let r = call_static(0, "Math", "round", &[Value::Double(-2.5)]).unwrap();
        assert!(matches!(r, Value::Long(-2)));
        let r = call_static(0, "Math", "max", &[Value::Int(1), Value::Long(3)]).unwrap();
        assert!(matches!(r, Value::Double(3.0)));
        let r = call_static(0, "Math", "pow", &[Value::Int(2), Value::Int(10)]).unwrap();
        assert!(matches!(r, Value::Double(x) if x == 1024.0));
        let e = call_static(0, "Integer", "parseInt", &[Value::str("x")]).unwrap_err();
        assert_eq!(e.reason, "For input string: \"x\"");
    }

    #[test]
    fn strings_lists_maps() {
        let s = Value::str("Hello");
        let call = |o: &Value, n: &str, a: &[Value]| {
            call_method(0, o, n, a, None).unwrap().to_java_string()
        };
        assert_eq!(call(&s, "substring", &[Value::Int(1), Value::Int(3)]), "el");
        assert_eq!(call(&s, "indexOf", &[Value::str("l")]), "2");
        assert_eq!(call(&s, "toUpperCase", &[]), "HELLO");
        let l = Value::new_list(vec![]);
        call(&l, "add", &[Value::Int(1)]);
        call(&l, "add", &[Value::Int(2)]);
        assert_eq!(l.to_java_string(), "[1, 2]");
        assert_eq!(
            index_get(0, &l, &Value::Int(-1), None)
                .unwrap()
                .to_java_string(),
            "2"
        );
        let e = index_get(3, &l, &Value::Int(5), None).unwrap_err();
        assert_eq!(e.reason, "Index 5 out of bounds for length 2");
        let m = Value::new_map(JavaMap::default());
        call(&m, "put", &[Value::str("a"), Value::Int(1)]);
        assert_eq!(field_get(0, &m, "a", None).unwrap().to_java_string(), "1");
        assert_eq!(call(&m, "containsKey", &[Value::str("b")]), "false");
        let e = call_method(0, &Value::Int(1), "foo", &[], None).unwrap_err();
        assert_eq!(
            e.reason,
            "dynamic method [java.lang.Integer, foo/0] not found"
        );
    }

    #[test]
    fn dates() {
        // 2021-03-04T05:06:07.089Z
        let ms = 1_614_834_367_089;
        assert_eq!(date_to_string(ms), "2021-03-04T05:06:07.089Z");
        assert_eq!(date_to_string(0), "1970-01-01T00:00Z");
        let get = |n: &str| date_method(0, ms, n, &[]).unwrap().to_java_string();
        assert_eq!(get("getYear"), "2021");
        assert_eq!(get("getMonthValue"), "3");
        assert_eq!(get("getDayOfYear"), "63");
        assert_eq!(get("getSecond"), "7");
    }
}
