// i32: four elements per 16-byte block, computing in i32 (wrapping).
alias $SW = u32;
const $EPW: u32 = 1u;
alias $W = vec4<u32>;
alias $C = i32;
alias $V = vec4<i32>;
alias $B = vec4<i32>;
alias $F = i32;
const $LANES: u32 = 4u;

fn $elem(w: u32, lane: u32) -> $C {
    return bitcast<i32>(w);
}

fn $unpack(w: $W) -> $B {
    return bitcast<vec4<i32>>(w);
}

fn $pack(b: $B) -> $W {
    return bitcast<vec4<u32>>(b);
}

// The block at byte `s` (< 16) of words `a` then `b`.
fn $shifted(a: $W, b: $W, s: u32) -> $W {
    return funnel4(a, b, s);
}
