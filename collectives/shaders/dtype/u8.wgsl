// u8: four elements per u32 word (element 4i in the low byte), computing in u32 kept in 0..=255.
alias $W = u32;
alias $C = u32;
alias $F = u32;
const $LANES: u32 = 4u;

fn $unpack(w: u32, lane: u32) -> u32 {
    return (w >> (8u * lane)) & 0xffu;
}

fn $pack(c: array<$C, $LANES>) -> u32 {
    return (c[0] & 0xffu) | ((c[1] & 0xffu) << 8u) | ((c[2] & 0xffu) << 16u) | ((c[3] & 0xffu) << 24u);
}
