"""A fake P4Runtime server for unit tests that check the requests the controller sends.

A real grpcio server implementing the P4Runtime service in-process: it records every request
(writes, pipelines, PacketOuts), answers arbitration (the highest election id is primary),
stores written entities for Read, and rejects chosen updates the way the P4Runtime spec asks
(status UNKNOWN whose details hold one p4.v1.Error per update of the batch), so a test can
assert the exact WriteRequests, their order and the error handling. It runs no P4 program and
checks nothing about one: whatever claims to work with a switch is tested against p4-switch
(test_switch_integration.py, test_counters_switch.py, the benchmarks).
"""

from __future__ import annotations

import queue
import threading
from concurrent import futures

import grpc
from google.rpc import code_pb2, status_pb2

from lossless_ctl.client import entity_key
from lossless_ctl.p4rt_proto import bindings


class FakeP4Runtime(bindings().p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self):
        self.pb = bindings().p4runtime_pb2
        self.lock = threading.Lock()
        self.writes: list = []
        self.pipelines: list = []
        self.entities: dict[tuple, object] = {}
        self.primary = None  # (high, low)
        self.streams: list[queue.Queue] = []
        self.packet_outs: list = []
        self.reject = lambda update: None  # -> (code, message) to fail an update
        self.hide_on_read = lambda entity: False

    def StreamChannel(self, request_iterator, context):
        outgoing: queue.Queue = queue.Queue()
        with self.lock:
            self.streams.append(outgoing)
        context.add_callback(lambda: outgoing.put(None))

        def consume() -> None:
            try:
                for request in request_iterator:
                    kind = request.WhichOneof("update")
                    if kind == "arbitration":
                        outgoing.put(self._arbitrate(request))
                    elif kind == "packet":
                        with self.lock:
                            self.packet_outs.append(request.packet)
            except grpc.RpcError:
                pass  # the client went away
            outgoing.put(None)

        threading.Thread(target=consume, daemon=True).start()
        while (message := outgoing.get()) is not None:
            yield message

    def _arbitrate(self, request):
        election = (request.arbitration.election_id.high, request.arbitration.election_id.low)
        with self.lock:
            if self.primary is None or election >= self.primary:
                self.primary = election
        response = self.pb.StreamMessageResponse()
        response.arbitration.CopyFrom(request.arbitration)
        response.arbitration.election_id.high, response.arbitration.election_id.low = self.primary
        ok = election == self.primary
        response.arbitration.status.code = code_pb2.OK if ok else code_pb2.ALREADY_EXISTS
        return response

    def send_packet_in(self, payload: bytes, metadata: list[tuple[int, bytes]]) -> None:
        """A PacketIn to every open stream, as if the pipeline had punted `payload`."""
        message = self.pb.StreamMessageResponse()
        message.packet.payload = payload
        for metadata_id, value in metadata:
            message.packet.metadata.add(metadata_id=metadata_id, value=value)
        with self.lock:
            streams = list(self.streams)
        for stream in streams:
            stream.put(message)

    def _check_primary(self, request, context):
        if (request.election_id.high, request.election_id.low) != self.primary:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, "not the primary controller")

    def SetForwardingPipelineConfig(self, request, context):
        self._check_primary(request, context)
        with self.lock:
            self.pipelines.append(request)
            self.entities.clear()  # a new pipeline starts empty
        return self.pb.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request, context):
        with self.lock:
            if not self.pipelines:
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, "no pipeline set")
            config = self.pipelines[-1].config
        response = self.pb.GetForwardingPipelineConfigResponse()
        response.config.cookie.CopyFrom(config.cookie)
        kinds = self.pb.GetForwardingPipelineConfigRequest
        if request.response_type in (kinds.ALL, kinds.P4INFO_AND_COOKIE):
            response.config.p4info.CopyFrom(config.p4info)
        if request.response_type in (kinds.ALL, kinds.DEVICE_CONFIG_AND_COOKIE):
            response.config.p4_device_config = config.p4_device_config
        return response

    def _apply(self, update) -> tuple[int, str] | None:
        """Store or remove one update's entity with P4Runtime's semantics; None if it worked."""
        rejected = self.reject(update)
        if rejected is not None:
            return rejected
        key = entity_key(update.entity)
        # Default entries and meter cells always exist: they are only modified.
        default = (key[0] == "table" and key[2]) or key[0] == "meter"
        with self.lock:
            present = key in self.entities
            if update.type == self.pb.Update.INSERT and present:
                return code_pb2.ALREADY_EXISTS, "entity exists"
            if update.type in (self.pb.Update.MODIFY, self.pb.Update.DELETE):
                if not present and not default:
                    return code_pb2.NOT_FOUND, "entity not found"
            if update.type == self.pb.Update.DELETE:
                del self.entities[key]
            else:
                self.entities[key] = update.entity
        return None

    def Write(self, request, context):
        self._check_primary(request, context)
        with self.lock:
            self.writes.append(request)
        errors = []
        for update in request.updates:
            error = self.pb.Error(canonical_code=code_pb2.OK)
            failed = self._apply(update)
            if failed is not None:
                error.canonical_code, error.message = failed
            errors.append(error)
        if any(e.canonical_code != code_pb2.OK for e in errors):
            status = status_pb2.Status(code=code_pb2.UNKNOWN, message="Write failure.")
            for error in errors:
                status.details.add().Pack(error)
            context.set_trailing_metadata(
                (("grpc-status-details-bin", status.SerializeToString()),)
            )
            context.set_code(grpc.StatusCode.UNKNOWN)
            context.set_details("Write failure.")
        return self.pb.WriteResponse()

    @staticmethod
    def _wanted(wanted, entity) -> bool:
        """Does `entity` answer the read request entity `wanted` (zero ids are wildcards)?"""
        kind = wanted.WhichOneof("entity")
        if kind != entity.WhichOneof("entity"):
            return False
        if kind == "table_entry":
            w, e = wanted.table_entry, entity.table_entry
            return w.table_id in (0, e.table_id) and w.is_default_action == e.is_default_action
        if kind == "action_profile_member":
            w, e = wanted.action_profile_member, entity.action_profile_member
            return w.action_profile_id in (0, e.action_profile_id)
        if kind == "action_profile_group":
            w, e = wanted.action_profile_group, entity.action_profile_group
            return w.action_profile_id in (0, e.action_profile_id)
        if kind == "meter_entry":
            return wanted.meter_entry.meter_id in (0, entity.meter_entry.meter_id)
        if kind == "packet_replication_engine_entry":
            w = wanted.packet_replication_engine_entry.clone_session_entry.session_id
            e = entity.packet_replication_engine_entry.clone_session_entry.session_id
            return w in (0, e)
        return False

    def Read(self, request, context):
        response = self.pb.ReadResponse()
        with self.lock:
            stored = list(self.entities.values())
        for wanted in request.entities:
            for entity in stored:
                if self._wanted(wanted, entity) and not self.hide_on_read(entity):
                    response.entities.add().CopyFrom(entity)
        yield response


class FakeSwitch:
    """A running FakeP4Runtime on 127.0.0.1 (an ephemeral port); a context manager."""

    def __init__(self, workers: int = 8):
        self.servicer = FakeP4Runtime()
        self.server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=workers),
            options=[("grpc.max_receive_message_length", 256 * 1024 * 1024)],
        )
        bindings().p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(self.servicer, self.server)
        self.address = f"127.0.0.1:{self.server.add_insecure_port('127.0.0.1:0')}"

    def __enter__(self) -> FakeSwitch:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop(grace=None)
