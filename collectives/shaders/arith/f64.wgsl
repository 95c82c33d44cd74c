// Arithmetic in f64. Max and Min propagate NaN and keep the first operand on ties, as the CPU
// backend does.
fn $op_add(a: $V, b: $V) -> $V {
    return a + b;
}

fn $op_sub(a: $V, b: $V) -> $V {
    return a - b;
}

fn $op_mul(a: $V, b: $V) -> $V {
    return a * b;
}

// Division rounded as IEEE's (Vulkan does not promise it for `/`): one correction step on the
// exact remainder `fma(-q, b, a)`; where the corrected value is not finite `/` stands.
fn $div_rn(a: $V, b: $V) -> $V {
    let q = a / b;
    let q1 = fma(fma(-q, b, a), $V(1.0) / b, q);
    return select(q, q1, abs(q1) <= $V(1.7976931348623157e308lf));
}

fn $op_div(a: $V, b: $V) -> $V {
    return $div_rn(a, b);
}

fn $op_max(a: $V, b: $V) -> $V {
    return select(select(select(b, a, a >= b), b, !(b == b)), a, !(a == a));
}

fn $op_min(a: $V, b: $V) -> $V {
    return select(select(select(b, a, a <= b), b, !(b == b)), a, !(a == a));
}

fn $scale_mul(a: $V, f: $F) -> $V {
    return a * f;
}

fn $scale_div(a: $V, f: $F) -> $V {
    return $div_rn(a, $V(f));
}
