//! The syntax tree of a script. Every node keeps the byte offset Painless reports for it (the
//! start of an expression, the variable name of a declaration), so errors point where
//! OpenSearch's do.

/// A type name as written in a declaration, cast, `instanceof` or `new`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeName {
    Def,
    Int,
    Long,
    Float,
    Double,
    Boolean,
    String,
    List,
    Map,
    ArrayList,
    HashMap,
    Object,
    Integer,
    LongBox,
    DoubleBox,
    FloatBox,
    BooleanBox,
    Number,
}

impl TypeName {
    /// The type a name denotes, if it is one the subset knows.
    pub fn from_name(name: &str) -> Option<TypeName> {
        Some(match name {
            "def" => TypeName::Def,
            "int" => TypeName::Int,
            "long" => TypeName::Long,
            "float" => TypeName::Float,
            "double" => TypeName::Double,
            "boolean" => TypeName::Boolean,
            "String" => TypeName::String,
            "List" => TypeName::List,
            "Map" => TypeName::Map,
            "ArrayList" => TypeName::ArrayList,
            "HashMap" => TypeName::HashMap,
            "Object" => TypeName::Object,
            "Integer" => TypeName::Integer,
            "Long" => TypeName::LongBox,
            "Double" => TypeName::DoubleBox,
            "Float" => TypeName::FloatBox,
            "Boolean" => TypeName::BooleanBox,
            "Number" => TypeName::Number,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Mul,
    Div,
    Rem,
    Add,
    Sub,
    Shl,
    Shr,
    Ushr,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    BitAnd,
    BitXor,
    BitOr,
}

impl BinOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Ushr => ">>>",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::BitAnd => "&",
            BinOp::BitXor => "^",
            BinOp::BitOr => "|",
        }
    }

    /// Painless's name of the operation, used in "not a statement" errors.
    pub fn name(self) -> &'static str {
        match self {
            BinOp::Mul => "multiplication",
            BinOp::Div => "division",
            BinOp::Rem => "remainder",
            BinOp::Add => "addition",
            BinOp::Sub => "subtraction",
            BinOp::Shl => "left shift",
            BinOp::Shr => "right shift",
            BinOp::Ushr => "unsigned shift",
            BinOp::Lt => "less than",
            BinOp::Le => "less than or equals",
            BinOp::Gt => "greater than",
            BinOp::Ge => "greater than or equals",
            BinOp::Eq => "equals",
            BinOp::Ne => "not equals",
            BinOp::BitAnd => "bitwise and",
            BinOp::BitXor => "bitwise xor",
            BinOp::BitOr => "bitwise or",
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Plus,
    Not,
    BitNot,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub pos: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    Str(String),
    Bool(bool),
    Null,
    /// A local variable, `params`, `doc`, `_score`, `ctx`, or a class name such as `Math`.
    Var(String),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    Elvis(Box<Expr>, Box<Expr>),
    /// `target = value` or `target op= value`.
    Assign {
        target: Box<Expr>,
        op: Option<BinOp>,
        value: Box<Expr>,
    },
    /// `++x`, `x--`, ...
    IncDec {
        target: Box<Expr>,
        increment: bool,
        prefix: bool,
    },
    /// `obj.name` or `obj?.name`; `pos` of the field node is the dot.
    Field {
        obj: Box<Expr>,
        name: String,
        null_safe: bool,
    },
    /// `obj[index]`.
    Index {
        obj: Box<Expr>,
        index: Box<Expr>,
    },
    /// `obj.name(args)` or `obj?.name(args)`; `pos` is the dot.
    Call {
        obj: Box<Expr>,
        name: String,
        args: Vec<Expr>,
        null_safe: bool,
    },
    /// `name(args)`: a call of a script function, which the subset does not have.
    FnCall {
        name: String,
        args: Vec<Expr>,
    },
    New {
        class: String,
        args: Vec<Expr>,
    },
    ListLit(Vec<Expr>),
    MapLit(Vec<(Expr, Expr)>),
    Cast(TypeName, Box<Expr>),
    InstanceOf(Box<Expr>, TypeName),
    /// `/pattern/flags`.
    Regex {
        pattern: String,
        flags: String,
    },
    /// `text =~ pattern` (the pattern occurs in the text) or `text ==~ pattern` (`whole`: it
    /// matches all of it); `pos` of the node is the pattern's.
    RegexMatch {
        text: Box<Expr>,
        pattern: Box<Expr>,
        whole: bool,
    },
}

impl Expr {
    /// Where the expression's text starts: a member access, index or postfix `++` starts
    /// with its object (the node's own `pos` is its operator, where Painless reports errors).
    pub fn start(&self) -> usize {
        match &self.kind {
            ExprKind::Field { obj, .. }
            | ExprKind::Call { obj, .. }
            | ExprKind::Index { obj, .. } => obj.start(),
            ExprKind::IncDec {
                target,
                prefix: false,
                ..
            } => target.start(),
            _ => self.pos,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub pos: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StmtKind {
    /// `int a = 1, b;` — each declared name with its offset and initialiser.
    Decl {
        ty: TypeName,
        vars: Vec<(String, usize, Option<Expr>)>,
    },
    Expr(Expr),
    If {
        cond: Expr,
        then: Box<Stmt>,
        otherwise: Option<Box<Stmt>>,
    },
    While {
        cond: Expr,
        body: Box<Stmt>,
    },
    DoWhile {
        body: Box<Stmt>,
        cond: Expr,
    },
    For {
        init: Option<Box<Stmt>>,
        cond: Option<Expr>,
        update: Vec<Expr>,
        body: Box<Stmt>,
    },
    /// `for (T x : iterable)` or `for (x in iterable)`.
    ForEach {
        ty: TypeName,
        name: String,
        iterable: Expr,
        body: Box<Stmt>,
    },
    Block(Vec<Stmt>),
    Break,
    Continue,
    Return(Option<Expr>),
    Empty,
}

impl Stmt {
    /// The statements of a loop body, as Painless counts them against the loop counter.
    pub fn statement_count(&self) -> i64 {
        match &self.kind {
            StmtKind::Block(stmts) => stmts.len() as i64,
            StmtKind::Empty => 0,
            _ => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_and_operator_names() {
        assert_eq!(TypeName::from_name("def"), Some(TypeName::Def));
        assert_eq!(TypeName::from_name("Foo"), None);
        assert_eq!(BinOp::Add.name(), "addition");
        assert!(BinOp::Ge.is_comparison());
        let block = Stmt {
            kind: StmtKind::Block(vec![]),
            pos: 0,
        };
        assert_eq!(block.statement_count(), 0);
    }
}
