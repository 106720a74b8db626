"""Run ``tvm-explorer`` with a fault injected at a chosen point: for tests only (the product
has no such hook). ``python cli_harness.py MODE MARKER -- ARGS...``

MODE:
  segv            a real TVM crash when the pipeline is about to run: a method of an IRModule
                  object with no C++ object behind it (a null dereference in TVM's C++; with
                  apache-tvm-ffi 0.1.15 ``copy.copy`` crashed too, but no longer with the pinned 0.1.14)
  term-at-fork    when the pipeline is about to run: fork, and in the parent's after-fork
                  callback (where Python can only print an exception) the process gets SIGTERM
  hang            when the pipeline is about to run: block every stop signal and sleep, like
                  C++ code that never returns to Python
  sleep           when the pipeline is about to run: sleep (interruptible)
  pause-POINT     at POINT (load | build | document | swap | finished: the compile returned,
                  the report not begun) sleep PAUSE seconds, then go on
MARKER is a file created when the point is reached (the test waits for it before signalling).
``GRACE`` of the supervisor is set from $TVMX_HARNESS_GRACE (seconds) when given.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

PAUSE = float(os.environ.get("TVMX_HARNESS_PAUSE", "1.5"))


def main() -> int:
    mode, marker = sys.argv[1], Path(sys.argv[2])
    args = sys.argv[sys.argv.index("--") + 1 :]

    from tvm_explorer import cli, frontends
    from tvm_explorer.app import compile as api
    from tvm_explorer.bundle import writer
    from tvm_explorer.supervise import supervisor

    if "TVMX_HARNESS_GRACE" in os.environ:
        supervisor.GRACE = float(os.environ["TVMX_HARNESS_GRACE"])
    real_build, real_load = api.build, frontends.load_any
    real_add, real_swap = writer.BundleWriter.add_document, writer.BundleWriter._swap_into_place

    def reached():
        marker.write_text(str(os.getpid()))

    def build(mod, *a, **k):
        if mode == "segv":
            reached()
            type(mod).__new__(type(mod)).get_global_vars()
        elif mode == "term-at-fork":
            sent = []

            def after_fork() -> None:
                if not sent:
                    sent.append(os.kill(os.getpid(), signal.SIGTERM))
                    for _ in range(200_000):  # the handler runs here, inside the callback
                        pass

            os.register_at_fork(after_in_parent=after_fork)
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)
            reached()
        elif mode == "hang":
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGUSR1})
            reached()
            time.sleep(3600)
        elif mode == "sleep":
            reached()
            time.sleep(3600)
        elif mode == "pause-build":
            reached()
            time.sleep(PAUSE)
        return real_build(mod, *a, **k)

    def load(*a, **k):
        if mode == "pause-load":
            reached()
            time.sleep(PAUSE)
        return real_load(*a, **k)

    calls = []

    def add_document(self, *a, **k):
        calls.append(1)
        if mode == "pause-document" and len(calls) == 5:
            reached()
            time.sleep(PAUSE)
        return real_add(self, *a, **k)

    def swap(self):
        if mode == "pause-swap":
            reached()
            time.sleep(PAUSE)  # inside the commit's signal-blocked region
        return real_swap(self)

    real_signal = signal.signal

    def set_handler(signum, handler):
        if mode == "pause-finished" and signum == signal.SIGINT and handler is signal.SIG_IGN:
            # The compile has returned and the CLI is about to ignore stop signals for its
            # report: the last moment a stop signal can still arrive.
            reached()
            time.sleep(PAUSE)
        return real_signal(signum, handler)

    signal.signal = set_handler
    api.build, frontends.load_any = build, load  # the CLI loads the model first
    writer.BundleWriter.add_document = add_document
    writer.BundleWriter._swap_into_place = swap
    return cli.main(args)


if __name__ == "__main__":
    sys.exit(main())
