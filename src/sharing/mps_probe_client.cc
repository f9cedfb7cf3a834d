#include "sharing/mps_probe_client.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>

namespace colo {
namespace {

// The few CUDA driver API types and entry points the probe uses (cuda.h's
// ABI: CUresult and CUdevice are ints, a context is a pointer, a device
// pointer 64 bits).
using CuResult = int;
using CuDevice = int;
using CuContext = void*;
using CuDevicePtr = unsigned long long;

struct Driver {
  CuResult (*init)(unsigned int) = nullptr;
  CuResult (*device_get)(CuDevice*, int) = nullptr;
  CuResult (*primary_ctx_retain)(CuContext*, CuDevice) = nullptr;
  CuResult (*ctx_set_current)(CuContext) = nullptr;
  CuResult (*mem_alloc)(CuDevicePtr*, size_t) = nullptr;
  CuResult (*memset_d8)(CuDevicePtr, unsigned char, size_t) = nullptr;
  CuResult (*ctx_synchronize)() = nullptr;
  CuResult (*get_error_string)(CuResult, const char**) = nullptr;
};

template <typename F>
bool bind(void* library, const char* name, F& function) {
  function = reinterpret_cast<F>(dlsym(library, name));
  if (function == nullptr) fmt::print(stderr, "mps-probe-client: libcuda.so.1 has no {}\n", name);
  return function != nullptr;
}

// Prints what failed and returns false when `result` is not CUDA_SUCCESS (0).
bool check(const Driver& driver, CuResult result, const char* call) {
  if (result == 0) return true;
  const char* text = nullptr;
  if (driver.get_error_string != nullptr) driver.get_error_string(result, &text);
  fmt::print(stderr, "mps-probe-client: {} failed: CUDA error {} ({})\n", call, result,
             text != nullptr ? text : "no description");
  return false;
}

}  // namespace

int run_mps_probe_client(bool hold) {
  const auto start = std::chrono::steady_clock::now();
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    fmt::print(stderr, "mps-probe-client: cannot load the CUDA driver (libcuda.so.1): {}\n",
               why != nullptr ? why : "unknown dlopen error");
    return 1;
  }
  Driver d;
  if (!bind(library, "cuInit", d.init) || !bind(library, "cuDeviceGet", d.device_get) ||
      !bind(library, "cuDevicePrimaryCtxRetain", d.primary_ctx_retain) ||
      !bind(library, "cuCtxSetCurrent", d.ctx_set_current) ||
      !bind(library, "cuMemAlloc_v2", d.mem_alloc) ||
      !bind(library, "cuMemsetD8_v2", d.memset_d8) ||
      !bind(library, "cuCtxSynchronize", d.ctx_synchronize)) {
    return 1;
  }
  bind(library, "cuGetErrorString", d.get_error_string);  // optional: for messages
  constexpr size_t kBytes = size_t{1} << 20;
  CuDevice device = 0;
  CuContext context = nullptr;
  CuDevicePtr memory = 0;
  if (!check(d, d.init(0), "cuInit") || !check(d, d.device_get(&device, 0), "cuDeviceGet") ||
      !check(d, d.primary_ctx_retain(&context, device), "cuDevicePrimaryCtxRetain") ||
      !check(d, d.ctx_set_current(context), "cuCtxSetCurrent") ||
      !check(d, d.mem_alloc(&memory, kBytes), "cuMemAlloc") ||
      !check(d, d.memset_d8(memory, 0x5a, kBytes), "cuMemsetD8") ||
      !check(d, d.ctx_synchronize(), "cuCtxSynchronize")) {
    return 1;
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  fmt::print("ready {}\n", ms);
  std::fflush(stdout);
  if (hold) {
    // Until the probe closes our stdin (or dies): the context stays ours.
    char buffer[64];
    while (::read(STDIN_FILENO, buffer, sizeof buffer) > 0) {
    }
  }
  return 0;  // the driver releases the context and memory as the process ends
}

}  // namespace colo
