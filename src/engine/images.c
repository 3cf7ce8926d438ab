/*
 * images.c -- every periodic image within r_max ("images": "all").
 *
 * The minimum image measures each pair once, which is why a periodic job's
 * r_max stops at half the box's shortest width. Past it a pair has several
 * images within reach, and an atom meets its own images. With all images a
 * periodic problem becomes a sum of open-space problems, one a lattice
 * translation n = (na, nb, nc):
 *
 *   - B's points moved by n H: x' = ((x + na ax) + nb bx) + nc cx,
 *     y' = (y + nb by) + nc cy, z' = z + nc cz, each product and sum
 *     rounded on its own (an orthorhombic box's zero tilts add nothing),
 *     and each pair measured in open space by the contract, from A's point
 *     to that image (histd__image_of);
 *   - a self problem counts each unordered pair once: n = 0 is A's own
 *     self pairs (i < j, the coordinates as given), and of every other n
 *     and -n only the one whose first nonzero component (na, then nb, then
 *     nc) is positive, with every (i, j), i = j included: an atom and its
 *     own image. A x B takes every n.
 *
 * The translations are those whose moved B can come within r_max of A:
 * ranges from the points' extents (z first, then y, then x, as the tilts
 * couple them), each widened by one, and then every translation whose
 * moved bounding box lies farther than r_max from A's (with a margin far
 * above the rounding of the moves) left out. The worker runs each
 * translation's open-space problem with the job's kernel (any that runs an
 * open A x B) and adds them up (worker.c: run_images).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

void histd__image_of(const histd_box *box, const int32_t n[3], double x, double y, double z,
                    double out[3]) {
  const double na = n[0], nb = n[1], nc = n[2];
  double t = na * box->ax, u;
  x = x + t;
  t = nb * box->bx, x = x + t;
  t = nc * box->cx, x = x + t;
  u = nb * box->by, y = y + u;
  u = nc * box->cy, y = y + u;
  u = nc * box->cz, z = z + u;
  out[0] = x, out[1] = y, out[2] = z;
}

/* The integers k with lo <= k * step + off <= hi, widened by one each side,
 * as [*k0, *k1]; false when they are more than `most`. */
static bool span_of(double lo, double hi, double off, double step, int64_t most, int64_t *k0,
                    int64_t *k1) {
  const double a = ceil((lo - off) / step) - 1, b = floor((hi - off) / step) + 1;
  if (!(a >= -(double)most && b <= (double)most) || !(b - a < (double)most))
    return false;
  *k0 = (int64_t)a, *k1 = (int64_t)b;
  return true;
}

/* n's first nonzero component is positive. */
static bool positive(const int32_t n[3]) {
  return n[0] != 0 ? n[0] > 0 : n[1] != 0 ? n[1] > 0 : n[2] > 0;
}

int histd__images_plan(const histd_box *box, const double amin[3], const double amax[3],
                       const double bmin[3], const double bmax[3], bool self, double r_max,
                       int32_t (**out)[3], size_t *count, char *msg, size_t msglen) {
  *out = NULL;
  *count = 0;
  if (box->kind == HISTD_BOX_NONE)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "images \"all\" needs a periodic box (the job's box, or the file's)");
  /* pair displacements before a move: a - b over the two bounding boxes */
  double dlo[3], dhi[3], big = r_max;
  for (int k = 0; k < 3; k++) {
    dlo[k] = amin[k] - bmax[k];
    dhi[k] = amax[k] - bmin[k];
    big = fmax(big, fmax(fabs(amin[k]), fmax(fabs(amax[k]), fmax(fabs(bmin[k]), fabs(bmax[k])))));
  }
  const double far = r_max * (1 + 0x1p-20) + 0x1p-40 * big * 4;
  const int64_t most = HISTD_MAX_IMAGES;
  size_t cap = 64, n = 0;
  int32_t(*list)[3] = malloc(cap * sizeof *list);
  if (list == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the translations");
  int64_t c0, c1;
  /* a translation t = n H moves B's image by t: a pair's displacement is
   * (a - b) - t, within far of 0 when t lies in [dlo - far, dhi + far] */
  bool fits = span_of(dlo[2] - far, dhi[2] + far, 0, box->cz, most, &c0, &c1);
  for (int64_t nc = c0; fits && nc <= c1; nc++) {
    int64_t b0, b1;
    fits = span_of(dlo[1] - far, dhi[1] + far, (double)nc * box->cy, box->by, most, &b0, &b1);
    for (int64_t nb = b0; fits && nb <= b1; nb++) {
      int64_t a0, a1;
      fits = span_of(dlo[0] - far, dhi[0] + far, (double)nb * box->bx + (double)nc * box->cx,
                     box->ax, most, &a0, &a1);
      for (int64_t na = a0; fits && na <= a1; na++) {
        const int32_t t[3] = {(int32_t)na, (int32_t)nb, (int32_t)nc};
        const bool zero = na == 0 && nb == 0 && nc == 0;
        if (self && !zero && !positive(t))
          continue;
        /* the gap between A's box and B's moved one */
        double move[3], gap = 0;
        histd__image_of(box, t, 0, 0, 0, move);
        for (int k = 0; k < 3; k++) {
          const double g = fmax(0, fmax(bmin[k] + move[k] - amax[k], amin[k] - bmax[k] - move[k]));
          gap += g * g;
        }
        if (sqrt(gap) > far)
          continue;
        if (n == (size_t)most) {
          fits = false;
          break;
        }
        if (n == cap) {
          int32_t(*more)[3] = realloc(list, 2 * cap * sizeof *list);
          if (more == NULL) {
            free(list);
            return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the translations");
          }
          list = more, cap *= 2;
        }
        memcpy(list[n++], t, sizeof t);
      }
    }
  }
  if (!fits) {
    free(list);
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "images \"all\": r_max %g and the points' extent in this box reach more "
                      "than %d lattice translations; give a smaller r_max",
                      r_max, HISTD_MAX_IMAGES);
  }
  *out = list;
  *count = n;
  return 0;
}

int histd__images_move(const histd_dataset *src, const histd_box *box, const int32_t n[3],
                       histd_dataset *dst, char *msg, size_t msglen) {
  for (size_t i = 0; i < src->n; i++) {
    double p[3];
    histd__image_of(box, n, src->x[i], src->y[i], src->z[i], p);
    dst->x[i] = p[0], dst->y[i] = p[1], dst->z[i] = p[2];
  }
  if (src->w != NULL)
    memcpy(dst->w, src->w, src->n * sizeof *src->w);
  return histd_dataset_finish(dst, msg, msglen);
}
