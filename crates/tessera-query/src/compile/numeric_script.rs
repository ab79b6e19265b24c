//! A fast path for the score scripts people write most: one arithmetic expression over
//! `doc['f'].value` of double columns, `_score`, number literals and a few `Math` functions
//! (`doc['total_amount'].value / (doc['trip_distance'].value + 1)`). Such a script is
//! evaluated in doubles straight from the columns, without building script values.
//!
//! Only expressions whose every operation is done in doubles in Java are taken (an operation
//! between two integral operands would be integer arithmetic in Painless), so the result is the
//! general script's; a document missing a value is handed to the general script, which fails
//! as OpenSearch does.
//!
//! A score script runs over blocks of documents (`eval_block`): each column is read once per
//! block, each operation is one tight loop over the block, and the per-document cost is a few
//! floating point operations rather than a walk of the tree.

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

    /// The values of a block of documents, into `out`: `fields[slot]` holds the block's first
    /// values of each field slot the expression reads (see [`NumExpr::slots`]), `scores` their
    /// query scores. `spare` keeps scratch buffers between blocks. Every value is computed
    /// exactly as [`NumExpr::eval`] computes it; documents missing a value get a meaningless
    /// one (the caller knows which they are).
    pub fn eval_block(
        &self,
        fields: &[Vec<f64>],
        scores: &[f64],
        out: &mut [f64],
        spare: &mut Vec<Vec<f64>>,
    ) {
        let n = out.len();
        match self {
            NumExpr::Const(c) => out.fill(*c),
            NumExpr::Field(slot) => out.copy_from_slice(&fields[*slot as usize][..n]),
            NumExpr::Score => out.copy_from_slice(&scores[..n]),
            NumExpr::Neg(e) => {
                e.eval_block(fields, scores, out, spare);
                out.iter_mut().for_each(|v| *v = -*v);
            }
            NumExpr::Bin(op, a, b) => {
                a.eval_block(fields, scores, out, spare);
                if let NumExpr::Const(c) = **b {
                    let rhs = std::iter::repeat(c);
                    apply_bin(*op, out, rhs);
                    return;
                }
                let mut rhs = spare.pop().unwrap_or_default();
                rhs.resize(n, 0.0);
                b.eval_block(fields, scores, &mut rhs, spare);
                apply_bin(*op, out, rhs.iter().copied());
                spare.push(rhs);
            }
            NumExpr::Math(f, args) => {
                args[0].eval_block(fields, scores, out, spare);
                let unary = |out: &mut [f64], g: fn(f64) -> f64| {
                    out.iter_mut().for_each(|v| *v = g(*v));
                };
                match f {
                    MathFn::Log => return unary(out, f64::ln),
                    MathFn::Log10 => return unary(out, f64::log10),
                    MathFn::Sqrt => return unary(out, f64::sqrt),
                    MathFn::Exp => return unary(out, f64::exp),
                    MathFn::Abs => return unary(out, f64::abs),
                    MathFn::Pow | MathFn::Min | MathFn::Max => {}
                }
                let mut rhs = spare.pop().unwrap_or_default();
                rhs.resize(n, 0.0);
                args[1].eval_block(fields, scores, &mut rhs, spare);
                let g: fn(f64, f64) -> f64 = match f {
                    MathFn::Pow => f64::powf,
                    MathFn::Min => java_min,
                    _ => java_max,
                };
                out.iter_mut().zip(&rhs).for_each(|(a, b)| *a = g(*a, *b));
                spare.push(rhs);
            }
        }
    }

    /// The field slots the expression reads, each once.
    pub fn slots(&self) -> Vec<u32> {
        let mut slots = Vec::new();
        self.collect_slots(&mut slots);
        slots.sort_unstable();
        slots.dedup();
        slots
    }

    fn collect_slots(&self, slots: &mut Vec<u32>) {
        match self {
            NumExpr::Field(slot) => slots.push(*slot),
            NumExpr::Const(_) | NumExpr::Score => {}
            NumExpr::Neg(e) => e.collect_slots(slots),
            NumExpr::Bin(_, a, b) => {
                a.collect_slots(slots);
                b.collect_slots(slots);
            }
            NumExpr::Math(_, args) => args.iter().for_each(|a| a.collect_slots(slots)),
        }
    }
}

/// `out[i] = out[i] op rhs[i]`, one loop per operator so that each vectorizes.
#[inline]
fn apply_bin(op: BinOp, out: &mut [f64], rhs: impl Iterator<Item = f64>) {
    let pairs = out.iter_mut().zip(rhs);
    match op {
        BinOp::Add => pairs.for_each(|(a, b)| *a += b),
        BinOp::Sub => pairs.for_each(|(a, b)| *a -= b),
        BinOp::Mul => pairs.for_each(|(a, b)| *a *= b),
        BinOp::Div => pairs.for_each(|(a, b)| *a /= b),
        _ => pairs.for_each(|(a, b)| *a %= b),
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
    fn a_block_gets_each_documents_own_value() {
        // a small deterministic generator: values of both signs, zeros (division by zero,
        // log of zero), and -0.0
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            match state % 8 {
                0 => 0.0,
                1 => -0.0,
                _ => (state >> 11) as f64 / (1u64 << 45) as f64 - 64.0,
            }
        };
        for source in [
            "doc['a'].value / (doc['b'].value + 1)",
            "-doc['a'].value * _score - 2.5",
            "Math.pow(doc['a'].value, 2) + Math.sqrt(Math.abs(doc['b'].value))",
            "Math.max(doc['a'].value, _score) - Math.min(0.0, doc['b'].value) / Math.exp(_score)",
            "Math.log(doc['a'].value) + Math.log10(doc['b'].value * 3)",
            "1.5",
        ] {
            let e = build(source).unwrap();
            assert!(e.slots().iter().all(|s| *s < 2), "{source}");
            let n = 37;
            let fields: Vec<Vec<f64>> = (0..2).map(|_| (0..n).map(|_| next()).collect()).collect();
            let scores: Vec<f64> = (0..n).map(|_| next()).collect();
            let mut out = vec![0.0; n];
            let mut spare = Vec::new();
            e.eval_block(&fields, &scores, &mut out, &mut spare);
            for i in 0..n {
                let one = e.eval(&|s| Some(fields[s as usize][i]), scores[i]).unwrap();
                assert_eq!(one.to_bits(), out[i].to_bits(), "{source} at {i}");
            }
        }
        assert_eq!(
            build("doc['b'].value + doc['a'].value * doc['b'].value")
                .unwrap()
                .slots(),
            vec![0, 1]
        );
    }

    #[test]
    fn java_min_max() {
        assert!(java_min(f64::NAN, 1.0).is_nan());
        assert!(java_min(0.0, -0.0).is_sign_negative());
        assert!(java_max(-0.0, 0.0).is_sign_positive());
        assert_eq!(java_max(1.0, 2.0), 2.0);
    }
}
