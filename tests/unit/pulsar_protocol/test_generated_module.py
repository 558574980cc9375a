"""The committed PulsarApi_pb2.py is what PulsarApi.proto generates."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2

pytest.importorskip("grpc_tools", reason="grpcio-tools (dev extra) regenerates the module")

PROTO_DIR = Path(PulsarApi_pb2.__file__).parent


def test_committed_module_matches_the_proto(tmp_path: Path) -> None:
    out = tmp_path / "descriptor.pb"
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO_DIR}",
         f"--descriptor_set_out={out}", "PulsarApi.proto"],
        check=True,
    )
    fresh = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file[0]
    for message in _messages(fresh.message_type):
        for field in message.field:
            field.ClearField("json_name")  # protoc adds it; generated modules leave it out
    committed = descriptor_pb2.FileDescriptorProto.FromString(
        PulsarApi_pb2.DESCRIPTOR.serialized_pb
    )
    assert fresh == committed, "run scripts/gen-pulsar-proto and commit PulsarApi_pb2.py"


def _messages(messages):
    for message in messages:
        yield message
        yield from _messages(message.nested_type)
