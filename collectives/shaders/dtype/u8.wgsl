// u8: sixteen elements per 16-byte block (four per u32 word, element 4i in the low byte),
// computing in u32 lanes kept in 0..=255, as four vec4 parts (one per word).
alias $SW = u32;
const $EPW: u32 = 4u;
alias $W = vec4<u32>;
alias $C = u32;
alias $V = vec4<u32>;
alias $F = u32;
const $LANES: u32 = 16u;

struct $B {
    a: vec4<u32>,
    b: vec4<u32>,
    c: vec4<u32>,
    d: vec4<u32>,
}

fn $elem(w: u32, lane: u32) -> $C {
    return (w >> (8u * lane)) & 0xffu;
}

fn $bytes(w: u32) -> vec4<u32> {
    return (vec4(w) >> vec4(0u, 8u, 16u, 24u)) & vec4(0xffu);
}

fn $word(v: vec4<u32>) -> u32 {
    let b = v & vec4(0xffu);
    return b.x | (b.y << 8u) | (b.z << 16u) | (b.w << 24u);
}

fn $unpack(w: $W) -> $B {
    return $B($bytes(w.x), $bytes(w.y), $bytes(w.z), $bytes(w.w));
}

fn $pack(b: $B) -> $W {
    return vec4($word(b.a), $word(b.b), $word(b.c), $word(b.d));
}

// The block at byte `s` (< 16) of words `a` then `b`.
fn $shifted(a: $W, b: $W, s: u32) -> $W {
    return funnel4(a, b, s);
}
