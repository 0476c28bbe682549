/* GRAPE-6 style interface of webgrav (libwebgrav.so; src/g6/mod.rs).
 * Direct-summation forces with jerk for 4th-order Hermite codes, computed
 * by WebGPU kernels (Vulkan, Metal, DX12), double-single by default.
 * Link with -lwebgrav. Every call returns 0 on success and -1 on error (a
 * message goes to stderr) unless stated otherwise.
 *
 * Conventions (as Sapporo's GRAPE-6 interface):
 *  - j-particles are stored by address 0..jmemsize-1 with an identity
 *    `index`; the Taylor coefficients are a2 = a/2, j6 = jerk/6,
 *    k18 = snap/18 at time tj; they are predicted on the GPU to the time of
 *    g6_set_ti with x + v dt + a2 dt^2 + j6 dt^3 + (18/24) k18 dt^4.
 *  - i-particles (at most g6_npipes() per call) are predicted by the
 *    caller; the j-particle whose index equals the i-particle's is skipped.
 *  - pot = -sum m_j / sqrt(r^2 + eps2) (self excluded); G = 1.
 *  - Environment: WEBGRAV_G6_JMEMSIZE (default 262144),
 *    WEBGRAV_G6_PRECISION = ds (default) or f32.
 */
#ifndef WEBGRAV_G6_H
#define WEBGRAV_G6_H

#ifdef __cplusplus
extern "C" {
#endif

int g6_open(int clusterid);
int g6_close(int clusterid);
int g6_npipes(void);
int g6_get_jmemsize(int clusterid);
int g6_set_ti(int clusterid, double ti);
int g6_set_j_particle(int clusterid, int address, int index, double tj, double dtj,
                      double mass, double k18[3], double j6[3], double a2[3],
                      double v[3], double x[3]);
int g6calc_firsthalf(int clusterid, int nj, int ni, int index[], double xi[][3],
                     double vi[][3], double aold[][3], double j6old[][3],
                     double phiold[], double eps2, double h2[]);
int g6calc_lasthalf(int clusterid, int nj, int ni, int index[], double xi[][3],
                    double vi[][3], double eps2, double h2[], double acc[][3],
                    double jerk[][3], double pot[]);
/* As g6calc_lasthalf, plus the index of each i-particle's nearest
 * neighbour (unsoftened distance; -1 if none). */
int g6calc_lasthalf2(int clusterid, int nj, int ni, int index[], double xi[][3],
                     double vi[][3], double eps2, double h2[], double acc[][3],
                     double jerk[][3], double pot[], int nnbindex[]);
/* Neighbours (distance^2 < h2 of firsthalf) of the last evaluation's
 * i-particles. Returns 1 if a list exceeded the 256 entries kept. */
int g6_read_neighbour_list(int clusterid);
/* Copies pipe `ipipe`'s list (indices, ascending); *nblen = its length.
 * Returns 1 if it did not fit in maxlength. */
int g6_get_neighbour_list(int clusterid, int ipipe, int maxlength, int *nblen, int nbl[]);

/* Hardware housekeeping of GRAPE-6: accepted and ignored. */
int g6_reset(int clusterid);
int g6_reset_fofpga(int clusterid);
int g6_set_tunit(int unit);
int g6_set_xunit(int unit);
int g6_initialize_jp_buffer(int clusterid, int size);
int g6_flush_jp_buffer(int clusterid);

#ifdef __cplusplus
}
#endif

#endif
