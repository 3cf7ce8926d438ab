/* fuzz_trr.c -- libFuzzer target for the GROMACS TRR reader (tests/io/fuzz_common.h). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_one(HISTD_FORMAT_TRR, data, size, 0);
  fuzz_one(HISTD_FORMAT_TRR, data, size, 100);
  return 0;
}
