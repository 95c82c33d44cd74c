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

// Division rounded as IEEE's: Vulkan lets `/` be 2.5 ulp off (NVIDIA's is up to 2 ulp off), so
// one correction step on the exact remainder `fma(-q, b, a)` pulls the quotient to the rounded
// one. Where the corrected value is not finite (b = 0, infinities, NaN, overflow) `/` stands.
fn $div_rn(a: $V, b: $V) -> $V {
    let q = a / b;
    let q1 = fma(fma(-q, b, a), $V(1.0) / b, q);
    let finite = (bitcast<$U>(q1) & $U(0x7f800000u)) != $U(0x7f800000u);
    return select(q, q1, finite);
}

fn $op_div(a: $V, b: $V) -> $V {
    return $div_rn(a, b);
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
    return $div_rn(a, $V(f));
}
