"""A containerd's answer to the CRI Version call, as bytes: shared by the wire reader's and the runtime tests."""

from __future__ import annotations


def proto_string(field: int, value: str) -> bytes:
    raw = value.encode()
    return bytes((field << 3 | 2, len(raw))) + raw


VERSION_RESPONSE = (proto_string(1, "0.1.0") + proto_string(2, "containerd") + proto_string(3, "v1.7.13")
                    + proto_string(4, "v1"))
GRPC_MESSAGE = b"\x00" + len(VERSION_RESPONSE).to_bytes(4, "big") + VERSION_RESPONSE
STATUS_200 = b"\x88"  # HPACK static table index 8: ":status: 200"
