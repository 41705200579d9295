"""A P4Runtime client: arbitration, pipeline, bulk writes with several requests in flight,
per-update errors from the google.rpc.Status details, and read-back."""

from __future__ import annotations

import gc
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain, islice
from typing import Any

import grpc
from google.rpc import code_pb2, status_pb2

from lossless_ctl.p4rt_proto import bindings, varint

# Large batches and read responses exceed gRPC's 4 MiB default.
MAX_MESSAGE = 256 * 1024 * 1024
# A failed Write's per-update errors come back in the trailers (grpc-status-details-bin, spec
# 12.4), about 100 bytes per failed update once base64-encoded; 1000 of them are far above
# gRPC's 16 KiB metadata limit, over which grpcio drops the call ("Stream removed") and every
# error is lost. Soft and hard limit alike: between the two grpcio rejects at random.
MAX_METADATA = 16 * 1024 * 1024


class P4RuntimeError(Exception):
    pass


@dataclass(frozen=True)
class UpdateError:
    index: int  # position in the list given to write()
    code: str  # google.rpc.Code name
    message: str


@dataclass
class WriteResult:
    written: int = 0
    errors: list[UpdateError] = field(default_factory=list)


def entity_key(entity: Any) -> tuple:
    """What identifies an entity on the switch (P4Runtime's notion: a table entry's match and
    priority, a member or group id, a clone session id)."""
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        t = entity.table_entry
        match = tuple(
            m.SerializeToString(deterministic=True)
            for m in sorted(t.match, key=lambda m: m.field_id)
        )
        return ("table", t.table_id, t.is_default_action, match, t.priority)
    if kind == "action_profile_member":
        m = entity.action_profile_member
        return ("member", m.action_profile_id, m.member_id)
    if kind == "action_profile_group":
        g = entity.action_profile_group
        return ("group", g.action_profile_id, g.group_id)
    if kind == "packet_replication_engine_entry":
        pre = entity.packet_replication_engine_entry
        if pre.WhichOneof("type") == "clone_session_entry":
            return ("clone", pre.clone_session_entry.session_id)
    if kind == "meter_entry":
        return ("meter", entity.meter_entry.meter_id, entity.meter_entry.index.index)
    return ("other", entity.SerializeToString(deterministic=True))


def entity_value(entity: Any) -> bytes | tuple:
    """What a MODIFY changes: the action, the group's members, the session's replicas."""
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        return entity.table_entry.action.SerializeToString(deterministic=True)
    if kind == "action_profile_member":
        return entity.action_profile_member.action.SerializeToString(deterministic=True)
    if kind == "action_profile_group":
        return tuple(sorted((m.member_id, m.weight) for m in entity.action_profile_group.members))
    if kind == "packet_replication_engine_entry":
        cs = entity.packet_replication_engine_entry.clone_session_entry
        return tuple(r.SerializeToString(deterministic=True) for r in cs.replicas)
    if kind == "meter_entry":
        return entity.meter_entry.config.SerializeToString(deterministic=True)
    return b""


def code_name(code: int) -> str:
    try:
        return code_pb2.Code.Name(code)
    except ValueError:
        return f"CODE_{code}"


def update_errors(err: grpc.RpcError, offset: int, count: int) -> list[UpdateError]:
    """The per-update errors of a failed Write: P4Runtime puts one p4.v1.Error per update of the
    batch (OK for those that succeeded) in the google.rpc.Status carried in the trailers."""
    pb = bindings().p4runtime_pb2
    for key, value in err.trailing_metadata() or ():
        if key != "grpc-status-details-bin":
            continue
        status = status_pb2.Status.FromString(value)
        out = []
        for i, detail in enumerate(status.details):
            error = pb.Error()
            if detail.Unpack(error) and error.canonical_code != code_pb2.OK:
                out.append(UpdateError(offset + i, code_name(error.canonical_code), error.message))
        if out:
            return out
    # No details: the whole batch failed for one reason.
    code = err.code().name if err.code() is not None else "UNKNOWN"
    return [UpdateError(offset + i, code, err.details() or "") for i in range(count)]


class _Prefixes(dict):
    """What precedes an update of each length in a WriteRequest: the field's tag and the
    length (varint), made once per length."""

    def __init__(self, tag: bytes):
        super().__init__()
        self.tag = tag

    def __missing__(self, length: int) -> bytes:
        prefix = self[length] = self.tag + varint(length)
        return prefix


class P4RuntimeClient:
    """One controller session with one device. Use as a context manager."""

    def __init__(
        self,
        address: str,
        device_id: int = 1,
        election_id: tuple[int, int] = (0, 1),
        timeout: float = 30.0,
        connect_timeout: float | None = None,
    ):
        self.pb = bindings().p4runtime_pb2
        self.device_id = device_id
        self.election_id = self.pb.Uint128(high=election_id[0], low=election_id[1])
        self.timeout = timeout
        self.connect_timeout = timeout if connect_timeout is None else connect_timeout
        self.channel = grpc.insecure_channel(
            address,
            options=[
                ("grpc.max_send_message_length", MAX_MESSAGE),
                ("grpc.max_receive_message_length", MAX_MESSAGE),
                ("grpc.max_metadata_size", MAX_METADATA),
                ("grpc.absolute_max_metadata_size", MAX_METADATA),
            ],
        )
        self.stub = bindings().p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        # Write with the request already serialized (pre-encoded updates, see write()).
        self._write_encoded = self.channel.unary_unary(
            "/p4.v1.P4Runtime/Write",
            request_serializer=None,
            response_deserializer=self.pb.WriteResponse.FromString,
        )
        updates = self.pb.WriteRequest.DESCRIPTOR.fields_by_name["updates"].number
        self._update_prefix = _Prefixes(varint(updates << 3 | 2))  # wire type 2
        self._outgoing: queue.Queue = queue.Queue()
        self._arbitration: queue.Queue = queue.Queue()
        self._packet_ins: queue.Queue = queue.Queue()
        self._stream = None
        self._reader: threading.Thread | None = None
        # Set when the stream ends other than by close(): the switch went away (a restart).
        self.stream_lost = threading.Event()

    def __enter__(self) -> P4RuntimeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._outgoing.put(None)
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.cancel()
        if self._reader is not None:
            self._reader.join(timeout=5)
        # The stream call is finalized here, while grpc's threads still run. Left to the
        # interpreter's exit, its finalizer (grpc's _Rendezvous.__del__) takes the call's lock,
        # which a daemon thread stopped at exit may hold: lossless-ctl then hung after its
        # work was done (seen as "Garbage-collecting" in _channel.py __del__, one Python thread).
        del stream
        gc.collect()
        self.channel.close()

    # --- session ----------------------------------------------------------------------------

    def connect(self) -> None:
        """Wait for the server (reads need nothing more)."""
        try:
            grpc.channel_ready_future(self.channel).result(timeout=self.connect_timeout)
        except grpc.FutureTimeoutError as err:
            raise P4RuntimeError(
                f"no P4Runtime server answered within {self.connect_timeout} s"
            ) from err

    def arbitrate(self) -> None:
        """Open the stream and become primary controller, or raise."""
        self.connect()
        self._stream = self.stub.StreamChannel(iter(self._outgoing.get, None))
        self._reader = threading.Thread(target=self._read_stream, daemon=True)
        self._reader.start()
        request = self.pb.StreamMessageRequest()
        request.arbitration.device_id = self.device_id
        request.arbitration.election_id.CopyFrom(self.election_id)
        self._outgoing.put(request)
        try:
            reply = self._arbitration.get(timeout=self.timeout)
        except queue.Empty as err:
            raise P4RuntimeError("no arbitration reply on the stream") from err
        if isinstance(reply, Exception):
            raise P4RuntimeError(f"stream closed during arbitration: {reply}")
        if reply.status.code != code_pb2.OK:
            raise P4RuntimeError(
                f"not primary: election id {self.election_id.high}:{self.election_id.low}, "
                f"primary holds {reply.election_id.high}:{reply.election_id.low} "
                f"({code_name(reply.status.code)})"
            )

    def _read_stream(self) -> None:
        try:
            for message in self._stream:
                kind = message.WhichOneof("update")
                if kind == "arbitration":
                    self._arbitration.put(message.arbitration)
                elif kind == "packet":
                    self._packet_ins.put(message.packet)
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.CANCELLED:
                self._arbitration.put(err)
                self.stream_lost.set()
            return
        self.stream_lost.set()

    def next_packet_in(self, timeout: float) -> Any | None:
        """The next PacketIn from the stream, or None after `timeout` seconds."""
        try:
            return self._packet_ins.get(timeout=timeout)
        except queue.Empty:
            return None

    def more_packet_ins(self, limit: int) -> list[Any]:
        """PacketIns already waiting, up to `limit`, without blocking."""
        out = []
        while len(out) < limit:
            try:
                out.append(self._packet_ins.get_nowait())
            except queue.Empty:
                break
        return out

    def send_packet_out(self, payload: bytes, metadata: list[tuple[int, bytes]]) -> None:
        request = self.pb.StreamMessageRequest()
        request.packet.payload = payload
        for metadata_id, value in metadata:
            request.packet.metadata.add(metadata_id=metadata_id, value=value)
        self._outgoing.put(request)

    def _call(self, method: Callable, request: Any) -> Any:
        try:
            return method(request, timeout=self.timeout)
        except grpc.RpcError as err:
            raise P4RuntimeError(f"{err.code().name}: {err.details()}") from err

    def pipeline_cookie(self) -> int | None:
        """The cookie of the pipeline the switch runs; None when it runs none (or set none)."""
        request = self.pb.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=self.pb.GetForwardingPipelineConfigRequest.COOKIE_ONLY,
        )
        try:
            response = self.stub.GetForwardingPipelineConfig(request, timeout=self.timeout)
        except grpc.RpcError as err:
            if err.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND):
                return None
            raise P4RuntimeError(f"{err.code().name}: {err.details()}") from err
        return response.config.cookie.cookie if response.config.HasField("cookie") else None

    def p4info(self) -> Any:
        """The P4Info of the pipeline the switch runs."""
        request = self.pb.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=self.pb.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE,
        )
        response = self._call(self.stub.GetForwardingPipelineConfig, request)
        if not response.config.HasField("p4info"):
            raise P4RuntimeError("the switch runs no pipeline")
        return response.config.p4info

    def set_pipeline(self, p4info: Any, device_config: bytes, cookie: int = 0) -> None:
        request = self.pb.SetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            election_id=self.election_id,
            action=self.pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
        )
        request.config.p4info.CopyFrom(p4info)
        request.config.p4_device_config = device_config
        request.config.cookie.cookie = cookie
        self._call(self.stub.SetForwardingPipelineConfig, request)

    # --- writes and reads -------------------------------------------------------------------

    def write(
        self,
        updates: Iterable[Any],
        batch_size: int = 1000,
        in_flight: int = 4,
        done: Callable[[int, int, list[UpdateError]], None] | None = None,
    ) -> WriteResult:
        """Write `updates` in WriteRequests of `batch_size`, keeping up to `in_flight` requests
        outstanding. Updates within the call must not depend on each other's order. Updates are
        p4.v1.Update messages, or already serialized (bytes): those go into the request as they
        are. An iterator is taken a request's worth at a time, so what makes the updates runs
        while the requests before are in flight. `done(index of its first update, count, its
        errors)` is called in this thread for each request once it has completed, as soon as
        the next request is sent, so what the caller does with a request's outcome overlaps
        the switch's work on the requests still in flight."""
        if batch_size < 1 or in_flight < 1:
            raise ValueError("batch size and requests in flight must be at least 1")
        head = self.pb.WriteRequest(
            device_id=self.device_id, election_id=self.election_id
        ).SerializeToString()
        result = WriteResult()
        completed: queue.Queue = queue.Queue()
        slots = threading.Semaphore(in_flight)

        def finish(future: Any, offset: int, count: int) -> None:
            error = future.exception()
            errors = [] if error is None else update_errors(error, offset, count)
            result.errors.extend(errors)
            result.written += count - len(errors)
            if done is not None:
                done(offset, count, errors)

        updates, offset, outstanding = iter(updates), 0, 0
        while batch := list(islice(updates, batch_size)):
            # Made before waiting for a slot: the switch works on the requests in flight.
            if isinstance(batch[0], bytes):
                # length_delimited() in C-level iterators: a Python call per update shows.
                prefixes = map(self._update_prefix.__getitem__, map(len, batch))
                request = head + b"".join(chain.from_iterable(zip(prefixes, batch, strict=True)))
                call = self._write_encoded
            else:
                request = self.pb.WriteRequest(
                    device_id=self.device_id, election_id=self.election_id, updates=batch
                )
                call = self.stub.Write
            slots.acquire()
            future = call.future(request, timeout=self.timeout)

            def complete(f: Any, offset: int = offset, count: int = len(batch)) -> None:
                completed.put((f, offset, count))
                slots.release()

            future.add_done_callback(complete)
            offset += len(batch)
            outstanding += 1
            while not completed.empty():
                finish(*completed.get_nowait())
                outstanding -= 1
        for _ in range(outstanding):
            finish(*completed.get())
        result.errors.sort(key=lambda e: e.index)
        return result

    def read(self, entities: Iterable[Any]) -> Iterator[Any]:
        request = self.pb.ReadRequest(device_id=self.device_id, entities=list(entities))
        try:
            for response in self.stub.Read(request, timeout=self.timeout):
                yield from response.entities
        except grpc.RpcError as err:
            raise P4RuntimeError(f"Read: {err.code().name}: {err.details()}") from err

    def read_table(self, table_id: int) -> list[Any]:
        entity = self.pb.Entity()
        entity.table_entry.table_id = table_id
        return [e.table_entry for e in self.read([entity])]
