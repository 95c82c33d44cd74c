// bf16: two elements per u32 word (element 2i in the low half), computing in f32.
alias $W = u32;
alias $C = f32;
alias $F = f32;
const $LANES: u32 = 2u;

fn $unpack(w: u32, lane: u32) -> f32 {
    return bf16_to_f32((w >> (16u * lane)) & 0xffffu);
}

fn $pack(c: array<$C, $LANES>) -> u32 {
    return f32_to_bf16(c[0]) | (f32_to_bf16(c[1]) << 16u);
}
