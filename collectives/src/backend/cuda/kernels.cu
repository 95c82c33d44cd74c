// The CUDA backend's kernels, compiled at run time by NVRTC (see nvrtc.rs) once per compute
// capability. No headers: f16/bf16 are bit patterns converted with PTX `cvt` or bit operations, so
// the source compiles wherever NVRTC runs.
//
// Semantics match the CPU backend (backend/cpu/num.rs, kernels.rs) exactly:
// - f16/bf16 compute in f32 and round once to nearest-even; f32/f64 compute as themselves
//   (compiled with --fmad=false, so nothing is contracted);
// - integers wrap (arithmetic in the unsigned type); x / 0 == 0; MIN / -1 == MIN;
// - float max/min return NaN if either side is NaN, else `a >= b ? a : b` (`a <= b ? a : b`);
// - casts go through f64 when a float is involved, as the CPU does (`from_f64(to_f64(x))`):
//   float -> int truncates toward zero and saturates, NaN -> 0; int -> int wraps as Rust `as`;
//   -> f16/bf16 round once to nearest-even (through f32 rounded to odd, as the CPU does).

typedef unsigned char u8;
typedef int i32;
typedef long long i64;
typedef unsigned int u32;
typedef unsigned long long u64;

struct __align__(2) f16 { unsigned short b; };
struct __align__(2) bf16 { unsigned short b; };
// 16 bytes, for vectorized copies.
struct __align__(16) w16 { u32 a, b, c, d; };

// ---- bit casts and low-precision conversions ----------------------------------------------

__device__ __forceinline__ u32 f32_bits(float x) { u32 r; asm("mov.b32 %0, %1;" : "=r"(r) : "f"(x)); return r; }
__device__ __forceinline__ float bits_f32(u32 x) { float r; asm("mov.b32 %0, %1;" : "=f"(r) : "r"(x)); return r; }
__device__ __forceinline__ u64 f64_bits(double x) { u64 r; asm("mov.b64 %0, %1;" : "=l"(r) : "d"(x)); return r; }
__device__ __forceinline__ double bits_f64(u64 x) { double r; asm("mov.b64 %0, %1;" : "=d"(r) : "l"(x)); return r; }

__device__ __forceinline__ float f16_to_f32(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ unsigned short f32_to_f16(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

__device__ __forceinline__ float bf16_to_f32(unsigned short h) { return bits_f32((u32)h << 16); }

// half::bf16::from_f32: round to nearest-even; NaN keeps its upper bits and is made quiet.
__device__ __forceinline__ unsigned short f32_to_bf16(float f) {
    u32 x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40u);
    const u32 r = 0x8000u;
    if ((x & r) != 0u && (x & (3u * r - 1u)) != 0u) return (unsigned short)((x >> 16) + 1u);
    return (unsigned short)(x >> 16);
}

// f64 -> f32 rounding to odd: exact values stay, inexact ones take the neighbour with an odd last
// bit. Rounding that to f16/bf16 to nearest-even then rounds the f64 correctly (f32 keeps more
// than two extra bits). The CPU backend does the same (cpu/num.rs).
__device__ float f32_round_odd(double v) {
    float r = (float)v;
    u32 b = f32_bits(r);
    if ((b & 0x7f800000u) == 0x7f800000u || (double)r == v || (b & 1u)) return r;
    double ar = (double)r < 0.0 ? -(double)r : (double)r, av = v < 0.0 ? -v : v;
    return ar < av ? bits_f32(b + 1u) : bits_f32(b - 1u);
}

// ---- element types: compute type, widen, narrow, f64/i64 conversions ---------------------

#define OP_ADD 0
#define OP_SUB 1
#define OP_MUL 2
#define OP_DIV 3
#define OP_MAX 4
#define OP_MIN 5

#define SCALE_NONE 0
#define SCALE_MUL 1
#define SCALE_DIV 2

template <typename A> __device__ __forceinline__ A fbin(int op, A a, A b) {
    switch (op) {
    case OP_ADD: return a + b;
    case OP_SUB: return a - b;
    case OP_MUL: return a * b;
    case OP_DIV: return a / b;
    case OP_MAX: return (a != a || b != b) ? (A)bits_f64(0x7ff8000000000000ull) : (a >= b ? a : b);
    default: return (a != a || b != b) ? (A)bits_f64(0x7ff8000000000000ull) : (a <= b ? a : b);
    }
}

template <typename A> __device__ __forceinline__ A fscale(int kind, A a, double f) {
    return kind == SCALE_MUL ? a * (A)f : (kind == SCALE_DIV ? a / (A)f : a);
}

// Wrapping integer arithmetic: computed in the unsigned type U.
template <typename T, typename U> __device__ __forceinline__ T idiv(T a, T b) {
    if (b == (T)0) return (T)0;
    if ((T)-1 < (T)0 && b == (T)-1) return (T)((U)0 - (U)a);
    return a / b;
}

template <typename T, typename U> __device__ __forceinline__ T ibin(int op, T a, T b) {
    switch (op) {
    case OP_ADD: return (T)((U)a + (U)b);
    case OP_SUB: return (T)((U)a - (U)b);
    case OP_MUL: return (T)((U)a * (U)b);
    case OP_DIV: return idiv<T, U>(a, b);
    case OP_MAX: return a > b ? a : b;
    default: return a < b ? a : b;
    }
}

template <typename T, typename U> __device__ __forceinline__ T iscale(int kind, T a, i64 f) {
    T t = (T)(U)(u64)f;
    return kind == SCALE_MUL ? (T)((U)a * (U)t) : (kind == SCALE_DIV ? idiv<T, U>(a, t) : a);
}

__device__ __forceinline__ i32 sat_i32(double d) {
    if (d != d) return 0;
    if (d >= 2147483647.0) return 2147483647;
    if (d <= -2147483648.0) return -2147483647 - 1;
    return (i32)d;
}

__device__ __forceinline__ i64 sat_i64(double d) {
    if (d != d) return 0;
    if (d >= 9223372036854775807.0) return 9223372036854775807ll;
    if (d <= -9223372036854775808.0) return -9223372036854775807ll - 1;
    return (i64)d;
}

__device__ __forceinline__ u8 sat_u8(double d) {
    if (!(d > 0.0)) return 0;
    if (d >= 255.0) return 255;
    return (u8)(u32)d;
}

template <typename T> struct Num;

template <> struct Num<float> {
    typedef float A;
    static const bool INT = false;
    static __device__ __forceinline__ A widen(float x) { return x; }
    static __device__ __forceinline__ float narrow(A a) { return a; }
    static __device__ __forceinline__ A bin(int op, A a, A b) { return fbin<A>(op, a, b); }
    static __device__ __forceinline__ A scale(int k, A a, double f, i64) { return fscale<A>(k, a, f); }
    static __device__ __forceinline__ double to_f64(float x) { return (double)x; }
    static __device__ __forceinline__ float from_f64(double d) { return (float)d; }
};

template <> struct Num<double> {
    typedef double A;
    static const bool INT = false;
    static __device__ __forceinline__ A widen(double x) { return x; }
    static __device__ __forceinline__ double narrow(A a) { return a; }
    static __device__ __forceinline__ A bin(int op, A a, A b) { return fbin<A>(op, a, b); }
    static __device__ __forceinline__ A scale(int k, A a, double f, i64) { return fscale<A>(k, a, f); }
    static __device__ __forceinline__ double to_f64(double x) { return x; }
    static __device__ __forceinline__ double from_f64(double d) { return d; }
};

template <> struct Num<f16> {
    typedef float A;
    static const bool INT = false;
    static __device__ __forceinline__ A widen(f16 x) { return f16_to_f32(x.b); }
    static __device__ __forceinline__ f16 narrow(A a) { f16 r; r.b = f32_to_f16(a); return r; }
    static __device__ __forceinline__ A bin(int op, A a, A b) { return fbin<A>(op, a, b); }
    static __device__ __forceinline__ A scale(int k, A a, double f, i64) { return fscale<A>(k, a, f); }
    static __device__ __forceinline__ double to_f64(f16 x) { return (double)f16_to_f32(x.b); }
    static __device__ __forceinline__ f16 from_f64(double d) { f16 r; r.b = f32_to_f16(f32_round_odd(d)); return r; }
};

template <> struct Num<bf16> {
    typedef float A;
    static const bool INT = false;
    static __device__ __forceinline__ A widen(bf16 x) { return bf16_to_f32(x.b); }
    static __device__ __forceinline__ bf16 narrow(A a) { bf16 r; r.b = f32_to_bf16(a); return r; }
    static __device__ __forceinline__ A bin(int op, A a, A b) { return fbin<A>(op, a, b); }
    static __device__ __forceinline__ A scale(int k, A a, double f, i64) { return fscale<A>(k, a, f); }
    static __device__ __forceinline__ double to_f64(bf16 x) { return (double)bf16_to_f32(x.b); }
    static __device__ __forceinline__ bf16 from_f64(double d) { bf16 r; r.b = f32_to_bf16(f32_round_odd(d)); return r; }
};

#define INT_NUM(T, U, SAT)                                                                      \
    template <> struct Num<T> {                                                                 \
        typedef T A;                                                                            \
        static const bool INT = true;                                                           \
        static __device__ __forceinline__ A widen(T x) { return x; }                            \
        static __device__ __forceinline__ T narrow(A a) { return a; }                           \
        static __device__ __forceinline__ A bin(int op, A a, A b) { return ibin<T, U>(op, a, b); } \
        static __device__ __forceinline__ A scale(int k, A a, double, i64 f) { return iscale<T, U>(k, a, f); } \
        static __device__ __forceinline__ double to_f64(T x) { return (double)x; }              \
        static __device__ __forceinline__ T from_f64(double d) { return SAT(d); }               \
        static __device__ __forceinline__ i64 to_i64(T x) { return (i64)x; }                    \
        static __device__ __forceinline__ T from_i64(i64 v) { return (T)(U)(u64)v; }            \
    };
INT_NUM(i32, u32, sat_i32)
INT_NUM(i64, u64, sat_i64)
INT_NUM(u8, u32, sat_u8)

// ---- elementwise kernels --------------------------------------------------------------------
// Flags shared by the elementwise kernels.
#define F_VEC 4      // every pointer is 16-byte aligned: the body runs on 16-byte vectors
#define F_ACC_IN 1   // reduce: fold the compute-type accumulator `acc` in first
#define F_ACC_OUT 2  // reduce: write the compute-type accumulator, unscaled (a chained stage)

#define MAXK 16
// Bytes of host input a reduce launch can carry in its parameters (launch/carried.rs), and the
// first part of them its small form passes.
#define CARRIED_BYTES 4096
#define CARRIED_SMALL_BYTES 256
// A reduce launch's input and output pointers, S slots of them (MAXK, or FEW in its few-slot
// form: a smaller launch, 0.1-0.2 us sooner through a graph, bench/gpu/61-kernel-size).
#define FEW 4
template <int S> struct PtrsIn { const void* p[S]; };
template <int S> struct PtrsOut { void* p[S]; };
typedef PtrsIn<MAXK> Ins;
typedef PtrsOut<MAXK> Outs;

template <typename T> struct __align__(16) V16 { T x[16 / sizeof(T)]; };

__device__ __forceinline__ u64 tid0() { return (u64)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ u64 nthreads() { return (u64)gridDim.x * blockDim.x; }

template <typename T>
__device__ void binary_body(int op, const T* a, const T* b, T* o, u64 n, int flags) {
    typedef Num<T> N;
    const int V = 16 / sizeof(T);
    u64 nv = (flags & F_VEC) ? n / V : 0;
    for (u64 v = tid0(); v < nv; v += nthreads()) {
        V16<T> x = ((const V16<T>*)a)[v], y = ((const V16<T>*)b)[v], r;
#pragma unroll
        for (int j = 0; j < V; ++j) r.x[j] = N::narrow(N::bin(op, N::widen(x.x[j]), N::widen(y.x[j])));
        ((V16<T>*)o)[v] = r;
    }
    for (u64 i = nv * V + tid0(); i < n; i += nthreads()) {
        o[i] = N::narrow(N::bin(op, N::widen(a[i]), N::widen(b[i])));
    }
}

template <typename T>
__device__ void scale_body(const T* x, T* o, u64 n, int flags, int kind, double f, i64 fi) {
    typedef Num<T> N;
    const int V = 16 / sizeof(T);
    u64 nv = (flags & F_VEC) ? n / V : 0;
    for (u64 v = tid0(); v < nv; v += nthreads()) {
        V16<T> a = ((const V16<T>*)x)[v], r;
#pragma unroll
        for (int j = 0; j < V; ++j) r.x[j] = N::narrow(N::scale(kind, N::widen(a.x[j]), f, fi));
        ((V16<T>*)o)[v] = r;
    }
    for (u64 i = nv * V + tid0(); i < n; i += nthreads()) {
        o[i] = N::narrow(N::scale(kind, N::widen(x[i]), f, fi));
    }
}

// The fold of inputs 0..k at unit `v` (X: V16<T>, L lanes, or V1<T>, one element) into `s`,
// after `s`'s accumulator when `acc_in`; always in input order, so every form gives the same
// bits. The inputs are walked in unrolled batches of B (B = 0, the loop, is batches of one),
// predicated on the count: each pointer is read at a fixed offset of the parameter, and a
// batch's B loads are all issued before it is folded (more loads in flight, more registers).
// launch.rs chooses B by the size (`reduce_batch`). No pointer is indexed at run time: that
// copied the whole array into each thread's local memory (128 bytes of stack) before its first
// load. An input below CARRIED_BYTES is that offset into `carried` where a launch carries inputs
// in its parameters (null where it does not).
template <typename T> struct V1 { T x[1]; };

// Input `i` (a constant once unrolled), or its carried bytes.
template <typename X, int S>
__device__ __forceinline__ const X* input(const PtrsIn<S>& in, int i, const unsigned char* carried) {
    const unsigned char* p = (const unsigned char*)in.p[i];
    return (const X*)(carried && (u64)p < CARRIED_BYTES ? carried + (u64)p : p);
}

template <typename T, int OP, int B, typename X, int L, int S>
__device__ __forceinline__ void fold_at(const PtrsIn<S>& in, int k, bool acc_in, u64 v,
                                        const unsigned char* carried, typename Num<T>::A (&s)[L]) {
    typedef Num<T> N;
    constexpr int BB = B == 0 ? 1 : B;
#pragma unroll
    for (int i0 = 0; i0 < S; i0 += BB) {
        if (i0 >= k) break;
        X x[BB];
#pragma unroll
        for (int b = 0; b < BB; ++b)
            if (i0 + b < k) x[b] = input<X, S>(in, i0 + b, carried)[v];
#pragma unroll
        for (int b = 0; b < BB; ++b) {
            if (i0 + b >= k) continue;
            if (i0 + b == 0 && !acc_in) {
#pragma unroll
                for (int j = 0; j < L; ++j) s[j] = N::widen(x[b].x[j]);
            } else {
#pragma unroll
                for (int j = 0; j < L; ++j) s[j] = N::bin(OP, s[j], N::widen(x[b].x[j]));
            }
        }
    }
}

// `s` (L lanes at unit `v`) to every output: scaled and narrowed to the m <= MAXK outputs, or
// the accumulator itself to out.p[0] (a chained stage). SPLIT, the outputs split the result
// instead: output w holds units [w * part, (w + 1) * part), so unit v goes to output v / part
// alone (a star reduce_scatter's members' parts, in one pass). A form of its own, so the kernels
// that do not split compile as they did (the split's code cost them registers and occupancy).
// Unrolled, so each output pointer is read at a fixed offset of the parameter.
template <typename T, typename X, int L, bool SPLIT, int S>
__device__ __forceinline__ void write_at(const PtrsOut<S>& out, int m, bool acc_out, u64 v, u64 part,
                                         const typename Num<T>::A (&s)[L], int kind, double f, i64 fi) {
    typedef Num<T> N;
    typedef typename Num<T>::A A;
    if (acc_out) {
#pragma unroll
        for (int j = 0; j < L; ++j) ((A*)out.p[0])[v * L + j] = s[j];
        return;
    }
    X r;
#pragma unroll
    for (int j = 0; j < L; ++j) r.x[j] = N::narrow(N::scale(kind, s[j], f, fi));
    if constexpr (SPLIT) {
        // 32-bit division where both fit (a 64-bit one is a long software sequence). A store per
        // output, predicated: selecting the output's pointer first, then one store, was up to
        // 1.2 x slower (bench/gpu/51-split-fold, run c). Each pointer passes an empty asm, so the
        // compiler keeps sixteen fixed-offset reads: it folds them otherwise into one read at
        // index `w`, which copies the array into local memory (128 bytes of stack per thread).
        u64 w = (v >> 32 || part >> 32) ? v / part : (u64)((unsigned)v / (unsigned)part);
#pragma unroll
        for (int o = 0; o < S; ++o) {
            u64 p = (u64)out.p[o];
            asm("" : "+l"(p));
            if (o == (int)w) ((X*)p)[v - w * part] = r;
        }
        return;
    }
#pragma unroll
    for (int w = 0; w < S; ++w)
        if (w < m) ((X*)out.p[w])[v] = r;
}

// One pass over k <= MAXK inputs (plus an optional accumulator from a previous stage), the
// result written to each of the m <= MAXK outputs, or SPLIT among them: output w holds elements
// [w * part, (w + 1) * part) (`part` not zero, a multiple of the vector's lanes where F_VEC is
// set). A chained stage writes its accumulator, out.p[0], whole.
template <typename T, int OP, int B, bool SPLIT, int S = MAXK>
__device__ void reduce_body(const PtrsIn<S>& in, int k, const void* acc, const PtrsOut<S>& out, int m, u64 n,
                            u64 part, int flags, int kind, double f, i64 fi, const unsigned char* carried) {
    typedef typename Num<T>::A A;
    const int V = 16 / sizeof(T);
    const bool acc_in = flags & F_ACC_IN, acc_out = flags & F_ACC_OUT;
    const A* ain = (const A*)acc;
    u64 nv = (flags & F_VEC) ? n / V : 0;
    for (u64 v = tid0(); v < nv; v += nthreads()) {
        A s[V];
        if (acc_in) {
#pragma unroll
            for (int j = 0; j < V; ++j) s[j] = ain[v * V + j];
        }
        fold_at<T, OP, B, V16<T>, V, S>(in, k, acc_in, v, carried, s);
        write_at<T, V16<T>, V, SPLIT, S>(out, m, acc_out, v, part / V, s, kind, f, fi);
    }
    for (u64 e = nv * V + tid0(); e < n; e += nthreads()) {
        A s[1];
        if (acc_in) s[0] = ain[e];
        fold_at<T, OP, B, V1<T>, 1, S>(in, k, acc_in, e, carried, s);
        write_at<T, V1<T>, 1, SPLIT, S>(out, m, acc_out, e, part, s, kind, f, fi);
    }
}

// A kernel's completion flag (flag.rs): `flag` is the pinned word its host waits spin on (null:
// none), `seq` the number to store there, `ctr` a word of device memory its stream's flagged
// launches of more than one block count finished blocks in (zero between launches), and `bits`
// DONE_OWN where every output the kernel writes lies in this GPU's own memory, DONE_NUMBERED where
// the number is the stream's next (`seq` unused): one more than the word after `ctr` holds, which
// the storing thread advances (each launch of the stream's runs after the one before, so each
// reads the number its predecessor wrote; flag.rs, `Numbers`).
struct Done {
    unsigned* flag;
    unsigned* ctr;
    unsigned seq;
    unsigned bits;
};
#define DONE_OWN 1u
#define DONE_NUMBERED 2u

// The last act of a kernel whose host waits spin on `d.flag`: each thread's writes are made
// visible before its block meets — to this GPU where they all lie in its own memory (DONE_OWN),
// else to the system (the host, other GPUs); then one thread of the block stores the number where
// the block is the only one, or counts the block done where there are more, and the block counted
// last stores it after a system fence, which, fences being cumulative, orders every block's
// writes before the store for the host too.
// `atomicInc` wraps at `gridDim.x - 1`, so the last count leaves the counter at zero for the
// stream's next flagged launch, which runs after this one. Without a counter, more blocks store
// nothing (the host's wait then ends on the event; launch.rs never asks for that). `d` is the
// same for every thread, so the whole block syncs. A numbered launch's storing thread reads the
// stream's last number before the fence, so the read's latency passes with the fence's, and
// writes the new one after the flag, outside the fence: its only reader is the stream's next
// launch, which starts after this kernel ends and so sees it, and the flag need not wait for it.
__device__ void signal_done(Done d) {
    volatile unsigned* last = d.ctr + 1;
    unsigned before = (d.bits & DONE_NUMBERED) && threadIdx.x == 0 ? *last : 0;
    if (d.bits & DONE_OWN) __threadfence(); else __threadfence_system();
    __syncthreads();
    if (threadIdx.x != 0) return;
    if (gridDim.x > 1 && (!d.ctr || atomicInc(d.ctr, gridDim.x - 1) != gridDim.x - 1)) return;
    unsigned seq = (d.bits & DONE_NUMBERED) ? before + 1 : d.seq;
    __threadfence_system();
    *(volatile unsigned*)d.flag = seq;
    if (d.bits & DONE_NUMBERED) *last = seq;
}

template <typename S, typename D, bool INTS> struct Conv;
template <typename S, typename D> struct Conv<S, D, true> {
    static __device__ __forceinline__ D run(S x) { return Num<D>::from_i64(Num<S>::to_i64(x)); }
};
template <typename S, typename D> struct Conv<S, D, false> {
    static __device__ __forceinline__ D run(S x) { return Num<D>::from_f64(Num<S>::to_f64(x)); }
};

template <typename S, typename D> __device__ void cast_body(const S* x, D* o, u64 n) {
    for (u64 i = tid0(); i < n; i += nthreads()) {
        o[i] = Conv<S, D, Num<S>::INT && Num<D>::INT>::run(x[i]);
    }
}

// rows x width units from src (row pitch spitch) to dst (row pitch dpitch), all in units of W.
template <typename W>
__device__ void copy2d_body(const W* src, W* dst, u64 rows, u64 width, u64 spitch, u64 dpitch) {
    u64 total = rows * width;
    for (u64 i = tid0(); i < total; i += nthreads()) {
        u64 r = i / width, c = i - r * width;
        dst[r * dpitch + c] = src[r * spitch + c];
    }
}

// Up to K contiguous copies in one launch (MAXK for copyseg, SEGS_WIDE for copysegw; lengths in
// units of W): the placements of a concat, the parts of a star all_to_all, the gather step of a
// two-shot all_reduce. The threads stride over the segments' units taken as one run, each segment
// after the one before (segment j holds units end[j - 1] to end[j]), so the segments are copied
// side by side: a thread that copied each segment in turn would wait out one round trip per
// segment in host memory (or a peer's), its loads unable to pass its stores (nothing tells the
// compiler the segments do not overlap). A thread's index only grows: it keeps its segment while
// the index stays in it, else finds the next by bisecting the ends from there, so a thread far
// along a run of many short segments reads a few ends, not every one before it.
template <int K> struct SegsOf { u64 src[K]; u64 dst[K]; u64 end[K]; };
typedef SegsOf<MAXK> Segs;
// The wide form (`SEGS_WIDE` in copy.rs): 128 segments take 3 KiB of the launch's 4 KiB of
// parameters, enough for a join of eight members' shards into two outputs.
#define SEGS_WIDE 128
typedef SegsOf<SEGS_WIDE> SegsWide;

template <typename W, int K>
__device__ void copyseg_body(const SegsOf<K>& s, int k) {
    u64 total = s.end[k - 1];
    int j = 0;
    for (u64 g = tid0(); g < total; g += nthreads()) {
        if (g >= s.end[j]) {
            // The first segment after j that ends past g (segment k - 1 ends past every g).
            int lo = j + 1, hi = k - 1;
            while (lo < hi) {
                int mid = (lo + hi) / 2;
                if (s.end[mid] > g) hi = mid; else lo = mid + 1;
            }
            j = lo;
        }
        u64 i = g - (j ? s.end[j - 1] : 0);
        ((W*)s.dst[j])[i] = ((const W*)s.src[j])[i];
    }
}

// ---- extern "C" entry points: one per dtype (and op, pair or unit) ---------------------------
// nvrtc.rs compiles this file in groups (binary, scale, cast, copy2d, copyseg, and each reduce form
// per dtype), each by appending the lines that instantiate one group's entry points, so a program
// compiles only the kernels it uses.

#define FOR_TYPES(X) X(float, f32) X(double, f64) X(f16, f16) X(bf16, bf16) X(i32, i32) X(i64, i64) X(u8, u8)
#define FOR_TYPES_2(X, S, SN) X(S, SN, float, f32) X(S, SN, double, f64) X(S, SN, f16, f16) X(S, SN, bf16, bf16) \
    X(S, SN, i32, i32) X(S, SN, i64, i64) X(S, SN, u8, u8)

// Every entry point below given a flag (`done.flag`) stores `done.seq` there once its writes, and
// those of every other block of its launch, are done (flag.rs).
#define BINARY(T, N)                                                                             \
    extern "C" __global__ void binary_##N(int op, const T* a, const T* b, T* o, u64 n, int flags, \
                                          Done done) {                                           \
        binary_body<T>(op, a, b, o, n, flags);                                                   \
        if (done.flag) signal_done(done);                                                        \
    }

#define SCALE(T, N)                                                                              \
    extern "C" __global__ void scale_##N(const T* x, T* o, u64 n, int flags, int kind, double f, i64 fi, \
                                         Done done) {                                            \
        scale_body<T>(x, o, n, flags, kind, f, fi);                                              \
        if (done.flag) signal_done(done);                                                        \
    }

// reduce_<dtype>_<op> folds with B = 0, reduce<B>_<dtype>_<op> in batches of B (fold_at);
// reducep_<dtype>_<op> and reduce<B>p_<dtype>_<op> split the result among the outputs.
#define REDUCE1(T, N, OPN, OP, B, S, PRE)                                                        \
    extern "C" __global__ void PRE##_##N##_##OPN(Ins in, int k, const void* acc, Outs o, int m,  \
                                                 u64 n, u64 part, int flags, int kind, double f, \
                                                 i64 fi, Done done) {                            \
        reduce_body<T, OP, B, S>(in, k, acc, o, m, n, part, flags, kind, f, fi, nullptr);        \
        if (done.flag) signal_done(done);                                                        \
    }
#define REDUCE_FORM(T, N, B, S, PRE) REDUCE1(T, N, sum, OP_ADD, B, S, PRE)                       \
    REDUCE1(T, N, prod, OP_MUL, B, S, PRE) REDUCE1(T, N, max, OP_MAX, B, S, PRE)                 \
    REDUCE1(T, N, min, OP_MIN, B, S, PRE)
// reducei_<dtype>_<op>: the loop over inputs, some of them carried in the launch's parameters
// (launch/carried.rs: a small host input copied there by the host, not read across the bus by the
// kernel). An input whose pointer is below CARRIED_BYTES is that offset into `carried` (no
// allocation starts in the first page). The parameters pass 4 KiB in all: CUDA 12.1 and compute
// capability 7.0 on (`__grid_constant__` lets the kernel read `carried` where the driver put it).
// reducei256_<dtype>_<op> takes the block's first CARRIED_SMALL_BYTES (256) only: the driver
// copies a kernel's whole parameters at every launch, and a smaller block reaches the GPU sooner.
template <int B> struct Carried { __align__(16) unsigned char b[B]; };
#define REDUCE_I1(T, N, OPN, OP, B, PRE)                                                         \
    extern "C" __global__ void PRE##_##N##_##OPN(Ins in, int k, const void* acc, Outs o, int m,  \
                                                 u64 n, u64 part, int flags, int kind, double f, \
                                                 i64 fi, Done done,                              \
                                                 const __grid_constant__ Carried<B> carried) {   \
        reduce_body<T, OP, 0, false>(in, k, acc, o, m, n, part, flags, kind, f, fi, carried.b);  \
        if (done.flag) signal_done(done);                                                        \
    }
#define REDUCE_I2(T, N, B, PRE) REDUCE_I1(T, N, sum, OP_ADD, B, PRE)                             \
    REDUCE_I1(T, N, prod, OP_MUL, B, PRE) REDUCE_I1(T, N, max, OP_MAX, B, PRE)                   \
    REDUCE_I1(T, N, min, OP_MIN, B, PRE)
#define REDUCE_I(T, N) REDUCE_I2(T, N, CARRIED_BYTES, reducei)
#define REDUCE_I256(T, N) REDUCE_I2(T, N, CARRIED_SMALL_BYTES, reducei256)
// reducef_<dtype>_<op>: up to FEW inputs and FEW outputs, each taking the whole result, every
// input's load issued together (batches of FEW). Its parameters are those of the forms above with
// FEW slots each.
#define REDUCE_F1(T, N, OPN, OP)                                                                 \
    extern "C" __global__ void reducef_##N##_##OPN(PtrsIn<FEW> in, int k, const void* acc,      \
                                                   PtrsOut<FEW> o, int m, u64 n, u64 part,       \
                                                   int flags, int kind, double f, i64 fi,        \
                                                   Done done) {                                  \
        reduce_body<T, OP, FEW, false, FEW>(in, k, acc, o, m, n, part, flags, kind, f, fi, nullptr); \
        if (done.flag) signal_done(done);                                                        \
    }
#define REDUCE_F(T, N) REDUCE_F1(T, N, sum, OP_ADD) REDUCE_F1(T, N, prod, OP_MUL)                \
    REDUCE_F1(T, N, max, OP_MAX) REDUCE_F1(T, N, min, OP_MIN)
#define REDUCE(T, N) REDUCE_FORM(T, N, 0, false, reduce)
#define REDUCE_B(T, N, B) REDUCE_FORM(T, N, B, false, reduce##B)
#define REDUCE_P(T, N) REDUCE_FORM(T, N, 0, true, reducep)
#define REDUCE_BP(T, N, B) REDUCE_FORM(T, N, B, true, reduce##B##p)

#define CAST(S, SN, D, DN)                                                                       \
    extern "C" __global__ void cast_##SN##_##DN(const S* x, D* o, u64 n, Done done) {            \
        cast_body<S, D>(x, o, n);                                                                \
        if (done.flag) signal_done(done);                                                        \
    }
#define CAST_ROW(S, SN) FOR_TYPES_2(CAST, S, SN)

#define COPY2D(W, N)                                                                             \
    extern "C" __global__ void copy2d_##N(const W* s, W* d, u64 rows, u64 width, u64 sp, u64 dp, \
                                          Done done) {                                           \
        copy2d_body<W>(s, d, rows, width, sp, dp);                                               \
        if (done.flag) signal_done(done);                                                        \
    }

#define COPYSEG(W, N)                                                                            \
    extern "C" __global__ void copyseg_##N(Segs s, int k, Done done) {                           \
        copyseg_body<W, MAXK>(s, k);                                                             \
        if (done.flag) signal_done(done);                                                        \
    }
#define COPYSEGW(W, N)                                                                           \
    extern "C" __global__ void copysegw_##N(SegsWide s, int k, Done done) {                      \
        copyseg_body<W, SEGS_WIDE>(s, k);                                                        \
        if (done.flag) signal_done(done);                                                        \
    }
