// i32: one element per u32 word, computing in i32 (wrapping).
alias $W = u32;
alias $C = i32;
alias $F = i32;
const $LANES: u32 = 1u;

fn $unpack(w: u32, lane: u32) -> i32 {
    return bitcast<i32>(w);
}

fn $pack(c: array<$C, $LANES>) -> u32 {
    return bitcast<u32>(c[0]);
}
