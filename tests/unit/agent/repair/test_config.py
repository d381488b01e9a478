"""The `repair:` section of the agent config: defaults (the shipped file says the same), overrides, and every
mistake named with file, line and field."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from agent.checks import BUILTIN
from agent.config import load_config, parse_config
from agent.repair.config import HOST_PREFIX, RepairConfig
from nodemedic_common.config_errors import ConfigError

ROOT = Path(__file__).resolve().parents[4]


def repair(text: str) -> RepairConfig:
    return parse_config(text, source="agent.yaml", registry={}).repair


def test_with_no_repair_section_repair_is_on_and_runs_systemctl_in_the_hosts_namespaces() -> None:
    cfg = repair("")
    assert cfg == RepairConfig() and cfg.enabled
    assert cfg.restart_command("kubelet") == (*HOST_PREFIX, "systemctl", "restart", "kubelet")
    assert cfg.restart_command("crio") == (*HOST_PREFIX, "systemctl", "restart", "crio")
    assert cfg.reboot_command() == ("nsenter", "--target", "1", "--mount", "--uts", "--ipc", "--net", "--pid", "--",
                                    "systemctl", "reboot")
    assert (cfg.command_timeout, cfg.max_request_age) == (dt.timedelta(minutes=2), dt.timedelta(minutes=10))
    assert cfg.boot_id_path == "/proc/sys/kernel/random/boot_id"


def test_the_shipped_config_says_what_the_code_does_without_one() -> None:
    assert load_config(ROOT / "deploy" / "agent" / "default.yaml", registry=BUILTIN).repair == RepairConfig()


def test_given_commands_replace_the_defaults_one_service_at_a_time_and_null_refuses() -> None:
    cfg = repair("repair:\n  hostCommandPrefix: []\n  commands:\n    restart:\n      kubelet: [/opt/test/restart.sh, "
                 "kubelet]\n      crio: null\n    reboot: [/opt/test/reboot.sh]\n  commandTimeout: 30s\n"
                 "  maxRequestAge: 2m\n  bootIdPath: /run/test/boot_id\n")
    assert cfg.restart_command("kubelet") == ("/opt/test/restart.sh", "kubelet")
    assert cfg.restart_command("containerd") == ("systemctl", "restart", "containerd")
    assert cfg.restart_command("crio") is None
    assert cfg.reboot_command() == ("/opt/test/reboot.sh",)
    assert (cfg.command_timeout, cfg.max_request_age) == (dt.timedelta(seconds=30), dt.timedelta(minutes=2))
    assert cfg.boot_id_path == "/run/test/boot_id"
    assert repair("repair:\n  commands: {reboot: null}\n").reboot_command() is None
    assert not repair("repair: {enabled: false}\n").enabled


def test_a_number_in_a_command_is_a_word() -> None:
    assert repair("repair:\n  hostCommandPrefix: [nsenter, --target, 1, --]\n").host_command_prefix == (
        "nsenter", "--target", "1", "--")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("repair: [on]\n", "agent.yaml:1: repair: must be a mapping"),
        ("repair:\n  enable: true\n", "agent.yaml:2: repair.enable: unknown field; valid: bootIdPath, commandTimeout"),
        ("repair:\n  enabled: yes please\n", "agent.yaml:2: repair.enabled: must be true or false"),
        ("repair:\n  commands:\n    restart:\n      docker: [systemctl, restart, docker]\n",
         "agent.yaml:4: repair.commands.restart.docker: unknown service; valid: kubelet, containerd, crio"),
        ("repair:\n  commands:\n    restart:\n      kubelet: []\n",
         "agent.yaml:4: repair.commands.restart.kubelet: must name a command"),
        ("repair:\n  commands:\n    reboot: []\n", "agent.yaml:3: repair.commands.reboot: must name a command"),
        ("repair:\n  commands:\n    reboot: systemctl reboot\n",
         "agent.yaml:3: repair.commands.reboot: must be a list of words (no shell)"),
        ("repair:\n  commands:\n    reboot: [bin/reboot.sh]\n",
         "agent.yaml:3: repair.commands.reboot: [0]: 'bin/reboot.sh' is a relative path"),
        ("repair:\n  hostCommandPrefix: [./nsenter, --]\n",
         "agent.yaml:2: repair.hostCommandPrefix: [0]: './nsenter' is a relative path"),
        ("repair:\n  commands:\n    restart:\n      kubelet: [systemctl, '']\n",
         "agent.yaml:4: repair.commands.restart.kubelet: [1]: must be a non-empty string"),
        ("repair:\n  commands:\n    restart: [kubelet]\n",
         "agent.yaml:3: repair.commands.restart: must be a mapping of service"),
        ("repair:\n  commands:\n    stop: [systemctl, stop]\n",
         "agent.yaml:3: repair.commands.stop: unknown field; valid: reboot, restart"),
        ("repair:\n  commandTimeout: 2\n", "agent.yaml:2: repair.commandTimeout: must be at least 5s"),
        ("repair:\n  commandTimeout: soon\n", "agent.yaml:2: repair.commandTimeout: not a duration"),
        ("repair:\n  maxRequestAge: 30s\n", "agent.yaml:2: repair.maxRequestAge: must be at least 1m"),
        ("repair:\n  bootIdPath: boot_id\n", "agent.yaml:2: repair.bootIdPath: must be an absolute path on the host"),
    ],
    ids=["not-a-mapping", "unknown-field", "enabled-not-bool", "unknown-service", "empty-restart", "empty-reboot",
         "shell-string", "relative-command", "relative-prefix", "empty-word", "restart-list", "unknown-command",
         "timeout-under-floor", "timeout-not-duration", "age-under-floor", "relative-boot-id"],
)
def test_mistakes_name_the_file_line_and_field(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(text, source="agent.yaml", registry={})
    assert any(expected in e for e in err.value.errors), err.value.errors


def test_every_mistake_is_reported_at_once() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config("repair:\n  enabled: 1\n  commandTimeout: 0s\n  commands: {reboot: []}\n", source="a.yaml",
                     registry={})
    assert [e.split(": ")[0:2] for e in err.value.errors] == [["a.yaml:2", "repair.enabled"],
                                                             ["a.yaml:3", "repair.commandTimeout"],
                                                             ["a.yaml:4", "repair.commands.reboot"]]
