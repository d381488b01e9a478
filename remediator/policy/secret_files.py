"""Reading a credential from a file: a sink's URL or header (`{file: PATH}`) and a Prometheus bearer token
(`authToken.file`).

The remediator sends what such a file holds to a URL the policy names, so a policy must not be able to point it at
any file the process can read (its own service-account token, a host file): only files under the secrets
directory are read, `/etc/nodemedic/secrets` by default (where the chart mounts `remediator.notificationsSecret`),
set with `--secrets-dir`. Symlinks are resolved first (a mounted Secret's keys are links into `..data/`), so a
link out of the directory is refused too. Only regular files are read, and at most MAX_SECRET_BYTES: `/dev/zero`
would fill the memory and a FIFO would block the event loop for ever.

Every problem is an OSError whose message names the file and never its content; callers add the field.
"""

from __future__ import annotations

import os
import stat

DEFAULT_SECRETS_DIR = "/etc/nodemedic/secrets"
MAX_SECRET_BYTES = 64 << 10  # a webhook URL or a token is under 4 KiB; a JWT with many claims stays far below this


def location_problem(path: str, secrets_dir: str) -> str | None:
    """Why `path` may not be read as a secret (not absolute, outside `secrets_dir` once links are resolved), else
    None. Known when the policy is loaded, whether or not the file exists yet."""
    if not os.path.isabs(path):
        return f"must be an absolute path, got {path!r}"
    root = os.path.realpath(secrets_dir)
    real = os.path.realpath(path)
    if os.path.commonpath([root, real]) != root:
        shown = f"{path} (a link to {real})" if real != os.path.normpath(path) else path
        return (f"{shown} is outside the secrets directory {secrets_dir} (--secrets-dir): only files of a mounted "
                "Secret are read")
    return None


def read_secret_bytes(path: str, secrets_dir: str) -> bytes:
    """The file's bytes; OSError naming the file when it is outside `secrets_dir`, not a regular file, or larger
    than MAX_SECRET_BYTES."""
    problem = location_problem(path, secrets_dir)
    if problem:
        raise OSError(problem)
    # stat before open: opening a device may itself do something (a tape rewinds), and a FIFO would block open().
    before = os.stat(path)
    _check(path, before)
    # O_NONBLOCK: should the file become a FIFO between stat and open, open() returns at once instead of waiting for
    # a writer; fstat below then refuses it. O_NOCTTY: a terminal never becomes ours.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        _check(path, os.fstat(fd))
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_SECRET_BYTES:  # the size stat gave may be stale: read no more than one byte past the cap
            chunk = os.read(fd, MAX_SECRET_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > MAX_SECRET_BYTES:
        raise OSError(f"{path} is larger than {MAX_SECRET_BYTES >> 10} KiB, the bound on a secret file")
    return b"".join(chunks)


def read_secret_file(path: str, secrets_dir: str) -> str:
    """The file's UTF-8 text, surrounding whitespace removed; OSError as read_secret_bytes, or when not UTF-8."""
    data = read_secret_bytes(path, secrets_dir)
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise OSError(f"{path} is not UTF-8 text") from None


def _check(path: str, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise OSError(f"{path} is not a regular file (a FIFO, device, socket or directory is never read)")
    if st.st_size > MAX_SECRET_BYTES:
        raise OSError(f"{path} is larger than {MAX_SECRET_BYTES >> 10} KiB, the bound on a secret file")
