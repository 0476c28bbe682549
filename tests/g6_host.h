/* What the C GRAPE-6 clients of the tests share (tests/g6_hermite.c,
 * tests/g6_client.c): a deterministic Plummer model and the host side of
 * a 4th-order Hermite code with block steps (corrector and Aarseth's time
 * step), all in f64, as NBODY1-style GRAPE-6 codes have them. */
#ifndef G6_HOST_H
#define G6_HOST_H
#define _XOPEN_SOURCE 700 /* M_PI */
#include <math.h>

/* Deterministic uniform deviates in (0, 1) (64-bit LCG, top 53 bits). */
static double uniform(unsigned long long *seed) {
    *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return ((*seed >> 11) + 0.5) / 9007199254740992.0;
}

static void isotropic(unsigned long long *seed, double r, double out[3]) {
    double z = 2.0 * uniform(seed) - 1.0, phi = 2.0 * M_PI * uniform(seed);
    double s = sqrt(1.0 - z * z);
    out[0] = r * s * cos(phi);
    out[1] = r * s * sin(phi);
    out[2] = r * z;
}

/* Plummer model (Aarseth, Henon & Wielen 1974) of n equal masses in
 * N-body units, centre-of-mass frame. */
static void plummer(unsigned long long seed, int n, double *m, double (*x)[3], double (*v)[3]) {
    const double scale = 3.0 * M_PI / 16.0;
    double cm[6] = {0};
    for (int i = 0; i < n; i++) {
        double r, q, g;
        do r = 1.0 / sqrt(pow(uniform(&seed) * 0.999, -2.0 / 3.0) - 1.0);
        while (r > 10.0);
        do {
            q = uniform(&seed);
            g = 0.1 * uniform(&seed);
        } while (g > q * q * pow(1.0 - q * q, 3.5));
        m[i] = 1.0 / n;
        isotropic(&seed, r * scale, x[i]);
        isotropic(&seed, q * sqrt(2.0) * pow(1.0 + r * r, -0.25) / sqrt(scale), v[i]);
        for (int k = 0; k < 3; k++) {
            cm[k] += m[i] * x[i][k];
            cm[3 + k] += m[i] * v[i][k];
        }
    }
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            x[i][k] -= cm[k];
            v[i][k] -= cm[3 + k];
        }
}

static double norm(const double u[3]) { return sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]); }

/* The 4th-order Hermite corrector of one particle over a step h from the
 * old a, j to the new forces fa, fj (Makino & Aarseth 1992): updates x, v,
 * a, j, and a2, a3 (the interpolant's 2nd and 3rd derivatives at the end). */
static void correct4(double h, double x[3], double v[3], double a[3], double j[3], double a2[3],
                     double a3[3], const double fa[3], const double fj[3]) {
    for (int c = 0; c < 3; c++) {
        double xp = x[c] + h * (v[c] + h / 2 * (a[c] + h / 3 * j[c]));
        double vp = v[c] + h * (a[c] + h / 2 * j[c]);
        double s = (-6 * (a[c] - fa[c]) - h * (4 * j[c] + 2 * fj[c])) / (h * h);
        double c3 = (12 * (a[c] - fa[c]) + 6 * h * (j[c] + fj[c])) / (h * h * h);
        x[c] = xp + pow(h, 4) / 24 * s + pow(h, 5) / 120 * c3;
        v[c] = vp + pow(h, 3) / 6 * s + pow(h, 4) / 24 * c3;
        a[c] = fa[c];
        j[c] = fj[c];
        a2[c] = s + h * c3;
        a3[c] = c3;
    }
}

/* The next block step after `dt` ended at t: Aarseth's criterion with
 * accuracy eta, halving while above it, doubling once where allowed. */
static double next_step(double dt, double t, double eta, double dt_max, const double a[3],
                        const double j[3], const double a2[3], const double a3[3]) {
    double crit = sqrt(eta * (norm(a) * norm(a2) + pow(norm(j), 2)) /
                       (norm(j) * norm(a3) + pow(norm(a2), 2)));
    double old = dt;
    while (dt > crit) dt /= 2;
    if (dt == old && 2 * dt <= crit && 2 * dt <= dt_max && fmod(t, 2 * dt) == 0.0) dt *= 2;
    return dt;
}
#endif
