/*
 * statistic.c -- the statistics histd computes, one row each.
 *
 * A statistic is three things: what one pair adds (its evaluator,
 * histd/eval.h), the driver that walks the pairs for its shape of answer
 * (bins: the histogram engines; a value per point and a record per pair:
 * points.c and kernels/points_kernels.cu), and the facts the layers above
 * need to check a job and to size, store and write its answer, which are
 * this table: its name, the parameter that asks for it, the shape of its
 * answer, what a kernel must be able to do, how its radius and weights are
 * read, how many bytes a point's row takes. Rules that depend on the
 * statistic read its row instead of naming statistics, so that a new
 * statistic of a known shape is a row here, an evaluator and the line in
 * its driver that calls it.
 */
#include <stddef.h>

#include "histd/histd.h"

static const histd_statistic_info statistics[] = {
    [HISTD_STAT_HISTOGRAM] = {"histogram", "bins", HISTD_ANSWER_BINS, 0, false, true, true,
                              {0, 0}},
    [HISTD_STAT_WITHIN] = {"within", "within", HISTD_ANSWER_BINS, HISTD_CAN_WITHIN, false, true,
                           false, {0, 0}},
    [HISTD_STAT_POINT_COUNTS] = {"per_point", "per_point", HISTD_ANSWER_POINTS, HISTD_CAN_POINTS,
                                 false, true, false, {8, 16}},
    [HISTD_STAT_NEAREST] = {"nearest", "nearest", HISTD_ANSWER_POINTS, HISTD_CAN_POINTS, true,
                            false, false, {16, 16}},
    [HISTD_STAT_PAIRS] = {"pairs", "pairs_within", HISTD_ANSWER_PAIRS, HISTD_CAN_PAIRS, false,
                          false, false, {0, 0}},
    /* a row of bins a point (its counts, and its below and partners) */
    [HISTD_STAT_POINT_HISTOGRAM] = {"per_point_histogram", "per_point_histogram",
                                    HISTD_ANSWER_POINTS, HISTD_CAN_POINTS, false, false, true,
                                    {16, 16}},
    /* bins of two axes, each pair once (histd/eval.h's histd_ev_bin_pair) */
    [HISTD_STAT_RP_PI] = {"rp_pi", "statistic \"rp_pi\"", HISTD_ANSWER_BINS, HISTD_CAN_BINS2,
                          false, true, true, {0, 0}},
    [HISTD_STAT_S_MU] = {"s_mu", "statistic \"s_mu\"", HISTD_ANSWER_BINS, HISTD_CAN_BINS2,
                         false, true, true, {0, 0}},
    /* a result's name: the engine counts the histogram of the unit
     * vectors' chords (the job layer binds it) */
    [HISTD_STAT_THETA] = {"theta", "statistic \"theta\"", HISTD_ANSWER_BINS, 0, false, true,
                          true, {0, 0}},
};

const histd_statistic_info *histd_statistic_about(histd_statistic s) {
  return (unsigned)s < sizeof statistics / sizeof statistics[0] ? &statistics[s] : NULL;
}

bool histd_statistic_per_point(histd_statistic s) {
  const histd_statistic_info *in = histd_statistic_about(s);
  return in != NULL && in->answer == HISTD_ANSWER_POINTS;
}
