//! A straightforward tree-walking evaluator of numeric and boolean expressions, written apart
//! from `builtins` and `compile` (its own promotion, wrapping and static typing), and the
//! property test that the compiled closures agree with it on random scripts and parameters,
//! errors included. Test-only.

use crate::ast::{BinOp, Expr, ExprKind, StmtKind, TypeName, UnOp};
use crate::parser::parse;

#[derive(Debug, Clone, Copy, PartialEq)]
enum N {
    I(i32),
    L(i64),
    F(f32),
    D(f64),
    B(bool),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    Def,
    I,
    L,
    F,
    D,
    B,
}

type Fail = (&'static str, String);

fn rank(n: N) -> u8 {
    match n {
        N::I(_) => 0,
        N::L(_) => 1,
        N::F(_) => 2,
        N::D(_) => 3,
        N::B(_) => 9,
    }
}

fn st_rank(t: St) -> Option<u8> {
    match t {
        St::I => Some(0),
        St::L => Some(1),
        St::F => Some(2),
        St::D => Some(3),
        _ => None,
    }
}

fn to(n: N, r: u8) -> N {
    let d = match n {
        N::I(x) => return [N::I(x), N::L(x as i64), N::F(x as f32), N::D(x as f64)][r as usize],
        N::L(x) => {
            return match r {
                0 => N::I(x as i32),
                1 => N::L(x),
                2 => N::F(x as f32),
                _ => N::D(x as f64),
            }
        }
        N::F(x) => x as f64,
        N::D(x) => x,
        N::B(_) => unreachable!("numbers only"),
    };
    match r {
        0 => N::I(d as i32),
        1 => N::L(d as i64),
        2 => N::F(d as f32),
        _ => N::D(d),
    }
}

fn text(n: N) -> String {
    use crate::value::Value;
    match n {
        N::I(x) => Value::Int(x).to_java_string(),
        N::L(x) => Value::Long(x).to_java_string(),
        N::F(x) => Value::Float(x).to_java_string(),
        N::D(x) => Value::Double(x).to_java_string(),
        N::B(b) => b.to_string(),
    }
}

struct Eval<'a> {
    vars: Vec<(String, St, N)>,
    params: &'a [(String, N)],
}

impl Eval<'_> {
    fn sty(&self, e: &Expr) -> St {
        match &e.kind {
            ExprKind::Int(_) => St::I,
            ExprKind::Long(_) => St::L,
            ExprKind::Float(_) => St::F,
            ExprKind::Double(_) => St::D,
            ExprKind::Bool(_) => St::B,
            ExprKind::Var(v) => self
                .vars
                .iter()
                .find(|x| &x.0 == v)
                .map_or(St::Def, |x| x.1),
            ExprKind::Field { .. } => St::Def,
            ExprKind::Unary(UnOp::Not, _) | ExprKind::And(..) | ExprKind::Or(..) => St::B,
            ExprKind::Unary(_, x) => self.sty(x),
            ExprKind::Binary(op, l, r) => {
                if op.is_comparison() {
                    return St::B;
                }
                let (a, b) = (self.sty(l), self.sty(r));
                if a == St::B {
                    return St::B;
                }
                if a == St::Def || b == St::Def {
                    return St::Def;
                }
                if matches!(op, BinOp::Shl | BinOp::Shr | BinOp::Ushr) {
                    return a;
                }
                [St::I, St::L, St::F, St::D][st_rank(a).unwrap().max(st_rank(b).unwrap()) as usize]
            }
            ExprKind::Ternary(_, x, y) => {
                let (a, b) = (self.sty(x), self.sty(y));
                match (st_rank(a), st_rank(b)) {
                    _ if a == b => a,
                    (Some(p), Some(q)) => [St::I, St::L, St::F, St::D][p.max(q) as usize],
                    _ => St::Def,
                }
            }
            ExprKind::Cast(t, _) => match t {
                TypeName::Int => St::I,
                TypeName::Long => St::L,
                TypeName::Float => St::F,
                _ => St::D,
            },
            ExprKind::Call { .. } => St::D,
            _ => St::Def,
        }
    }

    fn eval(&self, e: &Expr) -> Result<N, Fail> {
        match &e.kind {
            ExprKind::Int(v) => Ok(N::I(*v)),
            ExprKind::Long(v) => Ok(N::L(*v)),
            ExprKind::Float(v) => Ok(N::F(*v)),
            ExprKind::Double(v) => Ok(N::D(*v)),
            ExprKind::Bool(v) => Ok(N::B(*v)),
            ExprKind::Var(v) => Ok(self.vars.iter().find(|x| &x.0 == v).expect("declared").2),
            ExprKind::Field { name, .. } => Ok(self
                .params
                .iter()
                .find(|p| &p.0 == name)
                .expect("a param")
                .1),
            ExprKind::Unary(op, x) => {
                let v = self.eval(x)?;
                Ok(match (op, v) {
                    (UnOp::Not, N::B(b)) => N::B(!b),
                    (UnOp::Neg, N::I(x)) => N::I((-(x as i64)) as i32),
                    (UnOp::Neg, N::L(x)) => N::L((-(x as i128)) as i64),
                    (UnOp::Neg, N::F(x)) => N::F(-x),
                    (UnOp::Neg, N::D(x)) => N::D(-x),
                    (UnOp::BitNot, N::I(x)) => N::I(!x),
                    (UnOp::BitNot, N::L(x)) => N::L(!x),
                    (_, v) => v,
                })
            }
            ExprKind::And(l, r) => match self.eval(l)? {
                N::B(false) => Ok(N::B(false)),
                _ => self.eval(r),
            },
            ExprKind::Or(l, r) => match self.eval(l)? {
                N::B(true) => Ok(N::B(true)),
                _ => self.eval(r),
            },
            ExprKind::Ternary(c, x, y) => {
                let t = self.sty(e);
                let v = if self.eval(c)? == N::B(true) {
                    self.eval(x)?
                } else {
                    self.eval(y)?
                };
                Ok(match st_rank(t) {
                    Some(r) => to(v, r),
                    None => v,
                })
            }
            ExprKind::Cast(_, x) => {
                let v = self.eval(x)?;
                Ok(to(v, st_rank(self.sty(e)).unwrap()))
            }
            ExprKind::Call { name, args, .. } => {
                let vals: Vec<N> = args
                    .iter()
                    .map(|a| self.eval(a))
                    .collect::<Result<_, _>>()?;
                Ok(math(name, &vals))
            }
            ExprKind::Binary(op, l, r) => {
                let (a, b) = (self.eval(l)?, self.eval(r)?);
                binary(*op, a, b)
            }
            other => panic!("not generated: {other:?}"),
        }
    }
}

fn math(name: &str, v: &[N]) -> N {
    let d = |n: N| match to(n, 3) {
        N::D(x) => x,
        _ => unreachable!(),
    };
    match name {
        "abs" => N::D(d(v[0]).abs()),
        "max" | "min" => {
            let (x, y) = (d(v[0]), d(v[1]));
            let max = name == "max";
            N::D(if x.is_nan() || y.is_nan() {
                f64::NAN
            } else if x == y {
                // -0.0 < 0.0 in Java's max/min
                if max == x.is_sign_negative() {
                    y
                } else {
                    x
                }
            } else if (x > y) == max {
                x
            } else {
                y
            })
        }
        "sqrt" => N::D(d(v[0]).sqrt()),
        _ => N::D(d(v[0]).floor()),
    }
}

fn binary(op: BinOp, a: N, b: N) -> Result<N, Fail> {
    if let (N::B(x), N::B(y)) = (a, b) {
        return Ok(N::B(match op {
            BinOp::Eq => x == y,
            BinOp::Ne => x != y,
            BinOp::BitAnd => x & y,
            BinOp::BitOr => x | y,
            _ => x ^ y,
        }));
    }
    if matches!(op, BinOp::Shl | BinOp::Shr | BinOp::Ushr) {
        let n = match b {
            N::I(x) => x as i64,
            N::L(x) => x,
            _ => unreachable!(),
        };
        return Ok(match a {
            N::I(x) => {
                let s = (n & 31) as u32;
                N::I(match op {
                    BinOp::Shl => ((x as i64) << s) as i32,
                    BinOp::Shr => x >> s,
                    _ => ((x as u32) >> s) as i32,
                })
            }
            N::L(x) => {
                let s = (n & 63) as u32;
                N::L(match op {
                    BinOp::Shl => ((x as i128) << s) as i64,
                    BinOp::Shr => x >> s,
                    _ => ((x as u64) >> s) as i64,
                })
            }
            _ => unreachable!(),
        });
    }
    let r = rank(a).max(rank(b));
    let zero = || ("arithmetic_exception", "/ by zero".to_string());
    match (to(a, r), to(b, r)) {
        (N::I(x), N::I(y)) => {
            let (x, y) = (x as i64, y as i64);
            let w = |v: i64| N::I(v as i32);
            Ok(match op {
                BinOp::Add => w(x + y),
                BinOp::Sub => w(x - y),
                BinOp::Mul => w(x * y),
                BinOp::Div if y == 0 => return Err(zero()),
                BinOp::Div => w(x / y),
                BinOp::Rem if y == 0 => return Err(zero()),
                BinOp::Rem => w(x % y),
                BinOp::BitAnd => w(x & y),
                BinOp::BitOr => w(x | y),
                BinOp::BitXor => w(x ^ y),
                _ => N::B(cmp(op, x.partial_cmp(&y))),
            })
        }
        (N::L(x), N::L(y)) => {
            let (x, y) = (x as i128, y as i128);
            let w = |v: i128| N::L(v as i64);
            Ok(match op {
                BinOp::Add => w(x + y),
                BinOp::Sub => w(x - y),
                BinOp::Mul => w(x * y),
                BinOp::Div if y == 0 => return Err(zero()),
                BinOp::Div => w(x / y),
                BinOp::Rem if y == 0 => return Err(zero()),
                BinOp::Rem => w(x % y),
                BinOp::BitAnd => w(x & y),
                BinOp::BitOr => w(x | y),
                BinOp::BitXor => w(x ^ y),
                _ => N::B(cmp(op, x.partial_cmp(&y))),
            })
        }
        (N::F(x), N::F(y)) => Ok(match op {
            BinOp::Add => N::F(x + y),
            BinOp::Sub => N::F(x - y),
            BinOp::Mul => N::F(x * y),
            BinOp::Div => N::F(x / y),
            BinOp::Rem => N::F(x % y),
            _ => N::B(cmp(op, x.partial_cmp(&y))),
        }),
        (N::D(x), N::D(y)) => Ok(match op {
            BinOp::Add => N::D(x + y),
            BinOp::Sub => N::D(x - y),
            BinOp::Mul => N::D(x * y),
            BinOp::Div => N::D(x / y),
            BinOp::Rem => N::D(x % y),
            _ => N::B(cmp(op, x.partial_cmp(&y))),
        }),
        _ => unreachable!(),
    }
}

fn cmp(op: BinOp, o: Option<std::cmp::Ordering>) -> bool {
    use std::cmp::Ordering::*;
    match op {
        BinOp::Lt => o == Some(Less),
        BinOp::Le => matches!(o, Some(Less | Equal)),
        BinOp::Gt => o == Some(Greater),
        BinOp::Ge => matches!(o, Some(Greater | Equal)),
        BinOp::Eq => o == Some(Equal),
        _ => o != Some(Equal),
    }
}

/// The value of a constant expression (literals, and operators and casts over constants).
fn constant(e: &Expr) -> Option<Result<N, Fail>> {
    let ev = Eval {
        vars: Vec::new(),
        params: &[],
    };
    let is_const = |x: &Expr| constant(x).is_some_and(|r| r.is_ok());
    match &e.kind {
        ExprKind::Int(_)
        | ExprKind::Long(_)
        | ExprKind::Float(_)
        | ExprKind::Double(_)
        | ExprKind::Bool(_) => Some(ev.eval(e)),
        ExprKind::Unary(_, x) | ExprKind::Cast(_, x) if is_const(x) => Some(ev.eval(e)),
        ExprKind::Binary(_, l, r) if is_const(l) && is_const(r) => Some(ev.eval(e)),
        _ => None,
    }
}

/// Painless folds constants while compiling: a constant `1 / 0` fails before anything runs.
fn check_constants(e: &Expr) -> Result<(), Fail> {
    match &e.kind {
        ExprKind::Unary(_, x) | ExprKind::Cast(_, x) => check_constants(x)?,
        ExprKind::Binary(_, l, r) | ExprKind::And(l, r) | ExprKind::Or(l, r) => {
            check_constants(l)?;
            check_constants(r)?;
        }
        ExprKind::Ternary(c, x, y) => {
            check_constants(c)?;
            check_constants(x)?;
            check_constants(y)?;
        }
        ExprKind::Call { args, .. } => {
            for a in args {
                check_constants(a)?;
            }
        }
        _ => {}
    }
    match constant(e) {
        Some(Err(fail)) => Err(fail),
        _ => Ok(()),
    }
}

/// Runs a generated script: typed declarations from params, then `return EXPR`.
fn reference_run(source: &str, params: &[(String, N)]) -> Result<String, Fail> {
    let stmts = parse(source).expect("generated scripts parse");
    for s in &stmts {
        if let StmtKind::Return(Some(e)) = &s.kind {
            check_constants(e)?;
        }
    }
    let mut ev = Eval {
        vars: Vec::new(),
        params,
    };
    for s in &stmts {
        match &s.kind {
            StmtKind::Decl { ty, vars } => {
                for (name, _, init) in vars {
                    let v = ev.eval(init.as_ref().expect("initialised"))?;
                    // a def parameter assigned to a typed local: widening only
                    let (st, target, type_name) = match ty {
                        TypeName::Int => (St::I, Some(0), "int"),
                        TypeName::Long => (St::L, Some(1), "long"),
                        TypeName::Double => (St::D, Some(3), "double"),
                        _ => (St::B, None, "boolean"),
                    };
                    let fits = match target {
                        Some(r) => rank(v) <= r,
                        None => matches!(v, N::B(_)),
                    };
                    if !fits {
                        let from = ["int", "long", "float", "double"]
                            .get(rank(v) as usize)
                            .unwrap_or(&"boolean");
                        return Err((
                            "class_cast_exception",
                            format!("cannot implicitly cast def [{from}] to {type_name}"),
                        ));
                    }
                    let v = target.map_or(v, |r| to(v, r));
                    ev.vars.push((name.clone(), st, v));
                }
            }
            StmtKind::Return(Some(e)) => return ev.eval(e).map(text),
            other => panic!("not generated: {other:?}"),
        }
    }
    unreachable!("generated scripts return")
}

/// A small seeded generator (xorshift), so failures reproduce.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }

    fn num_leaf(&mut self) -> String {
        match self.below(10) {
            0 => self
                .pick(&["0", "1", "-1", "2147483647", "-2147483648", "7", "3"])
                .to_string(),
            1 => self
                .pick(&["0L", "9223372036854775807L", "5L", "-3L"])
                .to_string(),
            2 => self
                .pick(&["0.0", "1.5", "-2.25", "1e300", "3.0"])
                .to_string(),
            3 => self.pick(&["2.5f", "0.0f", "-1.5f"]).to_string(),
            4 | 5 => self.pick(&["a", "b", "c"]).to_string(),
            _ => self
                .pick(&["params.i", "params.l", "params.d", "params.z"])
                .to_string(),
        }
    }

    fn int_leaf(&mut self) -> String {
        self.pick(&[
            "a",
            "b",
            "(int) params.i",
            "(long) params.l",
            "3",
            "31",
            "-1",
            "65L",
        ])
        .to_string()
    }

    fn num(&mut self, depth: u32) -> String {
        if depth == 0 {
            return self.num_leaf();
        }
        let d = depth - 1;
        match self.below(12) {
            0..=4 => {
                let op = self.pick(&["+", "-", "*", "/", "%"]);
                format!("({} {op} {})", self.num(d), self.num(d))
            }
            5 => format!("-({})", self.num(d)),
            6 => {
                let t = self.pick(&["int", "long", "float", "double"]);
                format!("(({t}) {})", self.num(d))
            }
            7 => format!("({} ? {} : {})", self.boolean(d), self.num(d), self.num(d)),
            8 => {
                let f = self.pick(&["max", "min"]);
                format!("Math.{f}({}, {})", self.num(d), self.num(d))
            }
            9 => {
                let f = self.pick(&["abs", "sqrt", "floor"]);
                format!("Math.{f}({})", self.num(d))
            }
            10 => {
                let op = self.pick(&["&", "|", "^", "<<", ">>", ">>>"]);
                format!("({} {op} {})", self.int_leaf(), self.int_leaf())
            }
            _ => self.num_leaf(),
        }
    }

    fn boolean(&mut self, depth: u32) -> String {
        if depth == 0 {
            return self.pick(&["p", "true", "false"]).to_string();
        }
        let d = depth - 1;
        match self.below(6) {
            0..=2 => {
                let op = self.pick(&["<", "<=", ">", ">=", "==", "!="]);
                format!("({} {op} {})", self.num(d), self.num(d))
            }
            3 => {
                let op = self.pick(&["&&", "||", "==", "!=", "^"]);
                format!("({} {op} {})", self.boolean(d), self.boolean(d))
            }
            4 => format!("!{}", self.boolean(d)),
            _ => format!(
                "({} ? {} : {})",
                self.boolean(d),
                self.boolean(d),
                self.boolean(d)
            ),
        }
    }

    /// A parameter: `i` an int, `l` an integer, `d` a double (so that the typed locals take
    /// them, mostly), `z` anything; one time in twenty anything, to exercise the cast errors.
    fn param(&mut self, name: &str) -> (N, serde_json::Value) {
        let kind = match name {
            _ if self.below(20) == 0 => self.below(4),
            "i" => 0,
            "l" => 1,
            "d" => 2,
            _ => self.below(4),
        };
        match kind {
            0 => {
                let v = [0, 1, -7, i32::MAX, i32::MIN, 12][self.below(6) as usize];
                (N::I(v), serde_json::json!(v))
            }
            1 => {
                let v = [0i64, 5_000_000_000, -1, i64::MAX][self.below(4) as usize];
                match i32::try_from(v) {
                    Ok(i) => (N::I(i), serde_json::json!(v)),
                    Err(_) => (N::L(v), serde_json::json!(v)),
                }
            }
            _ => {
                let v = [0.0, 0.5, -3.75, 1e10][self.below(4) as usize];
                (N::D(v), serde_json::json!(v))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::{compile, Env, ScriptContext};
    use crate::value::Value;

    #[test]
    fn compiled_scripts_agree_with_the_tree_walker() {
        let mut g = Gen(0x9E37_79B9_7F4A_7C15);
        let mut failures = Vec::new();
        let mut values = 0;
        for case in 0..4000 {
            let names = ["i", "l", "d", "z"];
            let mut params = Vec::new();
            let mut json = serde_json::Map::new();
            for n in names {
                let (v, j) = g.param(n);
                params.push((n.to_string(), v));
                json.insert(n.to_string(), j);
            }
            let p = g.below(2) == 0;
            params.push(("p".to_string(), N::B(p)));
            json.insert("p".to_string(), serde_json::json!(p));
            let body = if g.below(3) == 0 {
                g.boolean(3)
            } else {
                g.num(3)
            };
            let source = format!(
                "int a = params.i; long b = params.l; double c = params.d; boolean p = params.p; return {body}"
            );
            let expected = reference_run(&source, &params);
            let actual = compile(&source, ScriptContext::PainlessTest).and_then(|s| {
                let params = Value::from_json(&serde_json::Value::Object(json.clone()));
                s.execute(&Env::new(&params)).map(|v| v.to_java_string())
            });
            let actual = actual.map_err(|e| (e.cause_type, e.reason));
            values += usize::from(actual.is_ok());
            if expected != actual {
                failures.push(format!("case {case}: {source}\n  {json:?}\n  reference {expected:?}\n  compiled  {actual:?}"));
            }
        }
        // most cases must produce a value, not only errors
        assert!(values > 2000, "only {values} of 4000 scripts gave a value");
        assert!(
            failures.is_empty(),
            "{} disagreements:\n{}",
            failures.len(),
            failures[..failures.len().min(5)].join("\n")
        );
    }
}
