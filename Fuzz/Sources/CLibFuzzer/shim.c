// Declarations only (include/CLibFuzzer.h); SwiftPM wants one source file in a C target.
#include "CLibFuzzer.h"
