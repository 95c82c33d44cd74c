// Conversions to and from i64 (needs shaderInt64), matching the CPU backend: i64 reaches floats
// through f64 (rounded to 53 bits first), floats reach i64 truncated and saturated.

fn i64_min() -> i64 {
    return bitcast<i64>(9223372036854775808lu);
}

fn top_bit_u64(u: u64) -> u32 {
    let hi = u32(u >> 32u);
    if (hi != 0u) {
        return 32u + firstLeadingBit(hi);
    }
    return firstLeadingBit(u32(u & 0xfffffffflu));
}

// `u` (at most 2^63) rounded to `bits` significant bits, to nearest even.
fn round_u64(u: u64, bits: u32) -> u64 {
    if (u == 0lu) {
        return 0lu;
    }
    let top = top_bit_u64(u);
    if (top < bits) {
        return u;
    }
    let shift = top + 1u - bits;
    let rem = u & ((1lu << shift) - 1lu);
    let half = 1lu << (shift - 1u);
    var m = u >> shift;
    if (rem > half || (rem == half && (m & 1lu) == 1lu)) {
        m += 1lu;
    }
    return m << shift;
}

// A u64 with at most 24 significant bits as the exact f32.
fn u64_to_f32_exact(u: u64) -> f32 {
    if (u == 0lu) {
        return 0.0;
    }
    let top = top_bit_u64(u);
    if (top < 24u) {
        return f32(u32(u));
    }
    let shift = top - 23u;
    return f32(u32(u >> shift)) * pow2_f32(shift);
}

fn abs_i64(x: i64) -> u64 {
    return select(bitcast<u64>(x), 0lu - bitcast<u64>(x), x < 0li);
}

// i64 as f64 (rounded to 53 bits, as Rust's `as`), then rounded once to `bits` significant bits
// (24 for f32, 11 for f16, 8 for bf16): exact in f32, so packing adds no further rounding.
fn i64_to_float(x: i64, bits: u32) -> f32 {
    let f = u64_to_f32_exact(round_u64(round_u64(abs_i64(x), 53u), bits));
    return select(f, -f, x < 0li);
}

fn f32_to_i64(x: f32) -> i64 {
    if (f32_is_nan(x)) {
        return 0li;
    }
    if (x >= 9223372036854775808.0) {
        return 9223372036854775807li;
    }
    if (x <= -9223372036854775808.0) {
        return i64_min();
    }
    return i64(x);
}
