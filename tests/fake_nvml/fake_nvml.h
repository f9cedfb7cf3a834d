// Control functions of the stand-in NVML library (fake_nvml.cc), which tests
// load through the same dlopen path as the real driver. Tests reach these
// through dlsym on the same library handle (see gpu_test.cc).
#pragma once

extern "C" {

// Back to the default: one H200-like device, every query answering, no processes.
using fake_nvml_reset_fn = void (*)();
// Keys: "init_result", "device_count", "process_stride" (24 or 32),
// "detail_list_result", "power_result", "gpm_supported", "gpm_sm_util_pct",
// "gpm_tensor_result",
// "process_utilization_result", "profile_info_v_result", "placements_result",
// "gpu_lost", "event_set_create_result", "supported_event_types" (a mask),
// "register_events_result", "register_events_result_gpuN" (device N only).
using fake_nvml_set_fn = void (*)(const char* key, long long value);
// Counters: "init_calls", "shutdown_calls", "energy_reads", "gpm_samples_live",
// "last_seen_timestamp_us", "event_sets_live", "event_waits",
// "event_wait_max_timeout_ms".
using fake_nvml_get_fn = long long (*)(const char* key);
// mode 0: compute list, 2: MPS list.
using fake_nvml_add_process_fn = void (*)(unsigned int mode, unsigned int pid,
                                          unsigned long long used_bytes);
// MIG state (full build): keys "model" ("H200-141GB", "H100-80GB",
// "A100-40GB"), "mode" ("1"/"0": current and pending), "pending", "permission"
// ("0": every change answers NO_PERMISSION), "kill_at" ("gi_create:before",
// "gi_create:after", "ci_create:after": the library SIGKILLs its process
// there, once). Kept in $FAKE_NVML_STATE when that names a file.
using fake_nvml_mig_set_fn = void (*)(const char* key, const char* value);
// Creates a GPU instance as someone other than colo would (no permission
// check) with `compute_instances` compute instances; its id, or -NVML error.
using fake_nvml_mig_add_gpu_instance_fn = int (*)(unsigned int device, unsigned int profile_id,
                                                  unsigned int start,
                                                  unsigned int compute_instances);
// "gpu0 gi1 p9 @0 [ci0/3]; gpu0 gi2 p19 @4 []" (id, profile id, start, then
// compute instances id/slices); returns the length needed including the NUL.
using fake_nvml_mig_describe_fn = unsigned int (*)(char* buffer, unsigned int length);
// An Xid critical error on `device`, queued on every event set it is
// registered on (lost when none is, as with the driver).
using fake_nvml_inject_xid_fn = void (*)(unsigned int device, unsigned long long xid);
using fake_nvml_add_utilization_fn = void (*)(unsigned int pid, unsigned int sm_util,
                                              unsigned long long timestamp_us);
}
