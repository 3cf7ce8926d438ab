/* fuzz_lammps.c -- libFuzzer target for the LAMMPS dump parser (tests/io/fuzz_common.h). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_one(HISTD_FORMAT_LAMMPS, data, size, 0);
  fuzz_one(HISTD_FORMAT_LAMMPS, data, size, 3);
  return 0;
}
