/* A 6th-order block-time-step Hermite code over Sapporo2's 6th-order
 * interface (`sapporo6thlib`: set_j_particle, predict_all,
 * calc_force_on_predictors), so that the same source links against
 * libwebgrav.so or Sapporo2's libsapporo.a unchanged: the Sapporo2 paper's
 * Fig. 6 run (Plummer, one N-body time unit, eps = 0.01) like for like.
 *   gcc -std=c99 -O2 tests/h6_blockstep.c -L DIR -lwebgrav -lm -o h6_blockstep
 *   g++ -O2 -x c tests/h6_blockstep.c -L lib -lsapporo6th -lcuda -fopenmp -o h6_blockstep_sapporo
 *   g++ -O2 -x c -DYEBISU tests/h6_blockstep.c -L lib -lsapporo -lcuda -fopenmp -o h6_blockstep_yebisu
 * (libsapporo6th.a: Sapporo2's sapporohostclass.o and interfaces/sapporo6thlib.o;
 * libsapporo.a exports the same calls in the Yebisu flavour, -DYEBISU.)
 *   ./h6_blockstep N [T_END [ETA [EPS [MAX_DE]]]]
 * Prints one JSON line: N, block steps, mean active particles, wall time,
 * initial energy and |dE/E| at T_END (energies from the library's
 * potentials, all particles synchronised). With MAX_DE, exits 1 when
 * |dE/E| exceeds it (the CI check on lavapipe). H6_RECORD / H6_REPLAY:
 * see the main loop.
 *
 * The integrator is webgrav's `hermite6` (src/hermite/integrator.rs):
 * Nitadori & Makino's time-symmetric corrector, crackle, pop and the fifth
 * derivative from the quintic interpolant, Sapporo2's time-step criterion
 * (the mean of Aarseth's form with eta and the generalised one with
 * sqrt(eta): its Fig. 6's eta4 = 0.01, eta6 = 0.1 is ETA = 0.01), steps
 * never below 1/16 of the first-step estimate, powers of two up to 1/8.
 * The library predicts the j-particles; this code predicts the active
 * i-particles itself (5th-order Taylor series), as Sapporo2's clients do.
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef YEBISU
/* Sapporo2's libsapporo.a exports the 6th-order interface in the flavour
 * of Nitadori's Yebisu code (sapporoYeblib.cpp): structs of i-particles and
 * forces, the potential's sign flipped. */
struct predictor {
    double pos[3], vel[3], acc[3], mass, id, eps2;
};
struct force6 {
    double acc[3], jrk[3], snp[3], phi;
    int nnb_id;
    float nnb_r2;
};
void initialize(int n);
void set_jp_2(int add, double pos[3], double vel[3], double acc[3], double jrk[3], double snp[3],
              double crk[3], double mass, double time, int id, double eps2);
void predict_all(double time, int nj);
void calc_force_on_predictors(int ni, struct predictor pred[], struct force6 force[], int nj);
#define set_j_particle set_jp_2
#define open_library(n) initialize(n)
#else
void initialize(void);
void set_j_particle(int add, double pos[3], double vel[3], double acc[3], double jrk[3],
                    double snp[3], double crk[3], double mass, double time, int id, double eps2);
void predict_all(double time, int nj);
void calc_force_on_predictors(int ni, int nj, int ids[], double pos[][3], double vel[][3],
                              double acc[][3], double mass[], double eps2[], double acc1[][3],
                              double jrk1[][3], double snp1[][3], double crk1[][3], double phi[],
                              int nnb[], double nnb_r2[]);
#define open_library(n) initialize()
#endif

typedef struct {
    double x[3], v[3], a[3], j[3], s[3], c[3], pot, t, dt;
} Body;

#define PI 3.14159265358979323846
#define DT_MAX 0.125
#define DT_MIN (1.0 / 1099511627776.0) /* 2^-40 */

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static unsigned long long rng_state = 88172645463325252ULL;
static double uniform(void) { /* xorshift64*, in (0, 1) */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return ((rng_state * 2685821657736338717ULL >> 11) + 0.5) / 9007199254740992.0;
}

static double norm(const double v[3]) { return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }

/* A random point on the sphere of radius r. */
static void isotropic(double r, double out[3]) {
    double z = 2 * uniform() - 1, phi = 2 * PI * uniform(), s = sqrt(1 - z * z);
    out[0] = r * s * cos(phi);
    out[1] = r * s * sin(phi);
    out[2] = r * z;
}

/* Plummer sphere in N-body units (Aarseth, Henon & Wielen 1974), centred. */
static void plummer(int n, Body *b) {
    double cm[6] = {0, 0, 0, 0, 0, 0};
    for (int i = 0; i < n; i++) {
        double r;
        do r = 1 / sqrt(pow(uniform(), -2.0 / 3.0) - 1);
        while (r > 20);
        double q, g;
        do q = uniform(), g = 0.1 * uniform();
        while (g > q * q * pow(1 - q * q, 3.5));
        isotropic(r * 3 * PI / 16, b[i].x);
        isotropic(q * sqrt(2.0) * pow(1 + r * r, -0.25) * sqrt(16 / (3 * PI)), b[i].v);
        for (int k = 0; k < 3; k++) cm[k] += b[i].x[k] / n, cm[3 + k] += b[i].v[k] / n;
    }
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) b[i].x[k] -= cm[k], b[i].v[k] -= cm[3 + k];
}

/* The largest power of two <= dt (and <= DT_MAX) of which t is a multiple. */
static double first_step(double dt, double t) {
    double s = DT_MAX;
    while ((s > dt || fmod(t, s) != 0) && s > DT_MIN) s *= 0.5;
    return s;
}

/* Halve while too large, double once where allowed and commensurate. */
static double next_step(double old, double wanted, double t1) {
    double dt = old < DT_MAX ? old : DT_MAX;
    while (dt > wanted && dt > DT_MIN) dt *= 0.5;
    if (dt == old && 2 * dt <= wanted && 2 * dt <= DT_MAX && fmod(t1, 2 * dt) == 0) dt *= 2;
    return dt;
}

/* Corrects b to t1 with the new a1, j1, s1; returns the wanted step. */
static double correct(Body *b, const double a1[3], const double j1[3], const double s1[3],
                      double pot, double t1, double eta) {
    double dt = t1 - b->t, h = dt / 2, v1[3], c1[3], p1[3], q1[3];
    for (int k = 0; k < 3; k++) {
        const double a0 = b->a[k], j0 = b->j[k], s0 = b->s[k];
        v1[k] = b->v[k] + h * (a1[k] + a0) - 0.4 * h * h * (j1[k] - j0) + h * h * h / 15 * (s1[k] + s0);
        b->x[k] += h * (v1[k] + b->v[k]) - 0.4 * h * h * (a1[k] - a0) + h * h * h / 15 * (j1[k] + j0);
        double ca = a1[k] - a0 - j0 * dt - s0 * dt * dt / 2, cb = (j1[k] - j0 - s0 * dt) * dt,
               cc = (s1[k] - s0) * dt * dt;
        double c0 = (60 * ca - 24 * cb + 3 * cc) / (dt * dt * dt);
        double p0 = (-360 * ca + 168 * cb - 24 * cc) / (dt * dt * dt * dt);
        double q0 = (720 * ca - 360 * cb + 60 * cc) / (dt * dt * dt * dt * dt);
        c1[k] = c0 + p0 * dt + q0 * dt * dt / 2;
        p1[k] = p0 + q0 * dt;
        q1[k] = q0;
    }
    for (int k = 0; k < 3; k++) {
        b->v[k] = v1[k];
        b->a[k] = a1[k];
        b->j[k] = j1[k];
        b->s[k] = s1[k];
        b->c[k] = c1[k];
    }
    b->pot = pot;
    b->t = t1;
    double na = norm(a1), nj = norm(j1), ns = norm(s1), nc = norm(c1);
    double aarseth = sqrt(eta * (na * ns + nj * nj) / (nj * nc + ns * ns));
    double general = sqrt(eta) * cbrt((sqrt(na * ns) + nj) / (sqrt(nc * norm(q1)) + norm(p1)));
    double wanted = 0.5 * (aarseth + general);
    double scale = fmin(na / nj, sqrt(na / ns)), floor = 0.25 * sqrt(eta) * scale / 16;
    if (wanted < floor) wanted = floor;
    return isfinite(wanted) ? wanted : INFINITY;
}

/* Position, velocity and acceleration of b predicted to t. */
static void predict(const Body *b, double t, double x[3], double v[3], double a[3]) {
    double d = t - b->t;
    for (int k = 0; k < 3; k++) {
        double c = b->c[k], s = b->s[k], j = b->j[k], ak = b->a[k];
        x[k] = b->x[k] + d * (b->v[k] + d / 2 * (ak + d / 3 * (j + d / 4 * (s + d / 5 * c))));
        v[k] = b->v[k] + d * (ak + d / 2 * (j + d / 3 * (s + d / 4 * c)));
        a[k] = ak + d * (j + d / 2 * (s + d / 3 * c));
    }
}

static void send(const Body *b, int i, double m, double eps2) {
    Body c = *b; /* the interface takes non-const arrays */
    set_j_particle(i, c.x, c.v, c.a, c.j, c.s, c.c, m, c.t, i, eps2);
}

/* Forces with jerk and snap on the ni i-particles ids[] (predicted to the
 * time set by predict_all) against j-particles 0..nj. */
static void forces(int ni, int nj, int ids[], double px[][3], double pv[][3], double pa[][3],
                   double m, double eps2, double fa[][3], double fj[][3], double fs[][3],
                   double pot[]) {
#ifdef YEBISU
    static struct predictor *pred;
    static struct force6 *f;
    static int cap;
    if (ni > cap) {
        pred = realloc(pred, sizeof *pred * ni), f = realloc(f, sizeof *f * ni), cap = ni;
    }
    for (int q = 0; q < ni; q++) {
        for (int k = 0; k < 3; k++)
            pred[q].pos[k] = px[q][k], pred[q].vel[k] = pv[q][k], pred[q].acc[k] = pa[q][k];
        pred[q].mass = m, pred[q].id = ids[q], pred[q].eps2 = eps2;
    }
    calc_force_on_predictors(ni, pred, f, nj);
    for (int q = 0; q < ni; q++) {
        for (int k = 0; k < 3; k++) fa[q][k] = f[q].acc[k], fj[q][k] = f[q].jrk[k], fs[q][k] = f[q].snp[k];
        pot[q] = -f[q].phi;
    }
#else
    static double *ms, *e2, (*fc)[3], *nr2;
    static int *nnb, cap;
    if (ni > cap) {
        ms = realloc(ms, 8 * ni), e2 = realloc(e2, 8 * ni), nr2 = realloc(nr2, 8 * ni);
        fc = realloc(fc, sizeof *fc * ni), nnb = realloc(nnb, sizeof(int) * ni), cap = ni;
    }
    for (int q = 0; q < ni; q++) ms[q] = m, e2[q] = eps2;
    calc_force_on_predictors(ni, nj, ids, px, pv, pa, ms, e2, fa, fj, fs, fc, pot, nnb, nr2);
#endif
}

/* Kinetic plus potential energy (the potentials as last computed). */
static double energy(const Body *b, int n, double m) {
    double e = 0;
    for (int i = 0; i < n; i++) {
        double v = norm(b[i].v);
        e += 0.5 * m * v * v + 0.5 * m * b[i].pot;
    }
    return e;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 16384;
    double t_end = argc > 2 ? atof(argv[2]) : 1.0, eta = argc > 3 ? atof(argv[3]) : 0.01;
    double eps = argc > 4 ? atof(argv[4]) : 0.01, max_de = argc > 5 ? atof(argv[5]) : 0;
    if (n < 2 || !(t_end > 0) || !(eta > 0) || !(eps >= 0)) {
        fprintf(stderr, "usage: %s N [T_END [ETA [EPS [MAX_DE]]]]\n", argv[0]);
        return 2;
    }
    double m = 1.0 / n, eps2 = eps * eps;
    Body *b = calloc(n, sizeof *b);
    int *act = malloc(sizeof(int) * n);
    double (*px)[3] = malloc(sizeof *px * n), (*pv)[3] = malloc(sizeof *pv * n);
    double (*pa)[3] = malloc(sizeof *pa * n), (*fa)[3] = malloc(sizeof *fa * n);
    double (*fj)[3] = malloc(sizeof *fj * n), (*fs)[3] = malloc(sizeof *fs * n);
    double *pot = malloc(8 * n);
    plummer(n, b);
    for (int i = 0; i < n; i++) act[i] = i;
    open_library(n);
    double t0 = now();

    /* Initial forces: twice, since the snap needs the sources' accelerations. */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++) {
            send(&b[i], i, m, eps2);
            for (int k = 0; k < 3; k++) px[i][k] = b[i].x[k], pv[i][k] = b[i].v[k], pa[i][k] = b[i].a[k];
        }
        predict_all(0, n);
        forces(n, n, act, px, pv, pa, m, eps2, fa, fj, fs, pot);
        for (int i = 0; i < n; i++)
            for (int k = 0; k < 3; k++) b[i].a[k] = fa[i][k], b[i].j[k] = fj[i][k], b[i].s[k] = fs[i][k], b[i].pot = pot[i];
    }
    for (int i = 0; i < n; i++) {
        double na = norm(b[i].a), dt = fmin(na / norm(b[i].j), sqrt(na / norm(b[i].s)));
        b[i].dt = first_step(isfinite(dt) ? 0.25 * sqrt(eta) * dt : DT_MAX, 0);
        send(&b[i], i, m, eps2);
    }
    double e0 = energy(b, n, m);
    if (getenv("H6_VERBOSE")) /* what the library gave at t = 0 */
        for (int i = 0; i < 3; i++)
            fprintf(stderr, "t=0 particle %d: a %.9e %.9e %.9e j %.6e %.6e %.6e s %.6e %.6e %.6e pot %.9e dt %g\n", i,
                    b[i].a[0], b[i].a[1], b[i].a[2], b[i].j[0], b[i].j[1], b[i].j[2], b[i].s[0], b[i].s[1],
                    b[i].s[2], b[i].pot, b[i].dt);

    long long block_steps = 0, active_sum = 0;
    /* H6_RECORD=FILE writes each block step's active count; H6_REPLAY=FILE
     * times only the library's part of such a run (j-updates, prediction,
     * forces on blocks of the recorded sizes, spread over the particles):
     * the force cost of one run's block sequence on another library. */
    FILE *record = getenv("H6_RECORD") ? fopen(getenv("H6_RECORD"), "w") : NULL;
    FILE *replay = getenv("H6_REPLAY") ? fopen(getenv("H6_REPLAY"), "r") : NULL;
    if (replay) {
        /* Where the replay's time goes, by block size: blocks, sinks and
         * the wall time of their force calls; j_updates_s: the rest
         * (set_j_particle and predict_all calls, the host prediction). */
        enum { CLASSES = 5 };
        static const int upper[CLASSES] = {128, 1024, 2048, 16384, 1 << 30};
        long long c_blocks[CLASSES] = {0}, c_sinks[CLASSES] = {0};
        double c_wall[CLASSES] = {0};
        int na;
        double t1 = 0, updates = 0;
        t0 = now();
        while (fscanf(replay, "%d", &na) == 1 && na >= 1 && na <= n) {
            double tu = now();
            t1 += 1.0 / 1048576;
            for (int q = 0; q < na; q++) {
                int i = (int)((long long)q * n / na);
                act[q] = i;
                send(&b[i], i, m, eps2);
                predict(&b[i], t1, px[q], pv[q], pa[q]);
            }
            predict_all(t1, n);
            double tf = now();
            updates += tf - tu;
            forces(na, n, act, px, pv, pa, m, eps2, fa, fj, fs, pot);
            int c = 0;
            while (na >= upper[c]) c++;
            c_wall[c] += now() - tf, c_blocks[c]++, c_sinks[c] += na;
            block_steps++;
            active_sum += na;
        }
        printf("{\"n\":%d,\"replay\":true,\"block_steps\":%lld,\"mean_active\":%.1f,\"wall_s\":%.3f,"
               "\"j_updates_s\":%.3f,\"forces_by_size\":[",
               n, block_steps, (double)active_sum / block_steps, now() - t0, updates);
        for (int c = 0; c < CLASSES; c++)
            printf("%s{\"below\":%d,\"blocks\":%lld,\"sinks\":%lld,\"wall_s\":%.3f}", c ? "," : "",
                   upper[c], c_blocks[c], c_sinks[c], c_wall[c]);
        printf("]}\n");
        return 0;
    }
    /* Each particle's next time, in an array of its own: the scans for
     * the next block read 8 bytes per particle, not a whole Body. */
    double *next = malloc(8 * n);
    for (int i = 0; i < n; i++) next[i] = b[i].t + b[i].dt;
    for (;;) {
        double t1 = INFINITY;
        for (int i = 0; i < n; i++) t1 = fmin(t1, next[i]);
        if (t1 > t_end) break;
        int na = 0;
        for (int i = 0; i < n; i++)
            if (next[i] == t1) {
                act[na] = i;
                predict(&b[i], t1, px[na], pv[na], pa[na]);
                na++;
            }
        if (record) fprintf(record, "%d\n", na);
        predict_all(t1, n);
        forces(na, n, act, px, pv, pa, m, eps2, fa, fj, fs, pot);
        for (int q = 0; q < na; q++) {
            Body *bi = &b[act[q]];
            if (!(isfinite(fa[q][0]) && isfinite(pot[q]))) {
                fprintf(stderr, "non-finite force on particle %d at t = %g\n", act[q], t1);
                return 1;
            }
            double wanted = correct(bi, fa[q], fj[q], fs[q], pot[q], t1, eta);
            if (!(wanted >= DT_MIN)) {
                fprintf(stderr, "particle %d: time step below 2^-40 at t = %g\n", act[q], t1);
                return 1;
            }
            bi->dt = next_step(bi->dt, wanted, t1);
            next[act[q]] = t1 + bi->dt;
            send(bi, act[q], m, eps2);
        }
        block_steps++;
        active_sum += na;
    }
    double wall = now() - t0;
    if (record) fclose(record);

    /* The final potentials: every particle synchronised at t_end (a
     * multiple of DT_MAX), one evaluation on all. */
    double te = b[0].t;
    for (int i = 0; i < n; i++) {
        if (b[i].t != te) {
            fprintf(stderr, "particles not synchronised at the end (T_END a multiple of 1/8?)\n");
            return 2;
        }
        act[i] = i;
        for (int k = 0; k < 3; k++) px[i][k] = b[i].x[k], pv[i][k] = b[i].v[k], pa[i][k] = b[i].a[k];
    }
    predict_all(te, n);
    forces(n, n, act, px, pv, pa, m, eps2, fa, fj, fs, pot);
    for (int i = 0; i < n; i++) b[i].pot = pot[i];
    double e1 = energy(b, n, m), de = fabs((e1 - e0) / e0);
    printf("{\"n\":%d,\"t_end\":%g,\"eta\":%g,\"eps\":%g,\"block_steps\":%lld,"
           "\"mean_active\":%.1f,\"wall_s\":%.3f,\"e0\":%.12f,\"de\":%.3e}\n",
           n, te, eta, eps, block_steps, (double)active_sum / block_steps, wall, e0, de);
    if (max_de > 0 && !(de <= max_de)) {
        fprintf(stderr, "|dE/E| = %.3e above %.3e\n", de, max_de);
        return 1;
    }
    return 0;
}
