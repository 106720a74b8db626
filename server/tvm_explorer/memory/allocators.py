"""TVM 0.27's CPU allocators, replayed on the plan: what a run should hold, byte for byte, before
anything runs.

- The Relax VM allocates each storage through its allocator. ``naive`` (what the measurement
  runs with) allocates exactly the size asked for and frees it when the storage's last
  reference goes; ``pooled`` (the VM's default) rounds each size up to a 4 KiB page and keeps
  freed buffers for a later request of the same rounded size, never returning them during a
  run (``src/runtime/memory/pooled_allocator.h``).
- Kernel scratch (``TVMBackendAllocWorkspace`` on CPU) comes from a per-thread workspace pool
  that rounds to 4 KiB pages and keeps freed pages for the next kernel, resizing its largest
  free page when none is large enough (``src/runtime/workspace_pool.cc``, replayed here
  line for line).
"""

from __future__ import annotations

PAGE = 4096


def _round(nbytes: int) -> int:
    return max(PAGE, (nbytes + PAGE - 1) // PAGE * PAGE)


class WorkspacePool:
    """``WorkspacePool::Pool`` of TVM's runtime; ``held`` is what it has allocated."""

    def __init__(self):
        # Entries are [id, size]; index 0 is the guard entry of size 0, as in TVM.
        self.free_list: list[list[int]] = [[0, 0]]
        self.allocated: list[list[int]] = [[0, 0]]
        self.held = 0
        self._next = 1

    def _new(self, nbytes: int) -> list[int]:
        self.held += nbytes
        entry = [self._next, nbytes]
        self._next += 1
        return entry

    def _resize(self, entry: list[int], nbytes: int) -> list[int]:
        self.held -= entry[1]
        return self._new(nbytes)

    def alloc(self, nbytes: int) -> int:
        """Allocate; returns the entry's id (to free it)."""
        nbytes = _round(nbytes)
        if len(self.free_list) == 2:
            e = self.free_list.pop()
            if e[1] < nbytes:
                e = self._resize(e, nbytes)
        elif len(self.free_list) == 1:
            e = self._new(nbytes)
        elif self.free_list[-1][1] >= nbytes:
            i = len(self.free_list) - 2
            while self.free_list[i][1] >= nbytes:
                i -= 1
            e = self.free_list.pop(i + 1)
        else:
            e = self._resize(self.free_list.pop(), nbytes)
        self.allocated.append(e)
        return e[0]

    def free(self, ident: int) -> None:
        """Return an entry to the pool (kept, not released)."""
        for i in range(len(self.allocated) - 1, 0, -1):
            if self.allocated[i][0] == ident:
                e = self.allocated.pop(i)
                break
        else:
            return
        if self.free_list[-1][1] < e[1]:
            self.free_list.append(e)
        elif len(self.free_list) == 2:
            self.free_list.append(self.free_list[-1])
            self.free_list[1] = e
        else:
            i = len(self.free_list) - 1
            self.free_list.append(e)
            while e[1] < self.free_list[i][1]:
                self.free_list[i + 1] = self.free_list[i]
                i -= 1
            self.free_list[i + 1] = e

    def run_kernel(self, events: list[tuple[str, int | None, str]]) -> None:
        """A kernel's workspace allocations and frees, in program order (unknown sizes and
        frees of buffers never allocated are skipped)."""
        open_: dict[str, list[int]] = {}
        for what, nbytes, name in events:
            if what == "alloc":
                if nbytes is not None:
                    open_.setdefault(name, []).append(self.alloc(nbytes))
            elif open_.get(name):
                self.free(open_[name].pop())
        for idents in open_.values():  # allocations a kernel never frees stay with it
            for ident in idents:
                self.free(ident)


class PooledAllocator:
    """The Relax VM's pooled allocator: exact-size (page-rounded) free lists."""

    def __init__(self):
        self.free: dict[int, int] = {}
        self.held = 0

    def alloc(self, nbytes: int) -> None:
        size = _round(nbytes)
        if self.free.get(size):
            self.free[size] -= 1
        else:
            self.held += size

    def release(self, nbytes: int) -> None:
        size = _round(nbytes)
        self.free[size] = self.free.get(size, 0) + 1
