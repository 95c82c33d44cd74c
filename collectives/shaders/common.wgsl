// Shared by every kernel: the flat invocation index of a 2D dispatch, the 16 bytes at any byte of
// two blocks, and exact bit-level conversions between f32 and the 16-bit float formats (the
// kernels never need 16-bit storage or arithmetic features: 16-bit values travel packed two to a
// u32 word and compute in f32).

const WG: u32 = 256u;

// The invocation's index in a dispatch of `nwg.x * nwg.y` workgroups of WG invocations: dispatches
// over 65535 workgroups use the y dimension.
fn flat_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.y * nwg.x * WG + gid.x;
}

// Bytes `s..s + 16` (`s < 16`) of the 32 bytes `a` then `b`, as four little-endian words: a block
// of an input whose data starts `s` bytes into its 16-byte word (a view off its memory's
// alignment).
fn funnel4(a: vec4<u32>, b: vec4<u32>, s: u32) -> vec4<u32> {
    var u = array<u32, 8>(a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w);
    let k = s / 4u;
    let t = (s % 4u) * 8u;
    var out = vec4<u32>();
    for (var j = 0u; j < 4u; j++) {
        // A shift by 32 is a shift by 0 in WGSL: a whole-word skew takes the low word alone.
        out[j] = (u[k + j] >> t) | select(0u, u[k + j + 1u] << (32u - t), t != 0u);
    }
    return out;
}

fn f32_is_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

fn f32_is_inf(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u;
}

// Four f16 values (low 16 bits of each component) to their exact f32 values, subnormals included.
// Branch-free, so SIMD implementations (lavapipe) keep every lane busy.
fn f16x4_to_f32(h: vec4<u32>) -> vec4<f32> {
    let sign = (h & vec4(0x8000u)) << vec4(16u);
    let exp = h & vec4(0x7c00u);
    let man = h & vec4(0x03ffu);
    let normal = sign | ((exp + vec4(0x1c000u)) << vec4(13u)) | (man << vec4(13u));
    let quiet = select(vec4(0u), vec4(0x400000u), man != vec4(0u));
    let special = sign | vec4(0x7f800000u) | quiet | (man << vec4(13u));
    // Subnormals and zeros: man * 2^-24 is exact (and a normal f32 unless zero).
    let sub = bitcast<vec4<u32>>(vec4<f32>(man) * 5.9604644775390625e-8) | sign;
    return bitcast<vec4<f32>>(select(select(normal, sub, exp == vec4(0u)), special, exp == vec4(0x7c00u)));
}

// Four f32 values to f16 bits, rounding to nearest even as the `half` crate does (NaN stays NaN,
// quiet; values from 65520 up become infinity). Branch-free.
fn f32_to_f16x4(x: vec4<f32>) -> vec4<u32> {
    let b = bitcast<vec4<u32>>(x);
    let sign = (b >> vec4(16u)) & vec4(0x8000u);
    let a = b & vec4(0x7fffffffu);
    let nan = vec4(0x7e00u) | ((a >> vec4(13u)) & vec4(0x3ffu));
    let big = select(vec4(0x7c00u), nan, a > vec4(0x7f800000u));
    // Results below 2^-14 (subnormal or zero): adding 0.5 aligns the f16 subnormal unit (2^-24)
    // with the f32 mantissa's last bit, and the addition rounds to nearest even.
    let magic = vec4(0x3f000000u);
    let sub = bitcast<vec4<u32>>(bitcast<vec4<f32>>(a) + bitcast<vec4<f32>>(magic)) - magic;
    // Normal results: rebias the exponent (-112 << 23), round to nearest even, shift.
    let normal = (a + vec4(0xc8000fffu) + ((a >> vec4(13u)) & vec4(1u))) >> vec4(13u);
    return select(select(normal, sub, a < vec4(0x38800000u)), big, a >= vec4(0x47800000u)) | sign;
}

// Four bf16 values (low 16 bits of each component) to their exact f32 values.
fn bf16x4_to_f32(h: vec4<u32>) -> vec4<f32> {
    return bitcast<vec4<f32>>(h << vec4(16u));
}

// Four f32 values to bf16 bits, rounding to nearest even; NaN stays NaN (quiet). Branch-free.
fn f32_to_bf16x4(x: vec4<f32>) -> vec4<u32> {
    let b = bitcast<vec4<u32>>(x);
    let nan = (b & vec4(0x7fffffffu)) > vec4(0x7f800000u);
    let rounded = (b + vec4(0x7fffu) + ((b >> vec4(16u)) & vec4(1u))) >> vec4(16u);
    return select(rounded, (b >> vec4(16u)) | vec4(0x40u), nan);
}
