/* fuzz_dcd.c -- libFuzzer target for the DCD trajectory parser (tests/io/fuzz_common.h). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_one(HISTD_FORMAT_DCD, data, size, 0);
  fuzz_one(HISTD_FORMAT_DCD, data, size, 20);
  return 0;
}
