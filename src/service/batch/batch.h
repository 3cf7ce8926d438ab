/*
 * batch.h -- `histd batch` (batch.c), the program that runs a job as a
 * batch scheduler's tasks; main.c's only way in.
 */
#ifndef HISTD_BATCH_H
#define HISTD_BATCH_H

/* `histd batch ...` (batch.c): plan, run and merge a job's shards as a
 * batch scheduler's tasks. argv[0] is "batch"; returns the exit status. */
int batch_main(int argc, char **argv);

#endif
