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

fn $op_div(a: $V, b: $V) -> $V {
    return a / b;
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
    return a / f;
}
