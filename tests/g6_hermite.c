/* The GRAPE-6 C API of libwebgrav.so driving a short 4th-order Hermite run
 * with individual block time steps, as a GRAPE-6 host code would (NBODY1
 * style: host prediction of the i-particles, f64 corrector, Aarseth time
 * steps). Checks the relative energy error, the nearest neighbours of
 * g6calc_lasthalf2 and a neighbour list against brute force in double.
 * Built and run by .ci/test:
 *   gcc -std=c99 -O2 -Wall -Werror -I src/g6 tests/g6_hermite.c \
 *       -L target/debug -lwebgrav -lm -o target/g6_hermite
 *   LD_LIBRARY_PATH=target/debug target/g6_hermite
 */
#include "g6_host.h"
#include "g6.h"
#include <stdio.h>
#include <stdlib.h>

#define N 256
#define ETA 0.02
#define EPS2 (1.0 / 4096.0) /* eps = 1/64 */
#define DT_MAX 0.125
#define T_END 0.25

static double m[N], x[N][3], v[N][3], a[N][3], j[N][3], a2[N][3], a3[N][3];
static double t0[N], dt[N];
static int idx[N];

static void plummer_model(void) { plummer(12345, N, m, x, v); }

static void send_j(int i) {
    double ha[3], j6[3], k18[3];
    for (int k = 0; k < 3; k++) {
        ha[k] = a[i][k] / 2.0;
        j6[k] = j[i][k] / 6.0;
        k18[k] = a2[i][k] / 18.0;
    }
    if (g6_set_j_particle(0, i, idx[i], t0[i], dt[i], m[i], k18, j6, ha, v[i], x[i])) exit(1);
}

/* Host prediction of particle i to t (what the GPU does for j). */
static void predict(int i, double t, double xp[3], double vp[3]) {
    double h = t - t0[i];
    for (int k = 0; k < 3; k++) {
        xp[k] = x[i][k] + h * (v[i][k] + h / 2 * (a[i][k] + h / 3 * (j[i][k] + h / 4 * a2[i][k])));
        vp[k] = v[i][k] + h * (a[i][k] + h / 2 * (j[i][k] + h / 3 * a2[i][k]));
    }
}

/* Forces on the n particles list[] at time t; results in fa, fj, fp, nn. */
static void forces(double t, int n, const int *list, double (*fa)[3], double (*fj)[3], double *fp,
                   int *nn, double h2) {
    static double xi[N][3], vi[N][3], h2s[N];
    static int ids[N];
    if (g6_set_ti(0, t)) exit(1);
    int np = g6_npipes();
    for (int s = 0; s < n; s += np) {
        int ni = n - s < np ? n - s : np;
        for (int k = 0; k < ni; k++) {
            int i = list[s + k];
            predict(i, t, xi[k], vi[k]);
            ids[k] = idx[i];
            h2s[k] = h2;
        }
        if (g6calc_firsthalf(0, N, ni, ids, xi, vi, NULL, NULL, NULL, EPS2, h2s)) exit(1);
        if (g6calc_lasthalf2(0, N, ni, ids, xi, vi, EPS2, h2s, fa + s, fj + s, fp + s, nn + s))
            exit(1);
    }
}

static double energy(double t) {
    static double fa[N][3], fj[N][3], fp[N];
    static int nn[N], all[N];
    for (int i = 0; i < N; i++) all[i] = i;
    forces(t, N, all, fa, fj, fp, nn, 0.0);
    double e = 0.0;
    for (int i = 0; i < N; i++) {
        double xp[3], vp[3];
        predict(i, t, xp, vp);
        e += 0.5 * m[i] * (vp[0] * vp[0] + vp[1] * vp[1] + vp[2] * vp[2]) + 0.5 * m[i] * fp[i];
    }
    return e;
}

int main(void) {
    plummer_model();
    if (g6_open(0)) return 1;
    printf("g6: %d pipes, j-memory %d\n", g6_npipes(), g6_get_jmemsize(0));
    for (int i = 0; i < N; i++) {
        idx[i] = i;
        t0[i] = 0.0;
        send_j(i);
    }

    /* Initial forces; nearest neighbours and a neighbour list checked
     * against brute force in double. */
    static double fa[N][3], fj[N][3], fp[N];
    static int nn[N], list[N];
    for (int i = 0; i < N; i++) list[i] = i;
    forces(0.0, N, list, fa, fj, fp, nn, 0.0);
    int bad_nn = 0;
    for (int i = 0; i < N; i++) {
        double best = 1e300, got = -1;
        for (int k = 0; k < N; k++) {
            if (k == i) continue;
            double d2 = 0;
            for (int c = 0; c < 3; c++) d2 += (x[k][c] - x[i][c]) * (x[k][c] - x[i][c]);
            if (d2 < best) best = d2;
            if (k == nn[i]) got = d2;
        }
        /* The GPU's neighbour must be at the minimal distance (to f32
         * rounding of the distance: ties within 1e-5 are equivalent). */
        if (!(got >= 0 && fabs(got - best) <= 1e-5 * best)) bad_nn++;
    }
    printf("nearest neighbours: %d of %d wrong\n", bad_nn, N);
    if (bad_nn) return 1;

    /* Neighbours of particle 0 within r = 0.3. */
    {
        double xi[1][3], vi[1][3], h2[1] = {0.09}, oa[1][3], oj[1][3], op[1];
        int id[1] = {0}, on[1];
        for (int c = 0; c < 3; c++) {
            xi[0][c] = x[0][c];
            vi[0][c] = v[0][c];
        }
        if (g6_set_ti(0, 0.0)) return 1;
        if (g6calc_firsthalf(0, N, 1, id, xi, vi, NULL, NULL, NULL, EPS2, h2)) return 1;
        if (g6calc_lasthalf2(0, N, 1, id, xi, vi, EPS2, h2, oa, oj, op, on)) return 1;
        if (g6_read_neighbour_list(0) != 0) return 1;
        int nbl[N], len = -1;
        if (g6_get_neighbour_list(0, 0, N, &len, nbl) != 0) return 1;
        int expect = 0, missing = 0;
        for (int k = 1; k < N; k++) {
            double d2 = 0;
            for (int c = 0; c < 3; c++) d2 += (x[k][c] - x[0][c]) * (x[k][c] - x[0][c]);
            if (d2 < 0.09) {
                int found = 0;
                for (int q = 0; q < len; q++) found |= nbl[q] == k;
                expect++;
                missing += !found;
            }
        }
        printf("neighbour list of particle 0: %d found, %d expected, %d missing\n", len, expect,
               missing);
        if (len != expect || missing) return 1;
    }

    /* Initial Hermite state and block steps. */
    for (int i = 0; i < N; i++) {
        for (int c = 0; c < 3; c++) {
            a[i][c] = fa[i][c];
            j[i][c] = fj[i][c];
            a2[i][c] = a3[i][c] = 0.0;
        }
        double d = 0.25 * sqrt(ETA) * norm(a[i]) / norm(j[i]);
        dt[i] = DT_MAX;
        while (dt[i] > d) dt[i] /= 2;
        send_j(i);
    }
    double e0 = energy(0.0);
    double t = 0.0;
    long steps = 0, evals = 0;
    for (;;) {
        double tn = 1e300;
        for (int i = 0; i < N; i++)
            if (t0[i] + dt[i] < tn) tn = t0[i] + dt[i];
        if (tn > T_END) break;
        int n = 0;
        for (int i = 0; i < N; i++)
            if (t0[i] + dt[i] == tn) list[n++] = i;
        forces(tn, n, list, fa, fj, fp, nn, 0.0);
        for (int q = 0; q < n; q++) {
            int i = list[q];
            correct4(tn - t0[i], x[i], v[i], a[i], j[i], a2[i], a3[i], fa[q], fj[q]);
            t0[i] = tn;
            dt[i] = next_step(dt[i], tn, ETA, DT_MAX, a[i], j[i], a2[i], a3[i]);
            send_j(i);
        }
        t = tn;
        steps++;
        evals += n;
    }
    double e1 = energy(t);
    double de = fabs((e1 - e0) / e0);
    printf("t = %g: %ld block steps, %ld force evaluations, E0 = %.9f, |dE/E| = %.3e\n", t, steps,
           evals, e0, de);
    g6_close(0);
    /* The same problem through the Rust integrator (tests/hermite.rs,
     * N = 256, eps = 1/64, eta = 0.02, 1/4 time unit) loses 1.4e-6; host
     * prediction and a different Plummer realisation change that by a
     * factor of a few, a broken API (wrong coefficient, self-interaction,
     * time) by orders of magnitude. */
    if (!(t == T_END && de < 1e-5)) {
        printf("FAILED\n");
        return 1;
    }
    printf("ok\n");
    return 0;
}
