// Arithmetic in i32: wrapping; division truncates, x / 0 is 0 and MIN / -1 wraps to MIN.
fn $div(a: $V, b: $V) -> $V {
    let zero = b == $V(0i);
    let neg = b == $V(-1i);
    let q = a / select(b, $V(1i), zero | neg);
    return select(select(q, -a, neg), $V(0i), zero);
}

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
    return $div(a, b);
}

fn $op_max(a: $V, b: $V) -> $V {
    return max(a, b);
}

fn $op_min(a: $V, b: $V) -> $V {
    return min(a, b);
}

fn $scale_mul(a: $V, f: $F) -> $V {
    return a * f;
}

fn $scale_div(a: $V, f: $F) -> $V {
    return $div(a, $V(f));
}
