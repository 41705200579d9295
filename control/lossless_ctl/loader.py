"""`lossless-ctl load`: config_db.json -> SAI -> P4Runtime, written phase by phase.

Everything that can be wrong with the input is found before the switch is touched: the config
is validated and fully mapped to updates first, so a bad config writes nothing.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lossless_ctl.client import P4RuntimeClient, UpdateError, entity_key, entity_value
from lossless_ctl.config_db import ConfigDb
from lossless_ctl.p4info import P4InfoError, P4InfoIndex, read_p4info
from lossless_ctl.p4map import P4Program, Phase, to_p4
from lossless_ctl.p4rt_proto import bindings
from lossless_ctl.sai import SaiModel, derive

# A switch that goes away mid-load fails every update; the summary lists the first few.
SHOWN_ERRORS = 20
P4INFO_SUFFIXES = (".p4info.txtpb", ".p4info.txt", ".p4info.json", ".p4info.bin")


@dataclass
class Pipeline:
    p4info: Any
    device_config: bytes
    p4info_path: Path
    config_path: Path


def read_pipeline(directory: str | Path) -> Pipeline:
    """The compiler's outputs in DIR (as `make p4` writes them): NAME.json and NAME.p4info.*."""
    d = Path(directory)
    infos = sorted(p for p in d.glob("*") if p.name.endswith(P4INFO_SUFFIXES))
    if len(infos) != 1:
        found = ", ".join(p.name for p in infos) or "none"
        raise P4InfoError(
            f"{d}: expected one NAME.p4info.txtpb (or .txt/.json/.bin), found {found}"
        )
    stem = next(infos[0].name[: -len(s)] for s in P4INFO_SUFFIXES if infos[0].name.endswith(s))
    config = d / f"{stem}.json"
    try:
        device_config = config.read_bytes()
    except OSError as err:
        raise P4InfoError(f"{config}: cannot read the BMv2 JSON: {err.strerror}") from err
    return Pipeline(read_p4info(infos[0]), device_config, infos[0], config)


def plan(cfg: ConfigDb, p4info: Any) -> tuple[SaiModel, P4Program]:
    """The SAI objects and P4Runtime updates for a validated config (raises MappingError)."""
    model = derive(cfg)
    return model, to_p4(model, P4InfoIndex(p4info))


@dataclass
class PhaseResult:
    name: str
    updates: int
    seconds: float
    errors: list[tuple[str, UpdateError]] = field(default_factory=list)


@dataclass
class LoadSummary:
    phases: list[PhaseResult] = field(default_factory=list)
    per_table: Counter = field(default_factory=Counter)
    pipeline_seconds: float | None = None  # None: the pipeline was kept
    read_seconds: float | None = None  # reconcile: reading the switch's state

    @property
    def errors(self) -> list[tuple[str, UpdateError]]:
        return [e for p in self.phases for e in p.errors]

    @property
    def written(self) -> int:
        return sum(p.updates - len(p.errors) for p in self.phases)

    @property
    def seconds(self) -> float:
        return sum(p.seconds for p in self.phases)

    def render(self) -> str:
        if self.pipeline_seconds is None:
            lines = ["pipeline kept: the switch runs this pipeline already"]
        else:
            lines = [f"pipeline set in {self.pipeline_seconds:.2f} s"]
        if self.read_seconds is not None:
            lines.append(f"switch state read in {self.read_seconds:.2f} s")
        for p in self.phases:
            rate = p.updates / p.seconds if p.seconds > 0 else 0.0
            lines.append(
                f"{p.name:<42} {p.updates:>8} updates {p.seconds:>8.2f} s {rate:>10.0f}/s"
                + (f"  {len(p.errors)} failed" if p.errors else "")
            )
        for table, n in sorted(self.per_table.items()):
            lines.append(f"  {table:<40} {n:>8}")
        total = sum(p.updates for p in self.phases)
        rate = total / self.seconds if self.seconds > 0 else 0.0
        lines.append(
            f"written {self.written} of {total} updates in {self.seconds:.2f} s ({rate:.0f}/s)"
        )
        errors = self.errors
        for label, err in errors[:SHOWN_ERRORS]:
            lines.append(f"failed: {label}: {err.code}: {err.message}")
        if len(errors) > SHOWN_ERRORS:
            lines.append(f"... and {len(errors) - SHOWN_ERRORS} more failed updates")
        return "\n".join(lines)


def entity_name(update: Any, p4info: P4InfoIndex) -> str:
    entity = update.entity
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        return p4info.name_of(entity.table_entry.table_id)
    if kind == "meter_entry":
        return p4info.name_of(entity.meter_entry.meter_id)
    if kind == "action_profile_member":
        return p4info.name_of(entity.action_profile_member.action_profile_id) + " members"
    if kind == "action_profile_group":
        return p4info.name_of(entity.action_profile_group.action_profile_id) + " groups"
    if kind == "packet_replication_engine_entry":
        return "clone sessions"
    return kind or "?"


def pipeline_cookie(pipeline: Pipeline) -> int:
    """Identifies a pipeline (P4Info and device config) on the switch, so that a restarted
    controller knows whether the switch still runs what it would set."""
    digest = hashlib.sha256(
        pipeline.p4info.SerializeToString(deterministic=True) + pipeline.device_config
    ).digest()
    return int.from_bytes(digest[:8], "big")


def load(
    client: P4RuntimeClient,
    pipeline: Pipeline,
    program: P4Program,
    batch_size: int = 1000,
    in_flight: int = 4,
    progress: bool = False,
) -> LoadSummary:
    """Set the pipeline and write the whole program."""
    start = time.perf_counter()
    client.set_pipeline(pipeline.p4info, pipeline.device_config, pipeline_cookie(pipeline))
    summary = write_program(client, pipeline, program, batch_size, in_flight, progress)
    summary.pipeline_seconds = time.perf_counter() - start - summary.seconds
    return summary


def write_program(
    client: P4RuntimeClient,
    pipeline: Pipeline,
    program: P4Program,
    batch_size: int = 1000,
    in_flight: int = 4,
    progress: bool = False,
) -> LoadSummary:
    """Write the program phase after phase; stop after a phase with failures, since later
    phases refer to what it should have written."""
    summary = LoadSummary()
    index = P4InfoIndex(pipeline.p4info)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=program.updates(), unit="update", desc="writing")
    try:
        for phase in program.phases:
            if bar is not None:
                bar.set_description(phase.name)
            start = time.perf_counter()
            result = client.write(
                phase.updates,
                batch_size=batch_size,
                in_flight=in_flight,
                done=(lambda _, count, __: bar.update(count)) if bar is not None else None,
            )
            errors = [(phase.labels[e.index], e) for e in result.errors]
            summary.phases.append(
                PhaseResult(phase.name, len(phase.updates), time.perf_counter() - start, errors)
            )
            failed = {e.index for e in result.errors}
            for i, update in enumerate(phase.updates):
                if i not in failed:
                    summary.per_table[entity_name(update, index)] += 1
            if errors:
                break
    finally:
        if bar is not None:
            bar.close()
    return summary


def read_state(client: P4RuntimeClient, program: P4Program) -> dict[tuple, Any]:
    """Everything the switch holds that a program can write, by entity key."""
    pb = client.pb
    wanted = [pb.Entity(table_entry=pb.TableEntry())]  # table id 0: every table
    defaults = {
        u.entity.table_entry.table_id
        for p in program.phases
        for u in p.updates
        if u.entity.WhichOneof("entity") == "table_entry" and u.entity.table_entry.is_default_action
    }
    for table_id in sorted(defaults):
        wanted.append(
            pb.Entity(table_entry=pb.TableEntry(table_id=table_id, is_default_action=True))
        )
    wanted.append(pb.Entity(meter_entry=pb.MeterEntry()))  # meter id 0: every meter
    wanted.append(pb.Entity(action_profile_member=pb.ActionProfileMember()))
    wanted.append(pb.Entity(action_profile_group=pb.ActionProfileGroup()))
    clone = pb.Entity()
    clone.packet_replication_engine_entry.clone_session_entry.SetInParent()
    wanted.append(clone)
    return {entity_key(e): e for e in client.read(wanted)}


def _kind(key: tuple) -> tuple:
    # Entities of one table, meter or action profile, or the clone sessions, are written in
    # one phase.
    return key[:2] if key[0] in ("table", "member", "group", "meter") else key[:1]


def diff(program: P4Program, state: dict[tuple, Any], index: P4InfoIndex) -> P4Program:
    """The updates that turn `state` into what `program` writes: INSERT what is missing, MODIFY
    what differs, in the program's phase order, then DELETE what the config no longer has, in
    reverse phase order (routes before the next hops they use). Entities already right are
    not touched, so forwarding through them never stops."""
    update_type = bindings().p4runtime_pb2.Update
    phases: list[Phase] = []
    wanted: set[tuple] = set()
    rank: dict[tuple, int] = {}
    for i, phase in enumerate(program.phases):
        out = Phase(phase.name)
        for update, label in zip(phase.updates, phase.labels, strict=True):
            key = entity_key(update.entity)
            wanted.add(key)
            rank.setdefault(_kind(key), i)
            have = state.get(key)
            if have is not None and entity_value(have) == entity_value(update.entity):
                continue
            if have is not None and update.type != update.MODIFY:
                changed = type(update)()
                changed.CopyFrom(update)
                changed.type = update.MODIFY
                update = changed
            out.updates.append(update)
            out.labels.append(label)
        phases.append(out)
    stale: dict[int, list[tuple[tuple, Any]]] = {}
    resets = Phase("reset meters")
    for key, entity in state.items():
        if key in wanted or (key[0] == "table" and key[2]):  # default entries stay
            continue
        if key[0] == "meter":
            # Meter cells cannot be deleted; one the config no longer sets is reset.
            if entity.meter_entry.HasField("config"):
                reset = update_type(type=update_type.MODIFY)
                reset.entity.meter_entry.meter_id = entity.meter_entry.meter_id
                reset.entity.meter_entry.index.index = entity.meter_entry.index.index
                resets.updates.append(reset)
                resets.labels.append(f"stale meter cell {key[2]}")
            continue
        stale.setdefault(rank.get(_kind(key), len(program.phases)), []).append((key, entity))
    phases.append(resets)
    for r in sorted(stale, reverse=True):
        name = program.phases[r].name if r < len(program.phases) else "other entities"
        out = Phase(f"delete: {name}")
        for _key, entity in sorted(stale[r], key=lambda ke: repr(ke[0])):
            update = update_type(type=update_type.DELETE)
            update.entity.CopyFrom(entity)
            out.updates.append(update)
            out.labels.append(f"stale {entity_name(update, index)} entry")
        phases.append(out)
    return P4Program([p for p in phases if p.updates], program.notes)


def reconcile(
    client: P4RuntimeClient,
    pipeline: Pipeline,
    program: P4Program,
    batch_size: int = 1000,
    in_flight: int = 4,
    progress: bool = False,
    keep: Callable[[dict[tuple, Any]], set[tuple]] | None = None,
) -> LoadSummary:
    """A restarted controller: if the switch runs this pipeline, read its state back and write
    only the difference; if it runs another or none (a restarted switch), load everything.
    `keep(state)` names entities that are not the config's but stay (run-time objects a
    restarted `run` takes over: routeorch's adopt)."""
    if client.pipeline_cookie() != pipeline_cookie(pipeline):
        return load(client, pipeline, program, batch_size, in_flight, progress)
    start = time.perf_counter()
    state = read_state(client, program)
    read_seconds = time.perf_counter() - start
    if keep is not None:
        kept = keep(state)
        state = {k: v for k, v in state.items() if k not in kept}
    changes = diff(program, state, P4InfoIndex(pipeline.p4info))
    summary = write_program(client, pipeline, changes, batch_size, in_flight, progress)
    summary.read_seconds = read_seconds
    return summary


def read_back(client: P4RuntimeClient, pipeline: Pipeline, program: P4Program) -> list[str]:
    """Where the switch differs from what the program writes, per table (or meter, action
    profile, clone sessions): entities missing, different, or there but not in the config."""
    index = P4InfoIndex(pipeline.p4info)
    state = read_state(client, program)
    found: dict[str, Counter] = {}
    for phase in diff(program, state, index).phases:
        for update in phase.updates:
            if update.type == update.DELETE or phase.name == "reset meters":
                kind = "not in the config"
            elif entity_key(update.entity) in state:
                kind = "different"
            else:
                kind = "missing"
            found.setdefault(entity_name(update, index), Counter())[kind] += 1
    return [
        f"{name}: " + ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
        for name, counts in sorted(found.items())
    ]
