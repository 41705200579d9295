"""A stand-in for the switch binary in process-management tests: it forwards nothing.

It takes simple_switch_grpc's command line, prints it (`argv: ...`), records it to
$STANDIN_ARGV_DIR/<device-id>.json when that is set, and behaves as $STANDIN_MODE says:
`listen` (on the --grpc-server-addr and --stats-addr ports, after $STANDIN_DELAY seconds; the
default), `grpc-only` (a statistics endpoint that never comes up), `exit` (status 3 before
listening), `silent` (never listens), `stubborn` (listens and ignores
SIGTERM, which ends the others with status 0). That is all that the start, wait and stop
logic of a switch class observes. Started through `standins.executable`.
"""

import json
import os
import signal
import socket
import sys
import time

args = sys.argv[1:]
print("argv:", " ".join(args), flush=True)
record = os.environ.get("STANDIN_ARGV_DIR")
if record:
    device = args[args.index("--device-id") + 1]
    with open(os.path.join(record, f"{device}.json"), "w") as f:
        json.dump(args, f)
mode = os.environ.get("STANDIN_MODE", "listen")
if mode == "exit":
    print("cannot open interface", flush=True)
    sys.exit(3)
# SIGTERM ends it with status 0, as it ends a switch, except `stubborn`.
signal.signal(signal.SIGTERM, signal.SIG_IGN if mode == "stubborn" else lambda *_: sys.exit(0))
time.sleep(float(os.environ.get("STANDIN_DELAY", "0")))
listens_on = {"silent": [], "grpc-only": ["--grpc-server-addr"]}.get(
    mode, ["--grpc-server-addr", "--stats-addr"]
)
servers = []  # kept open until the end
for option in (o for o in listens_on if o in args):
    host, port = args[args.index(option) + 1].rsplit(":", 1)
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((host, int(port)))
    server.listen()
    servers.append(server)
while True:
    time.sleep(1)
