/* GlobEnc's and ALTI's two numbers per token pair, each pair's d-vector made and reduced in registers.

   For every column j (a source token) and every row i in [first[j], stop[j]):

       s_ij  = sum_h W[h, j, i] * V[h, j, :]               (d floats)
       t_ij  = rows[i] * s_ij                               (the pair's share, own part apart)
       alti:    out[j, i] = sum_d | y[i, d] - t_ij[d] |     (the L1 distance ALTI subtracts from |y_i|_1)
       globenc: out[j, i] = sqrt(sum_d t_ij[d]^2)           (the share's length)

   W (K, L_j, L_i), V (K, L_j, d), y (L_i, d), rows (L_i,), out (L_j, L_i); float32, C order. Outside
   [first[j], stop[j]) out is left as it is (the caller's value for t = 0).

   For one column j this is a rank-K matrix product, rows i by features d, followed by a reduction
   over d: a tile of ROWS rows by NV * LANES features is kept in vector registers (GCC/Clang vector types,
   lowered to whatever the CPU has: AVX-512, AVX2, NEON) while the K terms are added into it, then
   the tile is subtracted from y and reduced, never written to memory. Measured on this project's
   AVX-512 machine, one thread, MiniLM's K = 12 at 510 tokens, random data, one process: 21-23 ms a
   layer (tiles below) against 84 ms for the batched-product-then-reduce torch path. No -ffast-math:
   the sums run in the order written (IEEE float32, fused multiply-adds where the CPU has them).

   Built by attnscope.attribution.pair_norms on first use with the machine's C compiler, once per K
   (-DPAIRS_K=K: the K loop unrolled; a library of every K would take half a minute to compile). */

#include <math.h>
#include <stddef.h>
#include <string.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#ifndef PAIRS_K
#error "compile with -DPAIRS_K=<the number of terms K>"
#endif

/* Tiles of ROWS rows by NV vectors of LANES floats. Measured on this project's machine (MiniLM's K = 12,
   510 tokens, one thread), AVX-512: 4 x 4 x 16, 21-23 ms a layer, against 24-25 ms for 2 x 2 x 16
   and 26-27 for 2 x 4 or 4 x 2; built for AVX2 only (-march=x86-64-v3): 4 x 2 x 8, 33-39 ms, against
   58-70 for 2 x 2 x 8 and 118-132 for 16-float vectors split in halves; SSE only (-march=x86-64, no
   FMA): 4 x 2 x 4, 176-178 ms. A vector wider than the registers is split by the compiler into
   pieces that spill: 16 floats on SSE took 1.1 s a layer. */
#ifdef __AVX512F__  /* 32 registers of 16 floats: 16 sums, 4 vectors of V, the broadcast weight */
#define LANES 16
#ifndef ROWS
#define ROWS 4
#endif
#ifndef NV
#define NV 4
#endif
#else               /* AVX: 16 registers of 8 floats; others (SSE, NEON): registers of 4 floats */
#ifdef __AVX__
#define LANES 8
#else
#define LANES 4
#endif
#ifndef ROWS
#define ROWS 4
#endif
#ifndef NV
#define NV 2
#endif
#endif
#define CHUNK (NV * LANES)  /* features of a tile */

typedef float vf __attribute__((vector_size(LANES * sizeof(float))));
typedef int vi __attribute__((vector_size(LANES * sizeof(int))));

static inline vf load(const float *p) { vf v; memcpy(&v, p, sizeof v); return v; }
static inline vf vabs(vf x) { return (vf)((vi)x & 0x7fffffff); }
static inline float total(vf x) { float s = 0.0f; for (int l = 0; l < LANES; l++) s += x[l]; return s; }

/* One pair's features past the last whole chunk, plainly. */
static inline float one_pair(int l1, const float *const *w, const float *const *v, const float *yi, float r,
                             int i, int c0, int d)
{
    float acc = 0.0f;
    for (int c = c0; c < d; c++) {
        float s = 0.0f;
        for (int h = 0; h < PAIRS_K; h++) s += w[h][i] * v[h][c];
        const float t = l1 ? yi[c] - r * s : r * s;
        acc += l1 ? fabsf(t) : t * t;
    }
    return acc;
}

/* Rows i .. i + R - 1 of column j: R x CHUNK features at a time in registers while the K terms are
   added, then subtracted from y (ALTI) or squared (GlobEnc) and summed. R is a constant where this
   is inlined (ROWS for the whole tiles, 1 for the rows left), so the loops unroll into registers. */
static inline __attribute__((always_inline)) void tile(
    const int R, const int l1, const float *const *w, const float *const *v, const float *restrict y,
    const float *restrict rows, float *restrict o, const int i, const int d)
{
    const int dt = d - d % CHUNK;  /* features in whole chunks */
    vf red[ROWS];
    float r[ROWS], tail[ROWS];
#pragma GCC unroll 8
    for (int q = 0; q < R; q++) {
        red[q] = (vf){0};
        r[q] = rows ? rows[i + q] : 1.0f;
        tail[q] = one_pair(l1, w, v, y + (size_t)(i + q) * d, r[q], i + q, dt, d);
    }
    for (int c = 0; c < dt; c += CHUNK) {
        /* The weights are read again for every chunk: left to itself the compiler keeps all R x K
           broadcasts in registers across the chunks, and with R = 4 they spill. */
        const float *const *wl = w;
        __asm__("" : "+r"(wl));
        vf acc[ROWS][NV];
#pragma GCC unroll 8
        for (int q = 0; q < R; q++)
#pragma GCC unroll 8
            for (int n = 0; n < NV; n++) acc[q][n] = (vf){0};
#pragma GCC unroll 64
        for (int h = 0; h < PAIRS_K; h++) {
            vf vv[NV];
#pragma GCC unroll 8
            for (int n = 0; n < NV; n++) vv[n] = load(v[h] + c + n * LANES);
#pragma GCC unroll 8
            for (int q = 0; q < R; q++) {
                const float wq = wl[h][i + q];
#pragma GCC unroll 8
                for (int n = 0; n < NV; n++) acc[q][n] += wq * vv[n];
            }
        }
#pragma GCC unroll 8
        for (int q = 0; q < R; q++) {
            const float *yq = y + (size_t)(i + q) * d + c;
#pragma GCC unroll 8
            for (int n = 0; n < NV; n++) {
                if (l1) {
                    red[q] += vabs(load(yq + n * LANES) - r[q] * acc[q][n]);
                } else {
                    const vf t = r[q] * acc[q][n];
                    red[q] += t * t;
                }
            }
        }
    }
#pragma GCC unroll 8
    for (int q = 0; q < R; q++) {
        const float sum = total(red[q]) + tail[q];
        o[i + q] = l1 ? sum : sqrtf(sum);
    }
}

static inline __attribute__((always_inline)) void pairs(
    const int l1, const float *restrict W, const float *restrict V, const float *restrict y,
    const float *restrict rows, float *restrict out, const int *restrict first, const int *restrict stop,
    const int Lj, const int Li, const int d)
{
    for (int j = 0; j < Lj; j++) {
        const float *w[PAIRS_K], *v[PAIRS_K];  /* head h's weights (L_i,) and vector (d,) of column j */
        for (int h = 0; h < PAIRS_K; h++) {
            w[h] = W + ((size_t)h * Lj + j) * Li;
            v[h] = V + ((size_t)h * Lj + j) * d;
        }
        float *o = out + (size_t)j * Li;
        int i = first[j];
        for (; i + ROWS <= stop[j]; i += ROWS) tile(ROWS, l1, w, v, y, rows, o, i, d);
        for (; i < stop[j]; i++) tile(1, l1, w, v, y, rows, o, i, d);
    }
}

/* W (K, L_i, L_j) as the trace holds it, written transposed into Wc (K, L_j, L_i) a column at a
   time: strided reads, each column written in order. Measured on this project's machine (one thread,
   510 tokens, K = 12): 4.8 ms, against 13.8 ms for tiles of 32 x 32 read row by row and 8.6-13.6 for
   other tile shapes - there the scattered stores cost more than the strided loads here. */
void attnscope_transpose(int K, const float *W, float *Wc, int Li, int Lj)
{
    for (int h = 0; h < K; h++) {
        const float *src = W + (size_t)h * Li * Lj;
        float *dst = Wc + (size_t)h * Lj * Li;
        for (int j = 0; j < Lj; j++)
            for (int i = 0; i < Li; i++) dst[(size_t)j * Li + i] = src[(size_t)i * Lj + j];
    }
}

/* Per column j of Wc (K, L_j, L_i), the rows it reaches: first[j], stop[j] bound every i with some
   Wc[h, j, i] != 0, and i = j (the rows outside get t = 0 exactly: GlobEnc's 0 and ALTI's
   |y_i|_1 - |y_i - 0|_1 = 0). Each scan stops at its first nonzero weight: a dense column costs K
   reads at each end. */
void attnscope_reach(int K, const float *Wc, int *first, int *stop, int Li, int Lj)
{
    for (int j = 0; j < Lj; j++) {
        int f = j < Li ? j : Li, e = j < Li ? j + 1 : Li;  /* the diagonal is always reached */
        for (int h = 0; h < K; h++) {
            const float *col = Wc + ((size_t)h * Lj + j) * Li;
            for (int i = 0; i < f; i++)
                if (col[i] != 0.0f) { f = i; break; }
            for (int i = Li - 1; i >= e; i--)
                if (col[i] != 0.0f) { e = i + 1; break; }
        }
        first[j] = f;
        stop[j] = e;
    }
}

/* Subnormal floats read and made as zero while the pairs run (x86's DAZ and FTZ, AArch64's FZ), on
   this thread only, restored after. Why: a softmax weight below 2^-126 (0.5 % of MiniLM's first layer
   at 510 tokens reaches 1e-45) sends every multiply-add that reads it through a microcode assist;
   that layer took 36 ms against 19 for the others. What it changes: a term w * v with |w| < 1.2e-38,
   and a squared share under that, count as 0 - far below a float32 ulp of any sum they join. */
#if defined(__SSE__)
typedef unsigned int fpmode;
static inline fpmode flush_subnormals(void) { const fpmode old = _mm_getcsr(); _mm_setcsr(old | 0x8040); return old; }
static inline void restore_mode(fpmode old) { _mm_setcsr(old); }
#elif defined(__aarch64__)
typedef unsigned long fpmode;
static inline fpmode flush_subnormals(void)
{
    fpmode old;
    __asm__ volatile("mrs %0, fpcr" : "=r"(old));
    __asm__ volatile("msr fpcr, %0" : : "r"(old | (1UL << 24)));
    return old;
}
static inline void restore_mode(fpmode old) { __asm__ volatile("msr fpcr, %0" : : "r"(old)); }
#else
typedef int fpmode;
static inline fpmode flush_subnormals(void) { return 0; }
static inline void restore_mode(fpmode old) { (void)old; }
#endif

/* 0 on success; -1: another K than this library's (the caller builds that one). rows may be NULL (1). */
int attnscope_pairs(int K, int l1, const float *W, const float *V, const float *y, const float *rows, float *out,
                    const int *first, const int *stop, int Lj, int Li, int d)
{
    if (K != PAIRS_K) return -1;
    const fpmode mode = flush_subnormals();
    if (l1) pairs(1, W, V, y, rows, out, first, stop, Lj, Li, d);
    else pairs(0, W, V, y, rows, out, first, stop, Lj, Li, d);
    restore_mode(mode);
    return 0;
}
