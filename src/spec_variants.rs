//! Testing the parity contract against the WGSL spec's floating-point latitude (cargo feature
//! `spec-variants`).
//!
//! The GPU gives the CPU reference's answers bit for bit on every conforming GPU, assuming
//! only that f32 `+ - *` round to nearest even (see the crate docs). The WGSL spec allows an
//! implementation much more: divisions and roots a few ulps off, subnormals flushed to zero,
//! `a * b + c` fused into one rounding, sums and products regrouped. Mesa's lavapipe, on which
//! CI runs, takes none of these freedoms, so passing there proves nothing about them. This
//! module makes them testable on lavapipe:
//!
//! - [`variant`] rewrites the shader (through naga's IR) into one that takes a [`Freedom`]
//!   everywhere the spec allows it, for `GpuRaycaster::with_shader_blocking` (a test hook of the `test-hooks` feature).
//!   The parity suite must pass against every variant (`tests/spec_variants.rs`).
//! - [`check_exact`] proves the shader leaves those freedoms nothing to change: no f32 division
//!   or root, and no product feeding a sum, sum feeding a sum or product feeding a product
//!   without a `pin` between them, followed through variables, struct fields and calls.
//!
//! A variant is only as thorough as the expressions it sees: it rewrites a pattern within one
//! function's expressions (`let` bindings included), while a compiler may also find one across
//! variables and calls after inlining. [`check_exact`] covers those.

use std::fmt;

mod lint;
mod rewrite;

pub use lint::{Violation, check_exact};

/// A freedom the WGSL spec gives an implementation's f32 arithmetic (spec sections "Floating
/// Point Accuracy", "Reassociation and Fusion", "Differences from IEEE-754").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Freedom {
    /// Every f32 division, `sqrt` and `inverseSqrt` result moved this many ulps towards
    /// +infinity (the spec allows 2.5 ulps for a division and more for roots).
    InexactUp(u32),
    /// As [`Freedom::InexactUp`], towards -infinity.
    InexactDown(u32),
    /// Every `a * b + c`, `c + a * b`, `a * b - c` and `c - a * b` evaluated with one rounding
    /// (computed exactly in integer arithmetic, so also on a device whose `fma` is unfused).
    Fused,
    /// Every sum or difference of a sum or difference, and every product of a product,
    /// regrouped: `(a + b) + c` as `a + (b + c)`, `a - (b - c)` as `(a - b) + c`, and so on.
    Reassociated,
    /// Every subnormal f32 result of `+ - * /` flushed to zero.
    FlushSubnormals,
}

impl Freedom {
    /// Every freedom the parity suite is run against: divisions and roots one and three ulps
    /// off either way, fusion, reassociation and flushing.
    pub const ALL: [Freedom; 7] = [
        Freedom::InexactUp(1),
        Freedom::InexactDown(1),
        Freedom::InexactUp(3),
        Freedom::InexactDown(3),
        Freedom::Fused,
        Freedom::Reassociated,
        Freedom::FlushSubnormals,
    ];

    /// A short name, such as `inexact-up-1` or `fused` (what `depth_image --shader-variant`
    /// takes).
    #[must_use]
    pub fn name(self) -> String {
        match self {
            Freedom::InexactUp(k) => format!("inexact-up-{k}"),
            Freedom::InexactDown(k) => format!("inexact-down-{k}"),
            Freedom::Fused => "fused".into(),
            Freedom::Reassociated => "reassociated".into(),
            Freedom::FlushSubnormals => "flush-subnormals".into(),
        }
    }

    /// The freedom [`Freedom::name`] names, if any.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .or_else(|| {
                let (dir, k) = name.rsplit_once('-')?;
                let k = k.parse().ok()?;
                match dir {
                    "inexact-up" => Some(Freedom::InexactUp(k)),
                    "inexact-down" => Some(Freedom::InexactDown(k)),
                    _ => None,
                }
            })
    }
}

impl fmt::Display for Freedom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A shader rewritten to take one [`Freedom`].
#[derive(Clone, Debug)]
pub struct Variant {
    /// The freedom taken.
    pub freedom: Freedom,
    /// The rewritten WGSL (naga's output).
    pub source: String,
    /// How many operations were rewritten: 0 means the shader has nothing this freedom can
    /// change (within one function's expressions).
    pub sites: usize,
}

/// Why a shader could not be read or rewritten.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VariantError {
    /// The source does not parse or validate; the message carries naga's report.
    #[error("the shader does not parse or validate:\n{0}")]
    Invalid(String),
    /// The rewritten module does not validate or cannot be written as WGSL (a bug).
    #[error("the rewritten shader is invalid (a bug in spec_variants): {0}")]
    Rewrite(String),
}

/// The wrappers each rewritten operation calls, followed by the shared integer helpers.
const PRELUDE: &str = include_str!("spec_variants/prelude.wgsl");

/// Names of the functions the variant machinery adds; the rewrite leaves them alone.
const PREFIX: &str = "spec_variant_";

/// Parses and validates WGSL with naga.
fn parse(source: &str) -> Result<(naga::Module, naga::valid::ModuleInfo), VariantError> {
    let module = naga::front::wgsl::parse_str(source)
        .map_err(|e| VariantError::Invalid(e.emit_to_string(source)))?;
    let info = validator()
        .validate(&module)
        .map_err(|e| VariantError::Invalid(e.emit_to_string(source)))?;
    Ok((module, info))
}

fn validator() -> naga::valid::Validator {
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::empty(),
    )
}

/// `source` (the whole shader, such as [`crate::gpu::SHADER_SOURCE`]) rewritten to take
/// `freedom` at every operation where the spec allows it.
///
/// # Errors
/// [`VariantError::Invalid`] when `source` is not valid WGSL (it must define `mul_wide`, as
/// `shaders/exact.wgsl` does); [`VariantError::Rewrite`] for a rewrite naga rejects (a bug).
pub fn variant(source: &str, freedom: Freedom) -> Result<Variant, VariantError> {
    // The wrappers first: naga keeps a function after the functions it calls, and the rewrite
    // makes the shader's functions call them.
    let full = format!("{}\n{PRELUDE}\n{source}", rewrite::wrappers(freedom));
    let (mut module, info) = parse(&full)?;
    let sites = rewrite::apply(&mut module, &info, freedom)?;
    let info = validator()
        .validate(&module)
        .map_err(|e| VariantError::Rewrite(format!("{e:?}")))?;
    let source =
        naga::back::wgsl::write_string(&module, &info, naga::back::wgsl::WriterFlags::empty())
            .map_err(|e| VariantError::Rewrite(e.to_string()))?;
    Ok(Variant {
        freedom,
        source,
        sites,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::{SHADER_SOURCE, shader_place};

    /// The shader without its `pin` calls: every place that relies on them.
    fn unpinned() -> String {
        let source = SHADER_SOURCE
            .replace("fn pin(", "fn unused_p(")
            .replace("fn pin3(", "fn unused_p3(");
        assert!(source.contains(" pin(") && source.contains(" pin3("));
        source.replace("pin3(", "(").replace("pin(", "(")
    }

    #[test]
    fn the_shader_is_exact_under_the_specs_latitude() {
        let found = check_exact(SHADER_SOURCE).expect("the shader parses");
        let lines: Vec<String> = found
            .iter()
            .map(|v| format!("{} ({v})", shader_place(v.line)))
            .collect();
        assert!(
            found.is_empty(),
            "operations a GPU may evaluate otherwise:\n{}",
            lines.join("\n")
        );
    }

    /// Without `pin`, the check finds the fusable and regroupable patterns of the camera's
    /// rays, the UV and the near-tie test: the check can fail, and `pin` is what passes it.
    #[test]
    fn the_check_finds_what_pin_prevents() {
        let found = check_exact(&unpinned()).expect("the shader parses");
        let functions: std::collections::BTreeSet<&str> =
            found.iter().map(|v| v.function.as_str()).collect();
        // `prepare_axis` stores `1 - sub` unpinned as the ray's `b`: `crossing_t` adds it up.
        for f in [
            "camera_dir",
            "crossing_t",
            "face_frac",
            "tied_axes",
            "tie_scaled",
        ] {
            assert!(functions.contains(f), "nothing found in {f}: {found:#?}");
        }
        assert!(found.iter().any(|v| v.rule.contains("fuse")), "{found:#?}");
        assert!(
            found.iter().any(|v| v.rule.contains("regroup")),
            "{found:#?}"
        );
    }

    /// The check follows a value through calls, struct fields, variables and pointers, and
    /// lets it through an integer operation only with a value unknown when compiling.
    #[test]
    fn the_check_follows_values_through_calls_fields_and_variables() {
        let cases: [(&str, &str, bool); 9] = [
            ("product returned, then added", "fn p(a: f32, b: f32) -> f32 { return a * b; }
             fn f(a: f32, b: f32, c: f32) -> f32 { return p(a, b) + c; }", true),
            ("product in a struct field, added later", "struct S { x: f32, y: f32 }
             fn f(a: f32, b: f32, c: f32) -> f32 { var s: S; s.x = a * b; s.y = c; return s.y + s.x; }", true),
            ("product in another field than the one added", "struct S { x: f32, y: f32 }
             fn f(a: f32, b: f32, c: f32) -> f32 { var s: S; s.x = a * b; s.y = c; return s.y + c; }", false),
            ("sum through a pointer", "fn g(p: ptr<function, f32>, a: f32) { *p = a + a; }
             fn f(a: f32) -> f32 { var v = 0.0; g(&v, a); return v + a; }", true),
            ("product of a product argument", "fn g(a: f32, b: f32) -> f32 { return a * b; }
             fn f(a: f32) -> f32 { return g(a * a, a); }", true),
            ("a division", "fn f(a: f32, b: f32) -> f32 { return a / b; }", true),
            ("a hint in arithmetic", "fn d_hint(a: f32) -> f32 { return sqrt(a); }
             fn f(a: f32) -> f32 { return d_hint(a) + 1.0; }", true),
            ("a barrier of a runtime zero", "@group(0) @binding(0) var<uniform> z: u32;
             fn f(a: f32, b: f32, c: f32) -> f32 { return bitcast<f32>(bitcast<u32>(a * b) | z) + c; }", false),
            ("no barrier: a constant zero", "fn f(a: f32, b: f32, c: f32) -> f32 {
             return bitcast<f32>(bitcast<u32>(a * b) | 0u) + c; }", true),
        ];
        for (what, source, expected) in cases {
            let found = check_exact(source).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(!found.is_empty(), expected, "{what}: {found:#?}");
        }
    }

    #[test]
    fn every_variant_validates_and_takes_its_freedom_where_there_is_one() {
        for freedom in Freedom::ALL {
            let v = variant(SHADER_SOURCE, freedom).unwrap_or_else(|e| panic!("{freedom}: {e}"));
            // The exact shader leaves each freedom only the hints (`div_hint`, `sqrt_hint` and
            // the division and regroupable sum of `crossings_hint`); flushing takes every f32
            // result of + - * / (dozens).
            match freedom {
                Freedom::InexactUp(_) | Freedom::InexactDown(_) => assert_eq!(v.sites, 3),
                Freedom::Fused => assert_eq!(v.sites, 0),
                Freedom::Reassociated => assert_eq!(v.sites, 2),
                Freedom::FlushSubnormals => assert!(v.sites > 40, "{} sites", v.sites),
            }
            assert_eq!(Freedom::from_name(&freedom.name()), Some(freedom));
        }
        // Without `pin`, products fuse into sums: four in `camera_dir` (`sx`, `sy`, and both
        // sums of `v`), two in `face_frac`, one in `recip_near`, one in `box_plane_t` and
        // twelve in the sensors' `rotation_matrix` and `sensor_dir`.
        let unpinned = variant(&unpinned(), Freedom::Fused).expect("a variant");
        assert_eq!(unpinned.sites, 20);
    }

    #[test]
    fn a_variant_rewrites_every_pattern_it_names() {
        let source = "fn mul_wide(a: u32, b: u32) -> vec2<u32> { return vec2<u32>(a, b); }
            fn f(a: f32, b: vec3<f32>, c: vec3<f32>) -> vec3<f32> {
                let x = (b * a + c) - b * c;
                let y = ((b + c) - b) + c;
                let z = (b * a) * a;
                return x / y + sqrt(z);
            }";
        let sites = |f| variant(source, f).expect("a variant").sites;
        // `b * a + c`, then the difference with `b * c`.
        assert_eq!(sites(Freedom::Fused), 2);
        assert_eq!(sites(Freedom::Reassociated), 4);
        assert_eq!(sites(Freedom::InexactUp(1)), 2);
        assert_eq!(sites(Freedom::FlushSubnormals), 11);
    }
}
