// The fold kernel, once per (dtype, op) (after the dtype's storage, its arithmetic, the block
// helpers of its shape and the `op` chosen at build time): binary ops (k = 2), the n-ary reduce
// and scale (k = 1) are all `out = scale?(in0 op in1 op ... op in(k-1))`, folded left to right in
// the compute type and rounded once. One invocation makes one 16-byte output block (`B`: 2 to
// 16 lanes), so loads and stores are 16 bytes wide.
//
// An input may start off its binding's 16-byte blocks (a view of a tensor at any element): its
// blocks are then read from two words each (`load0`..`load7`, which build.rs writes).
//
// More than 8 inputs take several passes through an accumulator of blocks: the first pass
// writes it, later passes fold onto it, the last one writes the output.

struct Params {
    // Elements in this piece.
    n: u32,
    // Output blocks in this piece (one per invocation).
    blocks: u32,
    // Inputs bound in this pass (1..=8).
    k: u32,
    pad0: u32,
    // READ_ACC | WRITE_ACC | SCALE | DIVIDE.
    flags: u32,
    pad1: u32,
    pad2: u32,
    pad3: u32,
    // The scale factor, in the compute type's factor type.
    factor: F,
    // Where each input's data starts in its binding, in bytes (`skew[k / 4][k % 4]`; see `load`).
    skew: array<vec4<u32>, 2>,
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
@group(0) @binding(8) var<storage, read_write> acc: array<B>;
@group(0) @binding(9) var<storage, read_write> out: array<W>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = flat_id(gid, nwg);
    if (w >= p.blocks) {
        return;
    }
    var a = unpack(load0(w));
    if ((p.flags & READ_ACC) != 0u) {
        a = fold(acc[w], a);
    }
    if (p.k > 1u) {
        a = fold(a, unpack(load1(w)));
    }
    if (p.k > 2u) {
        a = fold(a, unpack(load2(w)));
    }
    if (p.k > 3u) {
        a = fold(a, unpack(load3(w)));
    }
    if (p.k > 4u) {
        a = fold(a, unpack(load4(w)));
    }
    if (p.k > 5u) {
        a = fold(a, unpack(load5(w)));
    }
    if (p.k > 6u) {
        a = fold(a, unpack(load6(w)));
    }
    if (p.k > 7u) {
        a = fold(a, unpack(load7(w)));
    }
    if ((p.flags & WRITE_ACC) != 0u) {
        acc[w] = a;
        return;
    }
    if ((p.flags & SCALE) != 0u) {
        if ((p.flags & DIVIDE) != 0u) {
            a = scale_d(a, p.factor);
        } else {
            a = scale_m(a, p.factor);
        }
    }
    out[w] = pack(a);
}
