// Block-wise fold helpers where B is one vector:
// the op (defined after it, per kernel) and the scales, applied to every part.
fn fold(a: B, b: B) -> B {
    return op(a, b);
}

fn scale_m(a: B, f: F) -> B {
    return scale_mul(a, f);
}

fn scale_d(a: B, f: F) -> B {
    return scale_div(a, f);
}
