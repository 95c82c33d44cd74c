// Arithmetic in f64. Ops: 0 add, 1 sub, 2 mul, 3 div, 4 max, 5 min.
// Max and Min propagate NaN and keep the first operand on ties, as the CPU backend does.
fn $is_nan(x: f64) -> bool {
    return !(x == x);
}

fn $bin(op: u32, a: f64, b: f64) -> f64 {
    switch op {
        case 0u: {
            return a + b;
        }
        case 1u: {
            return a - b;
        }
        case 2u: {
            return a * b;
        }
        case 3u: {
            return a / b;
        }
        case 4u: {
            if ($is_nan(a)) {
                return a;
            }
            if ($is_nan(b)) {
                return b;
            }
            return select(b, a, a >= b);
        }
        default: {
            if ($is_nan(a)) {
                return a;
            }
            if ($is_nan(b)) {
                return b;
            }
            return select(b, a, a <= b);
        }
    }
}

fn $scale(divide: bool, a: f64, f: f64) -> f64 {
    if (divide) {
        return a / f;
    }
    return a * f;
}
