// The cast kernel, once per (source, destination) dtype pair (after both dtypes' storage, the
// conversion helpers, the pair's `convert` and `make_block`, which build.rs writes for the
// destination's block shape). One invocation makes one 16-byte output block, reading source
// elements one by one; those past the end of the piece are clamped to its last one (computed
// into the block's padding, never stored as data).

struct Params {
    // Elements in this piece.
    n: u32,
    // Output blocks in this piece (one per invocation).
    blocks: u32,
    // Where the source's data starts in its binding, in elements (a view off its memory's
    // alignment; else 0).
    src_at: u32,
    pad1: u32,
}

var<immediate> p: Params;

@group(0) @binding(0) var<storage, read> src: array<src_SW>;
@group(0) @binding(1) var<storage, read_write> dst: array<dst_W>;

// Source element `e` (clamped into the piece, counted from the source's data), converted.
fn elem(e: u32) -> dst_C {
    let i = min(e, p.n - 1u) + p.src_at;
    return convert(src_elem(src[i / src_EPW], i % src_EPW));
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = flat_id(gid, nwg);
    if (w >= p.blocks) {
        return;
    }
    dst[w] = dst_pack(make_block(w * dst_LANES));
}
