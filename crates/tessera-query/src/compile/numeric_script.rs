//! A fast path for the score scripts people write most: one arithmetic expression over
//! `doc['f'].value` of double columns, `_score`, number literals and a few `Math` functions
//! (`doc['total_amount'].value / (doc['trip_distance'].value + 1)`). Such a script is
//! evaluated in doubles straight from the columns, without building script values.
//!
//! Only expressions whose every operation is done in doubles in Java are taken (an operation
//! between two integral operands would be integer arithmetic in Painless), so the result is the
//! general script's; a document missing a value is handed to the general script, which fails
//! as OpenSearch does.

use tessera_script::ast::{BinOp, Expr, ExprKind, Stmt, StmtKind, UnOp};

/// A compiled numeric expression.
#[derive(Debug, Clone)]
pub enum NumExpr {
    Const(f64),
    /// The first value of the script's field slot.
    Field(u32),
    Score,
    Neg(Box<NumExpr>),
    Bin(BinOp, Box<NumExpr>, Box<NumExpr>),
    Math(MathFn, Vec<NumExpr>),
}

#[derive(Debug, Clone, Copy)]
pub enum MathFn {
    Log,
    Log10,
    Sqrt,
    Exp,
    Abs,
    Pow,
    Min,
    Max,
}

/// Static type of a sub-expression, as Painless types it.
#[derive(Clone, Copy, PartialEq)]
enum Ty {
    Integral,
    Double,
}

impl NumExpr {
    /// The fast form of `source`, when it is one expression the fast path takes;
    /// `double_field(name)` gives the slot of a field whose values are doubles here (None: not
    /// a double column, or not one of the script's fields).
    pub fn build(source: &str, double_field: impl Fn(&str) -> Option<u32>) -> Option<NumExpr> {
        let stmts = tessera_script::parser::parse(source).ok()?;
        let [Stmt {
            kind: StmtKind::Expr(expr) | StmtKind::Return(Some(expr)),
            ..
        }] = stmts.as_slice()
        else {
            return None;
        };
        match convert(expr, &double_field)? {
            (e, Ty::Double) => Some(e),
            _ => None,
        }
    }

    /// The value, given the first values of the fields (`field(slot)`) and the score; `None`
    /// when a field has no value.
    #[inline]
    pub fn eval(&self, field: &impl Fn(u32) -> Option<f64>, score: f64) -> Option<f64> {
        Some(match self {
            NumExpr::Const(c) => *c,
            NumExpr::Field(slot) => field(*slot)?,
            NumExpr::Score => score,
            NumExpr::Neg(e) => -e.eval(field, score)?,
            NumExpr::Bin(op, a, b) => {
                let (a, b) = (a.eval(field, score)?, b.eval(field, score)?);
                match op {
                    BinOp::Add => a + b,
                    BinOp::Sub => a - b,
                    BinOp::Mul => a * b,
                    BinOp::Div => a / b,
                    _ => a % b,
                }
            }
            NumExpr::Math(f, args) => {
                let a = args[0].eval(field, score)?;
                match f {
                    MathFn::Log => a.ln(),
                    MathFn::Log10 => a.log10(),
                    MathFn::Sqrt => a.sqrt(),
                    MathFn::Exp => a.exp(),
                    MathFn::Abs => a.abs(),
                    MathFn::Pow => a.powf(args[1].eval(field, score)?),
                    MathFn::Min => java_min(a, args[1].eval(field, score)?),
                    MathFn::Max => java_max(a, args[1].eval(field, score)?),
                }
            }
        })
    }
}

/// Java's `Math.min` on doubles (the interpreter's, so both paths agree).
fn java_min(a: f64, b: f64) -> f64 {
    tessera_script::builtins::java_minmax(a, b, false)
}

fn java_max(a: f64, b: f64) -> f64 {
    tessera_script::builtins::java_minmax(a, b, true)
}

fn convert(e: &Expr, double_field: &impl Fn(&str) -> Option<u32>) -> Option<(NumExpr, Ty)> {
    Some(match &e.kind {
        ExprKind::Double(d) => (NumExpr::Const(*d), Ty::Double),
        ExprKind::Int(i) => (NumExpr::Const(f64::from(*i)), Ty::Integral),
        ExprKind::Var(name) if name == "_score" => (NumExpr::Score, Ty::Double),
        ExprKind::Field {
            obj,
            name,
            null_safe: false,
        } if name == "value" => {
            let ExprKind::Index { obj: doc, index } = &obj.kind else {
                return None;
            };
            let (ExprKind::Var(var), ExprKind::Str(field)) = (&doc.kind, &index.kind) else {
                return None;
            };
            if var != "doc" {
                return None;
            }
            (NumExpr::Field(double_field(field)?), Ty::Double)
        }
        ExprKind::Unary(UnOp::Neg, inner) => match convert(inner, double_field)? {
            (e, Ty::Double) => (NumExpr::Neg(Box::new(e)), Ty::Double),
            _ => return None,
        },
        ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div), a, b) => {
            let (a, ta) = convert(a, double_field)?;
            let (b, tb) = convert(b, double_field)?;
            if ta == Ty::Integral && tb == Ty::Integral {
                return None;
            }
            (NumExpr::Bin(*op, Box::new(a), Box::new(b)), Ty::Double)
        }
        ExprKind::Call {
            obj,
            name,
            args,
            null_safe: false,
        } if matches!(&obj.kind, ExprKind::Var(v) if v == "Math") => {
            let (f, arity) = match name.as_str() {
                "log" => (MathFn::Log, 1),
                "log10" => (MathFn::Log10, 1),
                "sqrt" => (MathFn::Sqrt, 1),
                "exp" => (MathFn::Exp, 1),
                "pow" => (MathFn::Pow, 2),
                // abs, min and max keep an integral operand's type: only doubles are taken
                "abs" => (MathFn::Abs, 1),
                "min" => (MathFn::Min, 2),
                "max" => (MathFn::Max, 2),
                _ => return None,
            };
            if args.len() != arity {
                return None;
            }
            let mut converted = Vec::with_capacity(arity);
            let mut all_double = true;
            for arg in args {
                let (e, t) = convert(arg, double_field)?;
                all_double &= t == Ty::Double;
                converted.push(e);
            }
            if matches!(f, MathFn::Abs | MathFn::Min | MathFn::Max) && !all_double {
                return None;
            }
            (NumExpr::Math(f, converted), Ty::Double)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(source: &str) -> Option<NumExpr> {
        NumExpr::build(source, |f| match f {
            "a" => Some(0),
            "b" => Some(1),
            _ => None,
        })
    }

    #[test]
    fn takes_double_arithmetic_only() {
        let e = build("doc['a'].value / (doc['b'].value + 1)").unwrap();
        let values = [Some(10.0), Some(4.0)];
        assert_eq!(e.eval(&|s| values[s as usize], 0.0), Some(2.0));
        let e = build("return Math.log10(doc['a'].value) * _score;").unwrap();
        assert_eq!(e.eval(&|s| values[s as usize], 3.0), Some(3.0));
        assert_eq!(e.eval(&|_| None, 3.0), None);
        // integer arithmetic, other fields, statements: the general script
        assert!(build("1 / 2").is_none());
        assert!(build("doc['c'].value * 2").is_none());
        assert!(build("double x = doc['a'].value; x").is_none());
        assert!(build("Math.abs(-1)").is_none());
        assert!(build("doc['a'].value > 1").is_none());
    }

    #[test]
    fn java_min_max() {
        assert!(java_min(f64::NAN, 1.0).is_nan());
        assert!(java_min(0.0, -0.0).is_sign_negative());
        assert!(java_max(-0.0, 0.0).is_sign_positive());
        assert_eq!(java_max(1.0, 2.0), 2.0);
    }
}
