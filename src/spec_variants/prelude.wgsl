// What a spec variant of the shader calls in place of an operation it takes a freedom with
// (src/spec_variants.rs). Joined after the shader's own source, which provides `mul_wide`.
// Integer arithmetic only, so that the variants run the same on any device.

// x moved `k` ulps towards +infinity (`up`) or -infinity, for finite non-zero x; zero as it is
// (an exact zero has no rounding error to move).
fn spec_variant_nudge(x: f32, k: u32, up: bool) -> f32 {
    let b = bitcast<u32>(x);
    if ((b & 0x7FFFFFFFu) == 0u) {
        return x;
    }
    let away_from_zero = up == ((b >> 31u) == 0u);
    if (away_from_zero) {
        return bitcast<f32>(b + k);
    }
    // Towards zero, at most down to zero of x's sign.
    let magnitude = b & 0x7FFFFFFFu;
    return bitcast<f32>((b & 0x80000000u) | (magnitude - min(k, magnitude)));
}

// x, or zero of x's sign when x is subnormal.
fn spec_variant_ftz(x: f32) -> f32 {
    let b = bitcast<u32>(x);
    return select(x, bitcast<f32>(b & 0x80000000u), (b & 0x7F800000u) == 0u);
}

fn spec_variant_shl64(v: vec2<u32>, s: u32) -> vec2<u32> {
    if (s == 0u) {
        return v;
    } else if (s >= 64u) {
        return vec2<u32>(0u);
    } else if (s >= 32u) {
        return vec2<u32>(v.y << (s - 32u), 0u);
    }
    return vec2<u32>((v.x << s) | (v.y >> (32u - s)), v.y << s);
}

// v >> s with every bit shifted out ORed into bit 0 (a sticky bit).
fn spec_variant_shr64_sticky(v: vec2<u32>, s: u32) -> vec2<u32> {
    if (s == 0u) {
        return v;
    }
    var r = vec2<u32>(0u);
    var lost = false;
    if (s >= 64u) {
        lost = any(v != vec2<u32>(0u));
    } else if (s >= 32u) {
        r = vec2<u32>(0u, v.x >> (s - 32u));
        lost = v.y != 0u || (s > 32u && (v.x << (64u - s)) != 0u);
    } else {
        r = vec2<u32>(v.x >> s, (v.y >> s) | (v.x << (32u - s)));
        lost = (v.y << (32u - s)) != 0u;
    }
    return r | vec2<u32>(0u, select(0u, 1u, lost));
}

fn spec_variant_add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.y + b.y;
    return vec2<u32>(a.x + b.x + select(0u, 1u, lo < a.y), lo);
}

// a - b for a >= b.
fn spec_variant_sub64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(a.x - b.x - select(0u, 1u, a.y < b.y), a.y - b.y);
}

fn spec_variant_lt64(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.x < b.x || (a.x == b.x && a.y < b.y);
}

// The f32 nearest (ties to even) to (-1)^sign * s * 2^e for s > 0; subnormal results flush to
// zero (a GPU may do that).
fn spec_variant_round64(s: vec2<u32>, e: i32, sign: u32) -> f32 {
    let lz = select(countLeadingZeros(s.x), 32u + countLeadingZeros(s.y), s.x == 0u);
    let top = 63 - i32(lz);
    var mant: u32;
    var shift = top - 23;
    if (shift <= 0) {
        mant = spec_variant_shl64(s, u32(-shift)).y;
    } else {
        // 26 bits: the 24 kept, the round bit, and a sticky bit for everything below.
        var t: u32;
        if (shift >= 2) {
            t = spec_variant_shr64_sticky(s, u32(shift - 2)).y;
        } else {
            t = spec_variant_shl64(s, 1u).y;
        }
        mant = t >> 2u;
        let round = (t & 2u) != 0u;
        let sticky = (t & 1u) != 0u;
        if (round && (sticky || (mant & 1u) != 0u)) {
            mant += 1u;
        }
        if (mant == 0x1000000u) {
            mant = 0x800000u;
            shift += 1;
        }
    }
    let biased = e + shift + 150;
    if (biased <= 0) {
        return bitcast<f32>(sign << 31u);
    } else if (biased >= 255) {
        return bitcast<f32>((sign << 31u) | 0x7F7FFFFFu);
    }
    return bitcast<f32>((sign << 31u) | (u32(biased) << 23u) | (mant & 0x7FFFFFu));
}

// a * b + c rounded once, to nearest even (IEEE-754 fusedMultiplyAdd), for finite a, b, c;
// subnormal inputs and results flush to zero.
fn spec_variant_fma(a: f32, b: f32, c: f32) -> f32 {
    let ba = bitcast<u32>(a);
    let bb = bitcast<u32>(b);
    let bc = bitcast<u32>(c);
    let ea = (ba >> 23u) & 0xFFu;
    let eb = (bb >> 23u) & 0xFFu;
    let ec = (bc >> 23u) & 0xFFu;
    if (ea == 255u || eb == 255u || ec == 255u) {
        return a * b + c;
    }
    let c_zero = ec == 0u;
    if (ea == 0u || eb == 0u) {
        return select(c, 0.0, c_zero);
    }
    let sp = (ba ^ bb) >> 31u;
    let sc = bc >> 31u;
    // The product's 48 bits moved up to bits 13..61, the addend's 24 to bits 38..61, so that
    // alignment shifts of up to 14 lose nothing and the sum cannot overflow 64 bits.
    let p = spec_variant_shl64(mul_wide((ba & 0x7FFFFFu) | 0x800000u, (bb & 0x7FFFFFu) | 0x800000u), 14u);
    let ep = i32(ea + eb) - 300 - 14;
    if (c_zero) {
        return spec_variant_round64(p, ep, sp);
    }
    let q = vec2<u32>(((bc & 0x7FFFFFu) | 0x800000u) << 6u, 0u);
    let eq = i32(ec) - 150 - 38;
    var e = ep;
    var x = p;
    var y = q;
    if (ep >= eq) {
        y = spec_variant_shr64_sticky(q, u32(ep - eq));
    } else {
        x = spec_variant_shr64_sticky(p, u32(eq - ep));
        e = eq;
    }
    if (sp == sc) {
        return spec_variant_round64(spec_variant_add64(x, y), e, sp);
    }
    if (all(x == y)) {
        return 0.0;
    } else if (spec_variant_lt64(x, y)) {
        return spec_variant_round64(spec_variant_sub64(y, x), e, sc);
    }
    return spec_variant_round64(spec_variant_sub64(x, y), e, sp);
}
