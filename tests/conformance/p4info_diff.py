"""Differences between two P4Info text files as protobuf messages, entity by entity:
`p4info_diff.py OURS REFERENCE` prints what only one has and what both have but differently,
and exits 1 if they differ (`make check-p4c` without p4c: p4src/ against the real p4c's)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from run import load_p4info


def differences(ours, ref) -> list[str]:
    out = []
    for field in ref.DESCRIPTOR.fields:
        a, b = getattr(ours, field.name), getattr(ref, field.name)
        if a == b:
            continue
        if not isinstance(b, Sequence):
            out.append(f"{field.name}: differs")
            continue
        mine = {x.preamble.name: x for x in a if hasattr(x, "preamble")}
        theirs = {x.preamble.name: x for x in b if hasattr(x, "preamble")}
        if not mine and not theirs:
            out.append(f"{field.name}: differs")
        out += [f"{field.name}: only ours: {n}" for n in sorted(mine.keys() - theirs.keys())]
        out += [f"{field.name}: only p4c's: {n}" for n in sorted(theirs.keys() - mine.keys())]
        for n in sorted(mine.keys() & theirs.keys()):
            if mine[n] != theirs[n]:
                parts = [f.name for f in mine[n].DESCRIPTOR.fields]
                what = [p for p in parts if getattr(mine[n], p) != getattr(theirs[n], p)]
                out.append(f"{field.name}: {n}: {', '.join(what)} differ")
    return out


def main() -> int:
    ours, ref = (Path(a) for a in sys.argv[1:3])
    diff = differences(load_p4info(ours), load_p4info(ref))
    for line in diff:
        print(f"  {line}")
    print(f"{ours} vs {ref}: {'equal' if not diff else f'{len(diff)} differences'}")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
