#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver (in the runtime -sanitize=fuzzer links): runs the fuzzing loop with
/// libFuzzer's flags from argv, calling `callback` with each input.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
