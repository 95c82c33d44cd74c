// Arithmetic in i64: wrapping; division truncates, x / 0 is 0 and MIN / -1 wraps to MIN.
// Ops: 0 add, 1 sub, 2 mul, 3 div, 4 max, 5 min.
fn $div(a: i64, b: i64) -> i64 {
    if (b == 0li) {
        return 0li;
    }
    if (b == -1li) {
        return 0li - a;
    }
    return a / b;
}

fn $bin(op: u32, a: i64, b: i64) -> i64 {
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

fn $scale(divide: bool, a: i64, f: i64) -> i64 {
    if (divide) {
        return $div(a, f);
    }
    return a * f;
}
