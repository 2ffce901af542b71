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
   AVX-512 machine, one thread, MiniLM's K = 12 at 510 tokens, random data, one process: 35-38 ms a
   layer against 84 ms for the batched-product-then-reduce torch path. No -ffast-math: the sums run
   in the order written (IEEE float32, fused multiply-adds where the CPU has them).

   Built by attnscope.attribution.pair_norms on first use with the machine's C compiler, once per K
   (-DPAIRS_K=K: the K loop unrolled; a library of every K would take half a minute to compile). */

#include <math.h>
#include <stddef.h>
#include <string.h>

#ifndef PAIRS_K
#error "compile with -DPAIRS_K=<the number of terms K>"
#endif

#ifndef ROWS
#define ROWS 2   /* rows of a tile (-DROWS=…, -DNV=… to try others): 2 rows of 2 vectors measured best,
                    38 ms beside 39-42 ms for 3 or 4 rows or 3 or 4 vectors (MiniLM's K, 510 tokens) */
#endif
#ifndef LANES
#define LANES 16 /* floats of one vector value */
#endif
#ifndef NV
#define NV 2     /* vector values of features a tile holds per row */
#endif

typedef float vf __attribute__((vector_size(LANES * sizeof(float))));
typedef int vi __attribute__((vector_size(LANES * sizeof(int))));

static inline vf load(const float *p) { vf v; memcpy(&v, p, sizeof v); return v; }
static inline vf vabs(vf x) { return (vf)((vi)x & 0x7fffffff); }
static inline float total(vf x) { float s = 0.0f; for (int l = 0; l < LANES; l++) s += x[l]; return s; }

/* One pair, plainly: the rows a tile does not cover and the features past the last whole 32. */
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

static inline __attribute__((always_inline)) void pairs(
    const int l1, const float *restrict W, const float *restrict V, const float *restrict y,
    const float *restrict rows, float *restrict out, const int *restrict first, const int *restrict stop,
    const int Lj, const int Li, const int d)
{
    const int dt = d - d % (NV * LANES);  /* features in whole tiles */
    for (int j = 0; j < Lj; j++) {
        const int i0 = first[j], i1 = stop[j];
        const float *w[PAIRS_K], *v[PAIRS_K];  /* head h's weights (L_i,) and vector (d,) of column j */
        for (int h = 0; h < PAIRS_K; h++) {
            w[h] = W + ((size_t)h * Lj + j) * Li;
            v[h] = V + ((size_t)h * Lj + j) * d;
        }
        float *o = out + (size_t)j * Li;
        int i = i0;
        for (; i + ROWS <= i1; i += ROWS) {
            vf red[ROWS];
            float r[ROWS], tail[ROWS];
#pragma GCC unroll 8
            for (int q = 0; q < ROWS; q++) {
                red[q] = (vf){0};
                r[q] = rows ? rows[i + q] : 1.0f;
                tail[q] = one_pair(l1, w, v, y + (size_t)(i + q) * d, r[q], i + q, dt, d);
            }
            for (int c = 0; c < dt; c += NV * LANES) {
                vf acc[ROWS][NV];
#pragma GCC unroll 8
                for (int q = 0; q < ROWS; q++)
#pragma GCC unroll 8
                    for (int n = 0; n < NV; n++) acc[q][n] = (vf){0};
#pragma GCC unroll 64
                for (int h = 0; h < PAIRS_K; h++) {
                    vf vv[NV];
#pragma GCC unroll 8
                    for (int n = 0; n < NV; n++) vv[n] = load(v[h] + c + n * LANES);
#pragma GCC unroll 8
                    for (int q = 0; q < ROWS; q++) {
                        const float wq = w[h][i + q];
#pragma GCC unroll 8
                        for (int n = 0; n < NV; n++) acc[q][n] += wq * vv[n];
                    }
                }
#pragma GCC unroll 8
                for (int q = 0; q < ROWS; q++) {
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
            for (int q = 0; q < ROWS; q++) {
                const float sum = total(red[q]) + tail[q];
                o[i + q] = l1 ? sum : sqrtf(sum);
            }
        }
        for (; i < i1; i++) {
            const float sum = one_pair(l1, w, v, y + (size_t)i * d, rows ? rows[i] : 1.0f, i, 0, d);
            o[i] = l1 ? sum : sqrtf(sum);
        }
    }
}

/* W (K, L_i, L_j) as the walk holds it, written transposed into Wc (K, L_j, L_i) in tiles of 32 x 32
   (a torch copy of the transposed view took 13 ms at 510 tokens, K = 12, this 2-3 ms), and per
   column j the rows it reaches: first[j], stop[j] bound every i with some W[h, i, j] != 0, and i = j
   (the rows outside get t = 0 exactly: GlobEnc's 0 and ALTI's |y_i|_1 - |y_i - 0|_1 = 0). */
void attnscope_columns(int K, const float *W, float *Wc, int *first, int *stop, int Li, int Lj)
{
    enum { T = 32 };
    for (int h = 0; h < K; h++) {
        const float *src = W + (size_t)h * Li * Lj;
        float *dst = Wc + (size_t)h * Lj * Li;
        for (int i0 = 0; i0 < Li; i0 += T)
            for (int j0 = 0; j0 < Lj; j0 += T) {
                const int i1 = i0 + T < Li ? i0 + T : Li, j1 = j0 + T < Lj ? j0 + T : Lj;
                for (int i = i0; i < i1; i++)
                    for (int j = j0; j < j1; j++) dst[(size_t)j * Li + i] = src[(size_t)i * Lj + j];
            }
    }
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

/* 0 on success; -1: another K than this library's (the caller builds that one). rows may be NULL (1). */
int attnscope_pairs(int K, int l1, const float *W, const float *V, const float *y, const float *rows, float *out,
                    const int *first, const int *stop, int Lj, int Li, int d)
{
    if (K != PAIRS_K) return -1;
    if (l1) pairs(1, W, V, y, rows, out, first, stop, Lj, Li, d);
    else pairs(0, W, V, y, rows, out, first, stop, Lj, Li, d);
    return 0;
}
