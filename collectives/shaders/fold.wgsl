// The fold kernel, once per dtype (after the dtype's storage and arithmetic): binary ops (k = 2),
// the n-ary reduce and scale (k = 1) are all `out = scale?(in0 op in1 op ... op in(k-1))`, folded
// left to right in the compute type and rounded once. One invocation makes one output word.
//
// More than 8 inputs take several passes through an accumulator buffer of the compute type:
// the first pass writes it, later passes read it first, the last one writes the output.

struct Params {
    // Elements in this piece.
    n: u32,
    // Output words in this piece (one per invocation).
    words: u32,
    // Inputs bound in this pass (1..=8).
    k: u32,
    // The fold op (see the arithmetic file).
    op: u32,
    // READ_ACC | WRITE_ACC | SCALE | DIVIDE.
    flags: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
    // The scale factor, in the compute type's factor type.
    factor: F,
}

const READ_ACC: u32 = 1u;
const WRITE_ACC: u32 = 2u;
const SCALE: u32 = 4u;
const DIVIDE: u32 = 8u;

var<immediate> p: Params;

@group(0) @binding(0) var<storage, read> in0: array<W>;
@group(0) @binding(1) var<storage, read> in1: array<W>;
@group(0) @binding(2) var<storage, read> in2: array<W>;
@group(0) @binding(3) var<storage, read> in3: array<W>;
@group(0) @binding(4) var<storage, read> in4: array<W>;
@group(0) @binding(5) var<storage, read> in5: array<W>;
@group(0) @binding(6) var<storage, read> in6: array<W>;
@group(0) @binding(7) var<storage, read> in7: array<W>;
@group(0) @binding(8) var<storage, read_write> acc: array<C>;
@group(0) @binding(9) var<storage, read_write> out: array<W>;

fn input_word(j: u32, w: u32) -> W {
    switch j {
        case 0u: {
            return in0[w];
        }
        case 1u: {
            return in1[w];
        }
        case 2u: {
            return in2[w];
        }
        case 3u: {
            return in3[w];
        }
        case 4u: {
            return in4[w];
        }
        case 5u: {
            return in5[w];
        }
        case 6u: {
            return in6[w];
        }
        default: {
            return in7[w];
        }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = flat_id(gid, nwg);
    if (w >= p.words) {
        return;
    }
    var a: array<C, LANES>;
    var first = true;
    if ((p.flags & READ_ACC) != 0u) {
        for (var l = 0u; l < LANES; l++) {
            a[l] = acc[w * LANES + l];
        }
        first = false;
    }
    for (var j = 0u; j < p.k; j++) {
        let x = input_word(j, w);
        for (var l = 0u; l < LANES; l++) {
            let v = unpack(x, l);
            if (first) {
                a[l] = v;
            } else {
                a[l] = bin(p.op, a[l], v);
            }
        }
        first = false;
    }
    if ((p.flags & WRITE_ACC) != 0u) {
        for (var l = 0u; l < LANES; l++) {
            acc[w * LANES + l] = a[l];
        }
        return;
    }
    if ((p.flags & SCALE) != 0u) {
        let divide = (p.flags & DIVIDE) != 0u;
        for (var l = 0u; l < LANES; l++) {
            a[l] = scale(divide, a[l], p.factor);
        }
    }
    out[w] = pack(a);
}
