"""`lossless-ctl load`: config_db.json -> SAI -> P4Runtime, written phase by phase.

Everything that can be wrong with the input is found before the switch is touched: the config
is validated and fully mapped to updates first, so a bad config writes nothing.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lossless_ctl.client import P4RuntimeClient, UpdateError
from lossless_ctl.config_db import ConfigDb
from lossless_ctl.p4info import P4InfoError, P4InfoIndex, read_p4info
from lossless_ctl.p4map import P4Program, to_p4
from lossless_ctl.sai import SaiModel, derive

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
    pipeline_seconds: float = 0.0

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
        lines = [f"pipeline set in {self.pipeline_seconds:.2f} s"]
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
        for label, err in self.errors:
            lines.append(f"failed: {label}: {err.code}: {err.message}")
        return "\n".join(lines)


def entity_name(update: Any, p4info: P4InfoIndex) -> str:
    entity = update.entity
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        return p4info.name_of(entity.table_entry.table_id)
    if kind == "action_profile_member":
        return p4info.name_of(entity.action_profile_member.action_profile_id) + " members"
    if kind == "action_profile_group":
        return p4info.name_of(entity.action_profile_group.action_profile_id) + " groups"
    return kind or "?"


def load(
    client: P4RuntimeClient,
    pipeline: Pipeline,
    program: P4Program,
    batch_size: int = 1000,
    in_flight: int = 4,
    progress: bool = False,
) -> LoadSummary:
    """Set the pipeline and write the program, phase after phase; stops after a phase with
    failures, since later phases refer to what it should have written."""
    summary = LoadSummary()
    index = P4InfoIndex(pipeline.p4info)
    start = time.perf_counter()
    client.set_pipeline(pipeline.p4info, pipeline.device_config)
    summary.pipeline_seconds = time.perf_counter() - start
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
                progress=bar.update if bar is not None else None,
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


def read_back(client: P4RuntimeClient, pipeline: Pipeline, program: P4Program) -> list[str]:
    """Tables whose entries on the switch differ from what the program wrote (match and action
    compared; default entries are not listed by a table read)."""
    index = P4InfoIndex(pipeline.p4info)
    written: dict[int, set[bytes]] = {}
    for phase in program.phases:
        for update in phase.updates:
            entry = update.entity.table_entry
            if update.entity.WhichOneof("entity") == "table_entry" and not entry.is_default_action:
                written.setdefault(entry.table_id, set()).add(_entry_key(entry))
    problems = []
    for table_id, expected in sorted(written.items()):
        found = {_entry_key(e) for e in client.read_table(table_id)}
        missing, extra = len(expected - found), len(found - expected)
        if missing or extra:
            problems.append(
                f"{index.name_of(table_id)}: {missing} written entries not read back, "
                f"{extra} entries not written by this config"
            )
    return problems


def _entry_key(entry: Any) -> bytes:
    pb = type(entry)
    canonical = pb(table_id=entry.table_id, priority=entry.priority)
    canonical.match.extend(sorted(entry.match, key=lambda m: m.field_id))
    canonical.action.CopyFrom(entry.action)
    return canonical.SerializeToString(deterministic=True)
