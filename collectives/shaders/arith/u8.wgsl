// Arithmetic of u8 values held in u32, results kept in 0..=255 (wrapping); x / 0 is 0.
// Ops: 0 add, 1 sub, 2 mul, 3 div, 4 max, 5 min.
fn $div(a: u32, b: u32) -> u32 {
    if (b == 0u) {
        return 0u;
    }
    return a / b;
}

fn $bin(op: u32, a: u32, b: u32) -> u32 {
    switch op {
        case 0u: {
            return (a + b) & 0xffu;
        }
        case 1u: {
            return (a - b) & 0xffu;
        }
        case 2u: {
            return (a * b) & 0xffu;
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

fn $scale(divide: bool, a: u32, f: u32) -> u32 {
    if (divide) {
        return $div(a, f);
    }
    return (a * f) & 0xffu;
}
