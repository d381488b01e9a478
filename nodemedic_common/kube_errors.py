"""What the client layer raises, in both programs: one ApiError for any failed call (and the answers that leave a
write's fate unknown), two kinds of it that tell a list+watch loop to relist, and one CredentialsError for credentials
that cannot be used."""

from __future__ import annotations

from nodemedic_common import bounded_json

# Answers that do not say whether a write was carried out: the API server may have done it and the answer been lost on
# the way (0: a timeout, a dropped connection) or failed after the write (500, 503, 504). A 409 or 429 says it was not.
UNKNOWN_FATE = frozenset({0, 500, 503, 504})


class ApiError(Exception):
    """A failed call: `status` is the HTTP code (0: no answer, or not one the API gives). Callers decide on `status`,
    `reason` and `causes` (the API's Status object), never on the message text, which is for people and changes
    between versions."""

    def __init__(self, status: int, method: str, path: str, body: str) -> None:
        self.status = status
        self.body = body
        try:
            doc = bounded_json.loads(body)
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            doc = {}
        self.message = str(doc.get("message", body)) if doc else body[:300]
        self.reason = str(doc.get("reason") or "")  # e.g. Conflict, TooManyRequests, NotFound
        details = doc.get("details")
        causes = details.get("causes") if isinstance(details, dict) else None
        # A StatusCause's type is serialised as "reason" (e.g. DisruptionBudget on a PDB-refused eviction).
        self.causes = tuple(str(c.get("reason") or "") for c in causes or () if isinstance(c, dict))
        super().__init__(f"{method} {path}: HTTP {status}: {self.message}")


class WatchExpired(ApiError):
    """410 Gone, as an HTTP status or a watch's ERROR event: the resourceVersion is too old (or a LIST's continue
    token expired), and the caller must relist."""


class WatchLineTooLong(ApiError):
    """A watch event over the line bound (nodemedic_common/lines.py): the rest of that watch is not read, and the
    caller relists, since resuming from the last resourceVersion would read the same event again."""


class TooLarge(ApiError):
    """An answer longer than the caller's `limit`: read no further than that."""


class CredentialsError(Exception):
    """No usable credentials: the message names the kubeconfig file and field, or says why in-cluster ones are
    missing."""
