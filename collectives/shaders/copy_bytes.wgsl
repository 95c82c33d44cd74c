// Strided byte copy for slice and concat: `rows` rows of `row_bytes` bytes, row r read from byte
// `src_base + r * src_stride` and written at byte `dst_base + r * dst_stride`. Offsets need not be
// word-aligned (u8, f16 and bf16 rows start anywhere), so one invocation makes one destination
// word: a word wholly inside a row is stored, a word the row shares with its neighbours is merged
// with atomics, which leaves the neighbours' bytes (other rows, other inputs) as they are.

struct Params {
    rows: u32,
    row_bytes: u32,
    src_base: u32,
    src_stride: u32,
    dst_base: u32,
    dst_stride: u32,
    // Destination words per row slot (enough for any alignment of the row).
    wpr: u32,
    pad: u32,
}

var<immediate> p: Params;

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<atomic<u32>>;

// The 4 bytes starting at byte `s` of `src`, little-endian; bytes past the binding read as 0.
fn read4(s: u32) -> u32 {
    let i = s >> 2u;
    let sh = (s & 3u) * 8u;
    let w0 = src[i];
    if (sh == 0u) {
        return w0;
    }
    var w1 = 0u;
    if (i + 1u < arrayLength(&src)) {
        w1 = src[i + 1u];
    }
    return (w0 >> sh) | (w1 << (32u - sh));
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = flat_id(gid, nwg);
    if (t >= p.rows * p.wpr) {
        return;
    }
    let r = t / p.wpr;
    let row_start = p.dst_base + r * p.dst_stride;
    let row_end = row_start + p.row_bytes;
    let w = (row_start >> 2u) + (t % p.wpr);
    let wb = w * 4u;
    if (wb >= row_end) {
        return;
    }
    let lo = max(row_start, wb) - wb;
    let hi = min(row_end, wb + 4u) - wb;
    let v = read4(p.src_base + r * p.src_stride + (wb + lo - row_start)) << (8u * lo);
    var mask = 0xffffffffu << (8u * lo);
    if (hi < 4u) {
        mask &= (1u << (8u * hi)) - 1u;
    }
    if (mask == 0xffffffffu) {
        atomicStore(&dst[w], v);
    } else {
        atomicAnd(&dst[w], ~mask);
        atomicOr(&dst[w], v & mask);
    }
}
