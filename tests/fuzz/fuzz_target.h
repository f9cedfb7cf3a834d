// What a fuzz target defines: libFuzzer calls it with each input it makes,
// fuzz_replay_main.cc with each file of the target's corpus. Returns 0.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
