// Block-wise fold helpers where B is two vec4 halves:
// the op (defined after it, per kernel) and the scales, applied to every part.
fn fold(a: B, b: B) -> B {
    return B(op(a.lo, b.lo), op(a.hi, b.hi));
}

fn scale_m(a: B, f: F) -> B {
    return B(scale_mul(a.lo, f), scale_mul(a.hi, f));
}

fn scale_d(a: B, f: F) -> B {
    return B(scale_div(a.lo, f), scale_div(a.hi, f));
}
