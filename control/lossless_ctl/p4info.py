"""P4Info loading and name lookups: the controller never hard-codes a P4 id."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from google.protobuf import json_format, text_format

from lossless_ctl.p4rt_proto import bindings


class P4InfoError(Exception):
    pass


def read_p4info(path: str | Path) -> Any:
    """A P4Info from p4c's `--p4runtime-files` output: `.txt`/`.txtpb` text, `.json`, or binary."""
    path = Path(path)
    info = bindings().p4info_pb2.P4Info()
    try:
        data = path.read_bytes()
    except OSError as err:
        raise P4InfoError(f"{path}: cannot read: {err.strerror}") from err
    try:
        if path.suffix in (".txt", ".txtpb", ".pbtxt"):
            text_format.Parse(data.decode(), info)
        elif path.suffix == ".json":
            json_format.Parse(data.decode(), info)
        else:
            info.ParseFromString(data)
    except (text_format.ParseError, json_format.ParseError, ValueError) as err:
        raise P4InfoError(f"{path}: not a P4Info: {err}") from err
    return info


class P4InfoIndex:
    """Lookups by fully qualified name (`LosslessIngress.ipv4_route`) or unique alias."""

    def __init__(self, info: Any):
        self.info = info
        self._by_kind: dict[str, dict[str, Any]] = {}
        for kind in ("tables", "actions", "action_profiles", "counters", "meters", "registers"):
            names: dict[str, Any] = {}
            aliases: dict[str, list[Any]] = {}
            for obj in getattr(info, kind):
                names[obj.preamble.name] = obj
                aliases.setdefault(obj.preamble.alias or obj.preamble.name, []).append(obj)
            for alias, objs in aliases.items():
                if len(objs) == 1 and alias not in names:
                    names[alias] = objs[0]
            self._by_kind[kind] = names
        self._by_id = {
            obj.preamble.id: obj
            for kind in ("tables", "actions", "action_profiles", "counters", "meters", "registers")
            for obj in getattr(info, kind)
        }

    def _get(self, kind: str, name: str) -> Any:
        obj = self._by_kind[kind].get(name)
        if obj is None:
            raise P4InfoError(f"the P4Info has no {kind[:-1].replace('_', ' ')} named {name!r}")
        return obj

    def table(self, name: str) -> Any:
        return self._get("tables", name)

    def action(self, name: str) -> Any:
        return self._get("actions", name)

    def action_profile(self, name: str) -> Any:
        return self._get("action_profiles", name)

    def meter(self, name: str) -> Any:
        return self._get("meters", name)

    def counter(self, name: str) -> Any:
        return self._get("counters", name)

    def register(self, name: str) -> Any:
        return self._get("registers", name)

    def packet_metadata(self, header: str) -> dict[str, Any]:
        """Fields of a controller header (`packet_in`, `packet_out`) by name."""
        for cpm in self.info.controller_packet_metadata:
            if cpm.preamble.name == header:
                return {m.name: m for m in cpm.metadata}
        raise P4InfoError(f"the P4Info has no controller header named {header!r}")

    def name_of(self, obj_id: int) -> str:
        obj = self._by_id.get(obj_id)
        return obj.preamble.name if obj is not None else f"<id {obj_id}>"

    def match_field(self, table: Any, name: str) -> Any:
        for mf in table.match_fields:
            if mf.name == name:
                return mf
        raise P4InfoError(f"table {table.preamble.name} has no match field {name!r}")

    def param(self, action: Any, name: str) -> Any:
        for p in action.params:
            if p.name == name:
                return p
        raise P4InfoError(f"action {action.preamble.name} has no parameter {name!r}")

    def check_action_of(self, table: Any, action: Any) -> None:
        if all(ref.id != action.preamble.id for ref in table.action_refs):
            raise P4InfoError(
                f"action {action.preamble.name} is not an action of table {table.preamble.name}"
            )
