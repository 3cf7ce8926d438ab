/* fuzz_pdb.c -- libFuzzer target for the PDB parser (tests/io/fuzz_common.h). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_one(HISTD_FORMAT_PDB, data, size, 0);
  fuzz_one(HISTD_FORMAT_PDB, data, size, 3);
  return 0;
}
