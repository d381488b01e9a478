"""LIST pages and WATCH events with each object's `metadata.managedFields` cut from the bytes before they are decoded.

Neither program reads managedFields (server-side apply's record of who set which field), and it is the larger part
of what decoding an object costs: a third of a pod's bytes and most of its JSON objects, one per field it names
(`{"f:metadata":{"f:labels":{".":{},"f:app":{}}},...}`). In a 500-pod page from kube-apiserver 1.37 decoding took
16 ms with it and 7 ms without, and freeing the decoded page 6 ms and 2 ms; the cut itself takes ~1 ms.

Found without decoding, by three byte searches per object, sound for any valid JSON:
- the start is `,"managedFields":[`. A `"` that follows `,` is never escaped, so it opens or closes a string; it
  cannot close one (`managedFields":` would follow outside any string, which is not JSON), so it opens a member key
  `managedFields` whose value is an array.
- the end is the first `]},"` after it that is followed by a member key (`spec":`, `value":`): letters and `":`.
  Such a `"` opens a string for the same reason, so the `]` before it is outside any string. Go writes ObjectMeta's
  fields in their declared order, managedFields last, so its closing `]` is followed by the `}` that ends metadata
  and the next member of the object.
- between the two there is no `[` at all: then nothing inside can open an array, and the first `]` outside a string
  after the start closes managedFields' own. (managedFields holds no arrays: its entries' fields are strings and
  the fieldsV1 tree of objects.)
An object where any of this does not hold (managedFields first or alone in metadata, a string ending in `]},`, an
answer from something that orders members otherwise) keeps its managedFields and is decoded whole, as before.
Cutting a member with its whole value out of valid JSON leaves valid JSON with the other members unchanged. (Text
that is not JSON only inside a managedFields array, which no API server writes, decodes once cut: none of it is read.)
"""

from __future__ import annotations

import re

_START = b',"managedFields":['
_END = b']},"'
_MEMBER_KEY = re.compile(rb'[A-Za-z]+":')


def without_managed_fields(raw: bytes) -> bytes:
    """`raw` with every managedFields member found as above cut out; `raw` itself when there is none."""
    pieces: list[bytes] = []
    kept_from = searched_from = 0
    while (start := raw.find(_START, searched_from)) >= 0:
        end = raw.find(_END, start)
        if end < 0:
            break
        searched_from = start + len(_START)
        if raw.find(b"[", searched_from, end) >= 0 or _MEMBER_KEY.match(raw, end + len(_END)) is None:
            continue
        pieces.append(raw[kept_from:start])
        kept_from = searched_from = end + 1
    if not pieces:
        return raw
    pieces.append(raw[kept_from:])
    return b"".join(pieces)
