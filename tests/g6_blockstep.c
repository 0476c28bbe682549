/* Time per block step of a GRAPE-6 client against the number of active
 * particles (Sapporo2 paper, Fig. 3), through the Fortran-style entry
 * points only, so the same source links against libwebgrav.so or
 * Sapporo2's libsapporo.a unchanged:
 *   gcc -std=c99 -O2 tests/g6_blockstep.c -L DIR -lwebgrav -lm -o g6_blockstep
 *   g++ -O2 -x c tests/g6_blockstep.c -L lib -lsapporo -lcuda -fopenmp -o g6_blockstep_sapporo
 *   ./g6_blockstep N [REPEAT]
 * A block step here is what a 4th-order code does for n active particles:
 * send their n corrected j-particles, set the time, and compute their
 * forces against all N (in blocks of g6_npipes()). Prints one line per n:
 * "n ms_per_block_step". Positions: a Plummer-like sphere (deterministic).
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int g6_open_(int *id);
int g6_close_(int *id);
int g6_npipes_(void);
int g6_set_ti_(int *id, double *ti);
int g6_set_j_particle_(int *id, int *address, int *index, double *tj, double *dtj, double *mass,
                       double k18[3], double j6[3], double a2[3], double v[3], double x[3]);
void g6calc_firsthalf_(int *id, int *nj, int *ni, int index[], double xi[][3], double vi[][3],
                       double aold[][3], double j6old[][3], double phiold[], double *eps2,
                       double h2[]);
int g6calc_lasthalf_(int *id, int *nj, int *ni, int index[], double xi[][3], double vi[][3],
                     double *eps2, double h2[], double acc[][3], double jerk[][3], double pot[]);

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 65536, repeat = argc > 2 ? atoi(argv[2]) : 5;
    if (n < 1) return 1;
    double (*x)[3] = malloc(sizeof *x * n), (*v)[3] = malloc(sizeof *v * n);
    double (*a)[3] = malloc(sizeof *a * n), (*j)[3] = malloc(sizeof *j * n), *p = malloc(8 * n);
    double *h2 = calloc(n, 8), zero[3] = {0, 0, 0}, m = 1.0 / n, t = 0, dt = 0, eps2 = 1e-4;
    int *idx = malloc(sizeof(int) * n), id = 0;
    unsigned long long s = 1;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            x[i][k] = ((s >> 11) / 9007199254740992.0 - 0.5) / (0.2 + (i % 7));
            v[i][k] = 0.1 * x[i][k];
        }
        idx[i] = i;
    }
    if (g6_open_(&id)) return 1;
    int np = g6_npipes_();
    for (int i = 0; i < n; i++) g6_set_j_particle_(&id, &i, &idx[i], &t, &dt, &m, zero, zero, zero, v[i], x[i]);
    printf("# N = %d, npipes = %d; n_active  ms_per_block_step\n", n, np);
    for (int na = 1; na <= n; na *= 2) {
        double best = 1e300;
        for (int r = 0; r < repeat + 1; r++) {
            double t0 = now();
            t += 1.0 / 1024;
            for (int i = 0; i < na; i++)
                g6_set_j_particle_(&id, &i, &idx[i], &t, &dt, &m, zero, zero, zero, v[i], x[i]);
            g6_set_ti_(&id, &t);
            for (int b = 0; b < na; b += np) {
                int ni = na - b < np ? na - b : np;
                g6calc_firsthalf_(&id, &n, &ni, idx + b, x + b, v + b, a + b, j + b, p + b, &eps2, h2 + b);
                g6calc_lasthalf_(&id, &n, &ni, idx + b, x + b, v + b, &eps2, h2 + b, a + b, j + b, p + b);
            }
            double el = now() - t0;
            if (r > 0 && el < best) best = el; /* the first is a warm-up */
        }
        printf("%d %.4f\n", na, 1e3 * best);
        fflush(stdout);
    }
    g6_close_(&id);
    return 0;
}
