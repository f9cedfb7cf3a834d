// FakeNvml: loads the stand-in NVML library (fake_nvml.cc) into a test and
// reaches its control functions. Keeping it loaded keeps its state alive
// between the backends a test creates (dlopen of the same path shares it).
#pragma once

#include <dlfcn.h>

#include <string>

#include "fake_nvml/fake_nvml.h"

namespace colo {

class FakeNvml {
 public:
  explicit FakeNvml(const char* path) : handle_(dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
    if (handle_ == nullptr) return;
    reset = symbol<fake_nvml_reset_fn>("fake_nvml_reset");
    set = symbol<fake_nvml_set_fn>("fake_nvml_set");
    get = symbol<fake_nvml_get_fn>("fake_nvml_get");
    add_process = symbol<fake_nvml_add_process_fn>("fake_nvml_add_process");
    add_utilization = symbol<fake_nvml_add_utilization_fn>("fake_nvml_add_utilization");
    inject_xid = symbol<fake_nvml_inject_xid_fn>("fake_nvml_inject_xid");
    mig_set = symbol<fake_nvml_mig_set_fn>("fake_nvml_mig_set");
    mig_add_gpu_instance =
        symbol<fake_nvml_mig_add_gpu_instance_fn>("fake_nvml_mig_add_gpu_instance");
    mig_describe_fn = symbol<fake_nvml_mig_describe_fn>("fake_nvml_mig_describe");
  }
  ~FakeNvml() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  FakeNvml(const FakeNvml&) = delete;
  FakeNvml& operator=(const FakeNvml&) = delete;

  // The control functions every build has (the minimal one lacks the MIG ones).
  bool loaded() const {
    return handle_ != nullptr && reset && set && get && add_process && add_utilization &&
           inject_xid;
  }
  bool has_mig() const { return mig_set && mig_add_gpu_instance && mig_describe_fn; }

  // The fake's MIG instances, e.g. "gpu0 gi1 p9 @0 [ci0/3]" ("" when none).
  std::string mig_describe() const {
    std::string text(mig_describe_fn(nullptr, 0), '\0');
    mig_describe_fn(text.data(), static_cast<unsigned int>(text.size()));
    text.pop_back();  // the NUL
    return text;
  }

  fake_nvml_reset_fn reset = nullptr;
  fake_nvml_set_fn set = nullptr;
  fake_nvml_get_fn get = nullptr;
  fake_nvml_add_process_fn add_process = nullptr;
  fake_nvml_add_utilization_fn add_utilization = nullptr;
  fake_nvml_inject_xid_fn inject_xid = nullptr;
  fake_nvml_mig_set_fn mig_set = nullptr;
  fake_nvml_mig_add_gpu_instance_fn mig_add_gpu_instance = nullptr;
  fake_nvml_mig_describe_fn mig_describe_fn = nullptr;

 private:
  template <class Fn>
  Fn symbol(const char* name) {
    return reinterpret_cast<Fn>(dlsym(handle_, name));
  }

  void* handle_;
};

}  // namespace colo
