/* fuzz_netcdf.c -- libFuzzer target for the AMBER NetCDF parser (tests/io/fuzz_common.h).
 * What it reaches is mostly libnetcdf's classic-format reader (not
 * instrumented: ASan sees its memcpy calls and its heap, not its loads). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_one(HISTD_FORMAT_NETCDF, data, size, 0);
  fuzz_one(HISTD_FORMAT_NETCDF, data, size, 3);
  return 0;
}
