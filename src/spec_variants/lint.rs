//! [`check_exact`]: the f32 operations of a shader that a conforming GPU may evaluate with other
//! bits than the CPU, found by following where each f32 value comes from.
//!
//! Every value carries the kinds of operation it may be the direct result of (a product, a
//! sum), through variables, struct fields, function arguments and return values (joined over
//! every call: the check does not tell calls apart, so it errs towards reporting). An integer
//! operation with an operand the compiler cannot know (a buffer's contents) is a barrier: what
//! passes through one is no longer an operation's result. `pin` in `shaders/exact.wgsl` is such
//! a barrier. Conversions from integers are exact (the shader keeps them below 2^24).

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use naga::{
    BinaryOperator as Op, Block, Expression, Function, Handle, LocalVariable, MathFunction, Module,
    ScalarKind, Statement, TypeInner,
};

use super::{VariantError, parse};

/// An f32 operation that a conforming GPU may evaluate with other bits than the CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The function it is in.
    pub function: String,
    /// Its line in the source (1-based).
    pub line: u32,
    /// The operation's source text.
    pub text: String,
    /// What a GPU may do with it.
    pub rule: &'static str,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {} in {}: `{}`: {}",
            self.line, self.function, self.text, self.rule
        )
    }
}

/// The operations of the WGSL `source` whose f32 result a conforming GPU may compute with
/// other bits than the CPU: an f32 division, root or other builtin without an exact result;
/// a product feeding a sum (fusion), a sum feeding a sum or a product feeding a product
/// (reassociation); a hint's value in arithmetic. Empty for a shader that is exact on every
/// GPU whose f32 `+ - *` round to nearest even.
///
/// Two naming rules exempt functions: `*_hint` functions may compute anything (their results
/// only seed exact searches and may only leave them as integers or through a `*_rn`
/// function), and `*_rn` functions are trusted correctly rounded primitives (their results are
/// exact; they are tested against the CPU's IEEE operations instead).
///
/// # Errors
/// [`VariantError::Invalid`] when `source` does not parse or validate.
pub fn check_exact(source: &str) -> Result<Vec<Violation>, VariantError> {
    let (module, info) = parse(source)?;
    let mut flow = Flow::new(&module);
    for _ in 0..256 {
        flow.changed = false;
        flow.pass(&module, &info, None);
        if !flow.changed {
            break;
        }
    }
    let mut found = Vec::new();
    flow.pass(&module, &info, Some((source, &mut found)));
    found.sort_by_key(|v| v.line);
    found.dedup();
    Ok(found)
}

/// The value may be a product's result.
const PRODUCT: u8 = 1;
/// The value may be a sum's or difference's result.
const SUM: u8 = 2;
/// The value may be a hint's.
const HINT: u8 = 4;
/// The value is not known when the pipeline is compiled (it depends on a buffer or builtin).
const RUNTIME: u8 = 8;

/// What a value may be the result of: `bits` for the whole value, and per struct field more.
#[derive(Clone, Debug, Default, PartialEq)]
struct Abs {
    bits: u8,
    fields: BTreeMap<u32, Abs>,
}

impl Abs {
    fn of(bits: u8) -> Self {
        Self {
            bits,
            fields: BTreeMap::new(),
        }
    }

    /// All the bits of the value and its fields.
    fn flat(&self) -> u8 {
        self.fields.values().fold(self.bits, |b, f| b | f.flat())
    }

    fn field(&self, i: u32) -> Abs {
        let mut f = self.fields.get(&i).cloned().unwrap_or_default();
        f.bits |= self.bits;
        f
    }

    /// Adds `other` in; whether anything was new.
    fn join(&mut self, other: &Abs) -> bool {
        let before = self.clone();
        self.bits |= other.bits;
        for (i, f) in &other.fields {
            self.fields.entry(*i).or_default().join(f);
        }
        *self != before
    }

    /// Adds `value` in at `path` (a struct field for `Some`, the whole element otherwise).
    fn join_at(&mut self, path: &[Option<u32>], value: &Abs) -> bool {
        match path.split_first() {
            None => self.join(value),
            Some((Some(i), rest)) => self.fields.entry(*i).or_default().join_at(rest, value),
            Some((None, _)) => self.join(&Abs::of(value.flat())),
        }
    }

    fn at(&self, path: &[Option<u32>]) -> Abs {
        match path.split_first() {
            None => self.clone(),
            Some((Some(i), rest)) => self.field(*i).at(rest),
            Some((None, _)) => Abs::of(self.flat()),
        }
    }
}

/// A function: one of the module's, or an entry point's (by index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum FnId {
    Module(Handle<Function>),
    Entry(usize),
}

/// Where a pointer points.
#[derive(Clone, Debug)]
enum Root {
    Local(Handle<LocalVariable>),
    Global,
    Arg(u32),
}

#[derive(Clone, Debug)]
enum Val {
    Value(Abs),
    Pointer(Root, Vec<Option<u32>>),
}

/// What is known so far, for every function at once.
struct Flow {
    locals: HashMap<(FnId, Handle<LocalVariable>), Abs>,
    /// Argument values (for a pointer argument: what it points to), joined over every call.
    args: HashMap<(Handle<Function>, u32), Abs>,
    returns: HashMap<Handle<Function>, Abs>,
    /// Functions whose bodies are not followed: `*_hint` (true) and `*_rn` (false).
    exempt: HashMap<Handle<Function>, bool>,
    changed: bool,
}

type Report<'a> = Option<(&'a str, &'a mut Vec<Violation>)>;

impl Flow {
    fn new(module: &Module) -> Self {
        let exempt = module
            .functions
            .iter()
            .filter_map(|(h, f)| {
                let name = f.name.as_deref()?;
                if name.ends_with("_hint") {
                    Some((h, true))
                } else if name.ends_with("_rn") {
                    Some((h, false))
                } else {
                    None
                }
            })
            .collect();
        Self {
            locals: HashMap::new(),
            args: HashMap::new(),
            returns: HashMap::new(),
            exempt,
            changed: false,
        }
    }

    fn pass(&mut self, module: &Module, info: &naga::valid::ModuleInfo, mut report: Report<'_>) {
        for (h, f) in module.functions.iter() {
            if !self.exempt.contains_key(&h) {
                self.function(module, FnId::Module(h), f, &info[h], &mut report);
            }
        }
        for (i, ep) in module.entry_points.iter().enumerate() {
            self.function(
                module,
                FnId::Entry(i),
                &ep.function,
                info.get_entry_point(i),
                &mut report,
            );
        }
    }

    fn function(
        &mut self,
        module: &Module,
        id: FnId,
        f: &Function,
        info: &naga::valid::FunctionInfo,
        report: &mut Report<'_>,
    ) {
        let mut vals: Vec<Val> = Vec::with_capacity(f.expressions.len());
        for (h, e) in f.expressions.iter() {
            let v = self.expression(module, id, f, info, &vals, h, e, report);
            vals.push(v);
        }
        for (lh, local) in f.local_variables.iter() {
            if let Some(init) = local.init {
                let v = value(&vals, init);
                self.store(id, &Root::Local(lh), &[], &v);
            }
        }
        self.block(id, &f.body, &vals);
    }

    #[expect(clippy::too_many_arguments, reason = "one expression's context")]
    fn expression(
        &mut self,
        module: &Module,
        id: FnId,
        f: &Function,
        info: &naga::valid::FunctionInfo,
        vals: &[Val],
        h: Handle<Expression>,
        e: &Expression,
        report: &mut Report<'_>,
    ) -> Val {
        let types = &module.types;
        let inner = |x: Handle<Expression>| info[x].ty.inner_with(types);
        let is_float = |x: Handle<Expression>| {
            inner(x)
                .scalar()
                .is_some_and(|s| s.kind == ScalarKind::Float)
        };
        let bits = |x: Handle<Expression>| value(vals, x).flat();
        let runtime =
            |xs: &[Handle<Expression>]| xs.iter().fold(0, |b, &x| b | (bits(x) & RUNTIME));
        let mut flag = |rule: &'static str| {
            if let Some((source, found)) = report.as_mut() {
                let loc = f.expressions.get_span(h).location(source);
                let end = (loc.offset + loc.length) as usize;
                found.push(Violation {
                    function: f.name.clone().unwrap_or_default(),
                    line: loc.line_number,
                    text: source
                        .get(loc.offset as usize..end)
                        .unwrap_or("")
                        .to_owned(),
                    rule,
                });
            }
        };
        let v = match *e {
            Expression::Literal(_)
            | Expression::Constant(_)
            | Expression::Override(_)
            | Expression::ZeroValue(_) => Abs::default(),
            Expression::Compose { ty, ref components } => {
                if matches!(types[ty].inner, TypeInner::Struct { .. }) {
                    Abs {
                        bits: 0,
                        fields: components
                            .iter()
                            .enumerate()
                            .map(|(i, &c)| (i as u32, value(vals, c)))
                            .collect(),
                    }
                } else {
                    Abs::of(components.iter().fold(0, |b, &c| b | bits(c)))
                }
            }
            Expression::Access { base, .. } => match &vals[base.index()] {
                Val::Pointer(root, path) => return pointer(root, path, None),
                Val::Value(v) => Abs::of(v.flat()),
            },
            Expression::AccessIndex { base, index } => {
                let field = match *inner(base) {
                    TypeInner::Pointer { base: t, .. } => {
                        matches!(types[t].inner, TypeInner::Struct { .. })
                    }
                    TypeInner::Struct { .. } => true,
                    _ => false,
                };
                match &vals[base.index()] {
                    Val::Pointer(root, path) => return pointer(root, path, field.then_some(index)),
                    Val::Value(v) if field => v.field(index),
                    Val::Value(v) => Abs::of(v.flat()),
                }
            }
            Expression::Splat { value: x, .. } | Expression::Swizzle { vector: x, .. } => {
                Abs::of(bits(x))
            }
            Expression::FunctionArgument(i) => match id {
                FnId::Module(fh) => {
                    if matches!(
                        types[f.arguments[i as usize].ty].inner,
                        TypeInner::Pointer { .. }
                    ) {
                        return Val::Pointer(Root::Arg(i), Vec::new());
                    }
                    self.args.get(&(fh, i)).cloned().unwrap_or_default()
                }
                FnId::Entry(_) => Abs::of(RUNTIME),
            },
            Expression::GlobalVariable(_) => return Val::Pointer(Root::Global, Vec::new()),
            Expression::LocalVariable(l) => return Val::Pointer(Root::Local(l), Vec::new()),
            Expression::Load { pointer: p } => match &vals[p.index()] {
                Val::Pointer(root, path) => self.load(id, root, path),
                Val::Value(_) => Abs::of(RUNTIME),
            },
            Expression::Unary { expr, .. } => value(vals, expr),
            Expression::Binary { op, left, right } => {
                let (l, r) = (bits(left), bits(right));
                let float = is_float(left) || is_float(right);
                let rt = (l | r) & RUNTIME;
                match op {
                    Op::Add | Op::Subtract if float => {
                        if (l | r) & PRODUCT != 0 {
                            flag("a product feeds this sum: a GPU may fuse them into one rounding");
                        }
                        if (l | r) & SUM != 0 {
                            flag("a sum feeds this sum: a GPU may regroup them");
                        }
                        if (l | r) & HINT != 0 {
                            flag("a hint's value is used in arithmetic");
                        }
                        Abs::of(SUM | rt)
                    }
                    Op::Multiply if float => {
                        if (l | r) & PRODUCT != 0 {
                            flag("a product feeds this product: a GPU may regroup them");
                        }
                        if (l | r) & HINT != 0 {
                            flag("a hint's value is used in arithmetic");
                        }
                        Abs::of(PRODUCT | rt)
                    }
                    Op::Divide | Op::Modulo if float => {
                        flag("an f32 division: a GPU may be off by 2.5 ulps (use div_rn)");
                        Abs::of(rt)
                    }
                    Op::Equal
                    | Op::NotEqual
                    | Op::Less
                    | Op::LessEqual
                    | Op::Greater
                    | Op::GreaterEqual => Abs::of(rt),
                    // Integer and boolean operations: what an operand may be the result of
                    // passes through only while the other operand is known when compiling.
                    _ => {
                        let keep = |own: u8, other: u8| {
                            if other & RUNTIME != 0 {
                                own & RUNTIME
                            } else {
                                own
                            }
                        };
                        Abs::of(keep(l, r) | keep(r, l))
                    }
                }
            }
            Expression::Select { accept, reject, .. } => {
                let mut v = value(vals, accept);
                v.join(&value(vals, reject));
                v
            }
            Expression::Math {
                fun,
                arg,
                arg1,
                arg2,
                arg3,
            } => {
                let args: Vec<Handle<Expression>> = [Some(arg), arg1, arg2, arg3]
                    .into_iter()
                    .flatten()
                    .collect();
                let all = args.iter().fold(0, |b, &a| b | bits(a));
                let exact = matches!(
                    fun,
                    MathFunction::Abs
                        | MathFunction::Min
                        | MathFunction::Max
                        | MathFunction::Clamp
                        | MathFunction::Saturate
                        | MathFunction::Sign
                        | MathFunction::Floor
                        | MathFunction::Ceil
                        | MathFunction::Trunc
                        | MathFunction::Round
                );
                if is_float(arg) && !exact {
                    flag("an f32 builtin without an exact result (a GPU may round it otherwise)");
                    Abs::of(runtime(&args))
                } else {
                    Abs::of(all)
                }
            }
            Expression::As {
                expr,
                kind,
                convert,
            } => match convert {
                // A bitcast changes nothing a compiler can see.
                None => value(vals, expr),
                // A conversion is exact and ends what the value was the result of.
                Some(_) if kind == ScalarKind::Float => Abs::of(bits(expr) & RUNTIME),
                Some(_) => Abs::of(bits(expr) & RUNTIME),
            },
            Expression::CallResult(g) => match self.exempt.get(&g) {
                Some(true)
                    if module.functions[g].result.as_ref().is_some_and(|r| {
                        types[r.ty]
                            .inner
                            .scalar()
                            .is_some_and(|s| s.kind == ScalarKind::Float)
                    }) =>
                {
                    Abs::of(HINT | RUNTIME)
                }
                Some(_) => Abs::of(RUNTIME),
                None => self.returns.get(&g).cloned().unwrap_or_default(),
            },
            _ => Abs::of(RUNTIME),
        };
        Val::Value(v)
    }

    fn block(&mut self, id: FnId, block: &Block, vals: &[Val]) {
        for s in block.iter() {
            match s {
                Statement::Block(b) => self.block(id, b, vals),
                Statement::If { accept, reject, .. } => {
                    self.block(id, accept, vals);
                    self.block(id, reject, vals);
                }
                Statement::Switch { cases, .. } => {
                    for c in cases {
                        self.block(id, &c.body, vals);
                    }
                }
                Statement::Loop {
                    body, continuing, ..
                } => {
                    self.block(id, body, vals);
                    self.block(id, continuing, vals);
                }
                Statement::Store { pointer, value: v } => {
                    if let Val::Pointer(root, path) = &vals[pointer.index()] {
                        let v = value(vals, *v);
                        self.store(id, root, path, &v);
                    }
                }
                Statement::Call {
                    function: g,
                    arguments,
                    ..
                } => {
                    if self.exempt.contains_key(g) {
                        continue;
                    }
                    for (i, &a) in arguments.iter().enumerate() {
                        let key = (*g, i as u32);
                        match &vals[a.index()] {
                            Val::Pointer(root, path) => {
                                // The callee may read what the pointer points to and store to it.
                                let now = self.load(id, root, path);
                                self.changed |= self.args.entry(key).or_default().join(&now);
                                let back = self.args[&key].clone();
                                self.store(id, root, path, &back);
                            }
                            Val::Value(v) => {
                                self.changed |= self.args.entry(key).or_default().join(v);
                            }
                        }
                    }
                }
                Statement::Return { value: Some(v) } => {
                    if let FnId::Module(fh) = id {
                        let v = value(vals, *v);
                        self.changed |= self.returns.entry(fh).or_default().join(&v);
                    }
                }
                _ => {}
            }
        }
    }

    fn load(&self, id: FnId, root: &Root, path: &[Option<u32>]) -> Abs {
        match root {
            Root::Global => Abs::of(RUNTIME),
            Root::Local(l) => self
                .locals
                .get(&(id, *l))
                .cloned()
                .unwrap_or_default()
                .at(path),
            Root::Arg(i) => match id {
                FnId::Module(fh) => self
                    .args
                    .get(&(fh, *i))
                    .cloned()
                    .unwrap_or_default()
                    .at(path),
                FnId::Entry(_) => Abs::of(RUNTIME),
            },
        }
    }

    fn store(&mut self, id: FnId, root: &Root, path: &[Option<u32>], v: &Abs) {
        let slot = match (root, id) {
            (Root::Local(l), _) => self.locals.entry((id, *l)).or_default(),
            (Root::Arg(i), FnId::Module(fh)) => self.args.entry((fh, *i)).or_default(),
            _ => return,
        };
        self.changed |= slot.join_at(path, v);
    }
}

fn value(vals: &[Val], h: Handle<Expression>) -> Abs {
    match &vals[h.index()] {
        Val::Value(v) => v.clone(),
        Val::Pointer(..) => Abs::of(RUNTIME),
    }
}

fn pointer(root: &Root, path: &[Option<u32>], step: Option<u32>) -> Val {
    let mut path = path.to_vec();
    path.push(step);
    Val::Pointer(root.clone(), path)
}
