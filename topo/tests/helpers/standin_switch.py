#!/usr/bin/env python3
"""A stand-in for $SWITCH in process-management tests: it forwards nothing.

It records its command line (to $STANDIN_ARGV_DIR/<device-id>.json) and accepts connections on
the --grpc-server-addr port until SIGTERM, which is all the switch class's start/wait/stop
logic observes. Set STANDIN_FAIL=1 to make it exit at once with an error.
"""

import json
import os
import signal
import socket
import sys

argv = sys.argv[1:]
if os.environ.get("STANDIN_FAIL"):
    print("standin: failing on purpose", file=sys.stderr)
    sys.exit(3)
device = argv[argv.index("--device-id") + 1]
with open(os.path.join(os.environ["STANDIN_ARGV_DIR"], f"{device}.json"), "w") as f:
    json.dump(argv, f)
host, port = argv[argv.index("--grpc-server-addr") + 1].rsplit(":", 1)
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((host, int(port)))
srv.listen()
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
while True:
    conn, _ = srv.accept()
    conn.close()
