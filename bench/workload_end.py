"""The end of a reference workload run, shared by train.py and dlrm.py: the
final metrics colo records, including the memory figures that
bench/memory_check.py compares with colo's own NVML peak."""


def report_end(colo, torch, device, script, total_s, final):
    """Reports `final` plus, on a GPU, the allocator's peak and the device
    memory in use now (all processes, as cudaMemGetInfo sees it). For a job
    alone on the GPU, device_used_mib - memory_reserved_mib is its CUDA context
    (kernels, cuBLAS/cuDNN state)."""
    if device.type == "cuda":
        reserved_mib = torch.cuda.max_memory_reserved(device) / 2**20
        allocated_mib = torch.cuda.max_memory_allocated(device) / 2**20
        free_b, total_b = torch.cuda.mem_get_info(device)
        colo.metric(max_memory_reserved_mib=reserved_mib, max_memory_allocated_mib=allocated_mib,
                    memory_reserved_mib=torch.cuda.memory_reserved(device) / 2**20,
                    device_used_mib=(total_b - free_b) / 2**20)
        print("%s: done in %.1fs; max memory reserved %.0f MiB, allocated %.0f MiB"
              % (script, total_s, reserved_mib, allocated_mib), flush=True)
    else:
        print("%s: done in %.1fs" % (script, total_s), flush=True)
    colo.end(**final)
