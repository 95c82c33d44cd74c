// Arithmetic in i32: wrapping; division truncates, x / 0 is 0 and MIN / -1 wraps to MIN.
// Ops: 0 add, 1 sub, 2 mul, 3 div, 4 max, 5 min.
fn $div(a: i32, b: i32) -> i32 {
    if (b == 0i) {
        return 0i;
    }
    if (b == -1i) {
        return 0i - a;
    }
    return a / b;
}

fn $bin(op: u32, a: i32, b: i32) -> i32 {
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
            return $div(a, b);
        }
        case 4u: {
            return max(a, b);
        }
        default: {
            return min(a, b);
        }
    }
}

fn $scale(divide: bool, a: i32, f: i32) -> i32 {
    if (divide) {
        return $div(a, f);
    }
    return a * f;
}
