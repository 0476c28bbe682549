/* GRAPE-6, GRAPE-5 and Sapporo2 6th-order interfaces of webgrav
 * (libwebgrav.so; src/g6/). Direct-summation forces (with jerk and snap
 * for Hermite codes) computed by WebGPU kernels (Vulkan, Metal, DX12),
 * double-single by default. Clients written for Sapporo2 link with
 * -lwebgrav instead of -lsapporo unchanged; none of these functions calls
 * another, so a client may define some of the names itself (as Sapporo2's
 * g6lib.h does for the C names).
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
 *    WEBGRAV_G6_PRECISION = ds (default), f32 or dp (native f64 where
 *    the adapter has it; an error elsewhere), WEBGRAV_G6_SPLIT_TARGET
 *    (workgroups a block's j-splitting aims for; tuning, default 512),
 *    WEBGRAV_G6_WAIT = spin (default on GPUs: the host polls for the
 *    forces, as CUDA's default synchronisation does) or block (the
 *    driver's sleeping wait; the default on CPU adapters).
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

/* Fortran names (Sapporo2's g6lib; what gfortran calls for g6_open etc.):
 * every argument by pointer; a null cluster-id pointer means cluster 0.
 * Semantics and return values as the C names above. Not declared when the
 * client declares them itself (define WEBGRAV_NO_FORTRAN_NAMES). */
#ifndef WEBGRAV_NO_FORTRAN_NAMES
int g6_open_(int *id);
int g6_close_(int *id);
int g6_npipes_(void);
int g6_get_jmemsize_(int *id);
int g6_set_tunit_(double *unit);
int g6_set_xunit_(double *unit);
int g6_set_ti_(int *id, double *ti);
int g6_set_j_particle_(int *id, int *address, int *index, double *tj, double *dtj,
                       double *mass, double k18[3], double j6[3], double a2[3], double v[3],
                       double x[3]);
int g6calc_firsthalf_(int *id, int *nj, int *ni, int index[], double xi[][3], double vi[][3],
                      double aold[][3], double j6old[][3], double phiold[], double *eps2,
                      double h2[]);
int g6calc_lasthalf_(int *id, int *nj, int *ni, int index[], double xi[][3], double vi[][3],
                     double *eps2, double h2[], double acc[][3], double jerk[][3], double pot[]);
int g6calc_lasthalf2_(int *id, int *nj, int *ni, int index[], double xi[][3], double vi[][3],
                      double *eps2, double h2[], double acc[][3], double jerk[][3], double pot[],
                      int nnbindex[]);
int g6_initialize_jp_buffer_(int *id, int *size);
int g6_flush_jp_buffer_(int *id);
int g6_reset_(int *id);
int g6_reset_fofpga_(int *id);
int g6_read_neighbour_list_(int *id);
int g6_get_neighbour_list_(int *id, int *ipipe, int *maxlength, int *nblen, int nbl[]);
#endif

/* GRAPE-5 (Sapporo2's sapporoG5lib): positions and masses, acceleration
 * and potential; nothing skipped (the self term -m/eps is in the
 * potential, as on GRAPE-5). j arrays start at their first element and go
 * to addresses adr..adr+nj-1. On error: a message and NaN outputs. */
void g5_open(void);
int g5_open_special(int ndev, int *list);
void g5_close(void);
int g5_get_number_of_pipelines(void);
int g5_get_number_of_real_pipelines(void);
int g5_get_jmemsize(void);
int g5_get_pcibus_freq(void);
void g5_set_n(int nj);
void g5_set_eps_to_all(double eps);
void g5_set_eps2_to_all(double eps2);
void g5_set_range(double xmin, double xmax, double mmin);
void g5_set_xmj(int adr, int nj, double xj[][3], double mj[]);
void g5_set_jp(int adr, int nj, double mj[], double xj[][3]);
void g5_set_xi(int ni, double xi[][3]);
void g5_run(void);
void g5_get_force(int ni, double a[][3], double phi[]);
void g5_calculate_force_on_x(double xi[][3], double a[][3], double phi[], int ni);

/* 6th order (Sapporo2's sapporo6thlib; C++ references are pointers here):
 * full derivatives, each j-particle at its own time; one softening,
 * eps2[0] of calc_force_on_predictors; crkNew is zero. On error: a
 * message and NaN outputs. */
void initialize(void);
void initialize_special(int ndev, int *list);
void set_j_particle(int add, double pos[3], double vel[3], double acc[3], double jrk[3],
                    double snp[3], double crk[3], double mass, double time, int id, double eps2);
void predict_all(double time, int nj);
void no_predict_all(double time, int nj);
void pick_up_predictor_2(int addr, int *id, double *mass, double *eps2, double pos[3],
                         double vel[3], double acc[3]);
void calc_force_on_predictors(int ni, int nj, int ids[], double pos[][3], double vel[][3],
                              double acc[][3], double mass[], double eps2[], double accNew[][3],
                              double jrkNew[][3], double snpNew[][3], double crkNew[][3],
                              double phi[], int nnb[], double nnb_r2[]);

#ifdef __cplusplus
}
#endif

#endif
