// Arithmetic in f32 (for f32, and f16/bf16 two lanes at a time) on `$V` values.
// Max and Min propagate NaN and keep the first operand on ties, as the CPU backend does.
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
    let an = (bitcast<$U>(a) & $U(0x7fffffffu)) > $U(0x7f800000u);
    let bn = (bitcast<$U>(b) & $U(0x7fffffffu)) > $U(0x7f800000u);
    return select(select(select(b, a, a >= b), b, bn), a, an);
}

fn $op_min(a: $V, b: $V) -> $V {
    let an = (bitcast<$U>(a) & $U(0x7fffffffu)) > $U(0x7f800000u);
    let bn = (bitcast<$U>(b) & $U(0x7fffffffu)) > $U(0x7f800000u);
    return select(select(select(b, a, a <= b), b, bn), a, an);
}

fn $scale_mul(a: $V, f: $F) -> $V {
    return a * f;
}

fn $scale_div(a: $V, f: $F) -> $V {
    return a / f;
}
