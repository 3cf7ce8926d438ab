/* fuzz_raw.c -- libFuzzer target for the raw float64 and float32 parsers. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_one(HISTD_FORMAT_F64, data, size, 0);
  fuzz_one(HISTD_FORMAT_F32, data, size, 0);
  fuzz_one(HISTD_FORMAT_F32, data, size, 2);
  return 0;
}
