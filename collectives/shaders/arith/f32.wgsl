// Arithmetic in f32 (for f32, and f16/bf16 two lanes at a time) on `$V` values.
// Max and Min propagate NaN and keep the first operand on ties, as the CPU backend does.
fn $op_add(a: $V, b: $V) -> $V {
    return a + b;
}

fn $op_sub(a: $V, b: $V) -> $V {
    return a - b;
}

fn $op_mul(a: $V, b: $V) -> $V {
    return a * b;
}

// Division correctly rounded (IEEE round to nearest even) without the device's `/`, which
// Vulkan lets be 2.5 ulp off (and leaves undefined for divisors out of normal range), and
// without `fma`, which Vulkan lets be a product and a sum rounded apart (lavapipe's is).
// Zeros, infinities and NaN are decided by rule. Otherwise |a| = A·2^(ea-23) and
// |b| = B·2^(eb-23) with A, B integers in [2^23, 2^24) (subnormals normalized exactly), and
// the quotient's grid in units of 2^(ea-eb) is 2^k: the ulp of A/B's binade (A >= B: 2^-23,
// else 2^-24) or, for a subnormal result, the coarser subnormal spacing. Integer long division
// gives n = floor(A·2^-k / B) and its remainder exactly; n rounds up when the remainder is past
// half of B (a tie to even n). Then n·2^k·2^(ea-eb) is assembled as bits, exactly, or is
// infinity exactly when IEEE's rounded quotient overflows.
// Integer operations only, on the operands' bits and the result's: a driver that flushes
// subnormal floats (NVIDIA's f32 does, without shaderDenormPreserve) still gives IEEE results.
alias $DivU = vec4<u32>;
alias $DivI = vec4<i32>;
alias $DivS = vec4<u32>;

// How far the significand of a subnormal |x| (x < 2^23, non-zero) shifts left into [2^23, 2^24).
fn $sub_shift(x: $DivU) -> $DivI {
    return max($DivI(countLeadingZeros(x)) - $DivI(8), $DivI(0));
}

// The exponent e of |x| = m·2^e with m in [1, 2), for finite non-zero x.
fn $exponent(x: $DivU) -> $DivI {
    let field = $DivI(x >> $DivS(23u));
    return select(field - $DivI(127), $DivI(-126) - $sub_shift(x), field == $DivI(0));
}

// The significand of |x| (finite, non-zero) as an integer in [2^23, 2^24).
fn $significand(x: $DivU) -> $DivU {
    let sub = (x >> $DivS(23u)) == $DivU(0u);
    return select((x & $DivU(0x007fffffu)) | $DivU(0x00800000u), x << $DivS($sub_shift(x)), sub);
}

// The bits of |a| / |b| correctly rounded, for finite non-zero a and b given as bits without sign.
fn $div_mag(ab: $DivU, bb: $DivU) -> $DivU {
    let ma = $significand(ab);
    let mb = $significand(bb);
    let e = $exponent(ab) - $exponent(bb);
    let k = max(select($DivI(-24), $DivI(-23), ma >= mb), $DivI(-149) - e);
    let s = $DivS(clamp(-k, $DivI(0), $DivI(24)));
    // Long division: n = floor(ma·2^s / mb), r the remainder (r < mb < 2^24: no overflow).
    let first = ma >= mb;
    var n = select($DivU(0u), $DivU(1u), first);
    var r = select(ma, ma - mb, first);
    for (var i = 0u; i < 24u; i++) {
        let on = $DivS(i) < s;
        let r2 = r << $DivS(1u);
        let ge = r2 >= mb;
        r = select(r, select(r2, r2 - mb, ge), on);
        n = select(n, (n << $DivS(1u)) | select($DivU(0u), $DivU(1u), ge), on);
    }
    let twice = r << $DivS(1u);
    let odd = (n & $DivU(1u)) == $DivU(1u);
    let up = (twice > mb) | ((twice == mb) & odd);
    n = n + select($DivU(0u), $DivU(1u), up);
    // A grid of 2 (k = 1): q/2 in (1/4, 1) rounds to 1 when q > 1 (q = 1 is a tie, to 0);
    // coarser grids round every q < 2 to 0.
    let far = select($DivU(0u), $DivU(1u), (k == $DivI(1)) & (ma > mb));
    n = select(n, far, k > $DivI(0));
    // The quotient is n·2^g with g = k + e >= -149 (g = -149 where the result is subnormal,
    // or coarser: then k > 0 and n is 0 or 1). Its bits are ((g + 149) << 23) + n: n's top
    // bit (2^23, present exactly when the result is normal) adds one to the exponent field, and
    // a rounded-up n = 2^24 carries into it. A field of all ones or more is infinity.
    let bits = ($DivU(k + e + $DivI(149)) << $DivS(23u)) + n;
    return select(bits, $DivU(0x7f800000u), bits >= $DivU(0x7f800000u));
}

fn $div_rn(a: $V, b: $V) -> $V {
    let sign = (bitcast<$DivU>(a) ^ bitcast<$DivU>(b)) & $DivU(0x80000000u);
    let ab = bitcast<$DivU>(a) & $DivU(0x7fffffffu);
    let bb = bitcast<$DivU>(b) & $DivU(0x7fffffffu);
    // Specials: NaN for a NaN operand, 0/0 and inf/inf; infinity for inf/y and x/0; zero for
    // 0/y and x/inf; each with the sign of a xor b.
    let a_zero = ab == $DivU(0u);
    let b_zero = bb == $DivU(0u);
    let a_inf = ab == $DivU(0x7f800000u);
    let b_inf = bb == $DivU(0x7f800000u);
    let nan = (ab > $DivU(0x7f800000u)) | (bb > $DivU(0x7f800000u)) | (a_zero & b_zero) | (a_inf & b_inf);
    let finite = $div_mag(ab, bb);
    let mag = select(select(finite, $DivU(0u), a_zero | b_inf), $DivU(0x7f800000u), a_inf | b_zero);
    return bitcast<$V>(select(mag | sign, $DivU(0x7fc00000u), nan));
}

fn $op_div(a: $V, b: $V) -> $V {
    return $div_rn(a, b);
}

fn $op_max(a: $V, b: $V) -> $V {
    let an = (bitcast<$U>(a) & $U(0x7fffffffu)) > $U(0x7f800000u);
    let bn = (bitcast<$U>(b) & $U(0x7fffffffu)) > $U(0x7f800000u);
    return select(select(select(b, a, a >= b), b, bn), a, an);
}

fn $op_min(a: $V, b: $V) -> $V {
    let an = (bitcast<$U>(a) & $U(0x7fffffffu)) > $U(0x7f800000u);
    let bn = (bitcast<$U>(b) & $U(0x7fffffffu)) > $U(0x7f800000u);
    return select(select(select(b, a, a <= b), b, bn), a, an);
}

fn $scale_mul(a: $V, f: $F) -> $V {
    return a * f;
}

fn $scale_div(a: $V, f: $F) -> $V {
    return $div_rn(a, $V(f));
}
