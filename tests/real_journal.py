"""A real systemd journal in a fixture host root, written by this machine's own systemd-journald.

journald runs as a journal namespace (`systemd-journald NAME`: no kernel log import, its own sockets) inside a
private mount namespace (`unshare --mount`), where its socket directory and its journal directory are bind
mounts of directories under the test's tmp path. So the journal files it writes land in
`<root>/var/log/journal/<machine-id>/`, exactly where a host keeps them, and the test sends entries over the
journal's native socket protocol (what `sd_journal_send()` does), with any fields it likes. The machine's own
/run/systemd and /var/log/journal are never touched. `volatile=True` puts the files in `<root>/run/log/journal/
<machine-id>/` instead, where a host without persistent storage keeps them: with `/` as the root (the agent
benchmark gives this machine a journal) that is the one place the private /var/log/journal does not hide.
Needs root, `unshare` and systemd-journald (Debian's systemd package); without them `start()` raises with the
reason, so a test fails rather than skips.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

JOURNALD = next((p for p in ("/lib/systemd/systemd-journald", "/usr/lib/systemd/systemd-journald")
                 if Path(p).exists()), "/lib/systemd/systemd-journald")
NAMESPACE = "nmtest"


class RealJournal:
    def __init__(self, root: Path, work: Path, *, volatile: bool = False) -> None:
        self.root = root
        self.machine_id = Path("/etc/machine-id").read_text().strip()
        self.directory = root / ("run/log/journal" if volatile else "var/log/journal") / self.machine_id
        self._run = work / "run-systemd"
        self._socket = self._run / f"journal.{NAMESPACE}" / "socket"
        self._proc: subprocess.Popen[bytes] | None = None
        self._streams: list[socket.socket] = []

    def start(self, *, timeout: float = 10.0) -> RealJournal:
        missing = [tool for tool in ("unshare", "mount") if shutil.which(tool) is None]
        if missing or not Path(JOURNALD).exists():
            raise RuntimeError(f"a real journal needs unshare, mount and {JOURNALD}; missing: "
                               f"{', '.join(missing) or JOURNALD}")
        self.directory.mkdir(parents=True, exist_ok=True)
        (self._run / f"journal.{NAMESPACE}").mkdir(parents=True, exist_ok=True)
        # The "flushed" flag makes journald write to the persistent directory at once, as after boot.
        (self._run / f"journal.{NAMESPACE}" / "flushed").touch()
        script = (f"mount --bind {self._run} /run/systemd && mount -t tmpfs tmpfs /var/log/journal && "
                  f"mkdir /var/log/journal/{self.machine_id}.{NAMESPACE} && "
                  f"mount --bind {self.directory} /var/log/journal/{self.machine_id}.{NAMESPACE} && "
                  f"exec {JOURNALD} {NAMESPACE}")
        self._proc = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        while not (self._socket.exists() and any(self.directory.glob("*.journal"))):
            if self._proc.poll() is not None:
                err = self._proc.stderr.read().decode(errors="replace") if self._proc.stderr else ""
                raise RuntimeError(f"systemd-journald exited with {self._proc.returncode}: {err.strip()[-300:]}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"systemd-journald did not open {self._socket} within {timeout:g}s")
            time.sleep(0.05)
        return self

    def send(self, message: str | bytes, *, identifier: str, **fields: str) -> None:
        """One entry, as a program logging through sd_journal_send() would write it (a bytes message is sent as
        is, valid UTF-8 or not)."""
        entry = {"MESSAGE": message, "SYSLOG_IDENTIFIER": identifier, "PRIORITY": "6", **fields}
        payload = b""
        for key, value in entry.items():
            data = value if isinstance(value, bytes) else value.encode()
            if b"\n" in data:  # the protocol's binary-safe form: KEY\n<64-bit little-endian length><data>\n
                payload += key.encode() + b"\n" + len(data).to_bytes(8, "little") + data + b"\n"
            else:
                payload += key.encode() + b"=" + data + b"\n"
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.sendto(payload, str(self._socket))

    def rotate(self) -> None:
        """Have journald archive its files and start new ones (SIGUSR2, what `journalctl --rotate` asks for)."""
        assert self._proc is not None
        before = set(self.directory.glob("*@*.journal"))
        os.kill(self._proc.pid, signal.SIGUSR2)
        deadline = time.monotonic() + 10
        while set(self.directory.glob("*@*.journal")) == before:
            if time.monotonic() > deadline:
                raise RuntimeError("systemd-journald did not rotate its files within 10s")
            time.sleep(0.05)

    def stream(self, identifier: str) -> socket.socket:
        """A connected stdout stream, as systemd gives a service: each line written is an entry. journald run as a
        namespace exits after 30 s without a client; one held open keeps it running (closed by `stop()`)."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(self._socket.with_name("stdout")))
            # identifier, unit, priority, level prefix, forward to syslog, to kmsg, to the console
            sock.sendall(f"{identifier}\n\n6\n0\n0\n0\n0\n".encode())
        except OSError:
            sock.close()
            raise
        self._streams.append(sock)
        return sock

    def stop(self) -> None:
        for sock in self._streams:
            sock.close()
        self._streams.clear()
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
