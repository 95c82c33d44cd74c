// i64 (needs shaderInt64): two elements per 16-byte block, computing in i64 (wrapping).
alias $SW = i64;
const $EPW: u32 = 1u;
alias $W = vec2<i64>;
alias $C = i64;
alias $V = vec2<i64>;
alias $B = vec2<i64>;
alias $F = i64;
const $LANES: u32 = 2u;

fn $elem(w: i64, lane: u32) -> $C {
    return w;
}

fn $unpack(w: $W) -> $B {
    return w;
}

fn $pack(b: $B) -> $W {
    return b;
}

// The block at byte `s` (0 or 8: whole elements) of words `a` then `b`.
fn $shifted(a: $W, b: $W, s: u32) -> $W {
    if (s == 0u) {
        return a;
    }
    return $W(a.y, b.x);
}
