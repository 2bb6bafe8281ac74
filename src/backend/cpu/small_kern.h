/* The kernels of small.c, written once for vectors of SK_VW floats and compiled once per
 * instruction set: small.c includes this file for AVX-512 (16 floats a register), AVX2 (8) and
 * the baseline (4), and picks the set the CPU has when it makes a product.
 *
 * Why not one vector type for every clone: GCC keeps a vector wider than the target's
 * registers in memory. Written for AVX-512's 16 floats, the AVX2 build of these loops ran every
 * multiply-add through the stack, at 3.5 G multiply-adds a second on one core where its own
 * registers give 25 (RegNetY's squeeze-excitation fcs took 0.2-0.3 ms a phase).
 *
 * Before including: SK_VW (4, 8 or 16), SK_SUFFIX (appended to every name defined here),
 * SK_TARGET (the attribute compiling a function for the instruction set, or nothing). */

#define SK_CAT2_(a, b) a##_##b
#define SK_CAT_(a, b) SK_CAT2_(a, b)
#define SK_(name) SK_CAT_(name, SK_SUFFIX)
#define SK_NV (16 / SK_VW)   /* vectors in a block's 16 columns */
#if SK_VW == 16
#define SK_NT_W 4            /* gemm_nt's rows of w a block: 4 x 4 accumulators of 32 */
#else
#define SK_NT_W 2            /* 4 x 2: eight accumulators and six operands in 16 registers */
#endif
#if SK_VW == 4
#define SK_ROWS 2            /* gemm16's rows a block: 2 x 4 accumulators of SSE's 16 */
#else
#define SK_ROWS 4
#endif

typedef float SK_(vf) __attribute__((vector_size(SK_VW * 4)));
typedef float SK_(vfu) __attribute__((vector_size(SK_VW * 4), aligned(4), may_alias));
#define SK_LOAD(p) (*(const SK_(vfu) *)(p))
#define SK_STORE(p, v) (*(SK_(vfu) *)(p) = (v))

/* 16 columns of C (m, 16) = A (m, q) B (q, 16) (+ bias (16) on every row), A's element (i, j)
 * at a[i ars + j acs], B's rows brs apart and C's crs apart. Blocks of SK_ROWS rows stay in
 * registers while q runs, so each step loads only B's 16 floats (and broadcasts one of A's a
 * row). */
SK_TARGET static void SK_(gemm16)(int64_t m, int64_t q, const float *a, int64_t ars,
                                  int64_t acs, const float *b, int64_t brs, float *c,
                                  int64_t crs, const float *bias)
{
    SK_(vf) init[SK_NV];
    for (int h = 0; h < SK_NV; h++) {
        init[h] = (SK_(vf)){0};
        if (bias)
            init[h] = SK_LOAD(bias + h * SK_VW);
    }
    int64_t i0 = 0;
    for (; i0 + SK_ROWS <= m; i0 += SK_ROWS) {
        SK_(vf) acc[SK_ROWS][SK_NV];
#pragma GCC unroll 16
        for (int i = 0; i < SK_ROWS; i++)
#pragma GCC unroll 4
            for (int h = 0; h < SK_NV; h++)
                acc[i][h] = init[h];
        const float *ai = a + i0 * ars, *bj = b;
        for (int64_t t = 0; t < q; t++, ai += acs, bj += brs) {
            SK_(vf) bv[SK_NV];
#pragma GCC unroll 4
            for (int h = 0; h < SK_NV; h++)
                bv[h] = SK_LOAD(bj + h * SK_VW);
#pragma GCC unroll 16
            for (int i = 0; i < SK_ROWS; i++) {
                float av = ai[i * ars];
#pragma GCC unroll 4
                for (int h = 0; h < SK_NV; h++)
                    acc[i][h] += av * bv[h];
            }
        }
#pragma GCC unroll 16
        for (int i = 0; i < SK_ROWS; i++)
#pragma GCC unroll 4
            for (int h = 0; h < SK_NV; h++)
                SK_STORE(c + (i0 + i) * crs + h * SK_VW, acc[i][h]);
    }
    for (; i0 < m; i0++) {
        SK_(vf) acc[SK_NV];
#pragma GCC unroll 4
        for (int h = 0; h < SK_NV; h++)
            acc[h] = init[h];
        const float *ai = a + i0 * ars, *bj = b;
        for (int64_t t = 0; t < q; t++, ai += acs, bj += brs)
#pragma GCC unroll 4
            for (int h = 0; h < SK_NV; h++)
                acc[h] += ai[0] * SK_LOAD(bj + h * SK_VW);
#pragma GCC unroll 4
        for (int h = 0; h < SK_NV; h++)
            SK_STORE(c + i0 * crs + h * SK_VW, acc[h]);
    }
}

/* C (m, p) = A (m, q) B (q, p) (+ bias (p)), in blocks of 16 columns; the last p % 16 columns
 * through `tail` ((q + m + 1) x 16 floats): B's and the bias's columns copied there padded with
 * zeros, the block computed into it, its valid columns copied out. */
SK_TARGET static void SK_(gemm)(int64_t m, int64_t p, int64_t q, const float *a, int64_t ars,
                                int64_t acs, const float *b, int64_t brs, float *c, int64_t crs,
                                const float *bias, float *tail)
{
    int64_t p16 = p - p % 16, rem = p - p16;
    for (int64_t j0 = 0; j0 < p16; j0 += 16)
        SK_(gemm16)(m, q, a, ars, acs, b + j0, brs, c + j0, crs, bias ? bias + j0 : NULL);
    if (!rem)
        return;
    float *bt = tail, *ct = tail + q * 16, *bb = ct + m * 16;
    for (int64_t t = 0; t < q; t++)
        for (int64_t l = 0; l < 16; l++)
            bt[t * 16 + l] = l < rem ? b[t * brs + p16 + l] : 0.0f;
    for (int64_t l = 0; l < 16; l++)
        bb[l] = bias && l < rem ? bias[p16 + l] : 0.0f;
    SK_(gemm16)(m, q, a, ars, acs, bt, 16, ct, 16, bias ? bb : NULL);
    for (int64_t i = 0; i < m; i++)
        for (int64_t l = 0; l < rem; l++)
            c[i * crs + p16 + l] = ct[i * 16 + l];
}

/* y (m, n) = x (m, k) w^T + b (or none), w (n, k) as it is: 4 rows of x against SK_NT_W of w
 * at a time, each pair's SK_VW lanes of partial sums in a register while k runs, summed at the
 * end. */
SK_TARGET static void SK_(gemm_nt)(int64_t m, int64_t n, int64_t k, const float *x, int64_t xrs,
                                   const float *w, float *y, int64_t yrs, const float *b)
{
    int64_t kv = k - k % SK_VW;
    for (int64_t i0 = 0; i0 < m; i0 += 4) {
        const float *xr[4];   /* past the last row: the last row again, not stored */
        for (int i = 0; i < 4; i++)
            xr[i] = x + (i0 + i < m ? i0 + i : m - 1) * xrs;
        for (int64_t j0 = 0; j0 < n; j0 += SK_NT_W) {
            const float *wr[SK_NT_W];
            for (int j = 0; j < SK_NT_W; j++)
                wr[j] = w + (j0 + j < n ? j0 + j : n - 1) * k;
            SK_(vf) acc[4][SK_NT_W];
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++)
#pragma GCC unroll 4
                for (int j = 0; j < SK_NT_W; j++)
                    acc[i][j] = (SK_(vf)){0};
            for (int64_t t = 0; t < kv; t += SK_VW) {
                SK_(vf) wv[SK_NT_W];
#pragma GCC unroll 4
                for (int j = 0; j < SK_NT_W; j++)
                    wv[j] = SK_LOAD(wr[j] + t);
#pragma GCC unroll 4
                for (int i = 0; i < 4; i++) {
                    SK_(vf) xv = SK_LOAD(xr[i] + t);
#pragma GCC unroll 4
                    for (int j = 0; j < SK_NT_W; j++)
                        acc[i][j] += xv * wv[j];
                }
            }
            float lanes[4][SK_NT_W][SK_VW];   /* acc read back only by constant indices */
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++)
#pragma GCC unroll 4
                for (int j = 0; j < SK_NT_W; j++)
                    SK_STORE(lanes[i][j], acc[i][j]);
            for (int i = 0; i < 4 && i0 + i < m; i++) {
                for (int j = 0; j < SK_NT_W && j0 + j < n; j++) {
                    float sum = b ? b[j0 + j] : 0.0f;
                    for (int l = 0; l < SK_VW; l++)
                        sum += lanes[i][j][l];
                    for (int64_t t = kv; t < k; t++)
                        sum += xr[i][t] * wr[j][t];
                    y[(i0 + i) * yrs + j0 + j] = sum;
                }
            }
        }
    }
}

#undef SK_LOAD
#undef SK_STORE
#undef SK_ROWS
#undef SK_NT_W
#undef SK_NV
#undef SK_
#undef SK_CAT_
#undef SK_CAT2_
#undef SK_VW
#undef SK_SUFFIX
#undef SK_TARGET
