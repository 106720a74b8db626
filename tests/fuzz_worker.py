"""Runs ``tvm-explorer`` commands for the fuzz tests in one long-lived process (TVM is
imported once; every compile still runs in the CLI's own forked child, with its timeout).

Protocol: one JSON list of CLI arguments per stdin line; one JSON object
``{"rc": int, "stdout": str, "stderr": str}`` per stdout line.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile


def main() -> int:
    proto = os.fdopen(os.dup(1), "w")
    import tvm  # noqa: F401 - imported once, before any fork

    from tvm_explorer import cli

    for line in sys.stdin:
        args = json.loads(line)
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            saved = os.dup(1), os.dup(2)
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            try:
                rc = cli.main(args)
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else 2
            except BaseException as exc:  # noqa: BLE001 - reported to the test as a failure
                import traceback

                traceback.print_exc()
                rc = -1000
                print(f"worker: {exc!r}", file=sys.stderr)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
                os.close(saved[0])
                os.close(saved[1])
            out.seek(0)
            err.seek(0)
            reply = {
                "rc": rc,
                "stdout": out.read().decode("utf-8", "replace"),
                "stderr": err.read().decode("utf-8", "replace"),
            }
        proto.write(json.dumps(reply) + "\n")
        proto.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
