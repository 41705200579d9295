"""`lossless-ctl`: the controller's command line."""

from __future__ import annotations

import argparse
import json
import sys

from lossless_ctl.buffer_calc import CHIP_CELL_BYTES, seed000_profile


def _buffer_calc(args: argparse.Namespace) -> int:
    cell = args.cell_size if args.cell_size is not None else CHIP_CELL_BYTES[args.chip]
    profile = seed000_profile(args.mtu, cell, args.ports)
    print(json.dumps({"BUFFER_PROFILE": {args.profile: profile.as_config()}}, indent=4))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lossless-ctl", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    calc = sub.add_parser(
        "buffer-calc", help="derive a lossless BUFFER_PROFILE from MTU and buffer cell size"
    )
    calc.add_argument("--mtu", type=int, required=True, help="largest RoCE frame in bytes")
    cell = calc.add_mutually_exclusive_group(required=True)
    cell.add_argument("--cell-size", type=int, help="buffer cell size in bytes")
    cell.add_argument("--chip", choices=sorted(CHIP_CELL_BYTES), help="chip family")
    calc.add_argument("--ports", type=int, required=True, help="front-panel ports on the switch")
    calc.add_argument("--profile", default="pg_lossless_profile", help="BUFFER_PROFILE key")
    calc.set_defaults(func=_buffer_calc)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ValueError as err:
        parser.error(str(err))
    return 2


if __name__ == "__main__":
    sys.exit(main())
