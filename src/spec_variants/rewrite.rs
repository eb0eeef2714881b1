//! Rewriting a parsed shader so that it takes a [`Freedom`]: each operation the freedom applies
//! to becomes the result of a call to a wrapper (generated here, in WGSL) that evaluates it the
//! way the freedom allows.

use std::fmt::Write as _;

use naga::{
    BinaryOperator as Op, Block, Expression, Function, Handle, MathFunction, Module, Range,
    ScalarKind, Span, Statement, TypeInner, VectorSize,
};

use super::{Freedom, PREFIX, VariantError};

/// The f32 types a wrapper exists for: suffix, component count.
const TYPES: [(&str, u32); 4] = [("f32", 1), ("v2", 2), ("v3", 3), ("v4", 4)];

/// The WGSL of the wrappers `freedom` needs: per operation `name`, one function per type
/// (`spec_variant_<name>_<type>`), applying a scalar body to each component.
pub(super) fn wrappers(freedom: Freedom) -> String {
    let ops: Vec<(&str, usize, String)> = match freedom {
        Freedom::InexactUp(k) | Freedom::InexactDown(k) => {
            let up = matches!(freedom, Freedom::InexactUp(_));
            let nudge = |e: &str| format!("spec_variant_nudge({e}, {k}u, {up})");
            vec![
                ("div", 2, nudge("a / b")),
                ("sqrt", 1, nudge("sqrt(a)")),
                ("isqrt", 1, nudge("inverseSqrt(a)")),
            ]
        }
        Freedom::Fused => vec![
            ("fma", 3, "spec_variant_fma(a, b, c)".into()),
            ("fms", 3, "spec_variant_fma(a, b, -c)".into()),
            ("fsm", 3, "spec_variant_fma(-a, b, c)".into()),
        ],
        Freedom::Reassociated => REGROUPINGS
            .iter()
            .map(|&(name, body)| (name, 3, body.to_owned()))
            .collect(),
        Freedom::FlushSubnormals => ["add", "sub", "mul", "div"]
            .into_iter()
            .zip(["+", "-", "*", "/"])
            .map(|(name, op)| (name, 2, format!("spec_variant_ftz(a {op} b)")))
            .collect(),
    };
    let mut out = String::new();
    for (name, arity, body) in ops {
        for (suffix, n) in TYPES {
            let ty = if n == 1 {
                "f32".to_owned()
            } else {
                format!("vec{n}<f32>")
            };
            let params: Vec<String> = ["a", "b", "c"][..arity]
                .iter()
                .map(|p| format!("{p}: {ty}"))
                .collect();
            let value = if n == 1 {
                body.clone()
            } else {
                let parts: Vec<String> = ["x", "y", "z", "w"][..n as usize]
                    .iter()
                    .map(|c| {
                        let mut e = body.clone();
                        for p in ["a", "b", "c"] {
                            e = replace_word(&e, p, &format!("{p}.{c}"));
                        }
                        e
                    })
                    .collect();
                format!("{ty}({})", parts.join(", "))
            };
            let _ = writeln!(
                out,
                "fn {PREFIX}{name}_{suffix}({}) -> {ty} {{ return {value}; }}",
                params.join(", ")
            );
        }
    }
    out
}

/// The regroupings of [`Freedom::Reassociated`]: for an outer `(a o1 b) o2 c` the wrapper
/// `l<o1><o2>` computes `a (o1) (b (o1 o2) c)`, for `a o2 (b o1 c)` the wrapper `r<o2><o1>`
/// computes `(a o2 b) (o2 o1) c`; `ml` and `mr` do the same for products.
const REGROUPINGS: [(&str, &str); 10] = [
    ("lpp", "a + (b + c)"),
    ("lps", "a + (b - c)"),
    ("lsp", "a - (b - c)"),
    ("lss", "a - (b + c)"),
    ("rpp", "(a + b) + c"),
    ("rps", "(a + b) - c"),
    ("rsp", "(a - b) - c"),
    ("rss", "(a - b) + c"),
    ("ml", "a * (b * c)"),
    ("mr", "(a * b) * c"),
];

/// `text` with each whole identifier `word` replaced by `with`.
fn replace_word(text: &str, word: &str, with: &str) -> String {
    let mut out = String::new();
    let mut ident = String::new();
    let flush = |ident: &mut String, out: &mut String| {
        out.push_str(if ident == word { with } else { ident });
        ident.clear();
    };
    for ch in text.chars() {
        if ch.is_alphanumeric() || ch == '_' {
            ident.push(ch);
        } else {
            flush(&mut ident, &mut out);
            out.push(ch);
        }
    }
    flush(&mut ident, &mut out);
    out
}

/// One operation to rewrite: `expr` becomes the result of `spec_variant_<op>_<type>(args)`,
/// each argument splatted to the result's vector size where it is a scalar.
struct Site {
    expr: Handle<Expression>,
    op: &'static str,
    suffix: &'static str,
    args: Vec<(Handle<Expression>, Option<VectorSize>)>,
}

/// Rewrites every function of `module` (the wrappers excepted) for `freedom`; returns how many
/// operations were rewritten.
pub(super) fn apply(
    module: &mut Module,
    info: &naga::valid::ModuleInfo,
    freedom: Freedom,
) -> Result<usize, VariantError> {
    let mut plans = Vec::new();
    for (h, f) in module.functions.iter() {
        if !f.name.as_deref().is_some_and(|n| n.starts_with(PREFIX)) {
            plans.push((Some(h), find_sites(module, f, &info[h], freedom)));
        }
    }
    for (i, ep) in module.entry_points.iter().enumerate() {
        plans.push((
            None,
            find_sites(module, &ep.function, info.get_entry_point(i), freedom),
        ));
    }
    let wrapper = |module: &Module, name: &str| -> Result<Handle<Function>, VariantError> {
        module
            .functions
            .fetch_if(|f| f.name.as_deref() == Some(name))
            .ok_or_else(|| VariantError::Rewrite(format!("no wrapper {name}")))
    };
    let mut count = 0;
    let mut entry = 0;
    for (handle, sites) in plans {
        let resolved: Vec<(Site, Handle<Function>)> = sites
            .into_iter()
            .map(|s| {
                let name = format!("{PREFIX}{}_{}", s.op, s.suffix);
                wrapper(module, &name).map(|w| (s, w))
            })
            .collect::<Result<_, _>>()?;
        let function = match handle {
            Some(h) => &mut module.functions[h],
            None => {
                entry += 1;
                &mut module.entry_points[entry - 1].function
            }
        };
        for (site, w) in resolved {
            if rewrite_site(function, &site, w) {
                count += 1;
            }
        }
    }
    Ok(count)
}

/// The f32 type suffix of `inner` (`f32`, `v2`, `v3`, `v4`) and its vector size.
fn float_type(inner: &TypeInner) -> Option<(&'static str, Option<VectorSize>)> {
    match *inner {
        TypeInner::Scalar(s) if s.kind == ScalarKind::Float && s.width == 4 => Some(("f32", None)),
        TypeInner::Vector { size, scalar }
            if scalar.kind == ScalarKind::Float && scalar.width == 4 =>
        {
            let suffix = match size {
                VectorSize::Bi => "v2",
                VectorSize::Tri => "v3",
                VectorSize::Quad => "v4",
            };
            Some((suffix, Some(size)))
        }
        _ => None,
    }
}

/// The operations of `f` that `freedom` rewrites, judged on `f` as parsed.
fn find_sites(
    module: &Module,
    f: &Function,
    info: &naga::valid::FunctionInfo,
    freedom: Freedom,
) -> Vec<Site> {
    let ty = |h: Handle<Expression>| float_type(info[h].ty.inner_with(&module.types));
    // A binary f32 operation (not on matrices) as (op, left, right).
    let binary = |h: Handle<Expression>| match f.expressions[h] {
        Expression::Binary { op, left, right }
            if ty(h).is_some() && ty(left).is_some() && ty(right).is_some() =>
        {
            Some((op, left, right))
        }
        _ => None,
    };
    let is_sum = |op: Op| matches!(op, Op::Add | Op::Subtract);
    let mut sites = Vec::new();
    for (h, e) in f.expressions.iter() {
        let Some((suffix, size)) = ty(h) else {
            continue;
        };
        let arg = |a: Handle<Expression>| {
            (
                a,
                if ty(a).is_some_and(|t| t.1.is_none()) {
                    size
                } else {
                    None
                },
            )
        };
        let site = |op: &'static str, args: &[Handle<Expression>]| Site {
            expr: h,
            op,
            suffix,
            args: args.iter().map(|&a| arg(a)).collect(),
        };
        let found = match (freedom, e) {
            (Freedom::InexactUp(_) | Freedom::InexactDown(_), _) => match (binary(h), e) {
                (Some((Op::Divide, l, r)), _) => Some(site("div", &[l, r])),
                (
                    _,
                    &Expression::Math {
                        fun: MathFunction::Sqrt,
                        arg: a,
                        ..
                    },
                ) => Some(site("sqrt", &[a])),
                (
                    _,
                    &Expression::Math {
                        fun: MathFunction::InverseSqrt,
                        arg: a,
                        ..
                    },
                ) => Some(site("isqrt", &[a])),
                _ => None,
            },
            (Freedom::FlushSubnormals, _) => match binary(h) {
                Some((op, l, r)) => {
                    let name = match op {
                        Op::Add => Some("add"),
                        Op::Subtract => Some("sub"),
                        Op::Multiply => Some("mul"),
                        Op::Divide => Some("div"),
                        _ => None,
                    };
                    name.map(|n| site(n, &[l, r]))
                }
                None => None,
            },
            (Freedom::Fused, _) => match binary(h) {
                Some((op, l, r)) if is_sum(op) => match (binary(l), binary(r)) {
                    (Some((Op::Multiply, a, b)), _) => {
                        Some(site(if op == Op::Add { "fma" } else { "fms" }, &[a, b, r]))
                    }
                    (_, Some((Op::Multiply, a, b))) => {
                        Some(site(if op == Op::Add { "fma" } else { "fsm" }, &[a, b, l]))
                    }
                    _ => None,
                },
                _ => None,
            },
            (Freedom::Reassociated, _) => match binary(h) {
                Some((outer, l, r)) if is_sum(outer) => {
                    let sign = |op: Op| if op == Op::Add { 'p' } else { 's' };
                    match (binary(l), binary(r)) {
                        (Some((inner, a, b)), _) if is_sum(inner) => {
                            let name = regrouping('l', sign(inner), sign(outer));
                            Some(site(name, &[a, b, r]))
                        }
                        (_, Some((inner, b, c))) if is_sum(inner) => {
                            let name = regrouping('r', sign(outer), sign(inner));
                            Some(site(name, &[l, b, c]))
                        }
                        _ => None,
                    }
                }
                Some((Op::Multiply, l, r)) => match (binary(l), binary(r)) {
                    (Some((Op::Multiply, a, b)), _) => Some(site("ml", &[a, b, r])),
                    (_, Some((Op::Multiply, b, c))) => Some(site("mr", &[l, b, c])),
                    _ => None,
                },
                _ => None,
            },
        };
        sites.extend(found);
    }
    sites
}

/// The wrapper name of a regrouping (see [`REGROUPINGS`]).
fn regrouping(side: char, first: char, second: char) -> &'static str {
    REGROUPINGS
        .iter()
        .map(|&(name, _)| name)
        .find(|name| name.as_bytes() == [side as u8, first as u8, second as u8])
        .unwrap_or("lpp")
}

/// Makes `site.expr` the result of a call to `wrapper`, placed where the expression was
/// emitted; `false` (and nothing changed) where it is not emitted in `f`'s body.
fn rewrite_site(f: &mut Function, site: &Site, wrapper: Handle<Function>) -> bool {
    if !emitted(&f.body, site.expr) {
        return false;
    }
    let before = f.expressions.len();
    let args: Vec<Handle<Expression>> = site
        .args
        .iter()
        .map(|&(a, splat)| match splat {
            Some(size) => f
                .expressions
                .append(Expression::Splat { size, value: a }, Span::default()),
            None => a,
        })
        .collect();
    let mut statements = Vec::new();
    let splats = f.expressions.range_from(before);
    if splats.first_and_last().is_some() {
        statements.push(Statement::Emit(splats));
    }
    statements.push(Statement::Call {
        function: wrapper,
        arguments: args,
        result: Some(site.expr),
    });
    f.expressions[site.expr] = Expression::CallResult(wrapper);
    let arena = &f.expressions;
    splice_call(&mut f.body, site.expr, statements, arena)
}

/// Whether `h` lies in an `Emit` of `block` or a block nested in it.
fn emitted(block: &Block, h: Handle<Expression>) -> bool {
    block.iter().any(|s| match s {
        Statement::Emit(range) => contains(range, h),
        Statement::Block(b) => emitted(b, h),
        Statement::If { accept, reject, .. } => emitted(accept, h) || emitted(reject, h),
        Statement::Switch { cases, .. } => cases.iter().any(|c| emitted(&c.body, h)),
        Statement::Loop {
            body, continuing, ..
        } => emitted(body, h) || emitted(continuing, h),
        _ => false,
    })
}

fn contains(range: &Range<Expression>, h: Handle<Expression>) -> bool {
    range.index_range().contains(&(h.index() as u32))
}

/// Replaces the `Emit` holding `h` in `block` (or a nested block) with: the emit of what came
/// before `h`, `statements`, and the emit of what came after.
fn splice_call(
    block: &mut Block,
    h: Handle<Expression>,
    statements: Vec<Statement>,
    arena: &naga::Arena<Expression>,
) -> bool {
    let mut statements = Some(statements);
    for i in 0..block.len() {
        let nested: Vec<&mut Block> = match &mut block[i] {
            Statement::Emit(range) if contains(range, h) => {
                let r = range.index_range();
                let at = h.index() as u32;
                let mut replacement = Block::new();
                if r.start < at {
                    replacement.push(
                        Statement::Emit(Range::from_index_range(r.start..at, arena)),
                        Span::default(),
                    );
                }
                for s in statements.take().into_iter().flatten() {
                    replacement.push(s, Span::default());
                }
                if at + 1 < r.end {
                    replacement.push(
                        Statement::Emit(Range::from_index_range(at + 1..r.end, arena)),
                        Span::default(),
                    );
                }
                block.splice(i..=i, replacement);
                return true;
            }
            Statement::Block(b) => vec![b],
            Statement::If { accept, reject, .. } => vec![accept, reject],
            Statement::Switch { cases, .. } => cases.iter_mut().map(|c| &mut c.body).collect(),
            Statement::Loop {
                body, continuing, ..
            } => vec![body, continuing],
            _ => Vec::new(),
        };
        for b in nested {
            if emitted(b, h) {
                return splice_call(b, h, statements.take().unwrap_or_default(), arena);
            }
        }
    }
    false
}
