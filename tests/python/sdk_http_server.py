"""The PyPI `mcp` SDK server of server.py, over Streamable HTTP on 127.0.0.1:--port (or PORT).

Prints `READY <port>` on stdout once the port accepts connections.
"""

import argparse
import os
import socket
import sys
import threading
import time

from server import server


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


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    args = ap.parse_args()
    threading.Thread(target=announce, args=(args.port,), daemon=True).start()
    server.run(transport="streamable-http", host="127.0.0.1", port=args.port)
