// cucount_c1.cu -- a command-line front end to cucount's count2 (DESI's
// CUDA pair counter, adematti/cucount), for C1's comparison (issue 30): it
// does what cucount's Python count2 does (its numpy frontend's MeshAttrs
// defaults, its pybind11 glue) without Python or numpy, which the lent GPU
// machine lacks. Built outside this repository against cucount's sources
// by bench/cucount_build.sh; never vendored, never in CI.
//
//   cucount_c1 rp_pi|s_mu FILE1 FILE2|- EDGES TOP N2 BOX WEIGHTED
//
// FILE: CSV x,y,z,w after a header line (bench/corrfunc_compare.py's);
// FILE2 '-': FILE1 against itself (cucount counts ordered pairs: halved).
// EDGES: axis 1's edges (r_p or s), one a line. TOP, N2: pi_max and pi's
// bins, or mu_max and mu's bins. BOX: a periodic side, 0 for open space.
// WEIGHTED 1 sums w_i w_j, 0 counts pairs. cucount's pi and mu are signed
// (line of sight z: pi = mu s with mu = dz / s): binned in [-TOP, TOP] by
// 2 N2 bins and folded (bin k and bin -1-k). Prints one line a bin, axis 2
// fastest, "bin %.17g" of the sum (cucount logs on stdout too, errors as
// "[ERROR] ..."), and on stderr "cucount seconds: T" (meshes and count on
// the device, no file read).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common.h"
#include "count2.h"
#include "mesh.h"

static void read_csv(const char *path, std::vector<FLOAT> &pos, std::vector<FLOAT> &w) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "cucount_c1: cannot open %s\n", path);
    exit(1);
  }
  char line[512];
  if (!fgets(line, sizeof line, f)) {
    fprintf(stderr, "cucount_c1: %s is empty\n", path);
    exit(1);
  }
  double x, y, z, wt;
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "%lf,%lf,%lf,%lf", &x, &y, &z, &wt) != 4) {
      fprintf(stderr, "cucount_c1: %s: a line without x,y,z,w: %s", path, line);
      exit(1);
    }
    pos.push_back(x);
    pos.push_back(y);
    pos.push_back(z);
    w.push_back(wt);
  }
  fclose(f);
}

int main(int argc, char **argv) {
  if (argc != 9) {
    fprintf(stderr, "usage: cucount_c1 rp_pi|s_mu FILE1 FILE2|- EDGES TOP N2 BOX WEIGHTED\n");
    return 2;
  }
  const bool rp_pi = strcmp(argv[1], "rp_pi") == 0;
  const bool self = strcmp(argv[3], "-") == 0;
  const double top = atof(argv[5]), box = atof(argv[7]);
  const int n2 = atoi(argv[6]);
  const bool weighted = atoi(argv[8]) != 0;
  std::vector<FLOAT> pos1, w1, pos2, w2, edges;
  read_csv(argv[2], pos1, w1);
  if (!self)
    read_csv(argv[3], pos2, w2);
  FILE *fe = fopen(argv[4], "r");
  double e;
  while (fe && fscanf(fe, "%lf", &e) == 1)
    edges.push_back(e);
  if (fe)
    fclose(fe);
  if (edges.size() < 2 || n2 < 1) {
    fprintf(stderr, "cucount_c1: need two edges or more in %s and N2 >= 1\n", argv[4]);
    return 2;
  }
  const size_t n1 = edges.size() - 1;
  global_log_level = LOG_LEVEL_WARN;

  // Particles: positions (n, 3), values: the individual weight or nothing
  IndexValue iv = get_index_value(0, 0, weighted ? 1 : 0, 0, 0);
  Particles host[2];
  memset(host, 0, sizeof host);
  host[0].size = w1.size();
  host[0].positions = pos1.data();
  host[0].values = weighted ? w1.data() : NULL;
  host[0].index_value = iv;
  host[1] = host[0];
  if (!self) {
    host[1].size = w2.size();
    host[1].positions = pos2.data();
    host[1].values = weighted ? w2.data() : NULL;
  }

  // BinAttrs: axis 1 by its edges; axis 2 linear in [-top, top], 2 n2 bins
  BinAttrs battrs;
  memset(&battrs, 0, sizeof battrs);
  battrs.ndim = 2;
  battrs.var[0] = rp_pi ? VAR_RP : VAR_S;
  battrs.los[0] = rp_pi ? LOS_Z : LOS_NONE;
  battrs.min[0] = edges[0];
  battrs.max[0] = edges[n1];
  battrs.step[0] = (edges[n1] - edges[0]) / n1;
  battrs.array[0] = edges.data();
  battrs.asize[0] = n1 + 1;
  battrs.shape[0] = n1;
  battrs.var[1] = rp_pi ? VAR_PI : VAR_MU;
  battrs.los[1] = LOS_Z;
  battrs.min[1] = -top;
  battrs.max[1] = top;
  battrs.step[1] = (top - -top) / (2 * n2);
  battrs.array[1] = NULL;
  battrs.asize[1] = 0;
  battrs.shape[1] = 2 * n2;
  battrs.size = n1 * 2 * n2;

  // MeshAttrs as cucount's numpy MeshAttrs sets them by default
  const double smax = rp_pi ? sqrt(edges[n1] * edges[n1] + top * top) : edges[n1];
  const double npart = 0.5 * (w1.size() + (self ? w1.size() : w2.size()));
  MeshAttrs mattrs;
  memset(&mattrs, 0, sizeof mattrs);
  mattrs.type = MESH_CARTESIAN;
  mattrs.smax = smax;
  mattrs.periodic = box > 0;
  for (int a = 0; a < NDIM; a++) {
    double lo = 1e300, hi = -1e300, size = box, centre = 0.0;
    if (box <= 0) {
      for (int p = 0; p < 2; p++)
        for (size_t i = 0; i < host[p].size; i++) {
          lo = fmin(lo, host[p].positions[3 * i + a]);
          hi = fmax(hi, host[p].positions[3 * i + a]);
        }
      size = 1.00001 * (hi - lo);
      centre = 0.5 * (hi + lo);
    }
    mattrs.boxsize[a] = size;
    mattrs.boxcenter[a] = centre;
    double nside = fmin(6.0 * size / smax, cbrt(0.5 * npart));
    mattrs.meshsize[a] = nside < 1 ? 1 : (size_t)nside;
  }
  SelectionAttrs sattrs;
  memset(&sattrs, 0, sizeof sattrs);
  WeightAttrs wattrs;
  memset(&wattrs, 0, sizeof wattrs);
  SplitAttrs spattrs = {SPLIT_NONE, 0, 1};

  CUDA_CHECK(cudaFree(0)); // the context first: not timed
  auto t0 = std::chrono::steady_clock::now();
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  Particles dev[MAX_NMESH];
  Mesh mesh[MAX_NMESH];
  memset(dev, 0, sizeof dev);
  memset(mesh, 0, sizeof mesh);
  copy_particles_to_device(host[0], &dev[0], 2);
  copy_particles_to_device(host[1], &dev[1], 2);
  set_mesh(dev, mesh, mattrs, NULL, stream);
  for (int i = 0; i < 2; i++)
    free_device_particles(&dev[i]);
  const size_t csize = battrs.size;
  FLOAT *dcounts = (FLOAT *)my_device_malloc(csize * sizeof(FLOAT), NULL);
  count2(dcounts, mesh, mattrs, sattrs, battrs, wattrs, spattrs, NULL, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<FLOAT> counts(csize);
  CUDA_CHECK(cudaMemcpy(counts.data(), dcounts, csize * sizeof(FLOAT), cudaMemcpyDeviceToHost));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fprintf(stderr, "cucount seconds: %.6f (mesh %zux%zux%zu)\n", secs, mattrs.meshsize[0],
          mattrs.meshsize[1], mattrs.meshsize[2]);
  for (size_t i = 0; i < n1; i++)
    for (int k = 0; k < n2; k++) {
      double v = counts[i * 2 * n2 + n2 + k] + counts[i * 2 * n2 + n2 - 1 - k];
      printf("bin %.17g\n", self ? v / 2 : v);
    }
  return 0;
}
