"""Make a pod look created in the past, for the e2e tests of age-based strategies (PodLifeTime's
`maxPodLifeTimeSeconds: 604800`, RemoveFailedPods' `minPodLifetimeSeconds: 3600`) with the policies left as they are.

The API server sets `metadata.creationTimestamp` itself and keeps it on every update, so no API request can move it.
The test's own etcd can: the pod's stored object is rewritten with an earlier creationTimestamp, in a transaction
that only succeeds if nobody wrote the pod meanwhile. The API server's watch on etcd sees the change like any other
write, so every client (nodemedic, descheduler, kwok) sees the same aged pod through the ordinary API.

Stored objects are protobuf (`k8s\\0` + runtime.Unknown{typeMeta=1, raw=2, ...}); in the raw Pod, metadata is field 1,
and in ObjectMeta, creationTimestamp is field 8 (a Time{seconds=1, nanos=2}). The fields around it are copied byte
for byte."""

from __future__ import annotations

import base64
import datetime as dt
import json
import urllib.request
from collections.abc import Callable, Iterator

MAGIC = b"k8s\x00"
_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5
Field = tuple[int, int, bytes]  # (number, wire type, the encoded value without its tag)


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, at
        shift += 7


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _fields(data: bytes) -> Iterator[Field]:
    at = 0
    while at < len(data):
        tag, at = _varint(data, at)
        number, wire = tag >> 3, tag & 7
        start = at
        if wire == _VARINT:
            _, at = _varint(data, at)
        elif wire == _FIXED64:
            at += 8
        elif wire == _FIXED32:
            at += 4
        elif wire == _BYTES:
            size, at = _varint(data, at)
            start, at = at, at + size
        else:
            raise ValueError(f"protobuf wire type {wire} (field {number}) is not used by Kubernetes objects")
        yield number, wire, data[start:at]


def _encode(fields: list[Field]) -> bytes:
    out = bytearray()
    for number, wire, value in fields:
        out += _encode_varint(number << 3 | wire)
        out += _encode_varint(len(value)) + value if wire == _BYTES else value
    return bytes(out)


def _replace(message: bytes, number: int, change: Callable[[bytes], bytes]) -> bytes:
    """`message` with its length-delimited field `number` passed through `change` (bytes -> bytes)."""
    fields = list(_fields(message))
    hits = [i for i, (n, w, _) in enumerate(fields) if n == number and w == _BYTES]
    if len(hits) != 1:
        raise ValueError(f"expected one field {number}, found {len(hits)}")
    n, w, v = fields[hits[0]]
    fields[hits[0]] = (n, w, change(v))
    return _encode(fields)


def with_creation(stored: bytes, created: dt.datetime) -> bytes:
    """A stored pod (etcd value) with `metadata.creationTimestamp` set to `created` (whole seconds)."""
    if not stored.startswith(MAGIC):
        raise ValueError("not a protobuf-encoded object (the API server stores pods as protobuf by default)")
    time = _encode([(1, _VARINT, _encode_varint(int(created.timestamp())))])

    def meta(m: bytes) -> bytes:
        fields = [f for f in _fields(m) if f[0] != 8]
        at = next((i for i, f in enumerate(fields) if f[0] > 8), len(fields))
        return _encode([*fields[:at], (8, _BYTES, time), *fields[at:]])

    return MAGIC + _replace(stored[len(MAGIC):], 2, lambda raw: _replace(raw, 1, meta))


def _post(etcd: str, path: str, body: dict[str, object]) -> dict[str, object]:
    req = urllib.request.Request(f"{etcd}{path}", json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        out: dict[str, object] = json.loads(r.read())
        return out


def backdate_pod(etcd: str, namespace: str, name: str, created: dt.datetime, *, attempts: int = 20) -> None:
    """Rewrite the pod in etcd (`etcd`: its client URL) with creationTimestamp `created`. Retries when another
    write (kwok, the kubelet's status) came between reading and writing."""
    key = base64.b64encode(f"/registry/pods/{namespace}/{name}".encode()).decode()
    for _ in range(attempts):
        kvs = _post(etcd, "/v3/kv/range", {"key": key}).get("kvs")
        if not isinstance(kvs, list) or len(kvs) != 1:
            raise LookupError(f"pod {namespace}/{name} is not in etcd at {etcd}")
        value = base64.b64decode(kvs[0]["value"])
        changed = base64.b64encode(with_creation(value, created)).decode()
        done = _post(etcd, "/v3/kv/txn", {
            "compare": [{"key": key, "target": "MOD", "result": "EQUAL", "mod_revision": kvs[0]["mod_revision"]}],
            "success": [{"request_put": {"key": key, "value": changed}}]})
        if done.get("succeeded"):
            return
    raise RuntimeError(f"pod {namespace}/{name} kept changing in etcd; gave up after {attempts} attempts")
