//! Compiles the AST once into a tree of closures: local variables resolved to slots of one
//! frame, `doc['literal']` resolved to a field slot, static types checked where Painless checks
//! them (`Cannot cast from [double] to [int].`, `member method [...] not found`), constants
//! folded (so `1/0` is a compile error, as in Painless). Running a compiled [`Script`] per
//! document through a [`Runner`] reuses the frame: numeric work allocates nothing.

use std::sync::Arc;

use crate::ast::{BinOp, Expr, ExprKind, Stmt, StmtKind, TypeName, UnOp};
use crate::builtins::{self as b, Target, R};
use crate::doc::DocValues;
use crate::error::ScriptError;
use crate::parser::parse;
use crate::value::{lock, JavaMap, Value};
use crate::MAX_LOOP_COUNTER;

/// Where a script runs, which decides the variables it sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScriptContext {
    /// `_scripts/painless/_execute` without a document: `params` only.
    PainlessTest,
    /// `script_score`: `params`, `doc`, `_score`.
    Score,
    /// `script` queries, script fields, sorts, aggregations: `params`, `doc`.
    Filter,
    /// Updates: `params`, `ctx`.
    Update,
    /// `_script` sorts of `type: number`: `params`, `doc`, `_score`; a double.
    NumberSort,
    /// `_script` sorts of `type: string`: `params`, `doc`, `_score`; any value, as its text.
    StringSort,
    /// Aggregation values: `params`, `doc`, and `_value` when the script transforms each
    /// value of the aggregation's field.
    Aggregation,
    /// `scripted_metric`'s `init_script`: `params`, `state` (a map, in [`Env::ctx`]).
    MetricInit,
    /// `scripted_metric`'s `map_script`: `params`, `state`, `doc`.
    MetricMap,
    /// `scripted_metric`'s `combine_script`: `params`, `state`.
    MetricCombine,
    /// `scripted_metric`'s `reduce_script`: `params`, `states` (a list, in [`Env::ctx`]).
    MetricReduce,
    /// `bucket_script`: `params` (the bucket's values beside the script's own); returns a
    /// number or null.
    BucketScript,
    /// `bucket_selector`: `params`; returns a boolean.
    BucketSelector,
}

impl ScriptContext {
    /// OpenSearch's name of the context (`script.context.<name>.…` settings).
    pub fn name(self) -> &'static str {
        match self {
            ScriptContext::PainlessTest => "painless_test",
            ScriptContext::Score => "score",
            ScriptContext::Filter => "filter",
            ScriptContext::Update => "update",
            ScriptContext::NumberSort => "number_sort",
            ScriptContext::StringSort => "string_sort",
            ScriptContext::Aggregation => "aggs",
            ScriptContext::MetricInit => "aggs_init",
            ScriptContext::MetricMap => "aggs_map",
            ScriptContext::MetricCombine => "aggs_combine",
            ScriptContext::MetricReduce => "aggs_reduce",
            ScriptContext::BucketScript => "bucket_aggregation",
            ScriptContext::BucketSelector => "aggregation_selector",
        }
    }

    fn has_doc(self) -> bool {
        !matches!(
            self,
            ScriptContext::PainlessTest
                | ScriptContext::Update
                | ScriptContext::MetricInit
                | ScriptContext::MetricCombine
                | ScriptContext::MetricReduce
                | ScriptContext::BucketScript
                | ScriptContext::BucketSelector
        )
    }

    fn has_score(self) -> bool {
        matches!(
            self,
            ScriptContext::Score | ScriptContext::NumberSort | ScriptContext::StringSort
        )
    }
}

/// What a script runs against: its parameters, the current document, its score, `ctx`.
pub struct Env<'a> {
    /// A `Value::Map` (what `params` is).
    pub params: &'a Value,
    pub doc: Option<&'a dyn DocValues>,
    pub score: f64,
    /// The context's own variable: `ctx` in updates, `state` and `states` in
    /// `scripted_metric`.
    pub ctx: Option<&'a Value>,
    /// `_value` of a value script (an aggregation's `script` beside its `field`).
    pub value: Option<&'a Value>,
}

impl<'a> Env<'a> {
    pub fn new(params: &'a Value) -> Self {
        Env {
            params,
            doc: None,
            score: 0.0,
            ctx: None,
            value: None,
        }
    }
}

pub(crate) struct Frame<'r, 'e> {
    locals: &'r mut [Value],
    env: &'r Env<'e>,
    loop_budget: i64,
    ret: Value,
}

type ExprFn = Box<dyn Fn(&mut Frame<'_, '_>) -> R + Send + Sync>;
type StmtFn = Box<dyn Fn(&mut Frame<'_, '_>) -> R<Flow> + Send + Sync>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Next,
    Break,
    Continue,
    Return,
}

/// A compiled script: shareable between threads and requests.
pub struct Script {
    source: String,
    context: ScriptContext,
    body: StmtFn,
    slots: usize,
    fields: Vec<String>,
    reads_score: bool,
}

impl std::fmt::Debug for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Script")
            .field("source", &self.source)
            .field("context", &self.context)
            .field("fields", &self.fields)
            .finish()
    }
}

impl Script {
    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn context(&self) -> ScriptContext {
        self.context
    }

    /// The fields of `doc['...']`, in slot order: what a `DocValues` implementation serves.
    pub fn fields(&self) -> &[String] {
        &self.fields
    }

    /// Whether the script reads `_score` (a caller that computes scores only for it can
    /// skip them otherwise).
    pub fn reads_score(&self) -> bool {
        self.reads_score
    }

    /// A runner with its own frame, to run the script for many documents.
    pub fn runner(&self) -> Runner<'_> {
        Runner {
            script: self,
            locals: vec![Value::Null; self.slots],
        }
    }

    /// Runs the script once.
    pub fn execute(&self, env: &Env<'_>) -> Result<Value, ScriptError> {
        self.runner().run(env)
    }

    /// A frame of locals for [`Script::run_in`], for a caller that keeps it beside the script
    /// (a runner borrows the script).
    pub fn new_frame(&self) -> Vec<Value> {
        vec![Value::Null; self.slots]
    }

    /// Runs the script with `locals` (from [`Script::new_frame`]) as its frame.
    pub fn run_in(&self, locals: &mut [Value], env: &Env<'_>) -> Result<Value, ScriptError> {
        let mut frame = Frame {
            locals,
            env,
            loop_budget: MAX_LOOP_COUNTER,
            ret: Value::Null,
        };
        match (self.body)(&mut frame) {
            Ok(_) => Ok(escaped(std::mem::take(&mut frame.ret), env)),
            Err(e) => Err(*e),
        }
    }
}

/// A value leaving the script: a `doc['f']` handle (OpenSearch's `ScriptDocValues`, a `List`)
/// becomes the list of the field's values, itself or as an element of a returned list.
fn escaped(value: Value, env: &Env<'_>) -> Value {
    let values = |slot: u32| match env.doc {
        Some(doc) => Value::new_list((0..doc.count(slot)).map(|i| doc.value(slot, i)).collect()),
        None => Value::Null,
    };
    match value {
        Value::DocField(slot) => values(slot),
        Value::List(list) => {
            let mut items = crate::value::lock(&list);
            for item in items.iter_mut() {
                if let Value::DocField(slot) = *item {
                    *item = values(slot);
                }
            }
            drop(items);
            Value::List(list)
        }
        other => other,
    }
}

/// A script and a frame of locals reused across runs.
pub struct Runner<'s> {
    script: &'s Script,
    locals: Vec<Value>,
}

impl Runner<'_> {
    pub fn run(&mut self, env: &Env<'_>) -> Result<Value, ScriptError> {
        self.script.run_in(&mut self.locals, env)
    }
}

/// Static types, as far as the compiler knows them (`Def` for anything dynamic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    Def,
    Null,
    Bool,
    Int,
    Long,
    Float,
    Double,
    Str,
    List,
    Map,
    Doc,
}

impl Ty {
    fn name(self) -> &'static str {
        match self {
            Ty::Def => "def",
            Ty::Null => "java.lang.Object",
            Ty::Bool => "boolean",
            Ty::Int => "int",
            Ty::Long => "long",
            Ty::Float => "float",
            Ty::Double => "double",
            Ty::Str => "java.lang.String",
            Ty::List => "java.util.List",
            Ty::Map => "java.util.Map",
            Ty::Doc => "org.opensearch.index.fielddata.ScriptDocValues",
        }
    }

    fn rank(self) -> Option<u8> {
        Some(match self {
            Ty::Int => 0,
            Ty::Long => 1,
            Ty::Float => 2,
            Ty::Double => 3,
            _ => return None,
        })
    }

    fn from_rank(rank: u8) -> Ty {
        [Ty::Int, Ty::Long, Ty::Float, Ty::Double][rank as usize]
    }

    fn target(self) -> Option<Target> {
        Some(match self {
            Ty::Int => Target::Int,
            Ty::Long => Target::Long,
            Ty::Float => Target::Float,
            Ty::Double => Target::Double,
            Ty::Bool => Target::Bool,
            Ty::Str => Target::Str,
            Ty::List => Target::List,
            Ty::Map => Target::Map,
            _ => return None,
        })
    }

    fn of(name: TypeName) -> Ty {
        match name {
            TypeName::Int | TypeName::Integer => Ty::Int,
            TypeName::Long | TypeName::LongBox => Ty::Long,
            TypeName::Float | TypeName::FloatBox => Ty::Float,
            TypeName::Double | TypeName::DoubleBox => Ty::Double,
            TypeName::Boolean | TypeName::BooleanBox => Ty::Bool,
            TypeName::String => Ty::Str,
            TypeName::List | TypeName::ArrayList => Ty::List,
            TypeName::Map | TypeName::HashMap => Ty::Map,
            TypeName::Def | TypeName::Object | TypeName::Number => Ty::Def,
        }
    }

    fn of_value(v: &Value) -> Ty {
        match v {
            Value::Null => Ty::Null,
            Value::Bool(_) => Ty::Bool,
            Value::Int(_) => Ty::Int,
            Value::Long(_) => Ty::Long,
            Value::Float(_) => Ty::Float,
            Value::Double(_) => Ty::Double,
            Value::Str(_) => Ty::Str,
            _ => Ty::Def,
        }
    }

    fn default_value(self) -> Value {
        match self {
            Ty::Int => Value::Int(0),
            Ty::Long => Value::Long(0),
            Ty::Float => Value::Float(0.0),
            Ty::Double => Value::Double(0.0),
            Ty::Bool => Value::Bool(false),
            _ => Value::Null,
        }
    }
}

/// A compiled expression: its static type, its closure, and its value when constant.
struct CExpr {
    ty: Ty,
    f: ExprFn,
    konst: Option<Value>,
}

fn constant(v: Value) -> CExpr {
    let ty = Ty::of_value(&v);
    let k = v.clone();
    CExpr {
        ty,
        f: Box::new(move |_| Ok(k.clone())),
        konst: Some(v),
    }
}

fn dynamic(ty: Ty, f: ExprFn) -> CExpr {
    CExpr { ty, f, konst: None }
}

type CResult<T> = Result<T, ScriptError>;

fn cce(pos: usize, from: Ty, to: Ty) -> ScriptError {
    ScriptError::compile(
        pos,
        "class_cast_exception",
        format!("Cannot cast from [{}] to [{}].", from.name(), to.name()),
    )
}

fn iae(pos: usize, reason: impl Into<String>) -> ScriptError {
    ScriptError::compile(pos, "illegal_argument_exception", reason)
}

/// A runtime error raised while folding a constant is a compile error, as in Painless.
fn fold(result: R) -> CResult<CExpr> {
    match result {
        Ok(v) => Ok(constant(v)),
        Err(e) => Err(ScriptError {
            kind: crate::error::ScriptErrorKind::Compile,
            ..*e
        }),
    }
}

/// The static classes the subset knows, by the names scripts use.
fn static_class(name: &str) -> Option<&'static str> {
    Some(match name {
        "Math" => "java.lang.Math",
        "Integer" => "java.lang.Integer",
        "Long" => "java.lang.Long",
        "Double" => "java.lang.Double",
        "Float" => "java.lang.Float",
        "Boolean" => "java.lang.Boolean",
        "String" => "java.lang.String",
        _ => return None,
    })
}

struct Local {
    name: String,
    slot: u32,
    ty: Ty,
}

struct Compiler<'s> {
    source: &'s str,
    context: ScriptContext,
    scopes: Vec<Vec<Local>>,
    next_slot: u32,
    max_slots: u32,
    fields: Vec<String>,
    /// Where each statement starts (sorted): a runtime error shows its statement's span.
    statement_starts: Vec<usize>,
    loops: usize,
    /// Where the statement being compiled starts: Painless reports an operator's runtime
    /// error at the last position it recorded, which is this when the operands had none.
    stmt_start: usize,
    /// Whether `_score` was read.
    reads_score: bool,
}

/// Parses and compiles `source` for `context`.
pub fn compile(source: &str, context: ScriptContext) -> Result<Script, ScriptError> {
    let stmts = parse(source)?;
    let mut starts = Vec::new();
    collect_starts(&stmts, &mut starts);
    starts.sort_unstable();
    starts.dedup();
    let mut c = Compiler {
        source,
        context,
        scopes: vec![Vec::new()],
        next_slot: 0,
        max_slots: 0,
        fields: Vec::new(),
        statement_starts: starts,
        loops: 0,
        stmt_start: 0,
        reads_score: false,
    };
    let body = c.block(&stmts, true)?;
    Ok(Script {
        source: source.to_string(),
        context,
        body,
        slots: c.max_slots as usize,
        fields: c.fields,
        reads_score: c.reads_score,
    })
}

fn collect_starts(stmts: &[Stmt], out: &mut Vec<usize>) {
    for s in stmts {
        collect_start(s, out);
    }
}

fn collect_start(s: &Stmt, out: &mut Vec<usize>) {
    match &s.kind {
        StmtKind::Block(inner) => collect_starts(inner, out),
        StmtKind::Decl { vars, .. } => out.extend(vars.iter().map(|v| v.1)),
        StmtKind::If {
            then, otherwise, ..
        } => {
            out.push(s.pos);
            collect_start(then, out);
            if let Some(o) = otherwise {
                collect_start(o, out);
            }
        }
        StmtKind::While { body, .. }
        | StmtKind::DoWhile { body, .. }
        | StmtKind::ForEach { body, .. } => {
            out.push(s.pos);
            collect_start(body, out);
        }
        StmtKind::For { init, body, .. } => {
            out.push(s.pos);
            if let Some(i) = init {
                collect_start(i, out);
            }
            collect_start(body, out);
        }
        StmtKind::Empty => {}
        _ => out.push(s.pos),
    }
}

impl Compiler<'_> {
    fn lookup(&self, name: &str) -> Option<(u32, Ty)> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|s| s.iter().rev())
            .find(|l| l.name == name)
            .map(|l| (l.slot, l.ty))
    }

    fn declare(&mut self, name: &str, ty: Ty, pos: usize) -> CResult<u32> {
        if self.lookup(name).is_some() {
            return Err(iae(pos, format!("variable [{name}] is already defined")));
        }
        if TypeName::from_name(name).is_some() || static_class(name).is_some() {
            return Err(iae(
                pos,
                format!("invalid declaration: variable [{name}] is a type"),
            ));
        }
        let slot = self.next_slot;
        self.next_slot += 1;
        self.max_slots = self.max_slots.max(self.next_slot);
        self.scopes.last_mut().expect("a scope").push(Local {
            name: name.to_string(),
            slot,
            ty,
        });
        Ok(slot)
    }

    /// A score script returns a double, a bucket_script a `Number`, a bucket_selector a
    /// boolean: a value of another static type is Painless's compile error, and a `def` that
    /// is not a boolean where one is returned its runtime error.
    fn returned(&self, e: &Expr, c: CExpr) -> CResult<ExprFn> {
        let numeric = matches!(c.ty, Ty::Def | Ty::Int | Ty::Long | Ty::Float | Ty::Double);
        match self.context {
            ScriptContext::Score | ScriptContext::NumberSort if !numeric => {
                Err(cce(e.start(), c.ty, Ty::Double))
            }
            ScriptContext::BucketScript if !numeric && c.ty != Ty::Null => {
                Err(ScriptError::compile(
                    e.start(),
                    "class_cast_exception",
                    format!("Cannot cast from [{}] to [java.lang.Number].", c.ty.name()),
                ))
            }
            ScriptContext::BucketSelector if !matches!(c.ty, Ty::Def | Ty::Bool) => {
                Err(cce(e.start(), c.ty, Ty::Bool))
            }
            ScriptContext::BucketSelector if c.ty == Ty::Def => {
                let (f, pos) = (c.f, e.pos);
                Ok(Box::new(move |fr| {
                    let v = f(fr)?;
                    b::truthy(pos, &v)?;
                    Ok(v)
                }))
            }
            _ => Ok(c.f),
        }
    }

    fn push_scope(&mut self) {
        self.scopes.push(Vec::new());
    }

    fn pop_scope(&mut self) {
        let scope = self.scopes.pop().expect("a scope");
        self.next_slot -= scope.len() as u32;
    }

    /// The span Painless shows for a runtime error in the statement starting at `start`.
    fn span(&self, start: usize) -> (usize, usize) {
        let end = self
            .statement_starts
            .iter()
            .find(|s| **s > start)
            .copied()
            .unwrap_or(self.source.len());
        (start, end)
    }

    fn field_slot(&mut self, name: &str) -> u32 {
        match self.fields.iter().position(|f| f == name) {
            Some(i) => i as u32,
            None => {
                self.fields.push(name.to_string());
                (self.fields.len() - 1) as u32
            }
        }
    }

    // ---- statements ----

    /// A list of statements; with `last`, the last one's value (an expression) is returned,
    /// as Painless returns the value of a script's final expression statement.
    fn block(&mut self, stmts: &[Stmt], last: bool) -> CResult<StmtFn> {
        let mut compiled = Vec::with_capacity(stmts.len());
        for (i, s) in stmts.iter().enumerate() {
            compiled.push(self.statement(s, last && i + 1 == stmts.len())?);
        }
        if compiled.len() == 1 {
            return Ok(compiled.pop().expect("one"));
        }
        Ok(Box::new(move |f| {
            for s in &compiled {
                let flow = s(f)?;
                if flow != Flow::Next {
                    return Ok(flow);
                }
            }
            Ok(Flow::Next)
        }))
    }

    fn with_span(&self, start: usize, s: StmtFn) -> StmtFn {
        let span = self.span(start);
        Box::new(move |f| {
            s(f).map_err(|mut e| {
                if e.statement.is_none() {
                    e.statement = Some(span);
                }
                e
            })
        })
    }

    fn statement(&mut self, s: &Stmt, last: bool) -> CResult<StmtFn> {
        let outer = self.stmt_start;
        self.stmt_start = s.pos;
        let r = self.statement_inner(s, last);
        self.stmt_start = outer;
        r
    }

    fn statement_inner(&mut self, s: &Stmt, last: bool) -> CResult<StmtFn> {
        let pos = s.pos;
        Ok(match &s.kind {
            StmtKind::Empty => Box::new(|_| Ok(Flow::Next)),
            StmtKind::Block(stmts) => {
                self.push_scope();
                let b = self.block(stmts, last);
                self.pop_scope();
                b?
            }
            StmtKind::Decl { ty, vars } => {
                let ty = Ty::of(*ty);
                let mut parts = Vec::new();
                for (name, name_pos, init) in vars {
                    let value = match init {
                        Some(e) => {
                            let v = self.expr(e)?;
                            self.coerce(v, ty, e.pos)?.f
                        }
                        None => {
                            let d = ty.default_value();
                            Box::new(move |_: &mut Frame<'_, '_>| Ok(d.clone())) as ExprFn
                        }
                    };
                    let slot = self.declare(name, ty, *name_pos)? as usize;
                    let part: StmtFn = Box::new(move |f| {
                        let v = value(f)?;
                        f.locals[slot] = v;
                        Ok(Flow::Next)
                    });
                    parts.push(self.with_span(*name_pos, part));
                }
                if parts.len() == 1 {
                    parts.pop().expect("one")
                } else {
                    Box::new(move |f| {
                        for p in &parts {
                            p(f)?;
                        }
                        Ok(Flow::Next)
                    })
                }
            }
            StmtKind::Expr(e) => {
                if !last {
                    not_a_statement(e)?;
                }
                let c = self.expr(e)?;
                let c = if last { self.returned(e, c)? } else { c.f };
                let body: StmtFn = if last {
                    Box::new(move |f| {
                        f.ret = c(f)?;
                        Ok(Flow::Return)
                    })
                } else {
                    Box::new(move |f| {
                        c(f)?;
                        Ok(Flow::Next)
                    })
                };
                self.with_span(pos, body)
            }
            StmtKind::Return(value) => {
                let body: StmtFn = match value {
                    Some(e) => {
                        let c = self.expr(e)?;
                        let c = self.returned(e, c)?;
                        Box::new(move |f| {
                            f.ret = c(f)?;
                            Ok(Flow::Return)
                        })
                    }
                    None => {
                        return Err(ScriptError::compile(
                            pos,
                            "class_cast_exception",
                            "cannot cast from [def] to [void]",
                        ))
                    }
                };
                self.with_span(pos, body)
            }
            StmtKind::Break | StmtKind::Continue => {
                let is_break = matches!(s.kind, StmtKind::Break);
                if self.loops == 0 {
                    let what = if is_break { "break" } else { "continue" };
                    return Err(iae(
                        pos,
                        format!("invalid {what} statement: not inside a loop"),
                    ));
                }
                let flow = if is_break {
                    Flow::Break
                } else {
                    Flow::Continue
                };
                Box::new(move |_| Ok(flow))
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                let c = self.condition(cond)?;
                if c.konst.is_some() {
                    return Err(iae(pos, "extraneous if block"));
                }
                let cf = c.f;
                let cpos = cond.start();
                self.push_scope();
                let t = self.statement(then, last);
                self.pop_scope();
                let t = t?;
                let o = match otherwise {
                    Some(o) => {
                        self.push_scope();
                        let r = self.statement(o, last);
                        self.pop_scope();
                        Some(r?)
                    }
                    None => None,
                };
                let body: StmtFn = Box::new(move |f| {
                    if b::truthy(cpos, &cf(f)?)? {
                        t(f)
                    } else if let Some(o) = &o {
                        o(f)
                    } else {
                        Ok(Flow::Next)
                    }
                });
                self.with_span(pos, body)
            }
            StmtKind::While { cond, body } => {
                let c = self.condition(cond)?;
                if c.konst.is_some() {
                    return Err(iae(pos, "extraneous while loop"));
                }
                let (cf, cpos) = (c.f, cond.start());
                let body = self.loop_body(body)?;
                let l: StmtFn = Box::new(move |f| {
                    while b::truthy(cpos, &cf(f)?)? {
                        count_iteration(f, pos)?;
                        match body(f)? {
                            Flow::Break => break,
                            Flow::Return => return Ok(Flow::Return),
                            _ => {}
                        }
                    }
                    Ok(Flow::Next)
                });
                self.with_span(pos, l)
            }
            StmtKind::DoWhile { body, cond } => {
                let body = self.loop_body(body)?;
                let c = self.condition(cond)?;
                if c.konst.is_some() {
                    return Err(iae(pos, "extraneous do-while loop"));
                }
                let (cf, cpos) = (c.f, cond.start());
                let l: StmtFn = Box::new(move |f| {
                    loop {
                        match body(f)? {
                            Flow::Break => break,
                            Flow::Return => return Ok(Flow::Return),
                            _ => {}
                        }
                        if !b::truthy(cpos, &cf(f)?)? {
                            break;
                        }
                        count_iteration(f, pos)?;
                    }
                    Ok(Flow::Next)
                });
                self.with_span(pos, l)
            }
            StmtKind::For {
                init,
                cond,
                update,
                body,
            } => {
                self.push_scope();
                let r = self.for_loop(pos, init.as_deref(), cond.as_ref(), update, body);
                self.pop_scope();
                self.with_span(pos, r?)
            }
            StmtKind::ForEach {
                ty,
                name,
                iterable,
                body,
            } => {
                if matches!(&body.kind, StmtKind::Block(b) if b.is_empty()) {
                    return Err(iae(pos, "extraneous foreach loop"));
                }
                let it = self.expr(iterable)?;
                if matches!(
                    it.ty,
                    Ty::Int | Ty::Long | Ty::Float | Ty::Double | Ty::Bool | Ty::Str | Ty::Map
                ) {
                    return Err(iae(
                        iterable.start(),
                        format!("Cannot iterate over [{}]", it.ty.name()),
                    ));
                }
                self.push_scope();
                let var_ty = Ty::of(*ty);
                let r = self.declare(name, var_ty, pos).and_then(|slot| {
                    let body = self.loop_body(body)?;
                    Ok((slot, body))
                });
                self.pop_scope();
                let (slot, body) = r?;
                let (itf, ipos) = (it.f, iterable.start());
                let target = var_ty.target();
                let l: StmtFn = Box::new(move |f| {
                    let items = match itf(f)? {
                        Value::List(l) => l,
                        Value::DocField(s) => match f.env.doc {
                            Some(d) => Arc::new(std::sync::Mutex::new(
                                (0..d.count(s)).map(|i| d.value(s, i)).collect(),
                            )),
                            None => return Ok(Flow::Next),
                        },
                        Value::Null => return Err(b::npe(ipos, "callArgs[0]")),
                        other => {
                            return Err(b::trap(
                                ipos,
                                "illegal_argument_exception",
                                format!("Cannot iterate over [{}]", other.java_class()),
                            ))
                        }
                    };
                    let len = lock(&items).len();
                    for i in 0..len {
                        let item = {
                            let l = lock(&items);
                            if l.len() != len {
                                return Err(b::trap(
                                    ipos,
                                    "concurrent_modification_exception",
                                    "the list was modified while iterating over it",
                                ));
                            }
                            l[i].clone()
                        };
                        count_iteration(f, pos)?;
                        f.locals[slot as usize] = match target {
                            Some(t) => b::implicit_cast(ipos, item, t)?,
                            None => item,
                        };
                        match body(f)? {
                            Flow::Break => break,
                            Flow::Return => return Ok(Flow::Return),
                            _ => {}
                        }
                    }
                    Ok(Flow::Next)
                });
                self.with_span(pos, l)
            }
        })
    }

    fn loop_body(&mut self, body: &Stmt) -> CResult<StmtFn> {
        self.loops += 1;
        self.push_scope();
        let r = self.statement(body, false);
        self.pop_scope();
        self.loops -= 1;
        r
    }

    fn for_loop(
        &mut self,
        pos: usize,
        init: Option<&Stmt>,
        cond: Option<&Expr>,
        update: &[Expr],
        body: &Stmt,
    ) -> CResult<StmtFn> {
        let init = match init {
            Some(s) => {
                if let StmtKind::Expr(e) = &s.kind {
                    not_a_statement(e)?;
                }
                Some(self.statement(s, false)?)
            }
            None => None,
        };
        let cond = match cond {
            Some(c) => {
                let ce = self.condition(c)?;
                if ce.konst.is_some() {
                    return Err(iae(pos, "extraneous for loop"));
                }
                Some((ce.f, c.start()))
            }
            None => return Err(iae(pos, "extraneous for loop")),
        };
        let mut updates = Vec::new();
        for u in update {
            not_a_statement(u)?;
            updates.push(self.expr(u)?.f);
        }
        let body = self.loop_body(body)?;
        Ok(Box::new(move |f| {
            if let Some(i) = &init {
                i(f)?;
            }
            loop {
                if let Some((c, cpos)) = &cond {
                    if !b::truthy(*cpos, &c(f)?)? {
                        break;
                    }
                }
                count_iteration(f, pos)?;
                match body(f)? {
                    Flow::Break => break,
                    Flow::Return => return Ok(Flow::Return),
                    _ => {}
                }
                for u in &updates {
                    u(f)?;
                }
            }
            Ok(Flow::Next)
        }))
    }

    fn condition(&mut self, e: &Expr) -> CResult<CExpr> {
        let c = self.expr(e)?;
        match c.ty {
            Ty::Bool | Ty::Def => Ok(c),
            other => Err(cce(e.start(), other, Ty::Bool)),
        }
    }

    // ---- conversions ----

    /// An implicit conversion of `e` to a variable of type `to` (assignments, declarations).
    fn coerce(&self, e: CExpr, to: Ty, pos: usize) -> CResult<CExpr> {
        if to == Ty::Def || e.ty == to {
            return Ok(e);
        }
        match (e.ty, to) {
            (Ty::Def, _) => {
                let t = to.target().expect("a typed variable");
                let f = e.f;
                Ok(dynamic(
                    to,
                    Box::new(move |fr| b::implicit_cast(pos, f(fr)?, t)),
                ))
            }
            (Ty::Null, Ty::Str | Ty::List | Ty::Map) => Ok(CExpr { ty: to, ..e }),
            (from, _) if from.rank().is_some() && to.rank().is_some() => {
                if from.rank() > to.rank() {
                    return Err(cce(pos, from, to));
                }
                self.convert(e, to)
            }
            (from, _) => Err(cce(pos, from, to)),
        }
    }

    /// A numeric conversion (already checked to be allowed).
    fn convert(&self, e: CExpr, to: Ty) -> CResult<CExpr> {
        let t = to.target().expect("numeric");
        if let Some(k) = &e.konst {
            return Ok(constant(b::convert_number(k, t)));
        }
        let f = e.f;
        Ok(dynamic(
            to,
            Box::new(move |fr| Ok(b::convert_number(&f(fr)?, t))),
        ))
    }

    // ---- expressions ----

    fn expr(&mut self, e: &Expr) -> CResult<CExpr> {
        let pos = e.pos;
        match &e.kind {
            ExprKind::Int(v) => Ok(constant(Value::Int(*v))),
            ExprKind::Long(v) => Ok(constant(Value::Long(*v))),
            ExprKind::Float(v) => Ok(constant(Value::Float(*v))),
            ExprKind::Double(v) => Ok(constant(Value::Double(*v))),
            ExprKind::Str(s) => Ok(constant(Value::str(s))),
            ExprKind::Bool(v) => Ok(constant(Value::Bool(*v))),
            ExprKind::Null => Ok(constant(Value::Null)),
            ExprKind::Var(name) => self.variable(name, pos),
            ExprKind::Unary(op, operand) => self.unary(*op, operand, pos),
            ExprKind::Binary(op, l, r) => {
                let at = debug_pos(e).unwrap_or(pos);
                let (l, r) = (self.expr(l)?, self.expr(r)?);
                if *op == BinOp::Eq || *op == BinOp::Ne {
                    if l.ty == Ty::Null && r.ty == Ty::Null {
                        return Err(iae(pos, "extraneous comparison of [null] constants"));
                    }
                    let reference = |t: Ty| matches!(t, Ty::Str | Ty::List | Ty::Map);
                    for (a, c) in [(l.ty, r.ty), (r.ty, l.ty)] {
                        if a.rank().is_some() && reference(c) {
                            return Err(ScriptError::compile(
                                pos,
                                "class_cast_exception",
                                format!("Cannot cast from [{}] to [java.lang.Object].", a.name()),
                            ));
                        }
                    }
                }
                self.binary(*op, l, r, at)
            }
            ExprKind::And(l, r) | ExprKind::Or(l, r) => {
                let and = matches!(e.kind, ExprKind::And(..));
                let (lp, rp) = (l.start(), r.start());
                let (l, r) = (self.condition(l)?, self.condition(r)?);
                let (lf, rf) = (l.f, r.f);
                Ok(dynamic(
                    Ty::Bool,
                    Box::new(move |f| {
                        let a = b::truthy(lp, &lf(f)?)?;
                        if a != and {
                            return Ok(Value::Bool(a));
                        }
                        Ok(Value::Bool(b::truthy(rp, &rf(f)?)?))
                    }),
                ))
            }
            ExprKind::Ternary(c, x, y) => {
                let cpos = c.start();
                let c = self.condition(c)?;
                let (mut x, mut y) = (self.expr(x)?, self.expr(y)?);
                let ty = match (x.ty.rank(), y.ty.rank()) {
                    _ if x.ty == y.ty => x.ty,
                    (Some(rx), Some(ry)) => {
                        let t = Ty::from_rank(rx.max(ry));
                        x = self.convert(x, t)?;
                        y = self.convert(y, t)?;
                        t
                    }
                    _ => Ty::Def,
                };
                let (cf, xf, yf) = (c.f, x.f, y.f);
                Ok(dynamic(
                    ty,
                    Box::new(move |f| {
                        if b::truthy(cpos, &cf(f)?)? {
                            xf(f)
                        } else {
                            yf(f)
                        }
                    }),
                ))
            }
            ExprKind::Elvis(x, y) => {
                let (x, y) = (self.expr(x)?, self.expr(y)?);
                if x.ty.rank().is_some() || x.ty == Ty::Bool {
                    return Err(iae(pos, "Elvis operator cannot be used on primitives"));
                }
                let ty = if x.ty == y.ty { x.ty } else { Ty::Def };
                let (xf, yf) = (x.f, y.f);
                Ok(dynamic(
                    ty,
                    Box::new(move |f| match xf(f)? {
                        Value::Null => yf(f),
                        v => Ok(v),
                    }),
                ))
            }
            ExprKind::Assign { target, op, value } => {
                let v = self.expr(value)?;
                self.update(target, *op, v, value.pos, false)
            }
            ExprKind::IncDec {
                target,
                increment,
                prefix,
            } => {
                let op = if *increment { BinOp::Add } else { BinOp::Sub };
                self.update(target, Some(op), constant(Value::Int(1)), pos, !*prefix)
            }
            ExprKind::Field {
                obj,
                name,
                null_safe,
            } => self.field(obj, name, *null_safe, pos),
            ExprKind::Index { obj, index } => self.index(obj, index, pos),
            ExprKind::Call {
                obj,
                name,
                args,
                null_safe,
            } => self.call(obj, name, args, *null_safe, pos),
            ExprKind::FnCall { name, args } => Err(iae(
                pos,
                format!("Unknown call [{name}] with [{}] arguments.", args.len()),
            )),
            ExprKind::New { class, args } => self.new_object(class, args, pos),
            ExprKind::ListLit(items) => {
                let items = items
                    .iter()
                    .map(|i| self.expr(i).map(|c| c.f))
                    .collect::<CResult<Vec<_>>>()?;
                Ok(dynamic(
                    Ty::List,
                    Box::new(move |f| {
                        let mut out = Vec::with_capacity(items.len());
                        for i in &items {
                            out.push(i(f)?);
                        }
                        Ok(Value::new_list(out))
                    }),
                ))
            }
            ExprKind::MapLit(entries) => {
                let entries = entries
                    .iter()
                    .map(|(k, v)| Ok((self.expr(k)?.f, self.expr(v)?.f)))
                    .collect::<CResult<Vec<_>>>()?;
                Ok(dynamic(
                    Ty::Map,
                    Box::new(move |f| {
                        let mut m = JavaMap::default();
                        for (k, v) in &entries {
                            let k = k(f)?;
                            m.insert(k, v(f)?);
                        }
                        Ok(Value::new_map(m))
                    }),
                ))
            }
            ExprKind::Cast(to, operand) => {
                let opos = operand.start();
                let e = self.expr(operand)?;
                self.cast(e, Ty::of(*to), opos)
            }
            ExprKind::InstanceOf(operand, ty) => {
                let e = self.expr(operand)?;
                let ty = *ty;
                let f = e.f;
                Ok(dynamic(
                    Ty::Bool,
                    Box::new(move |fr| Ok(Value::Bool(instance_of(&f(fr)?, ty)))),
                ))
            }
            ExprKind::Regex { pattern, flags } => {
                if !crate::regex::enabled() {
                    return Err(ScriptError::compile(
                        e.pos,
                        "illegal_state_exception",
                        crate::regex::DISABLED,
                    ));
                }
                // Painless reports a bad pattern at the literal's closing slash
                let closing = e.pos + 1 + pattern.len();
                let compiled = crate::regex::Pattern::compile(pattern, flags)
                    .map_err(|reason| iae(closing, reason))?;
                Ok(constant(Value::Pattern(Arc::new(compiled))))
            }
            ExprKind::RegexMatch {
                text,
                pattern,
                whole,
            } => self.regex_match(text, pattern, *whole, e.pos),
        }
    }

    /// `text =~ pattern` or `text ==~ pattern`.
    fn regex_match(
        &mut self,
        text: &Expr,
        pattern: &Expr,
        whole: bool,
        pos: usize,
    ) -> CResult<CExpr> {
        let t = self.expr(text)?;
        if !matches!(t.ty, Ty::Def | Ty::Str | Ty::Null) {
            return Err(cce(text.start(), t.ty, Ty::Str));
        }
        let p = self.expr(pattern)?;
        let (tf, pf) = (t.f, p.f);
        // Painless reports a failed match as a statement of its own, from the pattern on
        let span = self.span(pos);
        let trap = move |kind: &'static str, reason: String| {
            let mut trap = b::trap(pos, kind, reason);
            trap.statement = Some(span);
            trap
        };
        Ok(dynamic(
            Ty::Bool,
            Box::new(move |fr| {
                let text = tf(fr)?;
                let pattern = pf(fr)?;
                let Value::Pattern(pattern) = pattern else {
                    return Err(trap(
                        "class_cast_exception",
                        format!(
                            "Cannot cast from [{}] to [java.util.regex.Pattern].",
                            pattern.java_class()
                        ),
                    ));
                };
                match text {
                    Value::Str(text) if whole => Ok(Value::Bool(pattern.matches(&text))),
                    Value::Str(text) => Ok(Value::Bool(pattern.find_in(&text))),
                    Value::Null => Err(trap(
                        "null_pointer_exception",
                        "Cannot invoke \"java.lang.CharSequence.length()\" because \"this.wrapped\" is null"
                            .to_string(),
                    )),
                    other => Err(trap(
                        "class_cast_exception",
                        format!(
                            "Cannot cast from [{}] to [java.lang.CharSequence].",
                            other.java_class()
                        ),
                    )),
                }
            }),
        ))
    }

    fn variable(&mut self, name: &str, pos: usize) -> CResult<CExpr> {
        if let Some((slot, ty)) = self.lookup(name) {
            let slot = slot as usize;
            return Ok(dynamic(ty, Box::new(move |f| Ok(f.locals[slot].clone()))));
        }
        match name {
            "params" => Ok(dynamic(Ty::Map, Box::new(|f| Ok(f.env.params.clone())))),
            "_score" if self.context.has_score() => {
                self.reads_score = true;
                Ok(dynamic(
                    Ty::Double,
                    Box::new(|f| Ok(Value::Double(f.env.score))),
                ))
            }
            "ctx" if self.context == ScriptContext::Update => Ok(dynamic(
                Ty::Map,
                Box::new(|f| Ok(f.env.ctx.cloned().unwrap_or_default())),
            )),
            "state"
                if matches!(
                    self.context,
                    ScriptContext::MetricInit
                        | ScriptContext::MetricMap
                        | ScriptContext::MetricCombine
                ) =>
            {
                Ok(dynamic(
                    Ty::Map,
                    Box::new(|f| Ok(f.env.ctx.cloned().unwrap_or_default())),
                ))
            }
            "states" if self.context == ScriptContext::MetricReduce => Ok(dynamic(
                Ty::List,
                Box::new(|f| Ok(f.env.ctx.cloned().unwrap_or_default())),
            )),
            "_value" if self.context == ScriptContext::Aggregation => Ok(dynamic(
                Ty::Def,
                Box::new(|f| Ok(f.env.value.cloned().unwrap_or_default())),
            )),
            _ => Err(iae(pos, format!("cannot resolve symbol [{name}]"))),
        }
    }

    /// A static class named at `expr` (`Math` in `Math.max`), unless a local hides it.
    fn class_of(&self, expr: &Expr) -> Option<(&'static str, &'static str)> {
        match &expr.kind {
            ExprKind::Var(name) if self.lookup(name).is_none() => {
                static_class(name).map(|full| (&full[full.rfind('.').map_or(0, |i| i + 1)..], full))
            }
            _ => None,
        }
    }

    /// `doc['literal']` at `expr`: its field slot.
    fn doc_field(&mut self, obj: &Expr, index: &Expr) -> CResult<Option<u32>> {
        let is_doc =
            matches!(&obj.kind, ExprKind::Var(n) if n == "doc" && self.lookup(n).is_none());
        if !is_doc {
            return Ok(None);
        }
        if !self.context.has_doc() {
            return Err(iae(obj.pos, "cannot resolve symbol [doc]"));
        }
        match &index.kind {
            ExprKind::Str(field) => Ok(Some(self.field_slot(field))),
            _ => Err(iae(
                index.start(),
                "doc[...] takes a field name as a string literal in Tessera's Painless subset",
            )),
        }
    }

    fn unary(&mut self, op: UnOp, operand: &Expr, pos: usize) -> CResult<CExpr> {
        let e = self.expr(operand)?;
        match op {
            UnOp::Not => {
                let e = match e.ty {
                    Ty::Bool | Ty::Def => e,
                    other => return Err(cce(operand.start(), other, Ty::Bool)),
                };
                if let Some(Value::Bool(v)) = e.konst {
                    return Ok(constant(Value::Bool(!v)));
                }
                let f = e.f;
                Ok(dynamic(
                    Ty::Bool,
                    Box::new(move |fr| Ok(Value::Bool(!b::truthy(pos, &f(fr)?)?))),
                ))
            }
            UnOp::Neg | UnOp::Plus | UnOp::BitNot => {
                let symbol = match op {
                    UnOp::Neg => "-",
                    UnOp::Plus => "+",
                    _ => "~",
                };
                let ok = match op {
                    UnOp::BitNot => matches!(e.ty, Ty::Int | Ty::Long | Ty::Def),
                    _ => e.ty.rank().is_some() || e.ty == Ty::Def,
                };
                if !ok {
                    return Err(ScriptError::compile(
                        pos,
                        "class_cast_exception",
                        format!(
                            "Cannot apply [{symbol}] operation to type [{}].",
                            e.ty.name()
                        ),
                    ));
                }
                let apply = move |p: usize, v: &Value| -> R {
                    match op {
                        UnOp::Neg => b::negate(p, v),
                        UnOp::BitNot => b::bit_not(p, v),
                        _ if v.is_numeric() => Ok(v.clone()),
                        _ => Err(b::unary_error(p, "+", v)),
                    }
                };
                if let Some(k) = &e.konst {
                    return fold(apply(pos, k));
                }
                let f = e.f;
                Ok(dynamic(e.ty, Box::new(move |fr| apply(pos, &f(fr)?))))
            }
        }
    }

    fn binary(&mut self, op: BinOp, l: CExpr, r: CExpr, pos: usize) -> CResult<CExpr> {
        let string = op == BinOp::Add && (l.ty == Ty::Str || r.ty == Ty::Str);
        let ty = if op.is_comparison() {
            Ty::Bool
        } else if string {
            Ty::Str
        } else if l.ty == Ty::Def || r.ty == Ty::Def {
            Ty::Def
        } else {
            match (l.ty.rank(), r.ty.rank()) {
                _ if matches!(op, BinOp::Shl | BinOp::Shr | BinOp::Ushr) => match (l.ty, r.ty) {
                    (Ty::Int | Ty::Long, Ty::Int | Ty::Long) => l.ty,
                    _ => return Err(self.operand_error(op, l.ty, r.ty, pos)),
                },
                (Some(a), Some(c)) => {
                    if matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor) && a.max(c) > 1 {
                        return Err(self.operand_error(op, l.ty, r.ty, pos));
                    }
                    Ty::from_rank(a.max(c))
                }
                _ if l.ty == Ty::Bool
                    && r.ty == Ty::Bool
                    && matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor) =>
                {
                    Ty::Bool
                }
                _ => return Err(self.operand_error(op, l.ty, r.ty, pos)),
            }
        };
        if op.is_comparison()
            && !matches!(op, BinOp::Eq | BinOp::Ne)
            && l.ty != Ty::Def
            && r.ty != Ty::Def
            && (l.ty.rank().is_none() || r.ty.rank().is_none())
        {
            return Err(self.operand_error(op, l.ty, r.ty, pos));
        }
        if let (Some(a), Some(c)) = (&l.konst, &r.konst) {
            return fold(if string {
                b::concat(pos, a, c)
            } else {
                b::binary(op, pos, a, c)
            });
        }
        let (lf, rf) = (l.f, r.f);
        if string {
            return Ok(dynamic(
                Ty::Str,
                Box::new(move |f| {
                    let a = lf(f)?;
                    b::concat(pos, &a, &rf(f)?)
                }),
            ));
        }
        // both doubles: the common case of scores, without the general dispatch
        if l.ty == Ty::Double && r.ty == Ty::Double && b::double_op(op, pos, 1.0, 1.0).is_some() {
            {
                return Ok(dynamic(
                    ty,
                    Box::new(move |f| {
                        let (a, c) = (lf(f)?, rf(f)?);
                        match (a, c) {
                            (Value::Double(x), Value::Double(y)) => {
                                Ok(b::double_op(op, pos, x, y).unwrap_or_default())
                            }
                            (a, c) => b::binary(op, pos, &a, &c),
                        }
                    }),
                ));
            }
        }
        Ok(dynamic(
            ty,
            Box::new(move |f| {
                let a = lf(f)?;
                let c = rf(f)?;
                b::binary(op, pos, &a, &c)
            }),
        ))
    }

    /// Painless's compile error for operands an operator does not take.
    fn operand_error(&self, op: BinOp, l: Ty, r: Ty, pos: usize) -> ScriptError {
        let numeric = |t: Ty| t.rank().is_some();
        match (numeric(l), numeric(r)) {
            (true, false) => cce(pos, r, Ty::from_rank(l.rank().expect("numeric"))),
            (false, true) => cce(pos, l, Ty::from_rank(r.rank().expect("numeric"))),
            _ => ScriptError::compile(
                pos,
                "class_cast_exception",
                format!(
                    "cannot apply the {} operator [{}] to the types [{}] and [{}]",
                    op.name(),
                    op.symbol(),
                    l.name(),
                    r.name()
                ),
            ),
        }
    }

    fn cast(&self, e: CExpr, to: Ty, pos: usize) -> CResult<CExpr> {
        if to == Ty::Def || e.ty == to {
            return Ok(CExpr {
                ty: if to == Ty::Def { e.ty } else { to },
                ..e
            });
        }
        match e.ty {
            Ty::Def => {
                let t = to.target().expect("a typed cast");
                let f = e.f;
                Ok(dynamic(
                    to,
                    Box::new(move |fr| b::explicit_cast(pos, f(fr)?, t)),
                ))
            }
            from if from.rank().is_some() && to.rank().is_some() => self.convert(e, to),
            Ty::Null if matches!(to, Ty::Str | Ty::List | Ty::Map) => Ok(CExpr { ty: to, ..e }),
            from => Err(cce(pos, from, to)),
        }
    }

    /// Assignment, compound assignment, `++` and `--` to a local, a field or an element.
    /// `postfix` returns the old value.
    fn update(
        &mut self,
        target: &Expr,
        op: Option<BinOp>,
        value: CExpr,
        value_pos: usize,
        postfix: bool,
    ) -> CResult<CExpr> {
        // a compound assignment's error is reported at its value
        let op_pos = value_pos;
        match &target.kind {
            ExprKind::Var(name) => {
                let Some((slot, ty)) = self.lookup(name) else {
                    return Err(iae(target.pos, format!("cannot resolve symbol [{name}]")));
                };
                let slot = slot as usize;
                match op {
                    None => {
                        let v = self.coerce(value, ty, value_pos)?.f;
                        Ok(dynamic(
                            ty,
                            Box::new(move |f| {
                                let v = v(f)?;
                                f.locals[slot] = v.clone();
                                Ok(v)
                            }),
                        ))
                    }
                    Some(op) => {
                        if ty == Ty::Str && op != BinOp::Add {
                            return Err(ScriptError::compile(
                                target.start(),
                                "class_cast_exception",
                                format!(
                                    "invalid compound assignment: cannot apply [{}=] to types [class {}] and [class {}]",
                                    op.symbol(),
                                    ty.name(),
                                    value.ty.name()
                                ),
                            ));
                        }
                        let target_ty = ty.target();
                        let rf = value.f;
                        Ok(dynamic(
                            ty,
                            Box::new(move |f| {
                                let old = std::mem::take(&mut f.locals[slot]);
                                let r = rf(f);
                                let new = r.and_then(|r| compound(op, op_pos, &old, &r, target_ty));
                                let new = match new {
                                    Ok(n) => n,
                                    Err(e) => {
                                        f.locals[slot] = old;
                                        return Err(e);
                                    }
                                };
                                f.locals[slot] = new.clone();
                                Ok(if postfix { old } else { new })
                            }),
                        ))
                    }
                }
            }
            ExprKind::Field { obj, name, .. } => {
                if let Some((short, _)) = self.class_of(obj) {
                    return Err(iae(
                        target.pos,
                        format!("cannot assign a value to [{short}.{name}]"),
                    ));
                }
                let o = self.expr(obj)?.f;
                let (name, fpos) = (name.clone(), target.pos);
                let rf = value.f;
                Ok(dynamic(
                    Ty::Def,
                    Box::new(move |f| {
                        let obj = o(f)?;
                        let r = rf(f)?;
                        let Some(op) = op else {
                            b::field_set(fpos, &obj, &name, r.clone())?;
                            return Ok(r);
                        };
                        let old = b::field_get(fpos, &obj, &name, f.env.doc)?;
                        let new = compound(op, op_pos, &old, &r, None)?;
                        b::field_set(fpos, &obj, &name, new.clone())?;
                        Ok(if postfix { old } else { new })
                    }),
                ))
            }
            ExprKind::Index { obj, index } => {
                if self.doc_field(obj, index)?.is_some() {
                    return Err(iae(target.pos, "doc values cannot be assigned"));
                }
                let o = self.expr(obj)?.f;
                let i = self.expr(index)?.f;
                let ipos = target.pos;
                let rf = value.f;
                Ok(dynamic(
                    Ty::Def,
                    Box::new(move |f| {
                        let obj = o(f)?;
                        let idx = i(f)?;
                        let r = rf(f)?;
                        let Some(op) = op else {
                            b::index_set(ipos, &obj, &idx, r.clone())?;
                            return Ok(r);
                        };
                        let old = b::index_get(ipos, &obj, &idx, f.env.doc)?;
                        let new = compound(op, op_pos, &old, &r, None)?;
                        b::index_set(ipos, &obj, &idx, new.clone())?;
                        Ok(if postfix { old } else { new })
                    }),
                ))
            }
            _ => Err(iae(
                target.start(),
                "invalid assignment: cannot assign a value to this expression",
            )),
        }
    }

    fn field(&mut self, obj: &Expr, name: &str, null_safe: bool, pos: usize) -> CResult<CExpr> {
        if let Some((short, full)) = self.class_of(obj) {
            return match b::static_field(short, name) {
                Some(v) => Ok(constant(v)),
                None => Err(iae(pos, format!("static field [{full}, {name}] not found"))),
            };
        }
        let o = self.expr(obj)?;
        if o.ty == Ty::Doc {
            // doc['f'].value / .empty / .length, without the generic getter lookup
            let of = o.f;
            let read = move |f: &mut Frame<'_, '_>| -> R<u32> {
                match of(f)? {
                    Value::DocField(slot) => Ok(slot),
                    _ => Err(b::npe(pos, "callArgs[0]")),
                }
            };
            return Ok(match name {
                "value" => dynamic(
                    Ty::Def,
                    Box::new(move |f| {
                        let slot = read(f)?;
                        match f.env.doc {
                            Some(d) => b::first_value(pos, slot, d),
                            None => Ok(Value::Null),
                        }
                    }),
                ),
                "empty" => dynamic(
                    Ty::Bool,
                    Box::new(move |f| {
                        let slot = read(f)?;
                        Ok(Value::Bool(f.env.doc.is_none_or(|d| d.count(slot) == 0)))
                    }),
                ),
                _ => {
                    let name = name.to_string();
                    dynamic(
                        Ty::Def,
                        Box::new(move |f| {
                            let slot = read(f)?;
                            b::field_get(pos, &Value::DocField(slot), &name, f.env.doc)
                        }),
                    )
                }
            });
        }
        if matches!(o.ty, Ty::Int | Ty::Long | Ty::Float | Ty::Double | Ty::Bool) {
            return Err(iae(
                pos,
                format!("member field [{}, {name}] not found", o.ty.name()),
            ));
        }
        let (of, name) = (o.f, name.to_string());
        let key = Value::str(&name);
        Ok(dynamic(
            Ty::Def,
            Box::new(move |f| {
                let obj = of(f)?;
                if null_safe && obj.is_null() {
                    return Ok(Value::Null);
                }
                match &obj {
                    // the key made once, not per document
                    Value::Map(m) => Ok(lock(m).get(&key).cloned().unwrap_or_default()),
                    _ => b::field_get(pos, &obj, &name, f.env.doc),
                }
            }),
        ))
    }

    fn index(&mut self, obj: &Expr, index: &Expr, pos: usize) -> CResult<CExpr> {
        if let Some(slot) = self.doc_field(obj, index)? {
            // as OpenSearch's doc lookup, reading a field the mapping lacks fails at once
            let missing = format!(
                "No field found for [{}] in mapping",
                self.fields[slot as usize]
            );
            let at = index.pos;
            return Ok(dynamic(
                Ty::Doc,
                Box::new(move |f| match f.env.doc {
                    Some(doc) if !doc.has_field(slot) => {
                        Err(b::trap(at, "illegal_argument_exception", missing.clone()))
                    }
                    _ => Ok(Value::DocField(slot)),
                }),
            ));
        }
        let o = self.expr(obj)?;
        if matches!(
            o.ty,
            Ty::Int | Ty::Long | Ty::Float | Ty::Double | Ty::Bool | Ty::Str
        ) {
            return Err(iae(
                pos,
                format!("Illegal array access on type [{}].", o.ty.name()),
            ));
        }
        let i = self.expr(index)?;
        let (of, ifn) = (o.f, i.f);
        Ok(dynamic(
            Ty::Def,
            Box::new(move |f| {
                let obj = of(f)?;
                let idx = ifn(f)?;
                b::index_get(pos, &obj, &idx, f.env.doc)
            }),
        ))
    }

    fn call(
        &mut self,
        obj: &Expr,
        name: &str,
        args: &[Expr],
        null_safe: bool,
        pos: usize,
    ) -> CResult<CExpr> {
        if let Some((short, full)) = self.class_of(obj) {
            if short == "Math" && name == "random" {
                return Err(iae(
                    pos,
                    "static method [java.lang.Math, random/0] is not allowed in Tessera's Painless subset",
                ));
            }
            if !b::static_method_arity(short, name).contains(&args.len()) {
                return Err(iae(
                    pos,
                    format!("static method [{full}, {name}/{}] not found", args.len()),
                ));
            }
            let compiled = args
                .iter()
                .map(|a| self.expr(a))
                .collect::<CResult<Vec<_>>>()?;
            for (a, c) in args.iter().zip(&compiled) {
                if short == "Math" && c.ty != Ty::Def && c.ty.rank().is_none() {
                    return Err(cce(a.start(), c.ty, Ty::Double));
                }
            }
            let ty = match (short, name) {
                ("Math", "round") => Ty::Long,
                ("Math", _) => Ty::Double,
                ("String", _) => Ty::Str,
                ("Integer", _) => Ty::Int,
                ("Long", _) => Ty::Long,
                ("Double", _) => Ty::Double,
                ("Float", _) => Ty::Float,
                _ => Ty::Bool,
            };

            let name = name.to_string();
            return Ok(match compiled.len() {
                1 => {
                    let a = compiled.into_iter().next().expect("one").f;
                    dynamic(
                        ty,
                        Box::new(move |f| b::call_static(pos, short, &name, &[a(f)?])),
                    )
                }
                _ => {
                    let mut it = compiled.into_iter();
                    let (a, c) = (it.next().expect("two").f, it.next().expect("two").f);
                    dynamic(
                        ty,
                        Box::new(move |f| {
                            let x = a(f)?;
                            b::call_static(pos, short, &name, &[x, c(f)?])
                        }),
                    )
                }
            });
        }
        // doc.containsKey('field')
        if let ExprKind::Var(v) = &obj.kind {
            if v == "doc"
                && self.lookup(v).is_none()
                && self.context.has_doc()
                && name == "containsKey"
            {
                if let [Expr {
                    kind: ExprKind::Str(field),
                    ..
                }] = args
                {
                    let slot = self.field_slot(field);
                    return Ok(dynamic(
                        Ty::Bool,
                        Box::new(move |f| {
                            Ok(Value::Bool(f.env.doc.is_some_and(|d| d.has_field(slot))))
                        }),
                    ));
                }
            }
        }
        let o = self.expr(obj)?;
        let class = match o.ty {
            Ty::Str => Some("java.lang.String"),
            Ty::List => Some("java.util.List"),
            Ty::Map => Some("java.util.Map"),
            Ty::Doc => Some("org.opensearch.index.fielddata.ScriptDocValues"),
            Ty::Int => Some("java.lang.Integer"),
            Ty::Long => Some("java.lang.Long"),
            Ty::Float => Some("java.lang.Float"),
            Ty::Double => Some("java.lang.Double"),
            Ty::Bool => Some("java.lang.Boolean"),
            _ => None,
        };
        if let Some(class) = class {
            if !b::methods_of(class).contains(&(name, args.len())) {
                return Err(iae(
                    pos,
                    format!("member method [{class}, {name}/{}] not found", args.len()),
                ));
            }
        }
        let ty = match (o.ty, name) {
            (Ty::Str, "length" | "indexOf" | "lastIndexOf" | "compareTo" | "hashCode") => Ty::Int,
            (
                Ty::Str,
                "substring" | "charAt" | "toLowerCase" | "toUpperCase" | "trim" | "replace"
                | "toString",
            ) => Ty::Str,
            (
                Ty::Str,
                "contains" | "startsWith" | "endsWith" | "equals" | "equalsIgnoreCase" | "isEmpty",
            ) => Ty::Bool,
            (Ty::List | Ty::Map | Ty::Doc, "size") => Ty::Int,
            (Ty::List | Ty::Map | Ty::Doc, "isEmpty") | (Ty::Map, "containsKey") => Ty::Bool,
            _ => Ty::Def,
        };
        let compiled = args
            .iter()
            .map(|a| self.expr(a).map(|c| c.f))
            .collect::<CResult<Vec<_>>>()?;
        let of = o.f;
        if o.ty == Ty::Doc && compiled.is_empty() && matches!(name, "size" | "getValue" | "isEmpty")
        {
            let name = name.to_string();
            return Ok(dynamic(
                ty,
                Box::new(move |f| {
                    let Value::DocField(slot) = of(f)? else {
                        return Ok(Value::Null);
                    };
                    let Some(doc) = f.env.doc else {
                        return Ok(Value::Null);
                    };
                    match name.as_str() {
                        "size" => Ok(Value::Int(doc.count(slot) as i32)),
                        "isEmpty" => Ok(Value::Bool(doc.count(slot) == 0)),
                        _ => b::first_value(pos, slot, doc),
                    }
                }),
            ));
        }
        let name = name.to_string();
        Ok(dynamic(
            ty,
            Box::new(move |f| {
                let obj = of(f)?;
                if null_safe && obj.is_null() {
                    return Ok(Value::Null);
                }
                let mut values = Vec::with_capacity(compiled.len());
                for a in &compiled {
                    values.push(a(f)?);
                }
                b::call_method(pos, &obj, &name, &values, f.env.doc)
            }),
        ))
    }

    fn new_object(&mut self, class: &str, args: &[Expr], pos: usize) -> CResult<CExpr> {
        let ty = match class {
            "ArrayList" => Ty::List,
            "HashMap" => Ty::Map,
            _ if TypeName::from_name(class).is_some() || static_class(class).is_some() => {
                return Err(iae(
                    pos,
                    format!("constructor [{class}, <init>/{}] not found", args.len()),
                ));
            }
            _ => return Err(iae(pos, format!("Not a type [{class}]."))),
        };
        match args {
            [] => Ok(dynamic(
                ty,
                Box::new(move |_| {
                    Ok(if ty == Ty::List {
                        Value::new_list(Vec::new())
                    } else {
                        Value::new_map(JavaMap::default())
                    })
                }),
            )),
            [source] if ty == Ty::List => {
                let spos = source.start();
                let se = self.expr(source)?;
                if !matches!(se.ty, Ty::Def | Ty::List | Ty::Null) {
                    return Err(cce(spos, se.ty, Ty::List).with_reason(format!(
                        "Cannot cast from [{}] to [java.util.Collection].",
                        se.ty.name()
                    )));
                }
                let s = se.f;
                Ok(dynamic(
                    Ty::List,
                    Box::new(move |f| match s(f)? {
                        Value::List(l) => Ok(Value::new_list(lock(&l).clone())),
                        Value::Null => Err(b::npe(spos, "c")),
                        other => Err(b::trap(
                            spos,
                            "class_cast_exception",
                            format!(
                                "cannot implicitly cast def [{}] to java.util.Collection",
                                other.def_type_name()
                            ),
                        )),
                    }),
                ))
            }
            [source] => {
                let spos = source.start();
                let s = self.expr(source)?.f;
                Ok(dynamic(
                    Ty::Map,
                    Box::new(move |f| match s(f)? {
                        Value::Map(m) => Ok(Value::new_map(lock(&m).clone())),
                        Value::Null => Err(b::npe(spos, "m")),
                        other => Err(b::trap(
                            spos,
                            "class_cast_exception",
                            format!(
                                "cannot implicitly cast def [{}] to java.util.Map",
                                other.def_type_name()
                            ),
                        )),
                    }),
                ))
            }
            _ => Err(iae(
                pos,
                format!("constructor [{class}, <init>/{}] not found", args.len()),
            )),
        }
    }
}

impl ScriptError {
    fn with_reason(mut self, reason: String) -> Self {
        self.reason = reason;
        self
    }
}

/// One loop iteration against the loop counter, shared by all the script's loops: as in
/// Painless, 999,999 iterations pass and the millionth fails.
fn count_iteration(f: &mut Frame<'_, '_>, pos: usize) -> R<()> {
    f.loop_budget -= 1;
    if f.loop_budget <= 0 {
        return Err(b::trap(
            pos,
            "painless_error",
            "The maximum number of statements that can be executed in a loop has been reached.",
        ));
    }
    Ok(())
}

/// `old op r`, cast back to the variable's type (Java's compound assignment); a `def` variable
/// keeps the numeric type of its old value, as in Painless.
fn compound(op: BinOp, pos: usize, old: &Value, r: &Value, target: Option<Target>) -> R {
    let new = b::binary(op, pos, old, r)?;
    match target {
        Some(Target::Str) | Some(Target::Bool) | Some(Target::List) | Some(Target::Map) => Ok(new),
        Some(t) => b::explicit_cast(pos, new, t),
        None => Ok(match old {
            Value::Int(_) if new.is_numeric() => b::convert_number(&new, Target::Int),
            Value::Long(_) if new.is_numeric() => b::convert_number(&new, Target::Long),
            Value::Float(_) if new.is_numeric() => b::convert_number(&new, Target::Float),
            _ => new,
        }),
    }
}

fn instance_of(v: &Value, ty: TypeName) -> bool {
    match ty {
        TypeName::Def | TypeName::Object => !v.is_null(),
        TypeName::Int | TypeName::Integer => matches!(v, Value::Int(_)),
        TypeName::Long | TypeName::LongBox => matches!(v, Value::Long(_)),
        TypeName::Float | TypeName::FloatBox => matches!(v, Value::Float(_)),
        TypeName::Double | TypeName::DoubleBox => matches!(v, Value::Double(_)),
        TypeName::Boolean | TypeName::BooleanBox => matches!(v, Value::Bool(_)),
        TypeName::Number => v.is_numeric(),
        TypeName::String => matches!(v, Value::Str(_)),
        TypeName::List | TypeName::ArrayList => matches!(v, Value::List(_)),
        TypeName::Map | TypeName::HashMap => matches!(v, Value::Map(_)),
    }
}

/// The last position Painless records while evaluating `e` (a member access, call or index):
/// where it reports a runtime error of the operator applied to it.
fn debug_pos(e: &Expr) -> Option<usize> {
    match &e.kind {
        ExprKind::Field { .. } | ExprKind::Call { .. } | ExprKind::Index { .. } => Some(e.pos),
        // an operator records its own position before its operands'
        ExprKind::Binary(_, l, r) => Some(debug_pos(r).or_else(|| debug_pos(l)).unwrap_or(e.pos)),
        ExprKind::And(l, r) | ExprKind::Or(l, r) => debug_pos(r).or_else(|| debug_pos(l)),
        ExprKind::Unary(_, x) | ExprKind::Cast(_, x) => debug_pos(x),
        _ => None,
    }
}

/// Painless refuses an expression statement whose result is not used (`1;`, `a.b;`).
fn not_a_statement(e: &Expr) -> CResult<()> {
    let reason = match &e.kind {
        ExprKind::Assign { .. }
        | ExprKind::IncDec { .. }
        | ExprKind::Call { .. }
        | ExprKind::FnCall { .. }
        | ExprKind::New { .. } => return Ok(()),
        ExprKind::Int(_) | ExprKind::Long(_) | ExprKind::Float(_) | ExprKind::Double(_) => {
            let text = match &e.kind {
                ExprKind::Int(v) => v.to_string(),
                ExprKind::Long(v) => v.to_string(),
                ExprKind::Float(v) => crate::value::java_float(*v),
                ExprKind::Double(v) => tessera_common::settings::java_double(*v),
                _ => unreachable!(),
            };
            format!("not a statement: numeric constant [{text}] not used")
        }
        ExprKind::Str(s) => format!("not a statement: string constant [{s}] not used"),
        ExprKind::Bool(v) => format!("not a statement: boolean constant [{v}] not used"),
        ExprKind::Null => "not a statement: null constant not used".to_string(),
        ExprKind::Var(name) => format!("not a statement: symbol [{name}] not used"),
        ExprKind::Field { .. } => {
            "not a statement: result of dot operator [.] not used".to_string()
        }
        ExprKind::Index { .. } => "not a statement: result of brace operator not used".to_string(),
        ExprKind::Binary(op, ..) => {
            format!(
                "not a statement: result not used from {} operation [{}]",
                op.name(),
                op.symbol()
            )
        }
        ExprKind::And(..) => "not a statement: result not used from and operation [&&]".to_string(),
        ExprKind::Or(..) => "not a statement: result not used from or operation [||]".to_string(),
        _ => "not a statement: result not used".to_string(),
    };
    Err(iae(e.pos, reason))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{GeoPoint, MemoryDoc};

    fn run_with(src: &str, params: serde_json::Value) -> Result<String, ScriptError> {
        let script = compile(src, ScriptContext::PainlessTest)?;
        let params = Value::from_json(&params);
        script
            .execute(&Env::new(&params))
            .map(|v| v.to_java_string())
    }

    fn run(src: &str) -> String {
        run_with(
            src,
            serde_json::json!({"a": 5, "d": 1.5, "s": "str", "l": [1, 2, 3]}),
        )
        .unwrap_or_else(|e| panic!("{src}: {e:?}"))
    }

    fn fail(src: &str) -> ScriptError {
        run_with(src, serde_json::json!({"a": 5})).expect_err(src)
    }

    #[test]
    fn regexes() {
        assert_eq!(run("'abc' =~ /b/"), "true");
        assert_eq!(run("'abc' ==~ /b/"), "false");
        assert_eq!(run("'ABC' ==~ /a.c/i"), "true");
        // `=~` binds tighter than `==` and looser than `+`
        assert_eq!(run("'a' + 'b' ==~ /ab/ == true"), "true");
        // a slash after an operand divides, elsewhere it opens a regex
        assert_eq!(run("def x = [4]; return x[0] / 2 / 1"), "2");
        assert_eq!(
            run("if (params.a > 9) { return false } /a/.matcher('a').find()"),
            "true"
        );
        assert_eq!(run("return /a/.pattern()"), "a");
        assert_eq!(
            run("def m = /(a)(b)?/.matcher('zab ac'); List r = []; while (m.find()) { r.add(m.group() + ':' + m.group(2) + ':' + m.start() + ':' + m.end(1)) } return r"),
            "[ab:b:1:2, a:null:4:5]"
        );
        assert_eq!(
            run("def m = /(?<y>\\d{4})-(?<m>\\d\\d)/.matcher('on 2024-05'); m.find(); return m.namedGroup('y') + m.namedGroup('m') + m.groupCount()"),
            "2024052"
        );
        assert_eq!(
            run("/b+/.matcher('abbc').toString()"),
            "java.util.regex.Matcher[pattern=b+ region=0,4 lastmatch=]"
        );
        let e = fail("'x' =~ /a(/");
        assert_eq!(
            (e.kind, e.offset, e.cause_type),
            (
                crate::error::ScriptErrorKind::Compile,
                10,
                "illegal_argument_exception"
            )
        );
        assert!(
            e.reason.starts_with(
                "invalid regular expression: could not compile regex constant [a(] with flags []"
            ),
            "{}",
            e.reason
        );
        let e = fail("5 =~ /a/");
        assert_eq!(
            (e.offset, e.reason.as_str()),
            (0, "Cannot cast from [int] to [java.lang.String].")
        );
        let e = fail("String s = null; return s =~ /a/");
        assert_eq!(
            (e.kind, e.offset, e.cause_type),
            (
                crate::error::ScriptErrorKind::Runtime,
                29,
                "null_pointer_exception"
            )
        );
        let e = fail("/a/.matcher('b').group()");
        assert_eq!(
            (e.cause_type, e.reason.as_str()),
            ("illegal_state_exception", "No match found")
        );
        let e = fail("def m = /a/.matcher('a'); m.find(); return m.group(3)");
        assert_eq!(
            (e.cause_type, e.reason.as_str()),
            ("index_out_of_bounds_exception", "No group 3")
        );
        let e = fail("/a/.split('a')");
        assert_eq!(e.cause_type, "illegal_argument_exception");
    }

    #[test]
    fn arithmetic_and_promotion() {
        assert_eq!(run("1 + 1"), "2");
        assert_eq!(run("5 / 2"), "2");
        assert_eq!(run("-7 % 3"), "-1");
        assert_eq!(run("int a = 5; a / 2.0"), "2.5");
        assert_eq!(run("def a = 2147483647; a + 1"), "-2147483648");
        assert_eq!(run("10L * 3"), "30");
        assert_eq!(run("3f / 2"), "1.5");
        assert_eq!(run("1.0 / 0"), "Infinity");
        assert_eq!(run("0.1f + 0.2"), "0.30000000149011613");
        assert_eq!(run("1 == 1.0"), "true");
        assert_eq!(run("params.a + 1"), "6");
        assert_eq!(run("params['d'] * 2"), "3.0");
        assert_eq!(run("true ? 1 : 2.0"), "1.0");
    }

    #[test]
    fn strings() {
        assert_eq!(run("'a' + 1.0f + 1L + null + true"), "a1.01nulltrue");
        assert_eq!(run("def s = 'ab'; s == 'a' + 'b'"), "true");
        assert_eq!(run("'abc'.substring(1)"), "bc");
        assert_eq!(run("params.s.length() + 1"), "4");
        assert_eq!(run("String s = null; s + 1"), "null1");
        assert_eq!(run("1e20 + ''"), "1.0E20");
    }

    #[test]
    fn statements_and_loops() {
        assert_eq!(run("int i = 0; i"), "0");
        assert_eq!(run("int x = 1"), "null");
        assert_eq!(
            run("int t = 0; for (int i = 0; i < 10; ++i) { if (i % 2 == 0) continue; t += i } t"),
            "25"
        );
        assert_eq!(
            run("int t = 0; for (def x : params.l) { t += x } return t"),
            "6"
        );
        assert_eq!(
            run("int t = 0; for (x in params.l) { t += x; if (t > 2) break; } t"),
            "3"
        );
        assert_eq!(run("int i = 0; while (i < 5) i++; i"), "5");
        assert_eq!(run("int i = 0; do { i += 2 } while (i < 5); i"), "6");
        assert_eq!(run("def x = 5; x += 2.5; x"), "7");
        assert_eq!(run("int x = 5; x += 2.5; x"), "7");
        assert_eq!(run("def x = 1; x++; x"), "2");
        assert_eq!(run("int x = 1; int y = x++; y * 10 + x"), "12");
        assert_eq!(run("if (params.a > 1) { 'big' } else { 'small' }"), "big");
    }

    #[test]
    fn collections() {
        assert_eq!(run("['b':1,'a':2,'zz':3]"), "{zz=3, a=2, b=1}");
        assert_eq!(run("def l = [1,2.0,'x']; l"), "[1, 2.0, x]");
        assert_eq!(
            run("def l = new ArrayList(); l.add(1); l.add(2L); l"),
            "[1, 2]"
        );
        assert_eq!(
            run("Map m = new HashMap(); m.put('k', 1); m.k + m['k'] + m.get('k')"),
            "3"
        );
        assert_eq!(run("def m = [:]; m.x"), "null");
        assert_eq!(run("def m = [:]; m?.a?.b"), "null");
        assert_eq!(run("def l = [1, 2]; l[-1]"), "2");
        assert_eq!(run("def m = ['a': [1]]; m.a[0] = 5; m"), "{a=[5]}");
        assert_eq!(run("[1,2] == [1,2]"), "true");
        assert_eq!(run("def m = [:]; m.n = 1; m.n += 2; m.n"), "3");
    }

    #[test]
    fn math_and_casts() {
        assert_eq!(run("Math.max(1, 2L)"), "2.0");
        assert_eq!(run("Math.round(2.5)"), "3");
        assert_eq!(run("Math.sqrt(params.a - 1)"), "2.0");
        assert_eq!(run("Math.PI > 3"), "true");
        assert_eq!(run("(int) 3.9"), "3");
        assert_eq!(run("(long) params.d"), "1");
        assert_eq!(run("int x = 1; x instanceof Integer"), "true");
        assert_eq!(run("String.valueOf(1)"), "1");
    }

    #[test]
    fn compile_errors() {
        let e = fail("x + 1");
        assert_eq!(
            (e.cause_type, e.reason.as_str(), e.offset),
            ("illegal_argument_exception", "cannot resolve symbol [x]", 0)
        );
        let e = fail("1/0");
        assert_eq!(
            (e.kind, e.reason.as_str()),
            (crate::ScriptErrorKind::Compile, "/ by zero")
        );
        let e = fail("int x = 2.5; x");
        assert_eq!(
            (e.reason.as_str(), e.offset),
            ("Cannot cast from [double] to [int].", 8)
        );
        assert_eq!(
            fail("\"abc\".foo()").reason,
            "member method [java.lang.String, foo/0] not found"
        );
        assert_eq!(
            fail("Math.foo(1)").reason,
            "static method [java.lang.Math, foo/1] not found"
        );
        assert_eq!(
            fail("'a' - 1").reason,
            "Cannot cast from [java.lang.String] to [int]."
        );
        assert_eq!(
            fail("true + 1").reason,
            "Cannot cast from [boolean] to [int]."
        );
        assert_eq!(
            fail("null + 1").reason,
            "Cannot cast from [java.lang.Object] to [int]."
        );
        assert_eq!(
            fail("String s = 1").reason,
            "Cannot cast from [int] to [java.lang.String]."
        );
        assert_eq!(
            fail("(String) 1").reason,
            "Cannot cast from [int] to [java.lang.String]."
        );
        assert_eq!(
            fail("1; 2").reason,
            "not a statement: numeric constant [1] not used"
        );
        assert_eq!(
            fail("params.a; 2").reason,
            "not a statement: result of dot operator [.] not used"
        );
        assert_eq!(fail("new Foo()").reason, "Not a type [Foo].");
        assert!(fail("Math.random()").reason.contains("not allowed"));
        assert_eq!(fail("if (true) {1} else {2}").reason, "extraneous if block");
        assert_eq!(fail("doc['a'].value").reason, "cannot resolve symbol [doc]");
    }

    #[test]
    fn runtime_errors() {
        let e = fail("def t = 0; for (int i = 0; i < 3; i++) { t += 10 / (2 - i) } t");
        assert_eq!((e.offset, e.statement), (52, Some((41, 61))));
        let e = fail("def s = 'a'; s *= 2");
        assert_eq!(e.offset, 18);
        let e = fail("params.a / 0");
        assert_eq!((e.offset, e.statement), (6, Some((0, 12))));
        let e = fail("def a = 1; a/0");
        assert_eq!(
            (e.kind, e.cause_type, e.offset, e.statement),
            (
                crate::ScriptErrorKind::Runtime,
                "arithmetic_exception",
                11,
                Some((11, 14))
            )
        );
        let e = fail("def x = 2.5; int y = x; y");
        assert_eq!(
            (e.reason.as_str(), e.offset, e.statement),
            (
                "cannot implicitly cast def [double] to int",
                21,
                Some((17, 24))
            )
        );
        let e = fail("def l = [1]; l[3]");
        assert_eq!(
            (e.cause_type, e.reason.as_str(), e.offset),
            (
                "index_out_of_bounds_exception",
                "Index 3 out of bounds for length 1",
                14
            )
        );
        let e = fail("def x = null; x + 1");
        assert_eq!(
            e.reason,
            "Cannot invoke \"Object.getClass()\" because \"left\" is null"
        );
        let e = fail("def x = 1; x.foo()");
        assert_eq!(
            (e.reason.as_str(), e.offset),
            ("dynamic method [java.lang.Integer, foo/0] not found", 12)
        );
        let e = fail("def s = 1; (String) s");
        assert_eq!(
            (e.reason.as_str(), e.offset),
            ("cannot explicitly cast def [int] to java.lang.String", 20)
        );
        let e = fail("for (int i = 0; i < 2000000; ++i) {} 1");
        assert_eq!(
            (e.cause_type, e.offset, e.statement),
            ("painless_error", 0, Some((0, 9)))
        );
        let e = fail("params.a.b");
        assert_eq!(
            (e.reason.as_str(), e.offset),
            ("dynamic getter [java.lang.Integer, b] not found", 8)
        );
    }

    #[test]
    fn loop_counter_allows_999999_iterations() {
        assert_eq!(run("int i = 0; while (i < 999999) { i++ } i"), "999999");
        assert_eq!(
            run("int i = 0; do { i++ } while (i < 1000000); i"),
            "1000000"
        );
        assert!(run_with(
            "int i = 0; while (i < 1000000) { i++ } i",
            serde_json::json!({})
        )
        .is_err());
    }

    #[test]
    fn documents() {
        let src = "doc['price'].value / (doc['qty'].value + 1) + (doc['missing'].size() == 0 ? _score : 0)";
        let script = compile(src, ScriptContext::Score).unwrap();
        assert_eq!(script.fields(), ["price", "qty", "missing"]);
        assert!(script.reads_score());
        let no_score = compile("doc['price'].value * 2", ScriptContext::Score).unwrap();
        assert!(!no_score.reads_score());
        let doc = MemoryDoc {
            fields: vec![vec![Value::Double(10.0)], vec![Value::Long(3)], vec![]],
        };
        let params = Value::new_map(JavaMap::default());
        let env = Env {
            params: &params,
            doc: Some(&doc),
            score: 2.0,
            ctx: None,
            value: None,
        };
        let mut runner = script.runner();
        assert_eq!(runner.run(&env).unwrap().to_java_string(), "4.5");
        let geo = compile("doc['loc'].arcDistance(0.0, 0.0) > 0 && doc['loc'].value.lat == 1.0 && doc['d'].value.getYear() == 2021 && doc['d'].value.year == 2021", ScriptContext::Filter).unwrap();
        let doc = MemoryDoc {
            fields: vec![
                vec![Value::Geo(GeoPoint { lat: 1.0, lon: 2.0 })],
                vec![Value::Date(1_614_834_367_089)],
            ],
        };
        let env = Env {
            params: &params,
            doc: Some(&doc),
            score: 0.0,
            ctx: None,
            value: None,
        };
        assert_eq!(geo.execute(&env).unwrap().to_java_string(), "true");
        let missing = compile("doc['x'].value", ScriptContext::Filter).unwrap();
        let empty = MemoryDoc {
            fields: vec![vec![]],
        };
        let env = Env {
            params: &params,
            doc: Some(&empty),
            score: 0.0,
            ctx: None,
            value: None,
        };
        assert_eq!(
            missing.execute(&env).unwrap_err().cause_type,
            "illegal_state_exception"
        );
        // a field the mapping lacks fails where it is read, but may be asked about
        let unmapped = MemoryDoc { fields: vec![] };
        let env = Env {
            params: &params,
            doc: Some(&unmapped),
            score: 0.0,
            ctx: None,
            value: None,
        };
        let err = compile("1 + doc['x'].size()", ScriptContext::Filter)
            .unwrap()
            .execute(&env)
            .unwrap_err();
        assert_eq!(
            (err.cause_type, err.reason.as_str(), err.offset),
            (
                "illegal_argument_exception",
                "No field found for [x] in mapping",
                8
            )
        );
        let asks = compile("doc.containsKey('x')", ScriptContext::Filter).unwrap();
        assert_eq!(asks.execute(&env).unwrap().to_java_string(), "false");
    }

    #[test]
    fn value_scripts_see_value_in_aggregations_only() {
        let params = Value::new_map(JavaMap::default());
        let value = Value::Long(21);
        let env = Env {
            value: Some(&value),
            ..Env::new(&params)
        };
        let script = compile("_value * 2", ScriptContext::Aggregation).unwrap();
        assert_eq!(script.execute(&env).unwrap().to_java_string(), "42");
        let err = compile("_value * 2", ScriptContext::Filter).unwrap_err();
        assert_eq!(err.reason, "cannot resolve symbol [_value]");
    }

    #[test]
    fn update_context_ctx() {
        let script = compile(
            "ctx._source.counter += params.n; ctx.op = 'noop'",
            ScriptContext::Update,
        )
        .unwrap();
        let ctx = Value::from_json(&serde_json::json!({"_source": {"counter": 1}, "op": "index"}));
        let params = Value::from_json(&serde_json::json!({"n": 4}));
        let env = Env {
            params: &params,
            doc: None,
            score: 0.0,
            ctx: Some(&ctx),
            value: None,
        };
        script.execute(&env).unwrap();
        assert_eq!(
            ctx.to_json(),
            serde_json::json!({"_source": {"counter": 5}, "op": "noop"})
        );
    }

    /// Counts the allocations of the current thread, to show that running a compiled numeric
    /// script per document allocates nothing.
    mod counting {
        use std::alloc::{GlobalAlloc, Layout, System};
        use std::cell::Cell;

        thread_local! {
            pub static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
        }

        pub struct Counting;

        unsafe impl GlobalAlloc for Counting {
            unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
                let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
                unsafe { System.alloc(layout) }
            }

            unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
                unsafe { System.dealloc(ptr, layout) }
            }
        }

        #[global_allocator]
        static GLOBAL: Counting = Counting;
    }

    #[test]
    fn numeric_scripts_run_per_document_without_allocating() {
        let src = "double total = doc['total_amount'].value; if (doc['trip_distance'].size() == 0) { return 0.0 } \
                   double r = total / (doc['trip_distance'].value + 1); for (int i = 0; i < 3; i++) { r += i * _score } \
                   return Math.max(r, 0) + params.boost";
        let script = compile(src, ScriptContext::Score).unwrap();
        let params = Value::from_json(&serde_json::json!({"boost": 1}));
        let docs: Vec<MemoryDoc> = (0..100)
            .map(|i| MemoryDoc {
                fields: vec![vec![Value::Double(i as f64)], vec![Value::Double(1.0)]],
            })
            .collect();
        let mut runner = script.runner();
        let env = |d| Env {
            params: &params,
            doc: Some(d),
            score: 0.5,
            ctx: None,
            value: None,
        };
        let first = runner.run(&env(&docs[3])).unwrap();
        assert_eq!(first.to_java_string(), "4.0");
        let before = counting::ALLOCATIONS.with(|c| c.get());
        let mut sum = 0.0;
        for d in &docs {
            sum += runner.run(&env(d)).unwrap().as_f64().unwrap();
        }
        let allocations = counting::ALLOCATIONS.with(|c| c.get()) - before;
        assert_eq!(allocations, 0);
        assert!(sum > 0.0);
    }
}
