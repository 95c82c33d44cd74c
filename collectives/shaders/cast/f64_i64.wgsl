// Conversions between f64 and i64 (needs shaderFloat64 and shaderInt64).

// i64 as f64: rounded to nearest even at 53 bits, built exactly.
fn i64_to_f64(x: i64) -> f64 {
    let u = round_u64(abs_i64(x), 53u);
    var f = 0.0lf;
    if (u != 0lu) {
        let top = top_bit_u64(u);
        if (top < 53u) {
            f = f64(u);
        } else {
            let shift = top - 52u;
            f = f64(u >> shift) * bitcast<f64>(u64(1023u + shift) << 52u);
        }
    }
    return select(f, -f, x < 0li);
}

fn f64_to_i64(x: f64) -> i64 {
    if (f64_is_nan(x)) {
        return 0li;
    }
    if (x >= 9223372036854775808.0lf) {
        return 9223372036854775807li;
    }
    if (x <= -9223372036854775808.0lf) {
        return i64_min();
    }
    return i64(x);
}
