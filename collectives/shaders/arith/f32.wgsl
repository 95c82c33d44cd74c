// Arithmetic in f32 (for f32, f16 and bf16). Ops: 0 add, 1 sub, 2 mul, 3 div, 4 max, 5 min.
// Max and Min propagate NaN and keep the first operand on ties, as the CPU backend does.
fn $bin(op: u32, a: f32, b: f32) -> f32 {
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
            if (f32_is_nan(a)) {
                return a;
            }
            if (f32_is_nan(b)) {
                return b;
            }
            return select(b, a, a >= b);
        }
        default: {
            if (f32_is_nan(a)) {
                return a;
            }
            if (f32_is_nan(b)) {
                return b;
            }
            return select(b, a, a <= b);
        }
    }
}

fn $scale(divide: bool, a: f32, f: f32) -> f32 {
    if (divide) {
        return a / f;
    }
    return a * f;
}
