/* A GRAPE-6 client as Sapporo2's users write them: it declares the
 * Fortran-style entry points itself (the list of Sapporo2's
 * testCodes/src/g6lib.h) and defines the C names as its own wrappers of
 * them, with Sapporo2's signatures (void g6_set_ti, double units) and a
 * null cluster-id pointer where a sloppy client passes one. It runs a
 * 4th-order Hermite integration with individual block steps twice from one
 * Plummer model: through libwebgrav.so and through cpu_*, a tiny f64
 * implementation of the same API in this file, and compares the initial
 * energy (to 1e-6), the number of block steps and force evaluations (equal)
 * and the final energy error (within a small factor).
 * Built and run by .ci/test:
 *   gcc -std=c99 -O2 -Wall -Werror tests/g6_client.c \
 *       -L target/debug -lwebgrav -lm -o target/g6_client
 *   LD_LIBRARY_PATH=target/debug target/g6_client
 */
#include "g6_host.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- what the client declares (Sapporo2's g6lib.h) ---------------------- */
int g6_open_(int *id);
int g6_close_(int *id);
int g6_npipes_(void);
int g6_set_tunit_(double *);
int g6_set_xunit_(double *);
int g6_set_ti_(int *id, double *ti);
int g6_set_j_particle_(int *cluster_id, int *address, int *index, double *tj, double *dtj,
                       double *mass, double k18[3], double j6[3], double a2[3], double v[3],
                       double x[3]);
void g6calc_firsthalf_(int *cluster_id, int *nj, int *ni, int index[], double xi[][3],
                       double vi[][3], double aold[][3], double j6old[][3], double phiold[3],
                       double *eps2, double h2[]);
int g6calc_lasthalf_(int *cluster_id, int *nj, int *ni, int index[], double xi[][3],
                     double vi[][3], double *eps2, double h2[], double acc[][3],
                     double jerk[][3], double pot[]);
int g6calc_lasthalf2_(int *cluster_id, int *nj, int *ni, int index[], double xi[][3],
                      double vi[][3], double *eps2, double h2[], double acc[][3],
                      double jerk[][3], double pot[], int *inn);
int g6_initialize_jp_buffer_(int *cluster_id, int *buf_size);
int g6_flush_jp_buffer_(int *cluster_id);
int g6_reset_(int *cluster_id);
int g6_reset_fofpga_(int *cluster_id);

/* The client's own C names (as g6lib.h defines them). libwebgrav.so
 * exports these names too; the executable's win, and the library must not
 * call them: every call of a wrapper is counted and checked. */
static long wrapper_calls;
int g6_open(int clusterid) { wrapper_calls++; return g6_open_(&clusterid); }
int g6_close(int clusterid) { wrapper_calls++; return g6_close_(&clusterid); }
int g6_npipes(void) { wrapper_calls++; return g6_npipes_(); }
void g6_set_ti(int cluster_id, double ti) { wrapper_calls++; g6_set_ti_(NULL, &ti); (void)cluster_id; }
int g6_reset(int cluster_id) { wrapper_calls++; return g6_reset_(&cluster_id); }
int g6_set_j_particle(int clusterid, int address, int index, double tj, double dtj, double mass,
                      double k18[3], double j6[3], double a2[3], double v[3], double x[3]) {
    wrapper_calls++;
    (void)clusterid;
    return g6_set_j_particle_(NULL, &address, &index, &tj, &dtj, &mass, k18, j6, a2, v, x);
}
void g6calc_firsthalf(int cluster_id, int nj, int ni, int index[], double xi[][3], double vi[][3],
                      double aold[][3], double j6old[][3], double phiold[], double eps2,
                      double h2[]) {
    wrapper_calls++;
    g6calc_firsthalf_(&cluster_id, &nj, &ni, index, xi, vi, aold, j6old, phiold, &eps2, h2);
}
int g6calc_lasthalf(int cluster_id, int nj, int ni, int index[], double xi[][3], double vi[][3],
                    double eps2, double h2[], double acc[][3], double jerk[][3], double pot[]) {
    wrapper_calls++;
    return g6calc_lasthalf_(&cluster_id, &nj, &ni, index, xi, vi, &eps2, h2, acc, jerk, pot);
}
void g6_set_tunit(double t) { wrapper_calls++; g6_set_tunit_(&t); }
void g6_set_xunit(double x) { wrapper_calls++; g6_set_xunit_(&x); }

/* ---- the same API in f64 on the CPU (the reference) --------------------- */
#define JMEM 1024
#define PIPES 4096
static struct {
    double m, t, x[3], v[3], a2[3], j6[3], k18[3];
    int index;
} cpu_j[JMEM];
static double cpu_ti;
static struct {
    int nj, ni, index[PIPES];
    double x[PIPES][3], v[PIPES][3], eps2;
} cpu_i;

static int cpu_open(int id) { (void)id; memset(cpu_j, 0, sizeof cpu_j); return 0; }
static int cpu_close(int id) { (void)id; return 0; }
static int cpu_npipes(void) { return PIPES; }
static void cpu_set_ti(int id, double ti) { (void)id; cpu_ti = ti; }
static int cpu_set_j_particle(int id, int address, int index, double tj, double dtj, double mass,
                              double k18[3], double j6[3], double a2[3], double v[3],
                              double x[3]) {
    (void)id, (void)dtj;
    if (address < 0 || address >= JMEM) return -1;
    cpu_j[address].m = mass;
    cpu_j[address].t = tj;
    cpu_j[address].index = index;
    for (int k = 0; k < 3; k++) {
        cpu_j[address].x[k] = x[k];
        cpu_j[address].v[k] = v[k];
        cpu_j[address].a2[k] = a2[k];
        cpu_j[address].j6[k] = j6[k];
        cpu_j[address].k18[k] = k18[k];
    }
    return 0;
}
static void cpu_firsthalf(int id, int nj, int ni, int index[], double xi[][3], double vi[][3],
                          double aold[][3], double j6old[][3], double phiold[], double eps2,
                          double h2[]) {
    (void)id, (void)aold, (void)j6old, (void)phiold, (void)h2;
    cpu_i.nj = nj;
    cpu_i.ni = ni;
    cpu_i.eps2 = eps2;
    memcpy(cpu_i.index, index, ni * sizeof(int));
    memcpy(cpu_i.x, xi, ni * sizeof xi[0]);
    memcpy(cpu_i.v, vi, ni * sizeof vi[0]);
}
/* j predicted from its own tj to ti (x + v h + a2 h^2 + j6 h^3 +
 * (3/4) k18 h^4); the j-particle with the i-particle's index skipped. */
static int cpu_lasthalf(int id, int nj, int ni, int index[], double xi[][3], double vi[][3],
                        double eps2, double h2[], double acc[][3], double jerk[][3],
                        double pot[]) {
    (void)id, (void)nj, (void)index, (void)xi, (void)vi, (void)eps2, (void)h2;
    for (int i = 0; i < ni; i++) {
        double a[3] = {0}, jk[3] = {0}, p = 0;
        for (int q = 0; q < cpu_i.nj; q++) {
            if (cpu_j[q].index == cpu_i.index[i]) continue;
            double h = cpu_ti - cpu_j[q].t, dr[3], dv[3];
            for (int k = 0; k < 3; k++) {
                double xj = cpu_j[q].x[k] +
                            h * (cpu_j[q].v[k] +
                                 h * (cpu_j[q].a2[k] + h * (cpu_j[q].j6[k] + h * 0.75 * cpu_j[q].k18[k])));
                double vj = cpu_j[q].v[k] +
                            h * (2 * cpu_j[q].a2[k] + h * (3 * cpu_j[q].j6[k] + h * 3 * cpu_j[q].k18[k]));
                dr[k] = xj - cpu_i.x[i][k];
                dv[k] = vj - cpu_i.v[i][k];
            }
            double r2 = dr[0] * dr[0] + dr[1] * dr[1] + dr[2] * dr[2] + cpu_i.eps2;
            double rinv = 1 / sqrt(r2), mr3 = cpu_j[q].m * rinv * rinv * rinv;
            double alpha = 3 * (dr[0] * dv[0] + dr[1] * dv[1] + dr[2] * dv[2]) / r2;
            for (int k = 0; k < 3; k++) {
                a[k] += mr3 * dr[k];
                jk[k] += mr3 * (dv[k] - alpha * dr[k]);
            }
            p -= cpu_j[q].m * rinv;
        }
        for (int k = 0; k < 3; k++) {
            acc[i][k] = a[k];
            jerk[i][k] = jk[k];
        }
        pot[i] = p;
    }
    return 0;
}

/* ---- the client: NBODY1-style block-step Hermite ------------------------ */
struct api {
    const char *name;
    int (*open)(int);
    int (*close)(int);
    int (*npipes)(void);
    void (*set_ti)(int, double);
    int (*set_j_particle)(int, int, int, double, double, double, double[3], double[3], double[3],
                          double[3], double[3]);
    void (*firsthalf)(int, int, int, int[], double[][3], double[][3], double[][3], double[][3],
                      double[], double, double[]);
    int (*lasthalf)(int, int, int, int[], double[][3], double[][3], double, double[], double[][3],
                    double[][3], double[]);
};
static const struct api GPU = {"libwebgrav (Fortran names)", g6_open, g6_close, g6_npipes,
                               g6_set_ti, g6_set_j_particle, g6calc_firsthalf, g6calc_lasthalf};
static const struct api CPU = {"f64 reference", cpu_open, cpu_close, cpu_npipes,
                               cpu_set_ti, cpu_set_j_particle, cpu_firsthalf, cpu_lasthalf};

#define N 128
#define ETA 0.02
#define EPS2 (1.0 / 4096.0) /* eps = 1/64 */
#define DT_MAX 0.125
#define T_END 0.25
/* GRAPE-6 indices need not be addresses: self-interaction is by index. */
#define INDEX(i) (1000 + 7 * (i))

static double m0[N], x0[N][3], v0[N][3];
static double m[N], x[N][3], v[N][3], a[N][3], j[N][3], a2[N][3], a3[N][3], t0[N], dt[N];

static const struct api *api;
static long api_calls; /* calls of GPU wrappers this client makes */
#define CALL(f, ...) (api_calls += api == &GPU, api->f(__VA_ARGS__))

static int send_j(int i) {
    double ha[3], j6[3], k18[3];
    for (int k = 0; k < 3; k++) {
        ha[k] = a[i][k] / 2.0;
        j6[k] = j[i][k] / 6.0;
        k18[k] = a2[i][k] / 18.0;
    }
    return CALL(set_j_particle, 0, i, INDEX(i), t0[i], dt[i], m[i], k18, j6, ha, v[i], x[i]);
}
static void predict(int i, double t, double xp[3], double vp[3]) {
    double h = t - t0[i];
    for (int k = 0; k < 3; k++) {
        xp[k] = x[i][k] + h * (v[i][k] + h / 2 * (a[i][k] + h / 3 * (j[i][k] + h / 4 * a2[i][k])));
        vp[k] = v[i][k] + h * (a[i][k] + h / 2 * (j[i][k] + h / 3 * a2[i][k]));
    }
}
static int forces(double t, int n, const int *list, double (*fa)[3], double (*fj)[3], double *fp) {
    static double xi[N][3], vi[N][3], h2[N];
    static int ids[N];
    CALL(set_ti, 0, t);
    int np = CALL(npipes);
    for (int s = 0; s < n; s += np) {
        int ni = n - s < np ? n - s : np;
        for (int k = 0; k < ni; k++) {
            predict(list[s + k], t, xi[k], vi[k]);
            ids[k] = INDEX(list[s + k]);
            h2[k] = 0;
        }
        CALL(firsthalf, 0, N, ni, ids, xi, vi, NULL, NULL, NULL, EPS2, h2);
        if (CALL(lasthalf, 0, N, ni, ids, xi, vi, EPS2, h2, fa + s, fj + s, fp + s)) return -1;
    }
    return 0;
}
static double energy(double t) {
    static double fa[N][3], fj[N][3], fp[N];
    static int all[N];
    for (int i = 0; i < N; i++) all[i] = i;
    if (forces(t, N, all, fa, fj, fp)) exit(1);
    double e = 0;
    for (int i = 0; i < N; i++) {
        double xp[3], vp[3];
        predict(i, t, xp, vp);
        e += 0.5 * m[i] * (norm(vp) * norm(vp) + fp[i]);
    }
    return e;
}

struct result {
    double e0, de;
    long steps, evals;
};

static struct result run(const struct api *which) {
    static double fa[N][3], fj[N][3], fp[N];
    static int list[N];
    struct result r = {0};
    api = which;
    memcpy(m, m0, sizeof m);
    memcpy(x, x0, sizeof x);
    memcpy(v, v0, sizeof v);
    memset(a, 0, sizeof a);
    memset(j, 0, sizeof j);
    memset(a2, 0, sizeof a2);
    memset(a3, 0, sizeof a3);
    memset(t0, 0, sizeof t0);
    if (CALL(open, 0)) exit(1);
    for (int i = 0; i < N; i++) {
        dt[i] = DT_MAX;
        if (send_j(i)) exit(1);
        list[i] = i;
    }
    if (forces(0.0, N, list, fa, fj, fp)) exit(1);
    for (int i = 0; i < N; i++) {
        for (int c = 0; c < 3; c++) {
            a[i][c] = fa[i][c];
            j[i][c] = fj[i][c];
        }
        double d = 0.25 * sqrt(ETA) * norm(a[i]) / norm(j[i]);
        while (dt[i] > d) dt[i] /= 2;
        if (send_j(i)) exit(1);
    }
    r.e0 = energy(0.0);
    double t = 0;
    for (;;) {
        double tn = 1e300;
        for (int i = 0; i < N; i++)
            if (t0[i] + dt[i] < tn) tn = t0[i] + dt[i];
        if (tn > T_END) break;
        int n = 0;
        for (int i = 0; i < N; i++)
            if (t0[i] + dt[i] == tn) list[n++] = i;
        if (forces(tn, n, list, fa, fj, fp)) exit(1);
        for (int q = 0; q < n; q++) {
            int i = list[q];
            correct4(tn - t0[i], x[i], v[i], a[i], j[i], a2[i], a3[i], fa[q], fj[q]);
            t0[i] = tn;
            dt[i] = next_step(dt[i], tn, ETA, DT_MAX, a[i], j[i], a2[i], a3[i]);
            if (send_j(i)) exit(1);
        }
        t = tn;
        r.steps++;
        r.evals += n;
    }
    r.de = fabs((energy(t) - r.e0) / r.e0);
    CALL(close, 0);
    printf("%-28s E0 = %.12f, %ld block steps, %ld force evaluations, |dE/E| = %.3e\n",
           which->name, r.e0, r.steps, r.evals, r.de);
    return r;
}

int main(void) {
    plummer(2024, N, m0, x0, v0);
    g6_set_tunit(51); /* Sapporo2's signatures: doubles by pointer, ignored */
    g6_set_xunit(51);
    api_calls += 2;
    struct result cpu = run(&CPU), gpu = run(&GPU);
    int ok = 1;
    double de0 = fabs(gpu.e0 - cpu.e0) / fabs(cpu.e0);
    printf("initial energy: relative difference %.2e (must be < 1e-6)\n", de0);
    ok &= de0 < 1e-6;
    printf("steps: %ld / %ld block steps, %ld / %ld evaluations (must be equal)\n", gpu.steps,
           cpu.steps, gpu.evals, cpu.evals);
    ok &= gpu.steps == cpu.steps && gpu.evals == cpu.evals;
    /* The f64 run's error is the integrator's (~1e-8 here); double-single
     * forces add their rounding, ~1e-9 per time unit at this N. */
    double bound = 3 * cpu.de + 2e-9;
    printf("final energy error %.3e vs %.3e (must be < %.3e, and the reference < 1e-6)\n", gpu.de,
           cpu.de, bound);
    ok &= gpu.de < bound && cpu.de < 1e-6;
    /* With WEBGRAV_G6_PRECISION=dp (native f64 kernels on double-single
     * inputs, ~48 bits) the run is the reference's to its last digits. */
    const char *prec = getenv("WEBGRAV_G6_PRECISION");
    if (prec && strcmp(prec, "dp") == 0) {
        double dd = fabs(gpu.de - cpu.de);
        printf("dp: initial energy %.2e (must be < 1e-13), final error differs by %.2e (must be "
               "< 1e-3 of it)\n", de0, dd);
        ok &= de0 < 1e-13 && dd < 1e-3 * cpu.de;
    }
    printf("C-named wrappers: %ld calls, %ld made by this client (equal: the library never "
           "calls the client's names)\n", wrapper_calls, api_calls);
    ok &= wrapper_calls == api_calls;
    puts(ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
