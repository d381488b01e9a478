"""The two kernel answers that spare the firewall check its dumps: the nf_tables generation over netlink (parsed from
the bytes a 6.x kernel sent, and read from this kernel in a network namespace of the test's own, where a rule added
moves it) and the legacy backend's table list."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agent.sensors import ruleset_versions
from agent.sensors.ruleset_versions import legacy_tables_present, parse_generation

# NFT_MSG_NEWGEN as this machine's kernel answered GETGEN: generation 1, then the process id and name of the last
# committer ("python3").
NEWGEN = bytes.fromhex("300000000f0a000001000000161d000000000001080001000000000108000200"
                       "00001d160c000300707974686f6e3300")
# NLMSG_ERROR, EPERM, as the same kernel answered root without CAP_NET_ADMIN.
REFUSED = bytes.fromhex("280000000200000001000000c4270000ffffffff14000000100a0100010000000000000000000000")


def test_a_newgen_answer_gives_its_generation() -> None:
    assert parse_generation(NEWGEN) == 1
    assert parse_generation(NEWGEN[:20] + bytes.fromhex("0800010000012c0b") + NEWGEN[28:]) == 0x12C0B


@pytest.mark.parametrize("answer", [
    b"", NEWGEN[:19], REFUSED,
    NEWGEN[:8] + b"\x02\x00\x00\x00" + NEWGEN[12:],  # another request's answer
    b"\xff\x00\x00\x00" + NEWGEN[4:],  # longer than what came
    NEWGEN[:20] + b"\x02\x00\x01\x00" + NEWGEN[24:],  # an attribute shorter than its own header
    NEWGEN[:20] + b"\x06\x00\x01\x00" + NEWGEN[24:],  # the generation not 4 bytes
    NEWGEN[:20] + b"\x40\x00\x02\x00" + NEWGEN[24:],  # an attribute past the message's end
    NEWGEN[:24],  # no attributes
], ids=["empty", "short", "refused", "other-sequence", "overlong", "tiny-attribute", "odd-size", "past-end", "bare"])
def test_any_other_answer_is_no_generation(answer: bytes) -> None:
    assert parse_generation(answer) is None


def test_the_legacy_table_list_says_whether_a_table_exists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "v4").write_text("filter\nnat\n")
    (tmp_path / "v6").write_text("")
    monkeypatch.setattr(ruleset_versions, "LEGACY_TABLES", {"iptables-legacy-save": str(tmp_path / "v4"),
                                                            "ip6tables-legacy-save": str(tmp_path / "v6"),
                                                            "x": str(tmp_path / "missing"), "y": str(tmp_path)})
    assert [legacy_tables_present(t) for t in ("iptables-legacy-save", "ip6tables-legacy-save", "x", "y")] == [
        True, False, False, None]
    assert legacy_tables_present("iptables-nft-save") is None


READ_IN_A_NAMESPACE = textwrap.dedent("""
    import json, subprocess
    from agent.sensors.ruleset_versions import legacy_tables_present, nft_generation
    seen = [nft_generation(), legacy_tables_present("iptables-legacy-save")]
    subprocess.run(["iptables-nft", "-A", "INPUT", "-s", "192.0.2.1", "-j", "ACCEPT"], check=True)
    seen.append(nft_generation())
    seen.append(nft_generation())
    subprocess.run(["iptables-legacy", "-A", "INPUT", "-s", "192.0.2.1", "-j", "ACCEPT"], check=True)
    seen += [nft_generation(), legacy_tables_present("iptables-legacy-save")]
    print(json.dumps(seen))
""")


def test_this_kernel_moves_the_generation_on_an_nf_tables_change_only() -> None:
    missing = [t for t in ("unshare", "iptables-nft", "iptables-legacy") if shutil.which(t) is None]
    assert not missing, f"{missing} not installed (Debian's iptables and util-linux): this test needs them"
    done = subprocess.run(["unshare", "--net", sys.executable, "-c", READ_IN_A_NAMESPACE], check=False,
                          capture_output=True, text=True, timeout=60, cwd=Path(__file__).resolve().parents[4])
    assert done.returncode == 0, done.stderr
    first, legacy_before, changed, again, after_legacy, legacy_after = json.loads(done.stdout)
    assert isinstance(first, int)
    assert legacy_before is False
    assert changed > first
    assert again == changed  # reading is no change
    assert after_legacy == changed  # a legacy rule is not an nf_tables commit
    assert legacy_after is True
