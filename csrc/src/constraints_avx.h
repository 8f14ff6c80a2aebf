/* constraints_avx.h -- the 3D distance and tetrahedron solves four constraints of one batch at
 * a time, included by constraints.c twice in the x86-64-v3 build: as the AVX2 functions
 * (PS_WIDE(name) = name##_avx2) and, where the compiler can target it, as AVX-512VL ones
 * (name##_avx512, chosen at run time where the CPU has AVX-512: its 32 vector registers and
 * masked stores). Both do the scalar solve's arithmetic (distance_3d, volume_tet) lane by lane
 * in its order, so the same bits; the corrections are applied as vectors (a lane the scalar
 * solve would skip stores what it loaded) and stored back row by row, PS_STORE_ROWS. No two
 * constraints of a batch share a particle, so the four lanes' rows are distinct. Each returns
 * the first entry it left to the scalar loop.
 *
 * The including file defines PS_WIDE(name), PS_WIDE_TARGET (the function attribute) and
 * PS_LOAD_ROWS and PS_STORE_ROWS (x, y, z of four lanes from and back to their rows of a
 * 3-column array). */

/* Distance constraints order[t .. stop) of one batch, four at a time (distance_3d's solve;
 * with follow_vel 0 the positions-only one, which neither reads nor writes vel). */
static inline __attribute__((always_inline)) PS_WIDE_TARGET int PS_WIDE(distance_batch_3d)(double *pos, double *vel, double *withheld,
                                                     double *lambda, const double *inv_mass,
                                                     const double *prev_pos,
                                                     const int32_t *pairs,
                                                     const double *rest_length,
                                                     const double *compliance,
                                                     const int32_t *order, int t, int stop,
                                                     int follow_vel, double inv_h_, double hh_)
{
    const __m256d zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0);
    const __m256d min_length = _mm256_set1_pd(PS_MIN_LENGTH), sign = _mm256_set1_pd(-0.0);
    const __m256d cap = _mm256_set1_pd(PS_MAX_CORRECTION_SPEED);
    const __m256d inv_h = _mm256_set1_pd(inv_h_), hh = _mm256_set1_pd(hh_);
    for (; t + 4 <= stop; t += 4) {
        int j[4] = {order[t], order[t + 1], order[t + 2], order[t + 3]};
        long a[4], b[4];
        for (int e = 0; e < 4; e++) a[e] = pairs[2 * j[e]], b[e] = pairs[2 * j[e] + 1];
        __m256d wa = _mm256_set_pd(inv_mass[a[3]], inv_mass[a[2]], inv_mass[a[1]], inv_mass[a[0]]);
        __m256d wb = _mm256_set_pd(inv_mass[b[3]], inv_mass[b[2]], inv_mass[b[1]], inv_mass[b[0]]);
        __m256d w = _mm256_add_pd(wa, wb);
        __m256d xa[3], xb[3], va[3], vb[3], d[3], g[3];
        PS_LOAD_ROWS(pos, a, &xa[0], &xa[1], &xa[2]);
        PS_LOAD_ROWS(pos, b, &xb[0], &xb[1], &xb[2]);
        if (follow_vel) {
            PS_LOAD_ROWS(vel, a, &va[0], &va[1], &va[2]);
            PS_LOAD_ROWS(vel, b, &vb[0], &vb[1], &vb[2]);
        }
        for (int c = 0; c < 3; c++) d[c] = _mm256_sub_pd(xb[c], xa[c]);
        __m256d len2 = _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(zero, _mm256_mul_pd(d[0], d[0])),
                                                   _mm256_mul_pd(d[1], d[1])),
                                     _mm256_mul_pd(d[2], d[2]));
        __m256d len = _mm256_sqrt_pd(len2);
        __m256d live = _mm256_and_pd(_mm256_cmp_pd(w, zero, _CMP_NEQ_UQ),
                                     _mm256_cmp_pd(len, min_length, _CMP_GT_OQ));
        __m256d il = _mm256_div_pd(one, len);
        for (int c = 0; c < 3; c++) g[c] = _mm256_mul_pd(d[c], il);
        __m256d rest = _mm256_set_pd(rest_length[j[3]], rest_length[j[2]], rest_length[j[1]],
                                     rest_length[j[0]]);
        __m256d comp = _mm256_set_pd(compliance[j[3]], compliance[j[2]], compliance[j[1]],
                                     compliance[j[0]]);
        __m256d lam = _mm256_set_pd(lambda[j[3]], lambda[j[2]], lambda[j[1]], lambda[j[0]]);
        __m256d at = _mm256_div_pd(comp, hh);
        __m256d sv = _mm256_div_pd(_mm256_sub_pd(_mm256_xor_pd(_mm256_sub_pd(len, rest), sign),
                                                 _mm256_mul_pd(at, lam)),
                                   _mm256_add_pd(w, at));
        __m256d lam_new = _mm256_blendv_pd(lam, _mm256_add_pd(lam, sv), live);
        __m256d du = _mm256_mul_pd(_mm256_mul_pd(w, sv), inv_h);
        __m256d abs_du = _mm256_andnot_pd(sign, du);
        __m256d u = zero;
        int capped = 0;
        if (follow_vel) {
            for (int c = 0; c < 3; c++)
                u = _mm256_add_pd(u, _mm256_mul_pd(_mm256_sub_pd(vb[c], va[c]), g[c]));
            capped = 1;  /* (worked out below) */
        } else if (_mm256_movemask_pd(_mm256_and_pd(_mm256_cmp_pd(abs_du, cap, _CMP_NLE_UQ), live))) {
            /* some lane past the cap (rare): its u, relative_speed's, from the positions */
            __m256d pa[3], pb[3], ha[3], hb[3];
            PS_LOAD_ROWS(prev_pos, a, &pa[0], &pa[1], &pa[2]);
            PS_LOAD_ROWS(prev_pos, b, &pb[0], &pb[1], &pb[2]);
            PS_LOAD_ROWS(withheld, a, &ha[0], &ha[1], &ha[2]);
            PS_LOAD_ROWS(withheld, b, &hb[0], &hb[1], &hb[2]);
            for (int c = 0; c < 3; c++) {
                __m256d r = _mm256_sub_pd(
                    _mm256_mul_pd(_mm256_sub_pd(_mm256_sub_pd(xb[c], pb[c]), _mm256_sub_pd(xa[c], pa[c])),
                                  inv_h),
                    _mm256_sub_pd(hb[c], ha[c]));
                u = _mm256_add_pd(u, _mm256_mul_pd(r, g[c]));
            }
            capped = 1;
        }
        /* follow(u, w s / h); a dead lane counts as within (its f is not used); in the
         * positions-only solve a lane within the cap is within whatever u is */
        __m256d f = one, within = one;
        if (capped) {
            __m256d abs_u = _mm256_andnot_pd(sign, u);
            __m256d most = _mm256_blendv_pd(cap, _mm256_add_pd(abs_u, cap),
                                            _mm256_cmp_pd(_mm256_mul_pd(du, u), zero, _CMP_LT_OQ));
            within = _mm256_cmp_pd(abs_du, most, _CMP_LE_OQ);
            if (!follow_vel)
                within = _mm256_or_pd(within, _mm256_cmp_pd(abs_du, cap, _CMP_LE_OQ));
            capped = _mm256_movemask_pd(_mm256_andnot_pd(within, live));
            if (capped) f = _mm256_blendv_pd(_mm256_div_pd(most, abs_du), one, within);
        }
        __m256d sa = _mm256_mul_pd(wa, sv), sb = _mm256_mul_pd(wb, sv);
        for (int c = 0; c < 3; c++) {  /* distance_3d's da, db and its updates */
            __m256d da = _mm256_mul_pd(sa, g[c]), db = _mm256_mul_pd(sb, g[c]);
            xa[c] = _mm256_blendv_pd(xa[c], _mm256_sub_pd(xa[c], da), live);
            xb[c] = _mm256_blendv_pd(xb[c], _mm256_add_pd(xb[c], db), live);
            if (follow_vel) {
                va[c] = _mm256_blendv_pd(
                    va[c], _mm256_sub_pd(va[c], _mm256_mul_pd(_mm256_mul_pd(da, inv_h), f)), live);
                vb[c] = _mm256_blendv_pd(
                    vb[c], _mm256_add_pd(vb[c], _mm256_mul_pd(_mm256_mul_pd(db, inv_h), f)), live);
            }
        }
        PS_STORE_ROWS(pos, a, xa[0], xa[1], xa[2]);
        PS_STORE_ROWS(pos, b, xb[0], xb[1], xb[2]);
        if (follow_vel) {
            PS_STORE_ROWS(vel, a, va[0], va[1], va[2]);
            PS_STORE_ROWS(vel, b, vb[0], vb[1], vb[2]);
        }
        double ln[4];
        _mm256_storeu_pd(ln, lam_new);
        for (int e = 0; e < 4; e++) lambda[j[e]] = ln[e];
        if (capped) {  /* rare: the capped lanes' withheld shares, as distance_3d adds them */
            double fl[4], sal[4], sbl[4], gl[3][4];
            _mm256_storeu_pd(fl, f);
            _mm256_storeu_pd(sal, sa);
            _mm256_storeu_pd(sbl, sb);
            for (int c = 0; c < 3; c++) _mm256_storeu_pd(gl[c], g[c]);
            for (int e = 0; e < 4; e++) {
                if (!((capped >> e) & 1) || !(fl[e] < 1.0)) continue;
                for (int c = 0; c < 3; c++)
                    withhold(withheld, a[e] * 3 + c, b[e] * 3 + c, sal[e] * gl[c][e],
                             sbl[e] * gl[c][e], inv_h_, fl[e]);
            }
        }
    }
    return t;
}

/* Tetrahedra order[t .. stop) of one batch, four at a time (volume_tet's solve; with
 * follow_vel 0 it neither reads nor writes vel). */
static inline __attribute__((always_inline)) PS_WIDE_TARGET int PS_WIDE(volume_batch_3d)(double *pos, double *vel, double *withheld,
                                                   double *lambda, const double *inv_mass,
                                                   const int32_t *simplices,
                                                   const double *rest_volume,
                                                   const double *compliance,
                                                   const int32_t *order, int t, int stop,
                                                   int follow_vel, double inv_h_, double hh)
{
    const __m256d zero = _mm256_setzero_pd(), sign = _mm256_set1_pd(-0.0), one = _mm256_set1_pd(1.0);
    const __m256d six = _mm256_set1_pd(6.0), thirty_six = _mm256_set1_pd(36.0);
    const __m256d ih2 = _mm256_set1_pd(inv_h_ * inv_h_), hhv = _mm256_set1_pd(hh);
    const __m256d inv_h = _mm256_set1_pd(inv_h_), cap = _mm256_set1_pd(PS_MAX_CORRECTION_SPEED);
    const __m256d cap2 = _mm256_set1_pd(PS_MAX_CORRECTION_SPEED * PS_MAX_CORRECTION_SPEED);
    for (; t + 4 <= stop; t += 4) {
        int j[4] = {order[t], order[t + 1], order[t + 2], order[t + 3]};
        if (t + PS_AHEAD + 4 <= stop)  /* the corners and data of the tetrahedra PS_AHEAD on */
            for (int e = 0; e < 4; e++) {
                int k = order[t + PS_AHEAD + e];
                _mm_prefetch((const char *)(simplices + 4L * k), _MM_HINT_T0);
                _mm_prefetch((const char *)(lambda + k), _MM_HINT_T0);
                _mm_prefetch((const char *)(rest_volume + k), _MM_HINT_T0);
                _mm_prefetch((const char *)(compliance + k), _MM_HINT_T0);
            }
        long r[4][4];  /* r[i][lane]: corner i's row */
        for (int e = 0; e < 4; e++) {
            const int32_t *s = simplices + 4L * j[e];
            for (int i = 0; i < 4; i++) r[i][e] = s[i];
        }
        __m256d p[4][3];
        for (int i = 0; i < 4; i++) PS_LOAD_ROWS(pos, r[i], &p[i][0], &p[i][1], &p[i][2]);
        __m256d e1[3], e2[3], e3[3], G[4][3];
        for (int c = 0; c < 3; c++) {
            e1[c] = _mm256_sub_pd(p[1][c], p[0][c]);
            e2[c] = _mm256_sub_pd(p[2][c], p[0][c]);
            e3[c] = _mm256_sub_pd(p[3][c], p[0][c]);
        }
#define PS_CROSS(out, u, v)                                                                    \
    out[0] = _mm256_sub_pd(_mm256_mul_pd(u[1], v[2]), _mm256_mul_pd(u[2], v[1]));              \
    out[1] = _mm256_sub_pd(_mm256_mul_pd(u[2], v[0]), _mm256_mul_pd(u[0], v[2]));              \
    out[2] = _mm256_sub_pd(_mm256_mul_pd(u[0], v[1]), _mm256_mul_pd(u[1], v[0]))
        PS_CROSS(G[1], e2, e3);
        PS_CROSS(G[2], e3, e1);
        PS_CROSS(G[3], e1, e2);
#undef PS_CROSS
        for (int c = 0; c < 3; c++)
            G[0][c] = _mm256_xor_pd(_mm256_add_pd(_mm256_add_pd(G[1][c], G[2][c]), G[3][c]), sign);
        __m256d rest = _mm256_set_pd(rest_volume[j[3]], rest_volume[j[2]], rest_volume[j[1]],
                                     rest_volume[j[0]]);
        __m256d vol6 = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(e1[0], G[1][0]),
                                                   _mm256_mul_pd(e1[1], G[1][1])),
                                     _mm256_mul_pd(e1[2], G[1][2]));
        __m256d C = _mm256_sub_pd(_mm256_div_pd(vol6, six), rest);
        __m256d w[4], D = zero, top = zero;
        for (int i = 0; i < 4; i++) {
            w[i] = _mm256_set_pd(inv_mass[r[i][3]], inv_mass[r[i][2]], inv_mass[r[i][1]],
                                 inv_mass[r[i][0]]);
            __m256d g2 = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(G[i][0], G[i][0]),
                                                     _mm256_mul_pd(G[i][1], G[i][1])),
                                       _mm256_mul_pd(G[i][2], G[i][2]));
            D = _mm256_add_pd(D, _mm256_mul_pd(w[i], g2));
            __m256d v = _mm256_mul_pd(_mm256_mul_pd(w[i], w[i]), g2);
            top = _mm256_blendv_pd(top, v, _mm256_cmp_pd(v, top, _CMP_GT_OQ));
        }
        __m256d comp = _mm256_set_pd(compliance[j[3]], compliance[j[2]], compliance[j[1]],
                                     compliance[j[0]]);
        __m256d lam = _mm256_set_pd(lambda[j[3]], lambda[j[2]], lambda[j[1]], lambda[j[0]]);
        /* compliance 0 (every lane): alpha~ = 0 / h^2 is the compliance itself, bit for bit */
        __m256d at = _mm256_movemask_pd(_mm256_cmp_pd(comp, zero, _CMP_NEQ_UQ))
                     ? _mm256_div_pd(comp, hhv) : comp;
        __m256d num = _mm256_mul_pd(six, _mm256_sub_pd(_mm256_xor_pd(C, sign), _mm256_mul_pd(at, lam)));
        __m256d k = _mm256_div_pd(num, _mm256_add_pd(D, _mm256_mul_pd(thirty_six, at)));
        __m256d live = _mm256_cmp_pd(D, zero, _CMP_GT_OQ);  /* volume_tet skips !(D > 0) */
        __m256d lam_new = _mm256_blendv_pd(lam, _mm256_add_pd(lam, _mm256_mul_pd(six, k)), live);
        __m256d speed2 = _mm256_mul_pd(_mm256_mul_pd(_mm256_mul_pd(k, k), ih2), top);
        __m256d over = _mm256_and_pd(_mm256_cmp_pd(speed2, cap2, _CMP_GT_OQ), live);
        int capped = _mm256_movemask_pd(over);
        __m256d f = capped ? _mm256_blendv_pd(one, _mm256_div_pd(cap, _mm256_sqrt_pd(speed2)), over)
                           : one;
        double ln[4];
        _mm256_storeu_pd(ln, lam_new);
        for (int e = 0; e < 4; e++) lambda[j[e]] = ln[e];
        __m256d wk[4];
        for (int i = 0; i < 4; i++) {  /* volume_tet's wk, dx and its updates */
            __m256d x[3], v[3];
            wk[i] = _mm256_mul_pd(w[i], k);
            if (follow_vel) PS_LOAD_ROWS(vel, r[i], &v[0], &v[1], &v[2]);
            for (int c = 0; c < 3; c++) {
                __m256d dx = _mm256_mul_pd(wk[i], G[i][c]);
                x[c] = _mm256_blendv_pd(p[i][c], _mm256_add_pd(p[i][c], dx), live);
                if (follow_vel)
                    v[c] = _mm256_blendv_pd(
                        v[c], _mm256_add_pd(v[c], _mm256_mul_pd(_mm256_mul_pd(dx, inv_h), f)), live);
            }
            PS_STORE_ROWS(pos, r[i], x[0], x[1], x[2]);
            if (follow_vel) PS_STORE_ROWS(vel, r[i], v[0], v[1], v[2]);
        }
        if (capped) {  /* rare: the capped lanes' withheld shares, as volume_tet adds them */
            double fl[4], wkl[4][4], Gl[4][3][4];
            _mm256_storeu_pd(fl, f);
            for (int i = 0; i < 4; i++) {
                _mm256_storeu_pd(wkl[i], wk[i]);
                for (int c = 0; c < 3; c++) _mm256_storeu_pd(Gl[i][c], G[i][c]);
            }
            for (int e = 0; e < 4; e++) {
                if (!((capped >> e) & 1) || !(fl[e] < 1.0)) continue;
                for (int i = 0; i < 4; i++)
                    for (int c = 0; c < 3; c++) {
                        long q = 3L * r[i][e] + c;
                        withheld[q] = withheld[q] + wkl[i][e] * Gl[i][c][e] * inv_h_ * (1.0 - fl[e]);
                    }
            }
        }
    }
    return t;
}

/* The two solves as functions of their own, follow_vel a constant in each (the positions-only
 * one keeps no velocity in its registers): `way` names the function, `follow` its constant. */
#define PS_DISTANCE_WAY(way, follow)                                                         \
    static PS_WIDE_TARGET int PS_WIDE(way)(                                                  \
        double *pos, double *vel, double *withheld, double *lambda, const double *inv_mass,  \
        const double *prev_pos, const int32_t *pairs, const double *rest_length,            \
        const double *compliance, const int32_t *order, int t, int stop, double inv_h,      \
        double hh)                                                                           \
    {                                                                                        \
        return PS_WIDE(distance_batch_3d)(pos, vel, withheld, lambda, inv_mass, prev_pos,     \
                                          pairs, rest_length, compliance, order, t, stop,    \
                                          follow, inv_h, hh);                                \
    }
#define PS_VOLUME_WAY(way, follow)                                                           \
    static PS_WIDE_TARGET int PS_WIDE(way)(                                                  \
        double *pos, double *vel, double *withheld, double *lambda, const double *inv_mass,  \
        const int32_t *simplices, const double *rest_volume, const double *compliance,      \
        const int32_t *order, int t, int stop, double inv_h, double hh)                      \
    {                                                                                        \
        return PS_WIDE(volume_batch_3d)(pos, vel, withheld, lambda, inv_mass, simplices,      \
                                        rest_volume, compliance, order, t, stop, follow,     \
                                        inv_h, hh);                                          \
    }
PS_DISTANCE_WAY(distance_batch_3d_follow, 1)
PS_DISTANCE_WAY(distance_batch_3d_still, 0)
PS_VOLUME_WAY(volume_batch_3d_follow, 1)
PS_VOLUME_WAY(volume_batch_3d_still, 0)
#undef PS_DISTANCE_WAY
#undef PS_VOLUME_WAY
