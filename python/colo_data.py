"""Read batches from colo's shared data loader (the consumer side).

One loader per dataset decodes and augments every image once and feeds every
job that names the dataset in its job file (``dataset = "name"``); colo starts
it and gives each such job ``COLO_DATA_SOCKET``. In the training script::

    import colo_data
    loader = colo_data.Loader(batch_size=128, device="cuda")
    for epoch in range(epochs):
        for images, labels in loader:      # one epoch, like a DataLoader
            ...

Guarantees (docs/data-sharing.md): every consumer sees every sample exactly
once per epoch, whenever it joined and whatever its batch size; a batch is
never overwritten while this consumer holds it; a consumer that holds the
others back too long is detached (``Detached`` is raised with the reason).

Batches are read from the loader's shared memory without copies: with
``device="cuda"`` the one copy is the transfer to the GPU, from memory pinned
with cudaHostRegister when CUDA allows it; with ``device="cpu"`` the tensors
are read-only views of the shared memory, valid until the next batch is
asked for (``clone()`` one to keep it or to change it in place).

Standard library and torch only; nothing of colo is imported.
"""

import json
import math
import mmap
import os
import socket
import sys
import time
import warnings

__all__ = ["Loader", "Detached", "LoaderGone", "SOCKET_ENV"]

SOCKET_ENV = "COLO_DATA_SOCKET"


class Detached(RuntimeError):
    """The loader stopped serving this consumer; the message says why."""


class LoaderGone(RuntimeError):
    """The loader's socket closed (colo stopped, or the loader died)."""


class _Batch:
    __slots__ = ("images", "labels", "ids", "last", "event")

    def __init__(self, images, labels, ids, last, event):
        self.images, self.labels, self.ids, self.last, self.event = images, labels, ids, last, event


class Loader:
    """An iterable over one epoch of batches per ``iter()``, from a shared loader.

    batch_size   samples per batch; the epoch's last batch is shorter
                 (like DataLoader's drop_last=False)
    device       "cuda" (or "cuda:N"): tensors on that GPU; "cpu": zero-copy views
    socket_name  the loader's socket; default $COLO_DATA_SOCKET
    return_ids   also yield each sample's dataset index (images, labels, ids)
    pin_memory   pin the shared memory for fast transfers (CUDA only)
    """

    def __init__(self, batch_size, device="cuda", socket_name=None, return_ids=False,
                 pin_memory=True):
        import torch

        self._torch = torch
        name = socket_name or os.environ.get(SOCKET_ENV)
        if not name:
            raise RuntimeError(
                "colo_data: no shared data loader: run the job under colo with dataset = \"...\" "
                "in its job file (colo sets %s), or pass socket_name= of a `colo data serve`"
                % SOCKET_ENV)
        if int(batch_size) < 1:
            raise ValueError("colo_data: batch_size must be at least 1")
        self.batch_size = int(batch_size)
        self.device = torch.device(device)
        self.return_ids = return_ids
        self._socket_name = name
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._sock.connect("\0" + name)
        except OSError as e:
            raise LoaderGone("colo_data: cannot reach the shared data loader @%s: %s" % (name, e))
        hello = self._call({"op": "hello", "batch_size": self.batch_size, "pid": os.getpid(),
                            "job": os.environ.get("COLO_JOB_NAME", "")})
        if not hello.get("ok"):
            raise RuntimeError("colo_data: the loader refused this consumer: %s" % hello.get("error"))
        self.info = hello
        self.dataset_size = hello["dataset_size"]
        self.num_classes = hello["classes"]
        self.image_shape = (hello["channels"], hello["size"], hello["size"])
        # CPU consumers map the ring read-only: the views they hand out cannot
        # corrupt what the others read. CUDA consumers hand out only GPU copies;
        # they map it writable because CUDA pins writable pages most reliably.
        cuda = self.device.type == "cuda"
        fd = os.open("/dev/shm" + hello["shm"], os.O_RDWR if cuda else os.O_RDONLY)
        try:
            self._mm = mmap.mmap(fd, hello["shm_bytes"], mmap.MAP_SHARED,
                                 mmap.PROT_READ | (mmap.PROT_WRITE if cuda else 0))
        finally:
            os.close(fd)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "the given buffer is not writable"
            self._f32 = torch.frombuffer(self._mm, dtype=torch.float32)
            self._i64 = torch.frombuffer(self._mm, dtype=torch.int64)
        self._sample_floats = hello["channels"] * hello["size"] * hello["size"]
        self._pinned = False
        self._copy_stream = None
        if self.device.type == "cuda":
            self._copy_stream = torch.cuda.Stream(device=self.device)
            if pin_memory:
                self._pin()
        self._unreleased = []     # granted batches not yet released, oldest first (events or None)
        self._outstanding = False  # a "next" request whose reply is not read yet
        self._in_epoch = False
        self.wait_seconds = 0.0   # time spent waiting for the loader
        self.batches = 0
        self.samples = 0
        self.epochs = 0

    def __len__(self):
        return math.ceil(self.dataset_size / self.batch_size)

    def __iter__(self):
        if self._in_epoch:
            self._abandon_epoch()
        self._in_epoch = True
        if not self._outstanding:
            self._request()
        while True:
            batch = self._receive()
            if not batch.last:
                self._request()  # the loader prepares the next one while this one is used
            if batch.event is not None:
                self._torch.cuda.current_stream(self.device).wait_event(batch.event)
            if self.return_ids:
                yield batch.images, batch.labels, batch.ids
            else:
                yield batch.images, batch.labels
            if batch.last:
                self.epochs += 1
                self._in_epoch = False
                return

    def stats(self):
        """What this consumer measured: batches, samples, epochs, wait_seconds."""
        return {"batches": self.batches, "samples": self.samples, "epochs": self.epochs,
                "wait_seconds": self.wait_seconds, "pinned": self._pinned}

    def close(self):
        """Leaves the loader (it also notices when the process ends)."""
        if self._sock is None:
            return
        if self._pinned:
            self._torch.cuda.synchronize(self.device)
            self._torch.cuda.cudart().cudaHostUnregister(self._f32.data_ptr())
            self._pinned = False
        self._sock.close()
        self._sock = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    # The protocol: one JSON object per message (docs/data-sharing.md).

    def _send(self, message):
        try:
            self._sock.send(json.dumps(message).encode())
        except OSError as e:
            raise LoaderGone("colo_data: the shared data loader @%s is gone: %s"
                             % (self._socket_name, e))

    def _recv(self):
        try:
            data = self._sock.recv(1 << 16)
        except OSError as e:
            data = b""
            reason = str(e)
        else:
            reason = "it closed the connection"
        if not data:
            raise LoaderGone("colo_data: the shared data loader @%s is gone (%s): did colo stop?"
                             % (self._socket_name, reason))
        return json.loads(data)

    def _call(self, message):
        self._send(message)
        return self._recv()

    def _releasable(self):
        """How many of the oldest granted batches may go back (their copies are done)."""
        n = 0
        for event in self._unreleased:
            if event is not None and not event.query():
                if len(self._unreleased) - n > 2:
                    event.synchronize()  # never hold more than two
                else:
                    break
            n += 1
        return n

    def _request(self):
        # In CPU mode the batch the caller holds stays unreleased until the next request after it.
        keep = 1 if self.device.type == "cpu" and self._unreleased else 0
        n = self._releasable() if self.device.type == "cuda" else len(self._unreleased) - keep
        del self._unreleased[:n]
        self._send({"op": "next", "release": n, "wait_ms": self.wait_seconds * 1000})
        self._outstanding = True

    def _abandon_epoch(self):
        if self._outstanding:
            try:
                self._receive()
            except Detached:
                pass
        n = self._releasable() if self.device.type == "cuda" else len(self._unreleased)
        del self._unreleased[:n]
        self._send({"op": "skip", "release": n, "wait_ms": self.wait_seconds * 1000})

    def _receive(self):
        torch = self._torch
        start = time.perf_counter()
        reply = self._recv()
        self.wait_seconds += time.perf_counter() - start
        self._outstanding = False
        if not reply.get("ok"):
            if reply.get("detached"):
                raise Detached("colo_data: " + reply.get("error", "detached"))
            raise RuntimeError("colo_data: the loader says: %s" % reply.get("error"))
        count = reply["count"]
        info = self.info
        views, labels, ids = [], [], []
        for slot, first, n in reply["pieces"]:
            base = info["first_slot_offset"] + slot * info["slot_stride"]
            img = (base + info["images_offset"]) // 4 + first * self._sample_floats
            views.append(self._f32[img:img + n * self._sample_floats].view(n, *self.image_shape))
            lab = (base + info["labels_offset"]) // 8 + first
            labels.append(self._i64[lab:lab + n])
            idx = (base + info["ids_offset"]) // 8 + first
            ids.append(self._i64[idx:idx + n])
        event = None
        if self.device.type == "cpu":
            images = views[0] if len(views) == 1 else torch.cat(views)
            label_t = labels[0] if len(labels) == 1 else torch.cat(labels)
            id_t = ids[0] if len(ids) == 1 else torch.cat(ids)
        else:
            with torch.cuda.stream(self._copy_stream):
                images = torch.empty((count,) + self.image_shape, dtype=torch.float32,
                                     device=self.device)
                at = 0
                for v in views:
                    images[at:at + v.shape[0]].copy_(v, non_blocking=self._pinned)
                    at += v.shape[0]
                label_t = torch.cat(labels).to(self.device, non_blocking=False)
                id_t = torch.cat(ids)
                event = torch.cuda.Event()
                event.record(self._copy_stream)
            current = torch.cuda.current_stream(self.device)
            images.record_stream(current)
            label_t.record_stream(current)
        self._unreleased.append(event)
        self.batches += 1
        self.samples += count
        return _Batch(images, label_t, id_t, reply["last"], event)

    def _pin(self):
        torch = self._torch
        torch.cuda.init()
        err = torch.cuda.cudart().cudaHostRegister(self._f32.data_ptr(), self._f32.numel() * 4, 0)
        if int(err) == 0:
            self._pinned = True
            return
        _clear_cuda_error()
        sys.stderr.write("colo_data: could not pin the shared ring (cudaHostRegister error %d); "
                         "copies to the GPU use pageable memory\n" % int(err))


def _clear_cuda_error():
    """Consumes the CUDA runtime's last error, which a failed cudaHostRegister
    leaves behind for PyTorch's next kernel-launch check to trip over."""
    import ctypes

    for name in ("libcudart.so.12", "libcudart.so.11.0", "libcudart.so"):
        try:
            lib = ctypes.CDLL(name, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)  # torch's copy only
        except OSError:
            continue
        lib.cudaGetLastError()
        return
