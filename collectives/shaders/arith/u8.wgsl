// Arithmetic of u8 values held in u32 lanes, results kept in 0..=255 (wrapping); x / 0
// is 0.
fn $op_add(a: $V, b: $V) -> $V {
    return (a + b) & $V(0xffu);
}

fn $op_sub(a: $V, b: $V) -> $V {
    return (a - b) & $V(0xffu);
}

fn $op_mul(a: $V, b: $V) -> $V {
    return (a * b) & $V(0xffu);
}

fn $op_div(a: $V, b: $V) -> $V {
    let zero = b == $V(0u);
    return select(a / select(b, $V(1u), zero), $V(0u), zero);
}

fn $op_max(a: $V, b: $V) -> $V {
    return max(a, b);
}

fn $op_min(a: $V, b: $V) -> $V {
    return min(a, b);
}

fn $scale_mul(a: $V, f: $F) -> $V {
    return (a * f) & $V(0xffu);
}

fn $scale_div(a: $V, f: $F) -> $V {
    return select(a / max(f, 1u), $V(0u), f == 0u);
}
