// The cast kernel, once per (source, destination) dtype pair (after both dtypes' storage, the
// conversion helpers and the pair's `convert`). One invocation makes one output word; source
// elements past the end are never read.

struct Params {
    // Elements in this piece.
    n: u32,
    // Output words in this piece (one per invocation).
    words: u32,
    pad0: u32,
    pad1: u32,
}

var<immediate> p: Params;

@group(0) @binding(0) var<storage, read> src: array<src_W>;
@group(0) @binding(1) var<storage, read_write> dst: array<dst_W>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = flat_id(gid, nwg);
    if (w >= p.words) {
        return;
    }
    var c: array<dst_C, dst_LANES>;
    for (var l = 0u; l < dst_LANES; l++) {
        let e = w * dst_LANES + l;
        var x: src_C;
        if (e < p.n) {
            x = src_unpack(src[e / src_LANES], e % src_LANES);
        }
        c[l] = convert(x);
    }
    dst[w] = dst_pack(c);
}
