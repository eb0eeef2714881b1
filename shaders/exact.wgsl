// voxcast shader, exact arithmetic: f32 results that every conforming GPU computes alike,
// for every stage after this one.
//
// What the shader may assume of a GPU is only what the WGSL spec guarantees, plus f32 `+ - *`
// rounding to nearest even. The spec lets an implementation divide and take roots with an
// error of several ulps, flush subnormals, fuse `a * b + c` into one rounding and
// reassociate sums and products. So every f32 value that can reach an answer (outcome, voxel,
// face, id, distance; UV too) is computed by these rules, which `spec_variants::check_exact`
// (src/spec_variants.rs) checks on the parsed shader:
// - no f32 `/`, `%`, `sqrt`, `inverseSqrt`, `fma`, `pow`, `exp`, `dot`, `length`, ...: only
//   `+ - *`, comparisons, `abs`, `min`, `max`, `clamp`, `select` and conversions from integers
//   below 2^24 (exact). Division and square root are `div_rn` and `sqrt_rn` below;
// - no product feeds a sum (it could be fused) and no sum feeds a sum, no product a product
//   (they could be reassociated) unless it passes `pin` first;
// - no value is subnormal (the host keeps inputs where that holds, see `shader_camera`).
// Functions named `*_hint` are exempt: their results only seed exact searches. Functions
// named `*_rn` are the trusted primitives below, tested against the CPU's IEEE operations.

// `x` itself, behind an integer operation with a value the compiler cannot know when it
// compiles the pipeline (`Params.zero`, 0 at run time): no fusion or reassociation can see
// through it.
fn pin(x: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(x) | opaque_zero());
}

fn pin3(x: vec3<f32>) -> vec3<f32> {
    return bitcast<vec3<f32>>(bitcast<vec3<u32>>(x) | vec3<u32>(opaque_zero()));
}

// The significand of a positive normal f32's bits: an integer in [2^23, 2^24).
fn significand(bits: u32) -> u32 {
    return (bits & 0x007FFFFFu) | 0x00800000u;
}

// The exponent e of a positive normal f32's bits with value = significand * 2^e.
fn exponent(bits: u32) -> i32 {
    return i32(bits >> 23u) - 150;
}

// a * b as a 64-bit (hi, lo) pair, for any u32 operands.
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xFFFFu;
    let a1 = a >> 16u;
    let b0 = b & 0xFFFFu;
    let b1 = b >> 16u;
    let lo = a0 * b0;
    let m1 = a1 * b0;
    let mid = m1 + a0 * b1;
    let mid_carry = select(0u, 0x10000u, mid < m1);
    let lo2 = lo + (mid << 16u);
    let hi = a1 * b1 + (mid >> 16u) + mid_carry + select(0u, 1u, lo2 < lo);
    return vec2<u32>(hi, lo2);
}

// a <= b for 64-bit (hi, lo) pairs.
fn le_wide(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.x < b.x || (a.x == b.x && a.y <= b.y);
}

// The midpoint below candidate significand q, scaled as the exact value `scaled` is (see
// div_rn and sqrt_rn): (2q - 1) * my for a quotient, (2q - 1)^2 for a root.
fn midpoint_below(q: u32, my: u32, root: bool) -> vec2<u32> {
    let m = 2u * q - 1u;
    return mul_wide(m, select(my, m, root));
}

// How far the midpoint below q + 1 lies above the one below q: 2 * my for a quotient,
// (2q + 1)^2 - (2q - 1)^2 = 8q for a root (below 2^28 either way).
fn midpoint_gap(q: u32, my: u32, root: bool) -> u32 {
    return select(2u * my, 8u * q, root);
}

// a + b and a - b for a 64-bit (hi, lo) pair and a u32 (no result leaves 64 bits here).
fn add_wide(a: vec2<u32>, b: u32) -> vec2<u32> {
    let lo = a.y + b;
    return vec2<u32>(a.x + select(0u, 1u, lo < b), lo);
}

fn sub_wide(a: vec2<u32>, b: u32) -> vec2<u32> {
    return vec2<u32>(a.x - select(0u, 1u, a.y < b), a.y - b);
}

// The significand q in [2^23, 2^24] that rounds the exact value to nearest even, where
// `scaled` is that value with its midpoints scaled as midpoint_below gives them. Starts from
// `guess` (the hardware's result) and checks it exactly, stepping from one midpoint to the
// next by adding their gap; a guess off by more than a few ulps (the spec allows 2.5 for a
// division; more for a root) falls back to bisection. No quotient or root of f32 values lies
// exactly on a midpoint (its odd significand would need more than 24 bits), so no tie needs
// breaking.
fn round_significand(guess: u32, scaled: vec2<u32>, my: u32, root: bool) -> u32 {
    // The answer is the largest q whose midpoint below lies at or below the exact value.
    var q = clamp(guess, 0x800000u, 0x1000000u);
    var below = midpoint_below(q, my, root);
    for (var step = 0u; step < 4u; step += 1u) {
        if (le_wide(below, scaled)) {
            if (q == 0x1000000u) {
                return q;
            }
            let next = add_wide(below, midpoint_gap(q, my, root));
            if (!le_wide(next, scaled)) {
                return q;
            }
            q += 1u;
            below = next;
        } else {
            q -= 1u;
            below = sub_wide(below, midpoint_gap(q, my, root));
        }
    }
    var lo = 0x800000u;
    var hi = 0x1000000u;
    while (lo < hi) {
        let mid = hi - ((hi - lo) >> 1u);
        if (le_wide(midpoint_below(mid, my, root), scaled)) {
            lo = mid;
        } else {
            hi = mid - 1u;
        }
    }
    return lo;
}

// The candidate significand in [2^23, 2^24] that a positive hint gives for a result with
// value q * 2^e (the hint's own significand, moved into that binade when it lies in a
// neighbouring one), or 2^23 for an unusable hint.
fn hint_significand(hint: f32, e: i32) -> u32 {
    let h = bitcast<u32>(hint);
    if (h < 0x00800000u || h >= 0x7F800000u) {
        return 0x800000u;
    }
    let he = exponent(h);
    if (he == e) {
        return significand(h);
    } else if (he == e + 1) {
        return min(significand(h) << 1u, 0x1000000u);
    } else if (he == e - 1) {
        return significand(h) >> 1u;
    }
    return 0x800000u;
}

// The positive normal f32 q * 2^e, q in [2^23, 2^24] (2^24 carries into the exponent).
fn compose(q: u32, e: i32) -> f32 {
    return bitcast<f32>((u32(e + 150) << 23u) + q - 0x800000u);
}

fn div_hint(x: f32, y: f32) -> f32 {
    return x / y;
}

fn sqrt_hint(x: f32) -> f32 {
    return sqrt(x);
}

// x / y rounded to nearest even, as IEEE-754 divides: for positive normal x and y whose
// quotient is normal (the callers' values are). The twin is Rust's `/`.
fn div_rn(x: f32, y: f32) -> f32 {
    return div_from_hint(x, y, div_hint(x, y));
}

fn div_from_hint(x: f32, y: f32, hint: f32) -> f32 {
    let bx = bitcast<u32>(x);
    let by = bitcast<u32>(y);
    var mx = significand(bx);
    let my = significand(by);
    // x / y = (mx / my) * 2^e with mx / my in [1, 2): the result is q * 2^(e - 23).
    var e = exponent(bx) - exponent(by);
    if (mx < my) {
        mx <<= 1u;
        e -= 1;
    }
    // The exact value in units of the result's ulp, mx * 2^23 / my, against midpoints
    // (2q - 1) / 2: compare mx * 2^24 with (2q - 1) * my.
    let scaled = vec2<u32>(mx >> 8u, mx << 24u);
    let q = round_significand(hint_significand(hint, e - 23), scaled, my, false);
    return compose(q, e - 23);
}

// sqrt(x) rounded to nearest even, as IEEE-754 takes it: for positive normal x. The twin is
// Rust's `f32::sqrt`.
fn sqrt_rn(x: f32) -> f32 {
    return sqrt_from_hint(x, sqrt_hint(x));
}

fn sqrt_from_hint(x: f32, hint: f32) -> f32 {
    let bx = bitcast<u32>(x);
    let mx = significand(bx);
    let ex = exponent(bx);
    // x = z * 2^(ex - shift) with z = mx * 2^shift in [2^46, 2^48) and ex - shift even:
    // sqrt(x) = sqrt(z) * 2^((ex - shift) / 2) with sqrt(z) in [2^23, 2^24).
    let shift = select(23u, 24u, ((ex - 23) & 1) != 0);
    let e = (ex - i32(shift)) >> 1u;
    // Compare 4z with (2q - 1)^2.
    let s = shift + 2u;
    let scaled = vec2<u32>(mx >> (32u - s), mx << s);
    let q = round_significand(hint_significand(hint, e), scaled, 0u, true);
    return compose(q, e);
}
