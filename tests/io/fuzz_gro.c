/* fuzz_gro.c -- libFuzzer target for the GRO parser (tests/io/fuzz_common.h). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_one(HISTD_FORMAT_GRO, data, size, 0);
  fuzz_one(HISTD_FORMAT_GRO, data, size, 3);
  return 0;
}
