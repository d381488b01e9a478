"""Cutting credentials out of text bound for a log line, an Event or an error message.

Matching a secret's exact text is not enough: a server that echoes the request puts it in a JSON body (`\\/` for
`/`, `\\u0026` for `&`), a client library percent-encodes it in a URL, and HTTP Basic sends `user:pass` from a URL's
userinfo base64-encoded in `Authorization`. Every known secret is therefore cut in each of those forms, and the
userinfo of any URL in the text is cut whether or not it is known (a URL written into the wrong field).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus, unquote, urlsplit

REDACTED = "<redacted>"
MIN_SECRET_LENGTH = 6  # shorter is no credential (X-Debug: 1), and cutting it out would garble every message

# scheme://userinfo@ and its JSON-escaped form scheme:\/\/userinfo@; userinfo stops at the first /, ?, #, @ or space
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*:(?:\\?/){2})(?P<userinfo>[^/\\\s@?#\"'<>]+)@")


def url_secrets(url: str) -> list[str]:
    """What of a URL is a credential: the URL, its path and query (a Slack webhook's key is its path), each path
    suffix and the last segment (an echo of the token alone), each query value, and the userinfo as a client sends
    it (decoded, and the `user:pass` pair HTTP Basic encodes)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return [url]
    out = [url]
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    if len(path) > 1:
        out.append(path)
    segments = [s for s in parts.path.split("/") if s]
    out += ["/".join(segments[i:]) for i in range(1, len(segments))]
    if segments:
        out.append(segments[-1])
    for pair in parts.query.split("&"):
        value = pair.partition("=")[2]
        out += [value, unquote(value)] if value else []
    return out + userinfo_secrets(url)


def userinfo_secrets(url: str) -> list[str]:
    """A URL's `user:pass` as written and as a client sends it (decoded: what HTTP Basic base64-encodes), and the
    password alone; [] without userinfo."""
    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        return []
    if "@" not in netloc:
        return []
    userinfo = netloc.rpartition("@")[0]
    user, _, password = userinfo.partition(":")
    return [userinfo, unquote(userinfo), f"{unquote(user)}:{unquote(password)}", password, unquote(password)]


def header_secrets(value: str) -> list[str]:
    """A header value and its credential without the scheme ("Bearer <token>" -> "<token>"); a Basic credential
    also decoded ("user:pass" and the password)."""
    scheme, _, credential = value.partition(" ")
    out = [value, credential.strip()]
    if scheme.lower() == "basic" and credential.strip():
        try:
            pair = base64.b64decode(credential.strip(), validate=True).decode("utf-8")
        except ValueError:
            pair = ""
        out += [pair, pair.partition(":")[2]] if pair else []
    return out


def forms(secret: str) -> set[str]:
    """The secret as it may appear in text: raw, JSON-escaped (with and without `\\/`), percent-encoded (a query
    value, a path), and base64 (standard and URL-safe, with and without padding)."""
    json_text = json.dumps(secret)[1:-1]
    json_ascii = json.dumps(secret, ensure_ascii=True)[1:-1]
    encoded = secret.encode("utf-8")
    b64 = base64.b64encode(encoded).decode("ascii")
    urlsafe = base64.urlsafe_b64encode(encoded).decode("ascii")
    out = {secret, json_text, json_ascii, json_text.replace("/", "\\/"), json_ascii.replace("/", "\\/"),
           quote(secret, safe=""), quote(secret, safe="/:"), quote_plus(secret), quote(secret, safe="/:@"),
           b64, b64.rstrip("="), urlsafe, urlsafe.rstrip("=")}
    # A JSON encoder may escape <, > and & too (Go's does); only the characters a secret has matter.
    go_json = json_text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    out |= {go_json, go_json.replace("/", "\\/")}
    return {f for f in out if f}


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret of at least MIN_SECRET_LENGTH characters cut out in each of its forms, and the
    userinfo of every URL in it."""
    cut: set[str] = set()
    for secret in secrets:
        if len(secret) >= MIN_SECRET_LENGTH:
            cut |= forms(secret)
    for form in sorted(cut, key=len, reverse=True):  # longest first: a URL before the path it contains
        text = text.replace(form, REDACTED)
    return _USERINFO.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)
