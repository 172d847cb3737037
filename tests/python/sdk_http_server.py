"""The PyPI `mcp` SDK server of server.py, over Streamable HTTP on 127.0.0.1:--port (or PORT).

Prints `READY <port>` on stdout once the port accepts connections.
"""

import argparse
import os
import threading

from ready import announce
from server import server


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    args = ap.parse_args()
    threading.Thread(target=announce, args=(args.port,), daemon=True).start()
    server.run(transport="streamable-http", host="127.0.0.1", port=args.port)
