// i64 (needs shaderInt64): one element per 64-bit word, computing in i64 (wrapping).
alias $W = i64;
alias $C = i64;
alias $F = i64;
const $LANES: u32 = 1u;

fn $unpack(w: i64, lane: u32) -> i64 {
    return w;
}

fn $pack(c: array<$C, $LANES>) -> i64 {
    return c[0];
}
