// Conversions from f64 (needs shaderFloat64), matching the CPU backend's Rust `as` casts.

fn f64_is_nan(x: f64) -> bool {
    return !(x == x);
}

fn f64_to_i32(x: f64) -> i32 {
    if (f64_is_nan(x)) {
        return 0i;
    }
    if (x >= 2147483648.0lf) {
        return 2147483647i;
    }
    if (x <= -2147483648.0lf) {
        return I32_MIN;
    }
    return i32(x);
}

fn f64_to_u8(x: f64) -> u32 {
    if (f64_is_nan(x) || x <= 0.0lf) {
        return 0u;
    }
    if (x >= 255.0lf) {
        return 255u;
    }
    return u32(x);
}

// f64 to f32 rounded to odd (truncated, lowest bit set when inexact): a second rounding of the
// result to fewer bits is then as one rounding of `x`. Works whatever the device's rounding.
fn f64_to_f32_odd(x: f64) -> f32 {
    let f = f32(x);
    let back = f64(f);
    if (back == x || f64_is_nan(x) || f32_is_inf(f)) {
        return f;
    }
    var b = bitcast<u32>(f);
    if ((b & 1u) == 0u) {
        if (abs(back) > abs(x)) {
            b -= 1u;
        } else {
            b += 1u;
        }
    }
    return bitcast<f32>(b);
}
