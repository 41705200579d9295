"""A stand-in switch for the PTF runner's own test: the fake P4Runtime server (fake_p4runtime,
which records writes and forwards no packets) on the address given with simple_switch_grpc's
`--grpc-server-addr`. Its statistics endpoint (`--stats-addr`) accepts connections and answers
nothing. It proves the harness's plumbing, never a test of the suite."""

import signal
import socket
import sys
import threading
from concurrent import futures

import grpc

from fake_p4runtime import FakeP4Runtime
from lossless_ctl.p4rt_proto import bindings

args = sys.argv[1:]
address = args[args.index("--grpc-server-addr") + 1]
server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
servicer = FakeP4Runtime()
bindings().p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(servicer, server)
server.add_insecure_port(address)
server.start()
if "--stats-addr" in args:
    host, port = args[args.index("--stats-addr") + 1].rsplit(":", 1)
    stats = socket.create_server((host, int(port)))
done = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: done.set())
done.wait()
print(f"writes received: {sum(len(r.updates) for r in servicer.writes)}", flush=True)
server.stop(grace=None)
