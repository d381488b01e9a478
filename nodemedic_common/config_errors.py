"""The one error every config reader raises: the agent config, NPD's monitor JSON and the remediation policy.

A reader records every problem it finds instead of stopping at the first, so one run of `validate` (or one failed
start) lists them all; each names where it is, as "FILE:LINE: field.path: message" ("FILE: field.path: message"
where the format keeps no lines, as JSON decoded to dicts does). Both CLIs print the list and exit 2.
"""

from __future__ import annotations

from collections.abc import Sequence


class ConfigError(Exception):
    """The file is unusable; `errors` holds every problem found, each naming its file, line (where known) and field."""

    def __init__(self, errors: Sequence[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = list(errors)
