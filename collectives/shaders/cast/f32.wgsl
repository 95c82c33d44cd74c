// Conversions every cast kernel may use (32-bit types only). They reproduce the CPU backend's
// casts, which go through f64: float to integer truncates toward zero and saturates (NaN gives
// 0); anything to a float rounds once to nearest even (to f16/bf16 through f32 rounded to odd).

const I32_MIN: i32 = -2147483647i - 1i;

fn f32_to_i32(x: f32) -> i32 {
    if (f32_is_nan(x)) {
        return 0i;
    }
    if (x >= 2147483648.0) {
        return 2147483647i;
    }
    if (x <= -2147483648.0) {
        return I32_MIN;
    }
    return i32(x);
}

fn f32_to_u8(x: f32) -> u32 {
    if (f32_is_nan(x) || x <= 0.0) {
        return 0u;
    }
    if (x >= 255.0) {
        return 255u;
    }
    return u32(x);
}

// 2^e as an f32, for 0 <= e < 128.
fn pow2_f32(e: u32) -> f32 {
    return bitcast<f32>((127u + e) << 23u);
}

// `u` (at most 2^31, so rounding up cannot overflow) rounded to `bits` significant bits, to
// nearest even.
fn round_u32(u: u32, bits: u32) -> u32 {
    if (u == 0u) {
        return 0u;
    }
    let top = firstLeadingBit(u);
    if (top < bits) {
        return u;
    }
    let shift = top + 1u - bits;
    let rem = u & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    var m = u >> shift;
    if (rem > half || (rem == half && (m & 1u) == 1u)) {
        m += 1u;
    }
    return m << shift;
}

// A u32 with at most 24 significant bits as the exact f32.
fn u32_to_f32_exact(u: u32) -> f32 {
    let top = firstLeadingBit(u);
    if (u == 0u || top < 24u) {
        return f32(u);
    }
    let shift = top - 23u;
    return f32(u >> shift) * pow2_f32(shift);
}

fn abs_i32(x: i32) -> u32 {
    return select(bitcast<u32>(x), 0u - bitcast<u32>(x), x < 0i);
}

// A rounded integer magnitude, signed, as the exact f32.
fn signed_f32(rounded: u32, neg: bool) -> f32 {
    let f = u32_to_f32_exact(rounded);
    return select(f, -f, neg);
}

// i32 as f64 (exact) rounded once, to nearest even, to `bits` significant bits (24 for f32, 11
// for f16, 8 for bf16): exact in f32, so packing to f16/bf16 adds no second rounding.
fn i32_to_float(x: i32, bits: u32) -> f32 {
    return signed_f32(round_u32(abs_i32(x), bits), x < 0i);
}
