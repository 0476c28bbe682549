/* The GRAPE-5 interface and the 6th-order interface of libwebgrav.so (as
 * Sapporo2's sapporoG5lib and sapporo6thlib offer them), called as their
 * clients call them, against f64 references on a Plummer-like cluster:
 *  - GRAPE-5: acceleration and potential (self term -m/eps included, as on
 *    GRAPE-5), j-particles sent in two pieces at an address offset, all
 *    i-particles at once and one block through set_xi/run/get_force, and
 *    NaN outputs for a call before the softening is set;
 *  - 6th order: j-particles with their own times, acceleration, jerk, snap
 *    and crackle; the predictor read back (pick_up_predictor_2); forces
 *    with jerk and snap and the nearest neighbour on predicted
 *    i-particles, the particle with the same id skipped; a block larger
 *    than one evaluation, computed in pieces.
 * Built and run by .ci/test:
 *   gcc -std=c99 -O2 -Wall -Werror tests/g5_sixth.c \
 *       -L target/debug -lwebgrav -lm -o target/g5_sixth
 *   LD_LIBRARY_PATH=target/debug target/g5_sixth
 */
#define _XOPEN_SOURCE 700 /* M_PI */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* sapporoG5lib */
void g5_open(void);
void g5_close(void);
int g5_get_number_of_pipelines(void);
void g5_set_n(int nj);
void g5_set_eps_to_all(double eps);
void g5_set_range(double xmin, double xmax, double mmin);
void g5_set_xmj(int addr, int nj, double xj[][3], double jmass[]);
void g5_set_jp(int addr, int nj, double jmass[], double xj[][3]);
void g5_set_xi(int ni, double xi[][3]);
void g5_run(void);
void g5_get_force(int ni, double a[][3], double *phi);
void g5_calculate_force_on_x(double xi[][3], double a[][3], double *phi, int ni);
/* sapporo6thlib (C++ references are pointers) */
void initialize(void);
void set_j_particle(int add, double pos[3], double vel[3], double acc[3], double jrk[3],
                    double snp[3], double crk[3], double mass, double time, int id, double eps2);
void predict_all(double time, int nj);
void pick_up_predictor_2(int addr, int *id, double *mass, double *eps2, double pos[3],
                         double vel[3], double acc[3]);
void calc_force_on_predictors(int ni, int nj, int ids[], double pos[][3], double vel[][3],
                              double acc[][3], double mass[], double eps2[], double accNew[][3],
                              double jrkNew[][3], double snpNew[][3], double crkNew[][3],
                              double phi[], int nnb[], double nnb_r2[]);

#define N 300
static unsigned long long seed = 77;
static double uniform(void) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return ((seed >> 11) + 0.5) / 9007199254740992.0;
}
static void gauss3(double s, double out[3]) {
    for (int k = 0; k < 3; k++)
        out[k] = s * sqrt(-2 * log(uniform())) * cos(2 * M_PI * uniform());
}
static double norm(const double u[3]) { return sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]); }
static double dist(const double u[3], const double w[3]) {
    double d[3] = {u[0] - w[0], u[1] - w[1], u[2] - w[2]};
    return norm(d);
}

static int failures;
static void check(const char *what, double err, double bound) {
    int ok = err <= bound; /* false for NaN */
    printf("  %-44s max relative error %.2e (bound %.0e)%s\n", what, err, bound,
           ok ? "" : "  FAILED");
    failures += !ok;
}

static double m[N], x[N][3], v[N][3], a[N][3], jk[N][3], sn[N][3], cr[N][3], tj[N];

static void grape5(void) {
    const double eps = 1.0 / 32;
    static double ga[N][3], gp[N], ra[N][3], rp[N];
    puts("GRAPE-5 interface");
    g5_open();
    /* Before the softening is set: an error, NaN outputs. */
    g5_set_n(N);
    ga[0][0] = gp[0] = 0;
    g5_calculate_force_on_x(x, ga, gp, 1);
    printf("  force before g5_set_eps_to_all: %g (must be NaN)\n", gp[0]);
    failures += !isnan(gp[0]) || !isnan(ga[0][0]);
    g5_set_eps_to_all(eps);
    g5_set_range(-10, 10, 1e-4);
    /* j-particles in two pieces: x[0..100) to addresses 0.., the rest
     * to 100.. (arrays from their first element, GRAPE-5's convention). */
    g5_set_xmj(0, 100, x, m);
    g5_set_jp(100, N - 100, m + 100, x + 100);
    g5_calculate_force_on_x(x, ga, gp, N);
    for (int i = 0; i < N; i++) {
        double acc[3] = {0}, p = 0;
        for (int q = 0; q < N; q++) {
            double dr[3] = {x[q][0] - x[i][0], x[q][1] - x[i][1], x[q][2] - x[i][2]};
            double r2 = dr[0] * dr[0] + dr[1] * dr[1] + dr[2] * dr[2] + eps * eps;
            double rinv = 1 / sqrt(r2);
            for (int k = 0; k < 3; k++) acc[k] += m[q] * rinv * rinv * rinv * dr[k];
            p -= m[q] * rinv; /* self included: -m/eps */
        }
        for (int k = 0; k < 3; k++) ra[i][k] = acc[k];
        rp[i] = p;
    }
    double ea = 0, ep = 0;
    for (int i = 0; i < N; i++) {
        ea = fmax(ea, dist(ga[i], ra[i]) / norm(ra[i]));
        ep = fmax(ep, fabs(gp[i] - rp[i]) / fabs(rp[i]));
    }
    check("g5_calculate_force_on_x: acceleration", ea, 1e-5);
    check("g5_calculate_force_on_x: potential", ep, 1e-6);
    /* One block of 40 from particle 50 on, by set_xi / run / get_force. */
    g5_set_xi(40, x + 50);
    g5_run();
    g5_get_force(40, ga, gp);
    ea = ep = 0;
    for (int i = 0; i < 40; i++) {
        ea = fmax(ea, dist(ga[i], ra[50 + i]) / norm(ra[50 + i]));
        ep = fmax(ep, fabs(gp[i] - rp[50 + i]) / fabs(rp[50 + i]));
    }
    check("g5_set_xi / g5_get_force: acceleration", ea, 1e-5);
    check("g5_set_xi / g5_get_force: potential", ep, 1e-6);
    g5_close();
}

static void sixth(void) {
    const double t = 0.125, eps2 = 1.0 / 1024;
    static double px[N][3], pv[N][3], pa[N][3], gacc[N][3], gj[N][3], gs[N][3], gc[N][3], gp[N],
        gr2[N], e2[N];
    static int ids[N], gnn[N];
    puts("6th-order interface");
    initialize();
    initialize(); /* a second call does nothing */
    for (int i = 0; i < N; i++)
        set_j_particle(i, x[i], v[i], a[i], jk[i], sn[i], cr[i], m[i], tj[i], 10 + 3 * i, eps2);
    predict_all(t, N);
    /* The predictor as the library reports it, against f64. */
    double ex = 0, ev = 0;
    int bad_id = 0;
    for (int i = 0; i < N; i++) {
        int id;
        double mass, e;
        pick_up_predictor_2(i, &id, &mass, &e, px[i], pv[i], pa[i]);
        double h = t - tj[i], rx[3], rv[3];
        for (int k = 0; k < 3; k++) {
            rx[k] = x[i][k] + h * (v[i][k] + h / 2 * (a[i][k] + h / 3 * (jk[i][k] + h / 4 * (sn[i][k] + h / 5 * cr[i][k]))));
            rv[k] = v[i][k] + h * (a[i][k] + h / 2 * (jk[i][k] + h / 3 * (sn[i][k] + h / 4 * cr[i][k])));
        }
        ex = fmax(ex, dist(px[i], rx) / norm(rx));
        ev = fmax(ev, dist(pv[i], rv) / norm(rv));
        bad_id += id != 10 + 3 * i || mass != m[i] || e != eps2;
        ids[i] = id;
        e2[i] = eps2;
    }
    check("pick_up_predictor_2: position", ex, 1e-14);
    check("pick_up_predictor_2: velocity", ev, 1e-14);
    printf("  pick_up_predictor_2: %d wrong id, mass or eps2\n", bad_id);
    failures += bad_id != 0;
    calc_force_on_predictors(N, N, ids, px, pv, pa, m, e2, gacc, gj, gs, gc, gp, gnn, gr2);
    double eacc = 0, ej = 0, es = 0, ep = 0, ec = 0;
    int bad_nn = 0;
    for (int i = 0; i < N; i++) {
        double ra[3] = {0}, rj[3] = {0}, rs[3] = {0}, rp = 0, best = 1e300;
        for (int q = 0; q < N; q++) {
            if (q == i) continue;
            double dr[3], dv[3], da[3];
            for (int k = 0; k < 3; k++) {
                dr[k] = px[q][k] - px[i][k];
                dv[k] = pv[q][k] - pv[i][k];
                da[k] = pa[q][k] - pa[i][k];
            }
            double d2 = dr[0] * dr[0] + dr[1] * dr[1] + dr[2] * dr[2], r2 = d2 + eps2;
            double rinv = 1 / sqrt(r2), mr3 = m[q] * rinv * rinv * rinv;
            double alpha = (dr[0] * dv[0] + dr[1] * dv[1] + dr[2] * dv[2]) / r2;
            double beta = (dv[0] * dv[0] + dv[1] * dv[1] + dv[2] * dv[2] + dr[0] * da[0] +
                           dr[1] * da[1] + dr[2] * da[2]) / r2 + alpha * alpha;
            for (int k = 0; k < 3; k++) {
                double A = mr3 * dr[k], J = mr3 * dv[k] - 3 * alpha * A;
                ra[k] += A;
                rj[k] += J;
                rs[k] += mr3 * da[k] - 6 * alpha * J - 3 * beta * A;
            }
            rp -= m[q] * rinv;
            if (d2 < best) best = d2;
        }
        eacc = fmax(eacc, dist(gacc[i], ra) / norm(ra));
        ej = fmax(ej, dist(gj[i], rj) / norm(rj));
        es = fmax(es, dist(gs[i], rs) / norm(rs));
        ep = fmax(ep, fabs(gp[i] - rp) / fabs(rp));
        ec = fmax(ec, norm(gc[i]));
        /* The neighbour's id, at the minimal distance (to f32 rounding). */
        int q = (gnn[i] - 10) / 3;
        bad_nn += !(q >= 0 && q < N && q != i && gnn[i] == ids[q] &&
                    fabs(gr2[i] - best) <= 1e-5 * best &&
                    fabs(pow(dist(px[q], px[i]), 2) - best) <= 1e-5 * best);
    }
    check("calc_force_on_predictors: acceleration", eacc, 1e-5);
    check("calc_force_on_predictors: jerk", ej, 1e-5);
    check("calc_force_on_predictors: snap", es, 1e-4);
    check("calc_force_on_predictors: potential", ep, 1e-6);
    printf("  crackle output: max |crk| = %g (must be 0), %d wrong nearest neighbours\n", ec,
           bad_nn);
    failures += ec != 0 || bad_nn != 0;

    /* A block of more i-particles than one evaluation takes (16,384): the
     * library computes it in pieces, each started before the one before
     * is read. Copies of the particles above, in a shifted order, must get
     * their forces (to the rounding of the other j-split a block of this
     * size gets) in the right places. */
    enum { BIG = 3 * 16384 + 5 };
    static double bx[BIG][3], bv[BIG][3], ba[BIG][3], bacc[BIG][3], bj[BIG][3], bs[BIG][3],
        bp[BIG], br2[BIG], bm[BIG], be2[BIG];
    static int bids[BIG], bnn[BIG];
    for (int k = 0; k < BIG; k++) {
        int i = (k * 7 + 3) % N;
        for (int c = 0; c < 3; c++) bx[k][c] = px[i][c], bv[k][c] = pv[i][c], ba[k][c] = pa[i][c];
        bids[k] = ids[i], bm[k] = m[i], be2[k] = eps2;
    }
    calc_force_on_predictors(BIG, N, bids, bx, bv, ba, bm, be2, bacc, bj, bs, NULL, bp, bnn, br2);
    double da = 0, dp = 0;
    int bad_big = 0;
    for (int k = 0; k < BIG; k++) {
        int i = (k * 7 + 3) % N;
        da = fmax(da, dist(bacc[k], gacc[i]) / norm(gacc[i]));
        dp = fmax(dp, fabs(bp[k] - gp[i]) / fabs(gp[i]));
        bad_big += bnn[k] != gnn[i];
    }
    check("a block of 49,157 in pieces: acceleration against the block of N", da, 1e-6);
    check("a block of 49,157 in pieces: potential against the block of N", dp, 1e-6);
    printf("  a block of 49,157 in pieces: %d nearest neighbours differ\n", bad_big);
    failures += bad_big != 0;
}

int main(void) {
    /* A Plummer-like sphere (Gaussian positions, velocities), derivatives
     * of the size a cluster has, times spread over [0, 1/8]. */
    for (int i = 0; i < N; i++) {
        m[i] = (0.5 + uniform()) / N;
        gauss3(0.5, x[i]);
        gauss3(0.5, v[i]);
        gauss3(1.0, a[i]);
        gauss3(5.0, jk[i]);
        gauss3(20.0, sn[i]);
        gauss3(50.0, cr[i]);
        tj[i] = 0.125 * floor(uniform() * 64) / 64;
    }
    grape5();
    sixth();
    puts(failures ? "FAILED" : "ok");
    return failures != 0;
}
