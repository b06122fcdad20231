/* The libFuzzer entry point every target in tests/fuzz/ defines. The same
 * file links either with libFuzzer (clang, -fsanitize=fuzzer: an endless
 * fuzzing run) or with replay_main.c (any compiler: each committed seed and
 * regression input once, as a ctest). */
#ifndef FUZZ_TARGET_H
#define FUZZ_TARGET_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
