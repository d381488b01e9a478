"""The policy file as the running remediator sees it: re-read when its content changes, or the content of a file it
reads a notification secret from (a rotated key in a mounted Secret); a bad new file keeps the last good policy."""

from __future__ import annotations

import hashlib
from pathlib import Path

from nodemedic_common.config_errors import ConfigError
from remediator.policy.loader import load_policy
from remediator.policy.model import Policy
from remediator.policy.secret_files import DEFAULT_SECRETS_DIR, read_secret_bytes
from remediator.policy.strategies import StrategyCatalog


class PolicySource:
    def __init__(self, path: str, policy: Policy, *, catalog: StrategyCatalog,
                 secrets_dir: str = DEFAULT_SECRETS_DIR) -> None:
        self.path = Path(path)
        self.policy = policy
        self.catalog = catalog  # the registered strategies, that read their own args (policy/strategies.py)
        self.secrets_dir = secrets_dir
        self.stat = self._stat()
        self.digest = self._digest()

    def _files(self) -> list[Path]:
        return [self.path, *(Path(f) for f in self.policy.notifications.secret_files)]

    def _stat(self) -> tuple[tuple[float, int, int], ...]:
        stats = []
        for file in self._files():
            try:
                st = file.stat()
            except OSError:
                stats.append((0.0, 0, 0))
                continue
            stats.append((st.st_mtime, st.st_size, st.st_ino))
        return tuple(stats)

    def _digest(self) -> str:
        try:
            policy = hashlib.sha256(self.path.read_bytes())
        except OSError:
            return ""
        for file in self._files()[1:]:
            try:  # bounded and regular files only, as the loader reads them: the file may have changed since
                policy.update(hashlib.sha256(read_secret_bytes(str(file), self.secrets_dir)).digest())
            except OSError:
                policy.update(b"unreadable")  # reported by the reload that follows
        return policy.hexdigest()

    def poll(self) -> tuple[bool, list[str]]:
        """(changed to a new good policy, errors of a bad new file). Cheap when nothing changed: one stat()."""
        stat = self._stat()
        if stat == self.stat:
            return False, []
        self.stat = stat  # a ConfigMap update swaps a symlink: the inode changes even when mtime does not
        digest = self._digest()
        if not digest or digest == self.digest:
            return False, []
        self.digest = digest
        try:
            self.policy = load_policy(self.path, catalog=self.catalog, secrets_dir=self.secrets_dir)
        except ConfigError as e:
            return False, e.errors
        except Exception as e:  # noqa: BLE001 - a loader bug on odd input (a RecursionError was one) must still be
            # counted and announced as a rejected policy, not skipped in silence by the cycle's own handler.
            return False, [f"{self.path}: <document>: the policy could not be loaded: {type(e).__name__}: {e}"]
        self.stat, self.digest = self._stat(), self._digest()  # the new policy may read other secret files
        return True, []
