// f32: one element per u32 word, computing in f32.
alias $W = u32;
alias $C = f32;
alias $F = f32;
const $LANES: u32 = 1u;

fn $unpack(w: u32, lane: u32) -> f32 {
    return bitcast<f32>(w);
}

fn $pack(c: array<$C, $LANES>) -> u32 {
    return bitcast<u32>(c[0]);
}
