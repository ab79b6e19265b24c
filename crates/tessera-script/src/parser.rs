//! A recursive-descent parser from tokens to the AST, with Painless's operator precedence and
//! its literal rules (`Invalid int constant`, octal `010`, `L`/`F`/`D` suffixes). Syntax that
//! Painless has and the subset refuses (lambdas, method references, arrays, switch,
//! functions, classes) is a compile error here, at the offset where it starts.

use crate::ast::{BinOp, Expr, ExprKind, Stmt, StmtKind, TypeName, UnOp};
use crate::error::ScriptError;
use crate::lexer::{lex, Tok, Token};

/// Parses a whole script into its top-level statements.
pub fn parse(source: &str) -> Result<Vec<Stmt>, ScriptError> {
    let tokens = lex(source)?;
    let mut parser = Parser { tokens, at: 0 };
    let mut stmts = Vec::new();
    while !parser.is_eof() {
        stmts.push(parser.statement(true)?);
    }
    Ok(stmts)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

type PResult<T> = Result<T, ScriptError>;

fn unsupported(pos: usize, what: &str) -> ScriptError {
    ScriptError::compile(
        pos,
        "illegal_argument_exception",
        format!("{what} are not supported by Tessera's Painless subset"),
    )
}

impl Parser {
    fn peek(&self) -> &Tok {
        &self.tokens[self.at].tok
    }

    fn peek_at(&self, n: usize) -> &Tok {
        &self.tokens[(self.at + n).min(self.tokens.len() - 1)].tok
    }

    fn pos(&self) -> usize {
        self.tokens[self.at].start
    }

    fn is_eof(&self) -> bool {
        matches!(self.peek(), Tok::Eof)
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p)
    }

    fn is_ident(&self, name: &str) -> bool {
        matches!(self.peek(), Tok::Ident(n) if n == name)
    }

    fn eat(&mut self, p: &str) -> bool {
        if self.is_punct(p) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, p: &str) -> PResult<()> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    /// Painless's parse errors: the end of the script, or the token it could not place.
    fn unexpected(&self) -> ScriptError {
        let token = &self.tokens[self.at];
        match &token.tok {
            Tok::Eof => ScriptError::compile(
                token.start,
                "illegal_argument_exception",
                crate::error::UNEXPECTED_END,
            ),
            _ => ScriptError::compile(
                token.start,
                "illegal_argument_exception",
                format!("invalid sequence of tokens near ['{}'].", self.text(token)),
            ),
        }
    }

    fn text(&self, token: &Token) -> String {
        match &token.tok {
            Tok::Number(s) | Tok::Ident(s) => s.clone(),
            Tok::Str(s) => format!("'{s}'"),
            Tok::Punct(p) => p.to_string(),
            Tok::Regex { pattern, flags } => format!("/{pattern}/{flags}"),
            Tok::Eof => "<EOF>".to_string(),
        }
    }

    fn ident(&mut self) -> PResult<String> {
        match self.peek().clone() {
            Tok::Ident(name) => {
                self.at += 1;
                Ok(name)
            }
            _ => Err(self.unexpected()),
        }
    }

    /// A type name at the cursor followed by a variable name: a declaration starts here.
    fn declaration_type(&self) -> Option<TypeName> {
        match (self.peek(), self.peek_at(1)) {
            (Tok::Ident(t), Tok::Ident(_)) => TypeName::from_name(t),
            (Tok::Ident(t), Tok::Punct("[")) if TypeName::from_name(t).is_some() => None,
            _ => None,
        }
    }

    /// One statement. `top` statements may end at the end of the script without `;`.
    fn statement(&mut self, top: bool) -> PResult<Stmt> {
        let pos = self.pos();
        if let Tok::Ident(word) = self.peek().clone() {
            match word.as_str() {
                "if" => return self.if_statement(),
                "while" => {
                    self.at += 1;
                    self.expect("(")?;
                    let cond = self.expression()?;
                    self.expect(")")?;
                    let body = self.loop_body()?;
                    return Ok(Stmt {
                        kind: StmtKind::While {
                            cond,
                            body: Box::new(body),
                        },
                        pos,
                    });
                }
                "do" => {
                    self.at += 1;
                    let body = self.block()?;
                    if !self.is_ident("while") {
                        return Err(self.unexpected());
                    }
                    self.at += 1;
                    self.expect("(")?;
                    let cond = self.expression()?;
                    self.expect(")")?;
                    self.end_of_statement()?;
                    return Ok(Stmt {
                        kind: StmtKind::DoWhile {
                            body: Box::new(body),
                            cond,
                        },
                        pos,
                    });
                }
                "for" => return self.for_statement(),
                "break" | "continue" => {
                    self.at += 1;
                    self.end_of_statement()?;
                    let kind = if word == "break" {
                        StmtKind::Break
                    } else {
                        StmtKind::Continue
                    };
                    return Ok(Stmt { kind, pos });
                }
                "return" => {
                    self.at += 1;
                    let value = if self.is_punct(";") || self.is_punct("}") || self.is_eof() {
                        None
                    } else {
                        Some(self.expression()?)
                    };
                    self.end_of_statement()?;
                    return Ok(Stmt {
                        kind: StmtKind::Return(value),
                        pos,
                    });
                }
                "switch" | "try" | "throw" | "class" | "import" => {
                    return Err(unsupported(pos, &format!("[{word}] statements")));
                }
                _ => {}
            }
            // a function definition: `type name(`
            if TypeName::from_name(&word).is_some()
                && matches!(self.peek_at(1), Tok::Ident(_))
                && matches!(self.peek_at(2), Tok::Punct("("))
            {
                return Err(unsupported(pos, "script functions"));
            }
        }
        if let (Tok::Ident(t), Tok::Punct("[")) = (self.peek(), self.peek_at(1)) {
            if TypeName::from_name(t).is_some() {
                return Err(unsupported(pos, "arrays"));
            }
        }
        // Painless has no bare blocks: a `{` here is a map or list literal gone wrong
        if self.is_punct("{") {
            return Err(self.unexpected());
        }
        if self.eat(";") {
            return Ok(Stmt {
                kind: StmtKind::Empty,
                pos,
            });
        }
        let stmt = self.simple_statement()?;
        if top && self.is_eof() {
            return Ok(stmt);
        }
        if top && !self.is_punct(";") {
            // ANTLR's words for a script statement followed by something else
            let token = &self.tokens[self.at];
            return Err(ScriptError::compile(
                token.start,
                "illegal_argument_exception",
                format!(
                    "unexpected token ['{}'] was expecting one of [{{<EOF>, ';'}}].",
                    self.text(token)
                ),
            ));
        }
        self.end_of_statement()?;
        Ok(stmt)
    }

    /// `;`, or the end of a block or the script (Painless lets the last statement go without).
    fn end_of_statement(&mut self) -> PResult<()> {
        if self.eat(";") || self.is_punct("}") || self.is_eof() {
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    /// A declaration or an expression statement (what `for (...;...;...)` also holds).
    fn simple_statement(&mut self) -> PResult<Stmt> {
        if let Some(ty) = self.declaration_type() {
            self.at += 1;
            let mut vars = Vec::new();
            loop {
                let name_pos = self.pos();
                let name = self.ident()?;
                let init = if self.eat("=") {
                    Some(self.expression()?)
                } else {
                    None
                };
                vars.push((name, name_pos, init));
                if !self.eat(",") {
                    break;
                }
            }
            let pos = vars[0].1;
            return Ok(Stmt {
                kind: StmtKind::Decl { ty, vars },
                pos,
            });
        }
        let expr = self.expression()?;
        Ok(Stmt {
            pos: expr.start(),
            kind: StmtKind::Expr(expr),
        })
    }

    fn block(&mut self) -> PResult<Stmt> {
        let pos = self.pos();
        self.expect("{")?;
        let mut stmts = Vec::new();
        while !self.eat("}") {
            if self.is_eof() {
                return Err(self.unexpected());
            }
            stmts.push(self.statement(false)?);
        }
        Ok(Stmt {
            kind: StmtKind::Block(stmts),
            pos,
        })
    }

    /// A loop or branch body: a block, or a single statement.
    fn loop_body(&mut self) -> PResult<Stmt> {
        if self.is_punct("{") {
            self.block()
        } else if self.eat(";") {
            Ok(Stmt {
                kind: StmtKind::Empty,
                pos: self.tokens[self.at - 1].start,
            })
        } else {
            self.statement(false)
        }
    }

    fn if_statement(&mut self) -> PResult<Stmt> {
        let pos = self.pos();
        self.at += 1;
        self.expect("(")?;
        let cond = self.expression()?;
        self.expect(")")?;
        let then = Box::new(self.loop_body()?);
        let otherwise = if self.is_ident("else") {
            self.at += 1;
            Some(Box::new(self.loop_body()?))
        } else {
            None
        };
        Ok(Stmt {
            kind: StmtKind::If {
                cond,
                then,
                otherwise,
            },
            pos,
        })
    }

    fn for_statement(&mut self) -> PResult<Stmt> {
        let pos = self.pos();
        self.at += 1;
        self.expect("(")?;
        // for (T x : iterable) / for (x in iterable)
        let each = match (
            self.peek().clone(),
            self.peek_at(1).clone(),
            self.peek_at(2).clone(),
        ) {
            (Tok::Ident(t), Tok::Ident(n), Tok::Punct(":")) => {
                let ty = TypeName::from_name(&t).ok_or_else(|| self.unknown_type(&t))?;
                self.at += 3;
                Some((ty, n))
            }
            (Tok::Ident(n), Tok::Ident(kw), _) if kw == "in" => {
                self.at += 2;
                Some((TypeName::Def, n))
            }
            _ => None,
        };
        if let Some((ty, name)) = each {
            let iterable = self.expression()?;
            self.expect(")")?;
            let body = Box::new(self.loop_body()?);
            return Ok(Stmt {
                kind: StmtKind::ForEach {
                    ty,
                    name,
                    iterable,
                    body,
                },
                pos,
            });
        }
        let init = if self.is_punct(";") {
            None
        } else {
            Some(Box::new(self.simple_statement()?))
        };
        self.expect(";")?;
        let cond = if self.is_punct(";") {
            None
        } else {
            Some(self.expression()?)
        };
        self.expect(";")?;
        // one update expression, as in Painless's grammar
        let mut update = Vec::new();
        if !self.is_punct(")") {
            update.push(self.expression()?);
        }
        self.expect(")")?;
        let body = Box::new(self.loop_body()?);
        Ok(Stmt {
            kind: StmtKind::For {
                init,
                cond,
                update,
                body,
            },
            pos,
        })
    }

    fn unknown_type(&self, name: &str) -> ScriptError {
        ScriptError::compile(
            self.pos(),
            "illegal_argument_exception",
            format!("cannot resolve type [{name}]"),
        )
    }

    pub fn expression(&mut self) -> PResult<Expr> {
        let target = self.conditional()?;
        let op = match self.peek() {
            Tok::Punct("=") => None,
            Tok::Punct(p) => match compound_op(p) {
                Some(op) => Some(op),
                None => return Ok(target),
            },
            _ => return Ok(target),
        };
        self.at += 1;
        let value = self.expression()?;
        let pos = target.start();
        Ok(Expr {
            kind: ExprKind::Assign {
                target: Box::new(target),
                op,
                value: Box::new(value),
            },
            pos,
        })
    }

    fn conditional(&mut self) -> PResult<Expr> {
        let cond = self.binary(0)?;
        let pos = cond.start();
        if self.eat("?") {
            let a = self.expression()?;
            self.expect(":")?;
            let b = self.expression()?;
            return Ok(Expr {
                kind: ExprKind::Ternary(Box::new(cond), Box::new(a), Box::new(b)),
                pos,
            });
        }
        if self.eat("?:") {
            let b = self.expression()?;
            return Ok(Expr {
                kind: ExprKind::Elvis(Box::new(cond), Box::new(b)),
                pos,
            });
        }
        Ok(cond)
    }

    /// Binary operators by precedence level, lowest first.
    fn binary(&mut self, level: usize) -> PResult<Expr> {
        const LEVELS: &[&[&str]] = &[
            &["||"],
            &["&&"],
            &["|"],
            &["^"],
            &["&"],
            &["==", "!=", "===", "!=="],
            &["<", "<=", ">", ">=", "instanceof"],
            &["<<", ">>", ">>>"],
            &["=~", "==~"],
            &["+", "-"],
            &["*", "/", "%"],
        ];
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut left = self.binary(level + 1)?;
        loop {
            let op = match self.peek() {
                Tok::Punct(p) if LEVELS[level].contains(p) => *p,
                Tok::Ident(w) if w == "instanceof" && LEVELS[level].contains(&"instanceof") => {
                    "instanceof"
                }
                _ => return Ok(left),
            };
            let op_pos = self.pos();
            self.at += 1;
            let pos = left.start();
            if op == "instanceof" {
                let name = self.ident()?;
                let ty = TypeName::from_name(&name).ok_or_else(|| {
                    ScriptError::compile(
                        op_pos,
                        "illegal_argument_exception",
                        format!("Not a type [{name}]."),
                    )
                })?;
                left = Expr {
                    kind: ExprKind::InstanceOf(Box::new(left), ty),
                    pos,
                };
                continue;
            }
            if matches!(op, "===" | "!==") {
                return Err(unsupported(op_pos, "reference equality operators"));
            }
            let right = self.binary(level + 1)?;
            if matches!(op, "=~" | "==~") {
                left = Expr {
                    pos: right.start(),
                    kind: ExprKind::RegexMatch {
                        text: Box::new(left),
                        pattern: Box::new(right),
                        whole: op == "==~",
                    },
                };
                continue;
            }
            let kind = match op {
                "||" => ExprKind::Or(Box::new(left), Box::new(right)),
                "&&" => ExprKind::And(Box::new(left), Box::new(right)),
                _ => ExprKind::Binary(binary_op(op), Box::new(left), Box::new(right)),
            };
            left = Expr { kind, pos };
        }
    }

    fn unary(&mut self) -> PResult<Expr> {
        let pos = self.pos();
        let op = match self.peek() {
            Tok::Punct("-") => Some(UnOp::Neg),
            Tok::Punct("+") => Some(UnOp::Plus),
            Tok::Punct("!") => Some(UnOp::Not),
            Tok::Punct("~") => Some(UnOp::BitNot),
            _ => None,
        };
        if let Some(op) = op {
            self.at += 1;
            // `-2147483648` and `-9223372036854775808L` are constants, as in Painless
            if op == UnOp::Neg {
                if let Tok::Number(text) = self.peek().clone() {
                    if !matches!(self.peek_at(1), Tok::Punct("." | "[")) {
                        let at = self.pos();
                        self.at += 1;
                        let kind = number(&format!("-{text}"), at)?;
                        return self.postfix(Expr { kind, pos });
                    }
                }
            }
            let operand = self.unary()?;
            return Ok(Expr {
                kind: ExprKind::Unary(op, Box::new(operand)),
                pos,
            });
        }
        if self.is_punct("++") || self.is_punct("--") {
            let increment = self.is_punct("++");
            self.at += 1;
            let target = self.unary()?;
            return Ok(Expr {
                kind: ExprKind::IncDec {
                    target: Box::new(target),
                    increment,
                    prefix: true,
                },
                pos,
            });
        }
        // a cast: `(type) operand`
        if self.is_punct("(") {
            if let (Tok::Ident(name), Tok::Punct(")")) = (self.peek_at(1), self.peek_at(2)) {
                if let Some(ty) = TypeName::from_name(name) {
                    self.at += 3;
                    let operand = self.unary()?;
                    return Ok(Expr {
                        kind: ExprKind::Cast(ty, Box::new(operand)),
                        pos,
                    });
                }
            }
        }
        let primary = self.primary()?;
        self.postfix(primary)
    }

    fn postfix(&mut self, mut expr: Expr) -> PResult<Expr> {
        loop {
            let pos = self.pos();
            if self.is_punct(".") || self.is_punct("?.") {
                let null_safe = self.is_punct("?.");
                self.at += 1;
                let name = self.ident()?;
                if self.eat("(") {
                    let args = self.arguments()?;
                    expr = Expr {
                        kind: ExprKind::Call {
                            obj: Box::new(expr),
                            name,
                            args,
                            null_safe,
                        },
                        pos,
                    };
                } else {
                    expr = Expr {
                        kind: ExprKind::Field {
                            obj: Box::new(expr),
                            name,
                            null_safe,
                        },
                        pos,
                    };
                }
            } else if self.eat("[") {
                let index = self.expression()?;
                self.expect("]")?;
                expr = Expr {
                    kind: ExprKind::Index {
                        obj: Box::new(expr),
                        index: Box::new(index),
                    },
                    pos,
                };
            } else if self.is_punct("++") || self.is_punct("--") {
                let increment = self.is_punct("++");
                self.at += 1;
                expr = Expr {
                    kind: ExprKind::IncDec {
                        target: Box::new(expr),
                        increment,
                        prefix: false,
                    },
                    pos,
                };
            } else if self.is_punct("::") {
                return Err(unsupported(pos, "method references"));
            } else {
                return Ok(expr);
            }
        }
    }

    /// Call arguments after `(`, through `)`.
    fn arguments(&mut self) -> PResult<Vec<Expr>> {
        let mut args = Vec::new();
        if self.eat(")") {
            return Ok(args);
        }
        loop {
            args.push(self.expression()?);
            if self.eat(")") {
                return Ok(args);
            }
            self.expect(",")?;
        }
    }

    fn primary(&mut self) -> PResult<Expr> {
        let pos = self.pos();
        let token = self.tokens[self.at].clone();
        match token.tok {
            Tok::Number(text) => {
                self.at += 1;
                Ok(Expr {
                    kind: number(&text, pos)?,
                    pos,
                })
            }
            Tok::Str(text) => {
                self.at += 1;
                Ok(Expr {
                    kind: ExprKind::Str(text),
                    pos,
                })
            }
            Tok::Ident(name) => {
                self.at += 1;
                match name.as_str() {
                    "true" => {
                        return Ok(Expr {
                            kind: ExprKind::Bool(true),
                            pos,
                        })
                    }
                    "false" => {
                        return Ok(Expr {
                            kind: ExprKind::Bool(false),
                            pos,
                        })
                    }
                    "null" => {
                        return Ok(Expr {
                            kind: ExprKind::Null,
                            pos,
                        })
                    }
                    "new" => return self.new_expression(pos),
                    _ => {}
                }
                if self.is_punct("->") {
                    return Err(unsupported(pos, "lambdas"));
                }
                if self.eat("(") {
                    let args = self.arguments()?;
                    return Ok(Expr {
                        kind: ExprKind::FnCall { name, args },
                        pos,
                    });
                }
                Ok(Expr {
                    kind: ExprKind::Var(name),
                    pos,
                })
            }
            Tok::Punct("(") => {
                if self.is_lambda() {
                    return Err(unsupported(pos, "lambdas"));
                }
                self.at += 1;
                let inner = self.expression()?;
                self.expect(")")?;
                Ok(inner)
            }
            Tok::Punct("[") => {
                self.at += 1;
                if self.eat(":") {
                    self.expect("]")?;
                    return Ok(Expr {
                        kind: ExprKind::MapLit(Vec::new()),
                        pos,
                    });
                }
                if self.eat("]") {
                    return Ok(Expr {
                        kind: ExprKind::ListLit(Vec::new()),
                        pos,
                    });
                }
                let first = self.expression()?;
                if self.eat(":") {
                    let mut entries = vec![(first, self.expression()?)];
                    while self.eat(",") {
                        let key = self.expression()?;
                        self.expect(":")?;
                        entries.push((key, self.expression()?));
                    }
                    self.expect("]")?;
                    return Ok(Expr {
                        kind: ExprKind::MapLit(entries),
                        pos,
                    });
                }
                let mut items = vec![first];
                while self.eat(",") {
                    items.push(self.expression()?);
                }
                self.expect("]")?;
                Ok(Expr {
                    kind: ExprKind::ListLit(items),
                    pos,
                })
            }
            Tok::Regex { pattern, flags } => {
                let (pattern, flags) = (pattern.clone(), flags.clone());
                self.at += 1;
                Ok(Expr {
                    kind: ExprKind::Regex { pattern, flags },
                    pos,
                })
            }
            _ => Err(self.unexpected()),
        }
    }

    /// `(a, b) ->` or `() ->` at the cursor.
    fn is_lambda(&self) -> bool {
        let mut n = 1;
        loop {
            match self.peek_at(n) {
                Tok::Ident(_) | Tok::Punct(",") => n += 1,
                Tok::Punct(")") => return matches!(self.peek_at(n + 1), Tok::Punct("->")),
                _ => return false,
            }
        }
    }

    fn new_expression(&mut self, pos: usize) -> PResult<Expr> {
        let class = self.ident()?;
        if self.is_punct("[") {
            return Err(unsupported(pos, "arrays"));
        }
        self.expect("(")?;
        let args = self.arguments()?;
        Ok(Expr {
            kind: ExprKind::New { class, args },
            pos,
        })
    }
}

fn compound_op(p: &str) -> Option<BinOp> {
    Some(match p {
        "+=" => BinOp::Add,
        "-=" => BinOp::Sub,
        "*=" => BinOp::Mul,
        "/=" => BinOp::Div,
        "%=" => BinOp::Rem,
        "&=" => BinOp::BitAnd,
        "|=" => BinOp::BitOr,
        "^=" => BinOp::BitXor,
        "<<=" => BinOp::Shl,
        ">>=" => BinOp::Shr,
        ">>>=" => BinOp::Ushr,
        _ => return None,
    })
}

fn binary_op(p: &str) -> BinOp {
    match p {
        "*" => BinOp::Mul,
        "/" => BinOp::Div,
        "%" => BinOp::Rem,
        "+" => BinOp::Add,
        "-" => BinOp::Sub,
        "<<" => BinOp::Shl,
        ">>" => BinOp::Shr,
        ">>>" => BinOp::Ushr,
        "<" => BinOp::Lt,
        "<=" => BinOp::Le,
        ">" => BinOp::Gt,
        ">=" => BinOp::Ge,
        "==" => BinOp::Eq,
        "!=" => BinOp::Ne,
        "&" => BinOp::BitAnd,
        "^" => BinOp::BitXor,
        _ => BinOp::BitOr,
    }
}

/// A numeric literal as Painless reads it (`text` may start with `-`).
fn number(text: &str, pos: usize) -> PResult<ExprKind> {
    let invalid = |what: &str, hint: Option<String>| {
        let reason = match hint {
            Some(h) => format!("Invalid {what} constant [{text}]. {h}"),
            None => format!("Invalid {what} constant [{text}]."),
        };
        ScriptError::compile(pos, "illegal_argument_exception", reason)
    };
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let lower = body.to_ascii_lowercase();
    if let Some(hex) = lower.strip_prefix("0x") {
        if hex.ends_with('f') || hex.ends_with('d') {
            return Err(ScriptError::compile(
                pos,
                "illegal_state_exception",
                "Illegal tree structure.",
            ));
        }
        let sign = if negative { "-" } else { "" };
        return if let Some(digits) = hex.strip_suffix('l') {
            i64::from_str_radix(&format!("{sign}{digits}"), 16)
                .map(ExprKind::Long)
                .map_err(|_| invalid("long", None))
        } else {
            i32::from_str_radix(&format!("{sign}{hex}"), 16)
                .map(ExprKind::Int)
                .map_err(|_| invalid("int", None))
        };
    }
    let sign = if negative { "-" } else { "" };
    let float_like = |s: &str| format!("{sign}{s}");
    if let Some(digits) = lower.strip_suffix('f') {
        return float_like(digits)
            .parse::<f32>()
            .map(ExprKind::Float)
            .map_err(|_| invalid("float", None));
    }
    if let Some(digits) = lower.strip_suffix('d') {
        return float_like(digits)
            .parse::<f64>()
            .map(ExprKind::Double)
            .map_err(|_| invalid("double", None));
    }
    if lower.contains('.') || lower.contains('e') {
        return float_like(&lower)
            .parse::<f64>()
            .map(ExprKind::Double)
            .map_err(|_| invalid("double", None));
    }
    let (digits, long) = match lower.strip_suffix('l') {
        Some(d) => (d, true),
        None => (lower.as_str(), false),
    };
    let radix = if digits.len() > 1 && digits.starts_with('0') {
        8
    } else {
        10
    };
    let signed = format!("{sign}{digits}");
    if long {
        i64::from_str_radix(&signed, radix)
            .map(ExprKind::Long)
            .map_err(|_| invalid("long", None))
    } else {
        i32::from_str_radix(&signed, radix)
            .map(ExprKind::Int)
            .map_err(|_| {
                invalid(
                    "int",
                    Some(format!(
                        "If you want a long constant then change it to [{text}L]."
                    )),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expr(src: &str) -> ExprKind {
        match parse(src).unwrap().remove(0).kind {
            StmtKind::Expr(e) => e.kind,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn literals() {
        assert_eq!(expr("010"), ExprKind::Int(8));
        assert_eq!(expr("0x1fL"), ExprKind::Long(31));
        assert_eq!(expr("-2147483648"), ExprKind::Int(i32::MIN));
        assert_eq!(expr("1.5f"), ExprKind::Float(1.5));
        assert_eq!(expr("2d"), ExprKind::Double(2.0));
        assert_eq!(expr("1e3"), ExprKind::Double(1000.0));
        let err = parse("2147483648").unwrap_err();
        assert_eq!(
            err.reason,
            "Invalid int constant [2147483648]. If you want a long constant then change it to [2147483648L]."
        );
    }

    #[test]
    fn precedence_and_positions() {
        let ExprKind::Binary(BinOp::Add, l, r) = expr("1 + 2 * 3") else {
            panic!()
        };
        assert_eq!(l.kind, ExprKind::Int(1));
        assert!(matches!(r.kind, ExprKind::Binary(BinOp::Mul, _, _)));
        assert_eq!(r.pos, 4);
        let ExprKind::Call {
            name, null_safe, ..
        } = expr("a?.b(1)")
        else {
            panic!()
        };
        assert_eq!((name.as_str(), null_safe), ("b", true));
        assert!(matches!(expr("a ? b : c ?: d"), ExprKind::Ternary(..)));
        assert!(matches!(
            expr("(int) x + 1"),
            ExprKind::Binary(BinOp::Add, ..)
        ));
        assert!(matches!(expr("['a': 1]"), ExprKind::MapLit(_)));
        assert!(matches!(expr("[:]"), ExprKind::MapLit(_)));
        assert!(matches!(
            expr("x += 1"),
            ExprKind::Assign {
                op: Some(BinOp::Add),
                ..
            }
        ));
    }

    #[test]
    fn statements() {
        let stmts = parse(
            "int a = 1, b; for (def x : l) { a += x } for (y in l) {} while (a < 3) a++; return a",
        )
        .unwrap();
        assert_eq!(stmts.len(), 5);
        assert!(matches!(&stmts[0].kind, StmtKind::Decl { vars, .. } if vars.len() == 2));
        assert_eq!(stmts[0].pos, 4);
        assert!(matches!(stmts[1].kind, StmtKind::ForEach { .. }));
        assert!(matches!(stmts[2].kind, StmtKind::ForEach { .. }));
        assert!(parse("if (a) { b } else c").is_ok());
        assert!(parse("do { a++ } while (a < 3)").is_ok());
    }

    #[test]
    fn refusals() {
        assert!(parse("l.removeIf(x -> x > 1)")
            .unwrap_err()
            .reason
            .contains("lambdas"));
        assert!(parse("l.sort((a, b) -> a - b)")
            .unwrap_err()
            .reason
            .contains("lambdas"));
        assert_eq!(
            parse("1 +").unwrap_err().reason,
            "unexpected end of script."
        );
        assert_eq!(parse("1 +").unwrap_err().offset, 3);
        let e = parse("1_0").unwrap_err();
        assert_eq!(
            (e.reason.as_str(), e.offset),
            (
                "unexpected token ['_0'] was expecting one of [{<EOF>, ';'}].",
                1
            )
        );
    }
}
