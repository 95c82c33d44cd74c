// f32: four elements per 16-byte block, computing in f32.
alias $SW = u32;
const $EPW: u32 = 1u;
alias $W = vec4<u32>;
alias $C = f32;
alias $V = vec4<f32>;
alias $B = vec4<f32>;
alias $F = f32;
const $LANES: u32 = 4u;
alias $U = vec4<u32>;

fn $elem(w: u32, lane: u32) -> $C {
    return bitcast<f32>(w);
}

fn $unpack(w: $W) -> $B {
    return bitcast<vec4<f32>>(w);
}

fn $pack(b: $B) -> $W {
    return bitcast<vec4<u32>>(b);
}

// The block at byte `s` (< 16) of words `a` then `b`.
fn $shifted(a: $W, b: $W, s: u32) -> $W {
    return funnel4(a, b, s);
}
