// bf16: eight elements per 16-byte block (two per u32 word, element 2i in the low half),
// computing in f32 as two vec4 halves.
alias $SW = u32;
const $EPW: u32 = 2u;
alias $W = vec4<u32>;
alias $C = f32;
alias $V = vec4<f32>;
alias $U = vec4<u32>;
alias $F = f32;
const $LANES: u32 = 8u;

struct $B {
    lo: vec4<f32>,
    hi: vec4<f32>,
}

fn $elem(w: u32, lane: u32) -> $C {
    return bf16x4_to_f32(vec4((w >> (16u * lane)) & 0xffffu, 0u, 0u, 0u)).x;
}

fn $halves(a: u32, b: u32) -> vec4<u32> {
    return vec4(a & 0xffffu, a >> 16u, b & 0xffffu, b >> 16u);
}

fn $words(h: vec4<u32>) -> vec2<u32> {
    return vec2(h.x | (h.y << 16u), h.z | (h.w << 16u));
}

fn $unpack(w: $W) -> $B {
    return $B(bf16x4_to_f32($halves(w.x, w.y)), bf16x4_to_f32($halves(w.z, w.w)));
}

fn $pack(b: $B) -> $W {
    return vec4($words(f32_to_bf16x4(b.lo)), $words(f32_to_bf16x4(b.hi)));
}

// The block at byte `s` (< 16) of words `a` then `b`.
fn $shifted(a: $W, b: $W, s: u32) -> $W {
    return funnel4(a, b, s);
}
