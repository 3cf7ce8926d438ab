/* fuzz_xtc.c -- libFuzzer target for the GROMACS XTC reader (tests/io/fuzz_common.h). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_one(HISTD_FORMAT_XTC, data, size, 0);
  fuzz_one(HISTD_FORMAT_XTC, data, size, 100);
  return 0;
}
