"""`READY <port>` on stdout once 127.0.0.1:<port> accepts connections (the tests wait for it)."""

import socket
import sys
import time


def announce(port: int) -> None:
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                print(f"READY {port}", flush=True)
                return
        except OSError:
            time.sleep(0.05)
    print("never became ready", file=sys.stderr, flush=True)
