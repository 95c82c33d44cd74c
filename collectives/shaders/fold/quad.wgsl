// Block-wise fold helpers where B is four vec4 parts:
// the op (defined after it, per kernel) and the scales, applied to every part.
fn fold(a: B, b: B) -> B {
    return B(op(a.a, b.a), op(a.b, b.b), op(a.c, b.c), op(a.d, b.d));
}

fn scale_m(a: B, f: F) -> B {
    return B(scale_mul(a.a, f), scale_mul(a.b, f), scale_mul(a.c, f), scale_mul(a.d, f));
}

fn scale_d(a: B, f: F) -> B {
    return B(scale_div(a.a, f), scale_div(a.b, f), scale_div(a.c, f), scale_div(a.d, f));
}
