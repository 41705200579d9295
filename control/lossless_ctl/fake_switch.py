"""A fake P4Runtime server: the controller's stand-in switch for unit tests and benchmarks.

A real grpcio server implementing the P4Runtime service in-process: it records every request,
answers arbitration (the highest election id is primary), stores written entities for Read,
and rejects chosen updates the way the P4Runtime spec asks (status UNKNOWN whose details hold
one p4.v1.Error per update of the batch). It runs no P4 program and checks nothing about one:
integration tests against p4-switch do that.
"""

from __future__ import annotations

import threading
from concurrent import futures

import grpc
from google.rpc import code_pb2, status_pb2

from lossless_ctl.p4rt_proto import bindings


class FakeP4Runtime(bindings().p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self, record: bool = True):
        self.pb = bindings().p4runtime_pb2
        self.lock = threading.Lock()
        # A benchmark turns recording off: it measures the client, not the fake's memory.
        self.record = record
        self.writes: list = []
        self.pipelines: list = []
        self.entities: dict[bytes, object] = {}
        self.primary = None  # (high, low)
        self.reject = lambda update: None  # -> (code, message) to fail an update
        self.hide_on_read = lambda entity: False

    def StreamChannel(self, request_iterator, context):
        for request in request_iterator:
            if request.WhichOneof("update") != "arbitration":
                continue
            election = (request.arbitration.election_id.high, request.arbitration.election_id.low)
            with self.lock:
                if self.primary is None or election >= self.primary:
                    self.primary = election
            response = self.pb.StreamMessageResponse()
            response.arbitration.CopyFrom(request.arbitration)
            response.arbitration.election_id.high, response.arbitration.election_id.low = (
                self.primary
            )
            ok = election == self.primary
            response.arbitration.status.code = code_pb2.OK if ok else code_pb2.ALREADY_EXISTS
            yield response

    def _check_primary(self, request, context):
        if (request.election_id.high, request.election_id.low) != self.primary:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, "not the primary controller")

    def SetForwardingPipelineConfig(self, request, context):
        self._check_primary(request, context)
        self.pipelines.append(request)
        return self.pb.SetForwardingPipelineConfigResponse()

    def Write(self, request, context):
        self._check_primary(request, context)
        if not self.record:
            return self.pb.WriteResponse()
        with self.lock:
            self.writes.append(request)
        errors = []
        for update in request.updates:
            rejected = self.reject(update)
            error = self.pb.Error(canonical_code=code_pb2.OK)
            if rejected is not None:
                error.canonical_code, error.message = rejected
            else:
                key = self._key(update.entity)
                with self.lock:
                    self.entities[key] = update.entity
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

    def Read(self, request, context):
        response = self.pb.ReadResponse()
        with self.lock:
            stored = list(self.entities.values())
        for wanted in request.entities:
            for entity in stored:
                if (
                    entity.WhichOneof("entity") == "table_entry"
                    and not entity.table_entry.is_default_action
                    and entity.table_entry.table_id == wanted.table_entry.table_id
                    and not self.hide_on_read(entity)
                ):
                    response.entities.add().CopyFrom(entity)
        yield response

    @staticmethod
    def _key(entity) -> bytes:
        kind = entity.WhichOneof("entity")
        if kind == "table_entry":
            t = entity.table_entry
            key = type(t)(table_id=t.table_id, is_default_action=t.is_default_action)
            key.match.extend(t.match)
            return key.SerializeToString(deterministic=True)
        return entity.SerializeToString(deterministic=True)


class FakeSwitch:
    """A running FakeP4Runtime on 127.0.0.1 (an ephemeral port); a context manager."""

    def __init__(self, record: bool = True, workers: int = 8):
        self.servicer = FakeP4Runtime(record)
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
