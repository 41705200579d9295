"""UDP flows with sequence numbers, to count what a fabric loses (run in the lab's hosts).

    seqflow.py send DST PORT --flows N --pps R --seconds S --out sent.json
    seqflow.py recv PORT --seconds S --out received.json [--ipv6]

Flow i sends from source port PORT + 1 + i, so the flows spread over ECMP members by the
5-tuple; each datagram carries (flow, sequence number) and is padded to 64 bytes. The sender
writes how many it sent per flow; the receiver every flow's received sequence numbers (as
ranges) and its longest gap in arrival time.
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import time

PACKET = struct.Struct("!II")
SIZE = 64


def send(args: argparse.Namespace) -> dict:
    socks = []
    for i in range(args.flows):
        v6 = ":" in args.dst
        s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("::" if v6 else "0.0.0.0", args.port + 1 + i))
        socks.append(s)
    sent = [0] * args.flows
    interval = 1.0 / args.pps
    start = time.monotonic()
    n = 0
    while time.monotonic() - start < args.seconds:
        flow = n % args.flows
        payload = PACKET.pack(flow, sent[flow]).ljust(SIZE, b"\0")
        try:
            socks[flow].sendto(payload, (args.dst, args.port))
            sent[flow] += 1
        except OSError:
            pass  # the host's queue is full: not sent, so not lost either
        n += 1
        delay = start + n * interval - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    return {"sent": sent, "pps": args.pps, "seconds": args.seconds}


def ranges(seqs: list[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for s in sorted(set(seqs)):
        if out and s == out[-1][1] + 1:
            out[-1][1] = s
        else:
            out.append([s, s])
    return out


def recv(args: argparse.Namespace) -> dict:
    sock = socket.socket(socket.AF_INET6 if args.ipv6 else socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    sock.bind(("::" if args.ipv6 else "0.0.0.0", args.port))
    sock.settimeout(0.2)
    seqs: dict[int, list[int]] = {}
    last: dict[int, float] = {}
    gap: dict[int, float] = {}
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        try:
            data = sock.recv(2048)
        except TimeoutError:
            continue
        if len(data) < PACKET.size:
            continue
        flow, seq = PACKET.unpack_from(data)
        now = time.monotonic()
        if flow in last:
            gap[flow] = max(gap.get(flow, 0.0), now - last[flow])
        last[flow] = now
        seqs.setdefault(flow, []).append(seq)
    return {
        "received": {str(f): ranges(s) for f, s in sorted(seqs.items())},
        "longest_gap_s": {str(f): g for f, g in sorted(gap.items())},
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    sub = p.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("send")
    s.add_argument("dst")
    s.add_argument("port", type=int)
    s.add_argument("--flows", type=int, default=16)
    s.add_argument("--pps", type=float, default=200.0)
    s.add_argument("--seconds", type=float, required=True)
    s.add_argument("--out", required=True)
    r = sub.add_parser("recv")
    r.add_argument("port", type=int)
    r.add_argument("--seconds", type=float, required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--ipv6", action="store_true", help="receive IPv6 datagrams")
    args = p.parse_args()
    result = send(args) if args.mode == "send" else recv(args)
    with open(args.out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
