// Shared by every kernel: the flat invocation index of a 2D dispatch, and exact bit-level
// conversions between f32 and the 16-bit float formats (the kernels never need 16-bit storage
// or arithmetic features: 16-bit values travel packed two to a u32 word and compute in f32).

const WG: u32 = 256u;

// The invocation's index in a dispatch of `nwg.x * nwg.y` workgroups of WG invocations: dispatches
// over 65535 workgroups use the y dimension.
fn flat_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.y * nwg.x * WG + gid.x;
}

fn f32_is_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

fn f32_is_inf(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u;
}

// f16 bits (low 16 bits of `h`) to the exact f32 value, subnormals included.
fn f16_to_f32(h: u32) -> f32 {
    let sign = (h & 0x8000u) << 16u;
    let exp = h & 0x7c00u;
    let man = h & 0x03ffu;
    if (exp == 0x7c00u) {
        if (man == 0u) {
            return bitcast<f32>(sign | 0x7f800000u);
        }
        return bitcast<f32>(sign | 0x7fc00000u | (man << 13u));
    }
    if (exp == 0u) {
        if (man == 0u) {
            return bitcast<f32>(sign);
        }
        // Subnormal: normalise the mantissa.
        let e = countLeadingZeros(man) - 22u;
        let bits = sign | ((112u - e) << 23u) | ((man << (14u + e)) & 0x7fffffu);
        return bitcast<f32>(bits);
    }
    return bitcast<f32>(sign | (((exp >> 10u) + 112u) << 23u) | (man << 13u));
}

// f32 to f16 bits, rounding to nearest even (as the `half` crate does).
fn f32_to_f16(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    let sign = (b >> 16u) & 0x8000u;
    let exp = (b >> 23u) & 0xffu;
    let man = b & 0x7fffffu;
    if (exp == 0xffu) {
        if (man == 0u) {
            return sign | 0x7c00u;
        }
        return sign | 0x7e00u | (man >> 13u);
    }
    let e = i32(exp) - 112;
    if (e >= 0x1f) {
        return sign | 0x7c00u;
    }
    if (e <= 0) {
        if (14 - e > 24) {
            return sign;
        }
        let m = man | 0x800000u;
        let shift = u32(14 - e);
        let round_bit = 1u << (shift - 1u);
        var hm = m >> shift;
        if ((m & round_bit) != 0u && (m & (3u * round_bit - 1u)) != 0u) {
            hm += 1u;
        }
        return sign | hm;
    }
    let h = sign | (u32(e) << 10u) | (man >> 13u);
    if ((man & 0x1000u) != 0u && (man & 0x2fffu) != 0u) {
        return h + 1u;
    }
    return h;
}

// bf16 bits (low 16 bits of `h`) to the exact f32 value.
fn bf16_to_f32(h: u32) -> f32 {
    return bitcast<f32>(h << 16u);
}

// f32 to bf16 bits, rounding to nearest even; NaN stays NaN (quiet).
fn f32_to_bf16(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    if ((b & 0x7fffffffu) > 0x7f800000u) {
        return (b >> 16u) | 0x40u;
    }
    if ((b & 0x8000u) != 0u && (b & 0x17fffu) != 0u) {
        return (b >> 16u) + 1u;
    }
    return b >> 16u;
}
