// The fuzz targets' assertion: a violated invariant traps, so libFuzzer
// saves the input as a crash reproducer (and a doctest replaying it fails).
#pragma once

#define FUZZ_CHECK(cond)               \
    do {                               \
        if (!(cond)) __builtin_trap(); \
    } while (0)
