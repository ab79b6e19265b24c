//! The scripts of `bucket_script` and `bucket_selector`: Tessera has no scripting engine, but
//! nearly every such script is arithmetic and comparisons over `params.<var>`, so this small
//! evaluator runs exactly that subset with Painless's semantics (integer literals stay integers
//! until they meet a double, `/` on two integers truncates). Anything else — method calls,
//! loops, assignments — is refused with a clear 400 rather than guessed at.

use std::collections::HashMap;

use serde_json::Value;
use tessera_common::{Error, Result};

/// A parsed script.
#[derive(Clone, Debug, PartialEq)]
pub struct Script {
    pub source: String,
    expr: Expr,
    /// The script's own `params` (numbers), visible as `params.<name>` beside the variables.
    pub params: HashMap<String, f64>,
}

#[derive(Clone, Debug, PartialEq)]
enum Expr {
    Int(i64),
    Float(f64),
    Bool(bool),
    Param(String),
    Unary(char, Box<Expr>),
    Binary(Op, Box<Expr>, Box<Expr>),
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

/// A value during evaluation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Val {
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Val {
    fn number(self) -> Option<f64> {
        match self {
            Val::Int(i) => Some(i as f64),
            Val::Float(f) => Some(f),
            Val::Bool(_) => None,
        }
    }
}

pub(crate) fn unsupported(agg: &str, source: &str, what: &str) -> Error {
    Error::illegal_argument(format!(
        "the script [{source}] of [{agg}] is not supported: {what}; only arithmetic (+ - * / %), comparisons, && || ! and ?: over params.<var> and numbers run (full scripting is not supported yet)"
    ))
}

impl Script {
    /// Parses a `script` value (a string, or an object with `source`, `lang` and `params`).
    pub fn parse(agg: &str, value: &Value) -> Result<Script> {
        let (source, params) = match value {
            Value::String(s) => (s.clone(), HashMap::new()),
            Value::Object(map) => {
                let mut source = None;
                let mut params = HashMap::new();
                for (key, v) in map {
                    match (key.as_str(), v) {
                        ("source" | "inline", Value::String(s)) => source = Some(s.clone()),
                        ("lang", Value::String(lang))
                            if lang == "painless" || lang == "expression" => {}
                        ("params", Value::Object(p)) => {
                            for (name, v) in p {
                                match v.as_f64() {
                                    Some(f) => {
                                        params.insert(name.clone(), f);
                                    }
                                    None => {
                                        return Err(unsupported(
                                            agg,
                                            &v.to_string(),
                                            "non-numeric script params",
                                        ))
                                    }
                                }
                            }
                        }
                        ("id", _) => {
                            return Err(Error::not_supported(&format!(
                                "a stored script in [{agg}]"
                            )))
                        }
                        ("lang", other) => {
                            return Err(Error::not_supported(&format!(
                                "script lang [{}] in [{agg}]",
                                other.as_str().unwrap_or_default()
                            )))
                        }
                        (other, _) => {
                            return Err(Error::parsing(format!("[script] unknown field [{other}]")))
                        }
                    }
                }
                let Some(source) = source else {
                    return Err(Error::parsing("must specify either [source] for an inline script or [id] for a stored script"));
                };
                (source, params)
            }
            other => {
                return Err(Error::parsing(format!(
                    "Unknown key for a {} in [{agg}]: [script].",
                    tessera_common::error::json_token(other)
                )))
            }
        };
        let tokens = tokenize(agg, &source)?;
        let mut parser = Parser {
            agg,
            source: &source,
            tokens,
            pos: 0,
        };
        parser.skip_word("return");
        let expr = parser.ternary()?;
        while parser.eat(&Tok::Semi) {}
        if parser.pos != parser.tokens.len() {
            return Err(unsupported(
                agg,
                &source,
                "unexpected text after the expression",
            ));
        }
        Ok(Script {
            source,
            expr,
            params,
        })
    }

    /// Evaluates with `vars` (a `None` is a missing value, an error when used).
    pub fn eval(&self, agg: &str, vars: &HashMap<String, Option<f64>>) -> Result<Val> {
        eval(&self.expr, &|name: &str| {
            if let Some(v) = vars.get(name) {
                return v.map(Val::Float).ok_or_else(|| {
                    Error::new(
                        "aggregation_execution_exception",
                        400,
                        format!("[{agg}] variable [{name}] has no value (null) in this bucket"),
                    )
                });
            }
            self.params.get(name).map(|f| Val::Float(*f)).ok_or_else(|| {
                Error::new(
                    "aggregation_execution_exception",
                    400,
                    format!("[{agg}] script reads params.{name}, which is not a buckets_path variable or a script param"),
                )
            })
        })
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(String),
    Word(String),
    Sym(&'static str),
    Semi,
}

fn tokenize(agg: &str, source: &str) -> Result<Vec<Tok>> {
    const SYMS: [&str; 19] = [
        "&&", "||", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "<", ">", "!", "(", ")", "?",
        ":", ".",
    ];
    let chars: Vec<char> = source.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric()
                    || chars[i] == '.'
                    || ((chars[i] == '+' || chars[i] == '-') && matches!(chars[i - 1], 'e' | 'E')))
            {
                i += 1;
            }
            tokens.push(Tok::Num(chars[start..i].iter().collect()));
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(Tok::Word(chars[start..i].iter().collect()));
        } else if c == ';' {
            tokens.push(Tok::Semi);
            i += 1;
        } else {
            let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
            let Some(sym) = SYMS.iter().find(|s| rest.starts_with(**s)) else {
                return Err(unsupported(
                    agg,
                    source,
                    &format!("the character [{c}] is not understood"),
                ));
            };
            tokens.push(Tok::Sym(sym));
            i += sym.len();
        }
    }
    Ok(tokens)
}

struct Parser<'a> {
    agg: &'a str,
    source: &'a str,
    tokens: Vec<Tok>,
    pos: usize,
}

impl Parser<'_> {
    fn err(&self, what: &str) -> Error {
        unsupported(self.agg, self.source, what)
    }

    fn peek_sym(&self) -> Option<&'static str> {
        match self.tokens.get(self.pos) {
            Some(Tok::Sym(s)) => Some(s),
            _ => None,
        }
    }

    fn eat(&mut self, tok: &Tok) -> bool {
        if self.tokens.get(self.pos) == Some(tok) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn skip_word(&mut self, word: &str) {
        if self.tokens.get(self.pos) == Some(&Tok::Word(word.to_string())) {
            self.pos += 1;
        }
    }

    fn ternary(&mut self) -> Result<Expr> {
        let cond = self.binary(0)?;
        if self.eat(&Tok::Sym("?")) {
            let yes = self.ternary()?;
            if !self.eat(&Tok::Sym(":")) {
                return Err(self.err("a `?` without its `:`"));
            }
            let no = self.ternary()?;
            return Ok(Expr::Ternary(Box::new(cond), Box::new(yes), Box::new(no)));
        }
        Ok(cond)
    }

    /// Precedence climbing: `||` < `&&` < equality < comparison < additive < multiplicative.
    fn binary(&mut self, level: usize) -> Result<Expr> {
        const LEVELS: [&[(&str, Op)]; 6] = [
            &[("||", Op::Or)],
            &[("&&", Op::And)],
            &[("==", Op::Eq), ("!=", Op::Ne)],
            &[("<", Op::Lt), ("<=", Op::Le), (">", Op::Gt), (">=", Op::Ge)],
            &[("+", Op::Add), ("-", Op::Sub)],
            &[("*", Op::Mul), ("/", Op::Div), ("%", Op::Rem)],
        ];
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut left = self.binary(level + 1)?;
        while let Some(sym) = self.peek_sym() {
            let Some((_, op)) = LEVELS[level].iter().find(|(s, _)| *s == sym) else {
                break;
            };
            self.pos += 1;
            let right = self.binary(level + 1)?;
            left = Expr::Binary(*op, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr> {
        for c in ['-', '!', '+'] {
            let sym = match c {
                '-' => "-",
                '!' => "!",
                _ => "+",
            };
            if self.eat(&Tok::Sym(sym)) {
                let inner = self.unary()?;
                return Ok(Expr::Unary(c, Box::new(inner)));
            }
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Expr> {
        let Some(tok) = self.tokens.get(self.pos).cloned() else {
            return Err(self.err("the expression ends too early"));
        };
        self.pos += 1;
        match tok {
            Tok::Sym("(") => {
                let inner = self.ternary()?;
                if !self.eat(&Tok::Sym(")")) {
                    return Err(self.err("a `(` without its `)`"));
                }
                Ok(inner)
            }
            Tok::Num(text) => parse_number(&text).ok_or_else(|| self.err("a malformed number")),
            Tok::Word(w) if w == "true" => Ok(Expr::Bool(true)),
            Tok::Word(w) if w == "false" => Ok(Expr::Bool(false)),
            Tok::Word(w) if w == "params" => {
                if !self.eat(&Tok::Sym(".")) {
                    return Err(self.err("`params` is only read as params.<var>"));
                }
                let Some(Tok::Word(name)) = self.tokens.get(self.pos).cloned() else {
                    return Err(self.err("`params.` must be followed by a variable name"));
                };
                self.pos += 1;
                if self.peek_sym() == Some("(") || self.peek_sym() == Some(".") {
                    return Err(self.err("method calls"));
                }
                Ok(Expr::Param(name))
            }
            Tok::Word(w) => {
                if self.peek_sym() == Some("(") || self.peek_sym() == Some(".") {
                    Err(self.err(&format!("method calls and fields ([{w}])")))
                } else {
                    Err(self.err(&format!(
                        "the name [{w}] (variables are read as params.<var>)"
                    )))
                }
            }
            _ => Err(self.err("an operator where a value belongs")),
        }
    }
}

fn parse_number(text: &str) -> Option<Expr> {
    let lower = text.to_ascii_lowercase();
    if let Some(f) = lower.strip_suffix('d').or_else(|| lower.strip_suffix('f')) {
        return f.parse().ok().map(Expr::Float);
    }
    let int_text = lower.strip_suffix('l').unwrap_or(&lower);
    if !int_text.contains(['.', 'e']) {
        return int_text.parse().ok().map(Expr::Int);
    }
    lower.parse().ok().map(Expr::Float)
}

fn eval(expr: &Expr, lookup: &dyn Fn(&str) -> Result<Val>) -> Result<Val> {
    let type_error = |what: &str| {
        Error::new(
            "aggregation_execution_exception",
            400,
            format!("cannot apply {what}"),
        )
    };
    Ok(match expr {
        Expr::Int(i) => Val::Int(*i),
        Expr::Float(f) => Val::Float(*f),
        Expr::Bool(b) => Val::Bool(*b),
        Expr::Param(name) => lookup(name)?,
        Expr::Unary(op, inner) => match (op, eval(inner, lookup)?) {
            ('-', Val::Int(i)) => Val::Int(i.wrapping_neg()),
            ('-', Val::Float(f)) => Val::Float(-f),
            ('+', v @ (Val::Int(_) | Val::Float(_))) => v,
            ('!', Val::Bool(b)) => Val::Bool(!b),
            (op, _) => return Err(type_error(&format!("[{op}] to this operand"))),
        },
        Expr::Ternary(cond, yes, no) => match eval(cond, lookup)? {
            Val::Bool(true) => eval(yes, lookup)?,
            Val::Bool(false) => eval(no, lookup)?,
            _ => return Err(type_error("?: to a condition that is not a boolean")),
        },
        Expr::Binary(Op::And, a, b) => match eval(a, lookup)? {
            Val::Bool(false) => Val::Bool(false),
            Val::Bool(true) => match eval(b, lookup)? {
                Val::Bool(b) => Val::Bool(b),
                _ => return Err(type_error("&& to a number")),
            },
            _ => return Err(type_error("&& to a number")),
        },
        Expr::Binary(Op::Or, a, b) => match eval(a, lookup)? {
            Val::Bool(true) => Val::Bool(true),
            Val::Bool(false) => match eval(b, lookup)? {
                Val::Bool(b) => Val::Bool(b),
                _ => return Err(type_error("|| to a number")),
            },
            _ => return Err(type_error("|| to a number")),
        },
        Expr::Binary(op, a, b) => binary(*op, eval(a, lookup)?, eval(b, lookup)?)?,
    })
}

fn binary(op: Op, a: Val, b: Val) -> Result<Val> {
    if let (Op::Eq | Op::Ne, Val::Bool(x), Val::Bool(y)) = (op, a, b) {
        return Ok(Val::Bool((x == y) == (op == Op::Eq)));
    }
    let (Some(x), Some(y)) = (a.number(), b.number()) else {
        return Err(Error::new(
            "aggregation_execution_exception",
            400,
            format!("cannot apply [{op:?}] to a boolean"),
        ));
    };
    if let (Val::Int(i), Val::Int(j)) = (a, b) {
        let int = |v: Option<i64>| {
            v.map(Val::Int)
                .ok_or_else(|| Error::new("arithmetic_exception", 400, "/ by zero".to_string()))
        };
        match op {
            Op::Add => return Ok(Val::Int(i.wrapping_add(j))),
            Op::Sub => return Ok(Val::Int(i.wrapping_sub(j))),
            Op::Mul => return Ok(Val::Int(i.wrapping_mul(j))),
            Op::Div => {
                return int(if j == 0 {
                    None
                } else {
                    Some(i.wrapping_div(j))
                })
            }
            Op::Rem => {
                return int(if j == 0 {
                    None
                } else {
                    Some(i.wrapping_rem(j))
                })
            }
            _ => {}
        }
    }
    Ok(match op {
        Op::Add => Val::Float(x + y),
        Op::Sub => Val::Float(x - y),
        Op::Mul => Val::Float(x * y),
        Op::Div => Val::Float(x / y),
        Op::Rem => Val::Float(x % y),
        Op::Lt => Val::Bool(x < y),
        Op::Le => Val::Bool(x <= y),
        Op::Gt => Val::Bool(x > y),
        Op::Ge => Val::Bool(x >= y),
        Op::Eq => Val::Bool(x == y),
        Op::Ne => Val::Bool(x != y),
        Op::And | Op::Or => unreachable!("handled before"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(source: &str, vars: &[(&str, f64)]) -> Result<Val> {
        let script = Script::parse("bs", &json!(source))?;
        let vars = vars
            .iter()
            .map(|(k, v)| (k.to_string(), Some(*v)))
            .collect();
        script.eval("bs", &vars)
    }

    #[test]
    fn arithmetic_follows_painless() {
        assert_eq!(
            run("params.a / params.b", &[("a", 1.0), ("b", 4.0)]).unwrap(),
            Val::Float(0.25)
        );
        assert_eq!(run("1 / 2", &[]).unwrap(), Val::Int(0));
        assert_eq!(run("1.0 / 2", &[]).unwrap(), Val::Float(0.5));
        assert_eq!(run("2 + 3 * 4 - -1", &[]).unwrap(), Val::Int(15));
        assert_eq!(run("(2 + 3) * 4 % 7", &[]).unwrap(), Val::Int(6));
        assert_eq!(
            run("return params.x % 7;", &[("x", 15.5)]).unwrap(),
            Val::Float(1.5)
        );
        assert!(run("1 / 0", &[]).is_err());
        assert_eq!(
            run("params.a > 1 && !(params.a == 5) || false", &[("a", 3.0)]).unwrap(),
            Val::Bool(true)
        );
        assert_eq!(
            run("params.a >= 3 ? 1 : 2", &[("a", 3.0)]).unwrap(),
            Val::Int(1)
        );
        assert_eq!(run("1e2 + .5", &[]).unwrap(), Val::Float(100.5));
    }

    #[test]
    fn params_and_missing_values() {
        let script = Script::parse(
            "bs",
            &json!({"source": "params.a * params.factor", "params": {"factor": 2}}),
        )
        .unwrap();
        let mut vars = HashMap::new();
        vars.insert("a".to_string(), Some(3.0));
        assert_eq!(script.eval("bs", &vars).unwrap(), Val::Float(6.0));
        vars.insert("a".to_string(), None);
        assert!(script.eval("bs", &vars).is_err());
    }

    #[test]
    fn anything_else_is_a_clear_400() {
        for source in [
            "Math.log(params.a)",
            "params.a.doubleValue()",
            "def x = 1; x",
            "params['a']",
            "a + 1",
            "(1 + 2",
        ] {
            let e = Script::parse("bs", &json!(source)).unwrap_err();
            assert_eq!(e.status(), 400, "{source}");
            assert!(
                e.reason().contains("not supported"),
                "{source}: {}",
                e.reason()
            );
        }
    }
}
