"""A real TVM RPC server whose timer lies: ``python lying_server.py VALUE`` serves TVM's own
server loop (uploads, ``load_module``, every global function) on a loopback port it prints,
with ``runtime.RPCTimeEvaluator`` replaced in this process by one that runs the function as
TVM's does and then reports VALUE seconds for every run (``nan``, ``-1``, ``1e300``): a device
with a broken or hostile timer, at the measurement boundary."""

from __future__ import annotations

import socket
import struct
import sys

import tvm
import tvm_ffi
from tvm.rpc import base
from tvm.rpc import server as tvm_server


def main() -> None:
    value = float(sys.argv[1])
    original = tvm.get_global_func("runtime.RPCTimeEvaluator")

    @tvm_ffi.register_global_func("runtime.RPCTimeEvaluator", override=True)
    def lying(*args):
        evaluate = original(*args)

        def run(*call_args):
            blob = evaluate(*call_args)  # the runs happen; only their times are replaced
            count = len(blob) // 8
            return bytearray(struct.pack(f"@{count}d", *([value] * count)))

        return tvm_ffi.convert(run)

    listener = socket.create_server(("127.0.0.1", 0))
    print(listener.getsockname()[1], flush=True)
    while True:
        conn, _ = listener.accept()
        try:  # a client's magic and key (a probe that only connects is dropped)
            if struct.unpack("<i", base.recvall(conn, 4))[0] != base.RPC_MAGIC:
                raise OSError("not a client")
            (n,) = struct.unpack("<i", base.recvall(conn, 4))
            base.recvall(conn, n)
        except (OSError, RuntimeError, struct.error):
            conn.close()
            continue
        conn.sendall(struct.pack("<ii", base.RPC_CODE_SUCCESS, 0))
        tvm_server._serve_loop(conn, None, None)  # TVM's own session, until the client ends it
        conn.close()


if __name__ == "__main__":
    main()
