"""`lossless-ctl`: the controller's command line."""

from __future__ import annotations

import argparse
import json
import sys

from lossless_ctl import config_db
from lossless_ctl.buffer_calc import CHIP_CELL_BYTES, seed000_profile
from lossless_ctl.chips import CHIPS


def _buffer_calc(args: argparse.Namespace) -> int:
    cell = args.cell_size if args.cell_size is not None else CHIP_CELL_BYTES[args.chip]
    profile = seed000_profile(args.mtu, cell, args.ports)
    print(json.dumps({"BUFFER_PROFILE": {args.profile: profile.as_config()}}, indent=4))
    return 0


def _read_config(args: argparse.Namespace) -> config_db.ConfigDb | None:
    """Read, merge and check the --config files; print every issue; None if any is an error."""
    try:
        tables = config_db.load_files(args.config)
        cfg, issues = config_db.parse(tables, args.chip)
    except config_db.ConfigError as err:
        issues, cfg = err.issues, None
    for issue in issues:
        print(issue, file=sys.stderr)
    if cfg is None or any(i.error for i in issues):
        return None
    return cfg


def _validate(args: argparse.Namespace) -> int:
    cfg = _read_config(args)
    if cfg is None:
        return 1
    print(f"{', '.join(args.config)}: valid")
    return 0


def _add_config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        action="append",
        required=True,
        metavar="FILE",
        help="config_db.json; repeat to merge files in order, as `config load` does",
    )
    p.add_argument(
        "--chip",
        choices=sorted(CHIPS),
        help="chip for limit checks (default: from DEVICE_METADATA platform/hwsku)",
    )


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

    validate = sub.add_parser("validate", help="check a config_db.json without touching a switch")
    _add_config_args(validate)
    validate.set_defaults(func=_validate)
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
