"""A stand-in for the switch binary in the harness's own tests: takes simple_switch_grpc's
command line, prints it, and behaves as STANDIN_MODE says: `listen` (after STANDIN_DELAY
seconds), `exit` (status 3 before listening), `silent` (never listens), `stubborn` (listens
and ignores SIGTERM)."""

import os
import signal
import socket
import sys
import time

args = sys.argv[1:]
print("argv:", " ".join(args), flush=True)
mode = os.environ.get("STANDIN_MODE", "listen")
if mode == "exit":
    print("cannot open interface", flush=True)
    sys.exit(3)
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(float(os.environ.get("STANDIN_DELAY", "0")))
if mode != "silent":
    host, port = args[args.index("--grpc-server-addr") + 1].rsplit(":", 1)
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((host, int(port)))
    server.listen()
while True:
    time.sleep(1)
