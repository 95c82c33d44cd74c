// f64 (needs shaderFloat64): one element per 64-bit word, computing in f64.
alias $W = f64;
alias $C = f64;
alias $F = f64;
const $LANES: u32 = 1u;

fn $unpack(w: f64, lane: u32) -> f64 {
    return w;
}

fn $pack(c: array<$C, $LANES>) -> f64 {
    return c[0];
}
