/* conv.c's forward and input gradient of a grouped convolution of a few channels a group, over
 * layouts blocked by GK_B channels, written once and compiled per (block, group width): conv.c
 * includes this file for blocks of 8 (AVX2) and 16 (AVX-512) and groups of 2, 4 and 8.
 *
 * A block holds GK_B / GK_GW whole groups. Output lane b sums, over the filter's taps and its
 * group's GK_GW inputs c, wt[tap][c][b] times input lane (b / GK_GW) * GK_GW + c: per (tap, c)
 * one lane permutation of the input vector (a constant shuffle) and one vector multiply-add,
 * each c into its own accumulator so that the multiply-adds do not wait on each other.
 *
 * Before including: GK_B (8 or 16), GK_GW (2, 4 or 8, below GK_B), GK_TARGET (the attribute
 * compiling a function for the instruction set). Defines grp_block_<GK_B>_<GK_GW>. */

#define GK_CAT2_(a, b, c) a##_##b##_##c
#define GK_CAT_(a, b, c) GK_CAT2_(a, b, c)
#define GK_(name) GK_CAT_(name, GK_B, GK_GW)

typedef float GK_(vf) __attribute__((vector_size(GK_B * 4)));
typedef float GK_(vfu) __attribute__((vector_size(GK_B * 4), aligned(4), may_alias));
#define GK_LOAD(p) (*(const GK_(vfu) *)(p))
#define GK_STORE(p, v) (*(GK_(vfu) *)(p) = (v))
#define GK_IX(b, c) ((b) / GK_GW * GK_GW + (c))
#if GK_B == 8
#define GK_PERM(x, c)                                                                        \
    __builtin_shufflevector(x, x, GK_IX(0, c), GK_IX(1, c), GK_IX(2, c), GK_IX(3, c),        \
                            GK_IX(4, c), GK_IX(5, c), GK_IX(6, c), GK_IX(7, c))
#else
#define GK_PERM(x, c)                                                                        \
    __builtin_shufflevector(x, x, GK_IX(0, c), GK_IX(1, c), GK_IX(2, c), GK_IX(3, c),        \
                            GK_IX(4, c), GK_IX(5, c), GK_IX(6, c), GK_IX(7, c), GK_IX(8, c), \
                            GK_IX(9, c), GK_IX(10, c), GK_IX(11, c), GK_IX(12, c),           \
                            GK_IX(13, c), GK_IX(14, c), GK_IX(15, c))
#endif
#define GK_TERM(wp, c) acc[c] = acc[c] + GK_LOAD((wp) + (c) * GK_B) * GK_PERM(x, c)

#define GK_TAP(wp)                                                                           \
    do {                                                                                     \
        GK_TERM(wp, 0);                                                                      \
        GK_TERM(wp, 1);                                                                      \
        if (GK_GW >= 4) {                                                                    \
            GK_TERM(wp, 2 % GK_GW);                                                          \
            GK_TERM(wp, 3 % GK_GW);                                                          \
        }                                                                                    \
        if (GK_GW == 8) {                                                                    \
            GK_TERM(wp, 4 % GK_GW);                                                          \
            GK_TERM(wp, 5 % GK_GW);                                                          \
            GK_TERM(wp, 6 % GK_GW);                                                          \
            GK_TERM(wp, 7 % GK_GW);                                                          \
        }                                                                                    \
    } while (0)

/* One image's channel block cb of y (fwd: in x, w[ch][c]) or of dx (!fwd: in dy, the weight's
 * channel axes swapped, w[g0 + c][ch]). w plain: (C, GK_GW, kh, kw); the bias (fwd) or NULL.
 * Lanes past the channels (a padded last block) get zero weights, so they are written as zero.
 * At stride 1 the input gradient is a forward over dy with the filter flipped and the padding
 * (k - 1) dil - pad; at larger strides each x pixel takes the dy pixels whose tap reaches it. */
GK_TARGET static void GK_(grp_block)(const struct dw_grad *d, const float *in, float *out,
                                     const float *w, const float *bias, bool fwd, int64_t n,
                                     int64_t cb)
{
    enum { B = GK_B, GW = GK_GW };
    int64_t kh = d->kh, kw = d->kw, taps = kh * kw;
    /* the input gradient at stride 1, as a forward: flipped taps, padding (k - 1) dil - pad */
    bool flip = !fwd && d->sh == 1 && d->sw == 1;
    float wt[DW_MAX_TAPS * GW * B], b0[B];
    for (int64_t b = 0; b < B; b++) {
        int64_t ch = cb * B + b, g0 = ch / GW * GW;
        b0[b] = ch < d->c && bias ? bias[ch] : 0.0f;
        for (int64_t c = 0; c < GW; c++)
            for (int64_t t = 0; t < taps; t++)
                wt[((flip ? taps - 1 - t : t) * GW + c) * B + b] =
                    ch >= d->c ? 0.0f
                    : fwd      ? w[(ch * GW + c) * taps + t]
                               : w[((g0 + c) * GW + ch - g0) * taps + t];
    }
    const int64_t *is = fwd ? d->xs : d->ys, *os = fwd ? d->ys : d->xs;
    int64_t ih = fwd ? d->ih : d->oh, iw = fwd ? d->iw : d->ow;
    int64_t oh = fwd ? d->oh : d->ih, ow = fwd ? d->ow : d->iw;
    int64_t sh = fwd || flip ? d->sh : 1, sw = fwd || flip ? d->sw : 1;
    int64_t ph = fwd ? d->ph : (kh - 1) * d->dh - d->ph;
    int64_t pw = fwd ? d->pw : (kw - 1) * d->dw - d->pw;
    const float *inb = in + n * is[0] + cb * is[1];
    float *outb = out + n * os[0] + cb * os[1];
    GK_(vf) init = GK_LOAD(b0);
    for (int64_t oy = 0; oy < oh; oy++) {
        int64_t by = oy * sh - ph, i0 = 0, i1 = kh;
        if (fwd || flip)
            dw_taps(by, d->dh, kh, ih, &i0, &i1);
        for (int64_t ox = 0; ox < ow; ox++) {
            GK_(vf) acc[GW];
            acc[0] = init;
            for (int c = 1; c < GW; c++)
                acc[c] = (GK_(vf)){0};
            if (fwd || flip) {
                int64_t bx = ox * sw - pw, j0, j1;
                dw_taps(bx, d->dw, kw, iw, &j0, &j1);
                for (int64_t i = i0; i < i1; i++) {
                    const float *row = inb + (by + i * d->dh) * is[2] + bx * is[3];
                    const float *wrow = wt + i * kw * GW * B;
                    for (int64_t j = j0; j < j1; j++) {
                        GK_(vf) x = GK_LOAD(row + j * d->dw * is[3]);
                        GK_TAP(wrow + j * GW * B);
                    }
                }
            } else {   /* strided input gradient: the dy pixels whose tap reaches (oy, ox) */
                for (int64_t i = 0; i < kh; i++) {
                    int64_t ty = oy + d->ph - i * d->dh;
                    if (ty < 0 || ty % d->sh || ty / d->sh >= ih)
                        continue;
                    for (int64_t j = 0; j < kw; j++) {
                        int64_t tx = ox + d->pw - j * d->dw;
                        if (tx < 0 || tx % d->sw || tx / d->sw >= iw)
                            continue;
                        GK_(vf) x = GK_LOAD(inb + ty / d->sh * is[2] + tx / d->sw * is[3]);
                        GK_TAP(wt + (i * kw + j) * GW * B);
                    }
                }
            }
            for (int c = 1; c < GW; c++)
                acc[0] += acc[c];
            GK_STORE(outb + oy * os[2] + ox * os[3], acc[0]);
        }
    }
}

/* The range [*lo, *hi) of output positions o (0 <= o < on) whose input o * st - pad + off lies
 * inside [0, in). */
static inline void GK_(out_range)(int64_t st, int64_t pad, int64_t off, int64_t in, int64_t on,
                                  int64_t *lo, int64_t *hi)
{
    int64_t a = pad - off;                           /* o * st >= a */
    *lo = a <= 0 ? 0 : (a + st - 1) / st;
    int64_t z = in - 1 + pad - off;                  /* o * st <= z */
    *hi = z < 0 ? 0 : z / st + 1;
    if (*hi > on)
        *hi = on;
    if (*lo > *hi)
        *lo = *hi;
}

/* The weight (and bias) gradient of channel block cb: for each tap, one walk over the output
 * pixels whose input at that tap lies inside the plane, the tap's GK_GW sums of dy lane b
 * times input lane (b / GK_GW) * GK_GW + c in registers; the image's sums added to the
 * block's. dw plain: (C, GK_GW, kh, kw); db or NULL. */
GK_TARGET static void GK_(grp_grad_block)(const struct dw_grad *d, const float *xin,
                                          const float *dy, float *dw, float *db, int64_t cb)
{
    enum { B = GK_B, GW = GK_GW };
    int64_t kh = d->kh, kw = d->kw, taps = kh * kw;
    GK_(vf) sum[DW_MAX_TAPS * GW], sb = {0};
    for (int64_t t = 0; t < taps * GW; t++)
        sum[t] = (GK_(vf)){0};
    for (int64_t n = 0; n < d->n; n++) {
        const float *xn = xin + n * d->xs[0] + cb * d->xs[1];
        const float *gn = dy + n * d->ys[0] + cb * d->ys[1];
        if (db)
            for (int64_t oy = 0; oy < d->oh; oy++)
                for (int64_t ox = 0; ox < d->ow; ox++)
                    sb += GK_LOAD(gn + oy * d->ys[2] + ox * d->ys[3]);
        for (int64_t i = 0; i < kh; i++) {
            int64_t y0, y1;
            GK_(out_range)(d->sh, d->ph, i * d->dh, d->ih, d->oh, &y0, &y1);
            for (int64_t j = 0; j < kw; j++) {
                int64_t x0, x1;
                GK_(out_range)(d->sw, d->pw, j * d->dw, d->iw, d->ow, &x0, &x1);
                GK_(vf) acc[GW];
                for (int c = 0; c < GW; c++)
                    acc[c] = (GK_(vf)){0};
                int64_t xstep = d->sw * d->xs[3];
                for (int64_t oy = y0; oy < y1; oy++) {
                    const float *xr = xn + (oy * d->sh - d->ph + i * d->dh) * d->xs[2] +
                                      (x0 * d->sw - d->pw + j * d->dw) * d->xs[3];
                    const float *gr = gn + oy * d->ys[2] + x0 * d->ys[3];
                    for (int64_t ox = x0; ox < x1; ox++, xr += xstep, gr += d->ys[3]) {
                        GK_(vf) x = GK_LOAD(xr), g = GK_LOAD(gr);
                        acc[0] = acc[0] + g * GK_PERM(x, 0);
                        acc[1] = acc[1] + g * GK_PERM(x, 1);
                        if (GK_GW >= 4) {
                            acc[2 % GW] = acc[2 % GW] + g * GK_PERM(x, 2 % GK_GW);
                            acc[3 % GW] = acc[3 % GW] + g * GK_PERM(x, 3 % GK_GW);
                        }
                        if (GK_GW == 8) {
                            acc[4 % GW] = acc[4 % GW] + g * GK_PERM(x, 4 % GK_GW);
                            acc[5 % GW] = acc[5 % GW] + g * GK_PERM(x, 5 % GK_GW);
                            acc[6 % GW] = acc[6 % GW] + g * GK_PERM(x, 6 % GK_GW);
                            acc[7 % GW] = acc[7 % GW] + g * GK_PERM(x, 7 % GK_GW);
                        }
                    }
                }
                for (int c = 0; c < GW; c++)
                    sum[(i * kw + j) * GW + c] += acc[c];
            }
        }
    }
    float lanes[B];
    for (int64_t t = 0; t < taps; t++) {
        for (int64_t c = 0; c < GW; c++) {
            GK_STORE(lanes, sum[t * GW + c]);
            for (int64_t b = 0; b < B && cb * B + b < d->c; b++)
                dw[((cb * B + b) * GW + c) * taps + t] = lanes[b];
        }
    }
    if (db) {
        GK_STORE(lanes, sb);
        for (int64_t b = 0; b < B && cb * B + b < d->c; b++)
            db[cb * B + b] = lanes[b];
    }
}

#undef GK_CAT2_
#undef GK_CAT_
#undef GK_
#undef GK_LOAD
#undef GK_STORE
#undef GK_IX
#undef GK_PERM
#undef GK_TERM
#undef GK_TAP
#undef GK_B
#undef GK_GW
#undef GK_TARGET
