/*
 * follow.h -- following jobs ("follow": true, follow.c): which jobs may
 * follow a growing dataset, and their result kept current frame by frame.
 */
#ifndef HISTD_FOLLOW_H
#define HISTD_FOLLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "histd/histd.h"
#include "histd/params.h"

/* Why a job of parameters p (asking for `statistic`; A x B of another
 * dataset when cross, whose frames are frames_b) cannot follow a growing
 * dataset, as a sentence; NULL when it can. */
const char *follow_refusal(const histd_params *p, histd_statistic statistic, bool cross,
                           uint64_t frames_b);

/* Adds to sum (the result of frames 0..k) part, the same job's result of
 * the frames after them: counts and sums added, the per-frame table's rows
 * appended, the g(r) volume rebuilt from the pair density. b_whole: B is
 * another dataset's one frame (its points are not counted per frame).
 * sum's blocks are the caller's to set. 0, or an error with a sentence. */
int follow_add(histd_result *sum, const histd_result *part, bool b_whole, char *msg,
               size_t msglen);

#endif
