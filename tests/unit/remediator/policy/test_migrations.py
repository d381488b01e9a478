"""The `migrations` section and an engine's `approval` (policy/migrations.py): defaults, values, bounds."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from nodemedic_common.config_errors import ConfigError
from remediator.policy.loader import load_policy
from remediator.policy.migrations import MigrationSettings
from remediator.strategies import CATALOG
from remediator.strategies.balance_resource_mix.args import BalanceResourceMixArgs
from remediator.strategies.make_room_for_pending_pods.args import MakeRoomForPendingPodsArgs

HEAD = "apiVersion: nodemedic.io/v1alpha1\nkind: RemediationPolicy\nrules: []\n"


def load(tmp_path: Path, text: str) -> object:
    f = tmp_path / "policy.yaml"
    f.write_text(HEAD + text)
    return load_policy(f, catalog=CATALOG)


def test_defaults_a_person_decides_balancing_and_placement_runs_as_planned() -> None:
    assert MigrationSettings() == MigrationSettings(expire_after=dt.timedelta(hours=1), on_failure="revert",
                                                    keep_finished=dt.timedelta(days=7))
    assert BalanceResourceMixArgs().approval == "required"
    assert MakeRoomForPendingPodsArgs().approval == "automatic"


def test_the_section_and_the_engines_approval_read_as_written(tmp_path: Path) -> None:
    policy = load(tmp_path, "migrations: {expireAfter: 30m, onFailure: keep, keepFinished: 48h}\n"
                            "strategies:\n- name: BalanceResourceMix\n  args: {approval: automatic}\n"
                            "- name: MakeRoomForPendingPods\n  args: {approval: required}\n")
    assert policy.migrations == MigrationSettings(dt.timedelta(minutes=30), "keep",  # type: ignore[attr-defined]
                                                  dt.timedelta(hours=48))
    assert [s.args.approval for s in policy.strategies] == ["automatic", "required"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("text", "error"), [
    ("migrations: {expireAfter: 170h}", "migrations.expireAfter: must be at most 168h0m0s"),
    ("migrations: {keepFinished: 10m}", "migrations.keepFinished: must be at least 1h0m0s"),
    ("migrations: {onFailure: ignore}", "migrations.onFailure: must be one of revert, keep"),
    ("migrations: {retries: 3}", "migrations.retries"),
])
def test_a_value_that_would_hurt_is_refused_naming_the_line_and_field(tmp_path: Path, text: str, error: str) -> None:
    with pytest.raises(ConfigError) as e:
        load(tmp_path, text + "\n")
    assert ":4: " in str(e.value) and error in str(e.value)
