"""The time daemon's servers, read from fixture host roots in tmp_path: chrony, ntpd/ntpsec, systemd-timesyncd."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.host import HostRoot
from agent.sensors.config_files import MAX_FILE_BYTES, MAX_FILES, MAX_FOLLOWED
from agent.sensors.ntp_daemon_servers import (
    MAX_INCLUDE_DEPTH,
    DaemonServers,
    find_daemon_servers,
    server_name,
)


def write(root: Path, host_path: str, text: str | bytes) -> None:
    path = root / host_path.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(textwrap.dedent(text))


def find(root: Path) -> DaemonServers:
    return find_daemon_servers(HostRoot(root))


def test_debian_chrony_reads_its_confdir_and_sourcedirs_in_the_order_the_directives_come(tmp_path: Path) -> None:
    write(tmp_path, "/etc/chrony/chrony.conf", """\
        # Debian's default layout
        confdir /etc/chrony/conf.d
        pool 2.debian.pool.ntp.org iburst
        sourcedir /run/chrony-dhcp
        sourcedir /etc/chrony/sources.d
        keyfile /etc/chrony/chrony.keys
        """)
    write(tmp_path, "/etc/chrony/conf.d/10-site.conf", "server ntp-a.internal iburst\n")
    write(tmp_path, "/run/chrony-dhcp/eth0.sources", "server 10.0.0.2 iburst\n")
    write(tmp_path, "/etc/chrony/sources.d/aws.sources", "server 169.254.169.123 prefer iburst minpoll 4\n")
    write(tmp_path, "/etc/chrony/sources.d/notes.txt", "server not-a-sources-file\n")
    assert find(tmp_path) == DaemonServers(
        daemon="chrony",
        servers=("ntp-a.internal", "2.debian.pool.ntp.org", "10.0.0.2", "169.254.169.123"),
        files=("/etc/chrony/conf.d/10-site.conf", "/etc/chrony/chrony.conf", "/run/chrony-dhcp/eth0.sources",
               "/etc/chrony/sources.d/aws.sources"),
        read=("/etc/chrony/chrony.conf", "/etc/chrony/conf.d/10-site.conf", "/run/chrony-dhcp/eth0.sources",
              "/etc/chrony/sources.d/aws.sources"))


def test_chrony_skips_peers_refclocks_noselect_loopback_and_every_comment_style(tmp_path: Path) -> None:
    write(tmp_path, "/etc/chrony.conf", """\
        peer ntp-peer.internal
        refclock PHC /dev/ptp0 poll 3 dpoll -2
        server ntp-monitored.internal noselect
        server 127.0.0.1
        server ::1
        server localhost
        # server hash.internal
        ! server bang.internal
        ; server semicolon.internal
        % server percent.internal
          SERVER ntp-a.internal iburst
        server ntp-a.internal
        server
        """)
    found = find(tmp_path)
    assert (found.daemon, found.servers, found.notes) == ("chrony", ("ntp-a.internal",), ())


def test_chrony_keeps_the_port_option_in_the_checks_server_syntax(tmp_path: Path) -> None:
    write(tmp_path, "/etc/chrony.conf", """\
        server ntp-a.internal port 1123 iburst
        server 2001:db8::1 port 1123
        server fe80::1%eth0 iburst
        server port
        server ntp-b.internal port 0
        """)
    found = find(tmp_path)
    assert found.servers == ("ntp-a.internal:1123", "[2001:db8::1]:1123", "fe80::1%eth0", "port")
    assert found.notes == ("/etc/chrony.conf: 'ntp-b.internal' has an invalid port '0'",)


def test_debians_chrony_conf_is_read_before_the_rhel_path(tmp_path: Path) -> None:
    write(tmp_path, "/etc/chrony/chrony.conf", "server debian.internal\n")
    write(tmp_path, "/etc/chrony.conf", "server rhel.internal\n")
    assert find(tmp_path).servers == ("debian.internal",)


def test_chrony_include_globs_the_file_name_sorted_without_hidden_files(tmp_path: Path) -> None:
    write(tmp_path, "/etc/chrony.conf", "include /etc/chrony.d/*.conf\ninclude /etc/chrony.d/extra\n")
    write(tmp_path, "/etc/chrony.d/b.conf", "server ntp-b.internal\n")
    write(tmp_path, "/etc/chrony.d/a.conf", "pool ntp-a.internal\n")
    write(tmp_path, "/etc/chrony.d/.hidden.conf", "server hidden.internal\n")
    write(tmp_path, "/etc/chrony.d/c.txt", "server txt.internal\n")
    write(tmp_path, "/etc/chrony.d/extra", "server extra.internal\n")
    assert find(tmp_path).servers == ("ntp-a.internal", "ntp-b.internal", "extra.internal")


def test_a_file_name_in_an_earlier_confdir_hides_the_same_name_in_a_later_one(tmp_path: Path) -> None:
    write(tmp_path, "/etc/chrony.conf", "confdir /etc/chrony/conf.d /usr/lib/chrony/conf.d\n")
    write(tmp_path, "/etc/chrony/conf.d/50-vendor.conf", "server site.internal\n")
    write(tmp_path, "/usr/lib/chrony/conf.d/50-vendor.conf", "server vendor.internal\n")
    write(tmp_path, "/usr/lib/chrony/conf.d/10-early.conf", "server early.internal\n")
    assert find(tmp_path).servers == ("early.internal", "site.internal")


def test_a_sources_file_names_servers_and_nothing_else(tmp_path: Path) -> None:
    write(tmp_path, "/etc/chrony.conf", "sourcedir /etc/chrony/sources.d\n")
    write(tmp_path, "/etc/chrony/sources.d/a.sources", "include /etc/extra.conf\nserver ntp-a.internal\n")
    write(tmp_path, "/etc/extra.conf", "server extra.internal\n")
    assert find(tmp_path).servers == ("ntp-a.internal",)


def test_relative_paths_are_taken_from_the_including_files_directory(tmp_path: Path) -> None:
    write(tmp_path, "/etc/chrony/chrony.conf", "include local.conf\n")
    write(tmp_path, "/etc/chrony/local.conf", "server ntp-a.internal\n")
    write(tmp_path, "/etc/ntp.conf", "includefile ntp/extra.conf\n")
    write(tmp_path, "/etc/ntp/extra.conf", "server ntp-b.internal\n")
    assert find(tmp_path).servers == ("ntp-a.internal",)
    (tmp_path / "etc/chrony/chrony.conf").unlink()
    assert find(tmp_path).servers == ("ntp-b.internal",)


def test_ntpd_skips_reference_clocks_and_local_servers_and_follows_includefile(tmp_path: Path) -> None:
    write(tmp_path, "/etc/ntp.conf", """\
        driftfile /var/lib/ntp/ntp.drift
        server 127.127.1.0            # the undisciplined local clock
        fudge  127.127.1.0 stratum 10
        server 127.127.28.0 minpoll 4 # shared memory (gpsd)
        server 127.0.0.1
        server -4 ntp-a.internal iburst   # resolved as IPv4 only
        pool 0.debian.pool.ntp.org iburst
        peer ntp-peer.internal
        server ntp-monitored.internal noselect
        restrict default kod nomodify
        includefile /etc/ntp/site.conf
        """)
    write(tmp_path, "/etc/ntp/site.conf", "server -6 2001:db8::123\nserver ntp-a.internal\n")
    assert find(tmp_path) == DaemonServers(
        daemon="ntpd", servers=("ntp-a.internal", "0.debian.pool.ntp.org", "2001:db8::123"),
        files=("/etc/ntp.conf", "/etc/ntp/site.conf"), read=("/etc/ntp.conf", "/etc/ntp/site.conf"))


def test_ntpsecs_file_is_read_before_a_leftover_etc_ntp_conf(tmp_path: Path) -> None:
    write(tmp_path, "/etc/ntpsec/ntp.conf", "pool ntpsec.internal\n")
    write(tmp_path, "/etc/ntp.conf", "server leftover.internal\n")
    assert find(tmp_path).servers == ("ntpsec.internal",)


def test_timesyncd_assignments_add_across_drop_ins_sorted_by_file_name(tmp_path: Path) -> None:
    write(tmp_path, "/etc/systemd/timesyncd.conf", "[Time]\nNTP=ntp-a.internal ntp-b.internal\n#NTP=commented\n")
    write(tmp_path, "/usr/lib/systemd/timesyncd.conf.d/10-vendor.conf", "[Time]\nNTP=vendor.internal\n")
    write(tmp_path, "/etc/systemd/timesyncd.conf.d/10-vendor.conf", "[Time]\nNTP=site.internal\n")
    write(tmp_path, "/run/systemd/timesyncd.conf.d/05-dhcp.conf", "[Time]\nNTP = ntp-b.internal dhcp.internal\n")
    write(tmp_path, "/etc/systemd/timesyncd.conf.d/20-other.conf", "[Other]\nNTP=other-section.internal\n")
    assert find(tmp_path) == DaemonServers(
        daemon="systemd-timesyncd",
        servers=("ntp-a.internal", "ntp-b.internal", "dhcp.internal", "site.internal"),
        files=("/etc/systemd/timesyncd.conf", "/run/systemd/timesyncd.conf.d/05-dhcp.conf",
               "/etc/systemd/timesyncd.conf.d/10-vendor.conf"),
        read=("/etc/systemd/timesyncd.conf", "/run/systemd/timesyncd.conf.d/05-dhcp.conf",
              "/etc/systemd/timesyncd.conf.d/10-vendor.conf", "/etc/systemd/timesyncd.conf.d/20-other.conf"))


def test_an_empty_timesyncd_assignment_clears_the_servers_before_it(tmp_path: Path) -> None:
    write(tmp_path, "/etc/systemd/timesyncd.conf", "[Time]\nNTP=ntp-a.internal\n")
    write(tmp_path, "/etc/systemd/timesyncd.conf.d/50-site.conf", "[Time]\nNTP=\nNTP=ntp-b.internal\n")
    assert find(tmp_path).servers == ("ntp-b.internal",)


@pytest.mark.parametrize(("dropin", "servers"), [
    pytest.param("", ("fallback-1.internal", "fallback-2.internal"), id="no-ntp-servers"),
    pytest.param("NTP=ntp-a.internal\n", ("ntp-a.internal",), id="ntp-servers-win"),
    pytest.param("NTP=ntp-a.internal\nNTP=\n", ("fallback-1.internal", "fallback-2.internal"), id="ntp-cleared"),
    pytest.param("FallbackNTP=\n", (), id="fallback-cleared"),
])
def test_timesyncd_fallback_servers_count_only_when_no_ntp_server_is_left(
        tmp_path: Path, dropin: str, servers: tuple[str, ...]) -> None:
    write(tmp_path, "/usr/lib/systemd/timesyncd.conf", "[Time]\nFallbackNTP=fallback-1.internal fallback-2.internal\n")
    write(tmp_path, "/etc/systemd/timesyncd.conf.d/50-site.conf", f"[Time]\n{dropin}")
    assert find(tmp_path).servers == servers


def test_the_shipped_all_commented_timesyncd_conf_names_no_server(tmp_path: Path) -> None:
    write(tmp_path, "/etc/systemd/timesyncd.conf", "[Time]\n#NTP=\n#FallbackNTP=ntp.ubuntu.com\n;NTP=x\n")
    assert find(tmp_path) == DaemonServers(read=("/etc/systemd/timesyncd.conf",))


def test_chrony_wins_over_ntpd_and_ntpd_over_timesyncd(tmp_path: Path) -> None:
    write(tmp_path, "/etc/systemd/timesyncd.conf", "[Time]\nNTP=timesyncd.internal\n")
    assert find(tmp_path).daemon == "systemd-timesyncd"
    write(tmp_path, "/etc/ntp.conf", "server ntpd.internal\n")
    assert find(tmp_path).daemon == "ntpd"
    write(tmp_path, "/etc/chrony.conf", "server chrony.internal\n")
    assert (find(tmp_path).daemon, find(tmp_path).servers) == ("chrony", ("chrony.internal",))


def test_a_daemon_whose_files_name_no_server_gives_way_to_the_next(tmp_path: Path) -> None:
    write(tmp_path, "/etc/chrony.conf", "refclock PHC /dev/ptp_hyperv poll 3 dpoll -2\n")
    write(tmp_path, "/etc/ntp.conf", "server ntpd.internal\n")
    found = find(tmp_path)
    assert (found.daemon, found.read) == ("ntpd", ("/etc/chrony.conf", "/etc/ntp.conf"))


def test_a_host_without_any_time_daemon_file_finds_nothing(tmp_path: Path) -> None:
    assert find(tmp_path) == DaemonServers()
    assert find(tmp_path / "no-such-root") == DaemonServers()


def test_the_same_server_in_two_files_is_kept_once_where_it_came_first(tmp_path: Path) -> None:
    write(tmp_path, "/etc/chrony.conf", "server ntp-a.internal\nconfdir /etc/chrony.d\npool ntp-c.internal\n")
    write(tmp_path, "/etc/chrony.d/x.conf", "server ntp-b.internal\nserver ntp-a.internal\nserver ntp-c.internal\n")
    found = find(tmp_path)
    assert found.servers == ("ntp-a.internal", "ntp-b.internal", "ntp-c.internal")
    assert found.files == ("/etc/chrony.conf", "/etc/chrony.d/x.conf")


@pytest.mark.parametrize(("line", "note"), [
    pytest.param("server bad!name", "'bad!name' is no host name or address", id="punctuation"),
    pytest.param("server a:b", "'a:b' is no host name or address", id="one-colon"),
    pytest.param("server [2001:db8::1]", "'[2001:db8::1]' is no host name or address", id="brackets"),
    pytest.param("server ntp-a.internal port 65536", "'ntp-a.internal' has an invalid port '65536'", id="port"),
    pytest.param("server caf\N{LATIN SMALL LETTER E WITH ACUTE}.internal", "is no host name", id="not-ascii"),
])
def test_a_server_word_that_names_no_host_is_noted_and_the_rest_of_the_file_still_read(
        tmp_path: Path, line: str, note: str) -> None:
    write(tmp_path, "/etc/chrony.conf", f"{line}\nserver ntp-a.internal\n")
    found = find(tmp_path)
    assert found.servers == ("ntp-a.internal",)
    (only,) = found.notes
    assert only.startswith("/etc/chrony.conf: ") and note in only


def test_a_binary_file_is_skipped_with_a_note_and_the_next_daemon_is_asked(tmp_path: Path) -> None:
    write(tmp_path, "/etc/chrony.conf", b"\x7fELF\x02\x01\x01\x00server binary.internal\n")
    write(tmp_path, "/etc/ntp.conf", "server ntpd.internal\n")
    found = find(tmp_path)
    assert (found.daemon, found.servers, found.notes) == ("ntpd", ("ntpd.internal",),
                                                         ("/etc/chrony.conf: not a text file",))


def test_latin1_bytes_in_a_comment_spoil_nothing(tmp_path: Path) -> None:
    write(tmp_path, "/etc/chrony.conf", "# Zeitserver f\xfcr M\xfcnchen\nserver ntp-a.internal\n".encode("latin-1"))
    assert find(tmp_path).servers == ("ntp-a.internal",)


def test_a_huge_file_is_read_to_its_bound_and_no_further(tmp_path: Path) -> None:
    filler = "# " + "x" * 97 + "\n"  # 100 bytes a line
    text = "server early.internal\n" + filler * (MAX_FILE_BYTES // 100) + "server late.internal\n" + filler * 10_000
    write(tmp_path, "/etc/chrony.conf", text)
    found = find(tmp_path)
    assert found.servers == ("early.internal",)
    assert found.notes == ("/etc/chrony.conf: read only the first 64 KiB",)


def test_a_line_cut_at_the_bound_is_dropped_not_read_in_half(tmp_path: Path) -> None:
    write(tmp_path, "/etc/chrony.conf", "#" * (MAX_FILE_BYTES - 10) + "\nserver ntp-abcdefghijk.internal\n")
    found = find(tmp_path)
    assert (found.servers, len(found.notes)) == ((), 1)


def test_a_fifo_or_directory_at_a_config_path_is_skipped_without_blocking(tmp_path: Path) -> None:
    (tmp_path / "etc/chrony").mkdir(parents=True)
    os.mkfifo(tmp_path / "etc/chrony/chrony.conf")  # opened for reading without O_NONBLOCK this would hang
    (tmp_path / "etc/chrony.conf").mkdir()
    write(tmp_path, "/etc/ntp.conf", "server ntpd.internal\n")
    found = find(tmp_path)
    assert found.servers == ("ntpd.internal",)
    assert found.notes == ("/etc/chrony/chrony.conf: not a regular file", "/etc/chrony.conf: Is a directory")


def test_an_absolute_symlink_is_followed_under_the_host_root(tmp_path: Path) -> None:
    write(tmp_path, "/usr/share/chrony/chrony.conf", "server linked.internal\n")
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/chrony.conf").symlink_to("/usr/share/chrony/chrony.conf")  # on the host, not in the agent
    assert find(tmp_path).servers == ("linked.internal",)


def test_a_symlink_loop_is_noted_and_never_followed_for_ever(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/chrony.conf").symlink_to("/etc/ntp.conf")
    (tmp_path / "etc/ntp.conf").symlink_to("chrony.conf")
    found = find(tmp_path)
    assert found.servers == ()
    assert found.notes == ("/etc/chrony.conf: Too many levels of symbolic links",
                           "/etc/ntp.conf: Too many levels of symbolic links")


def test_an_include_loop_reads_each_file_once(tmp_path: Path) -> None:
    write(tmp_path, "/etc/chrony.conf", "include /etc/chrony.d/a.conf\nserver main.internal\n")
    write(tmp_path, "/etc/chrony.d/a.conf", "server a.internal\ninclude /etc/chrony.d/b.conf\n")
    write(tmp_path, "/etc/chrony.d/b.conf",
          "server b.internal\ninclude /etc/chrony.d/a.conf\ninclude /etc/chrony.conf\n")
    found = find(tmp_path)
    assert found.servers == ("a.internal", "b.internal", "main.internal")
    assert found.read == ("/etc/chrony.conf", "/etc/chrony.d/a.conf", "/etc/chrony.d/b.conf")


@pytest.mark.parametrize("daemon", ["chrony", "ntpd"])
def test_includes_nest_no_deeper_than_the_bound(tmp_path: Path, daemon: str) -> None:
    conf, include = ("/etc/chrony.conf", "include") if daemon == "chrony" else ("/etc/ntp.conf", "includefile")
    chain = [conf] + [f"/etc/nested/{i}.conf" for i in range(1, MAX_INCLUDE_DEPTH + 3)]
    for i, path in enumerate(chain):
        write(tmp_path, path, f"server level-{i}.internal\n{include} {chain[i + 1] if i + 1 < len(chain) else ''}\n")
    found = find(tmp_path)
    assert found.servers == tuple(f"level-{i}.internal" for i in range(MAX_INCLUDE_DEPTH + 1))
    assert found.notes == (f"{chain[MAX_INCLUDE_DEPTH]}: includes nested deeper than {MAX_INCLUDE_DEPTH} levels "
                           "not read",)


def test_no_more_than_the_file_bound_is_read(tmp_path: Path) -> None:
    write(tmp_path, "/etc/chrony.conf", "confdir /etc/chrony.d\n")
    for i in range(MAX_FILES + 8):
        write(tmp_path, f"/etc/chrony.d/{i:03}.conf", f"server ntp-{i:03}.internal\n")
    found = find(tmp_path)
    assert len(found.read) == MAX_FILES
    assert found.servers[-1] == f"ntp-{MAX_FILES - 2:03}.internal"  # the main file is one of the bound
    assert found.notes == (f"/etc/chrony.d/{MAX_FILES - 1:03}.conf and later files not read: {MAX_FILES} files read "
                           "already",)


def test_wildcards_in_an_include_directory_are_noted_not_followed(tmp_path: Path) -> None:
    write(tmp_path, "/etc/chrony.conf", "include /etc/*/x.conf\nserver ntp-a.internal\n")
    write(tmp_path, "/etc/a/x.conf", "server hidden.internal\n")
    found = find(tmp_path)
    assert (found.servers, found.notes) == (("ntp-a.internal",),
                                            ("/etc/*/x.conf: wildcards in a directory name are not followed",))


@pytest.fixture
def unreadable(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[str]]:
    """Directory names whose listing fails with EACCES (tests run as root, where chmod 000 would not stop it)."""
    names: set[str] = set()
    scandir = os.scandir

    def refusing(path: os.PathLike[str]) -> object:
        if Path(path).name in names:
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)
    yield names


def test_an_unreadable_or_wrong_directory_is_noted_and_the_other_files_still_read(
        tmp_path: Path, unreadable: set[str]) -> None:
    write(tmp_path, "/etc/chrony/chrony.conf",
          "confdir /etc/chrony/conf.d\nsourcedir /etc/chrony/sources.d /etc/chrony/file\nserver ntp-a.internal\n")
    write(tmp_path, "/etc/chrony/conf.d/a.conf", "server ntp-b.internal\n")
    write(tmp_path, "/etc/chrony/file", "not a directory\n")
    unreadable.add("conf.d")
    found = find(tmp_path)
    assert found.servers == ("ntp-a.internal",)
    assert found.notes == ("/etc/chrony/conf.d: Permission denied", "/etc/chrony/file: Not a directory")


@pytest.mark.parametrize(("host", "port", "name"), [
    pytest.param("ntp-a.internal", None, "ntp-a.internal", id="host-name"),
    pytest.param("192.0.2.1", "1123", "192.0.2.1:1123", id="ipv4-and-port"),
    pytest.param("2001:db8::1", None, "2001:db8::1", id="ipv6"),
    pytest.param("2001:db8::1", "123", "[2001:db8::1]:123", id="ipv6-and-port"),
    pytest.param("127.127.1.0", None, None, id="ntpd-refclock"),
    pytest.param("127.0.0.53", None, None, id="ipv4-loopback"),
    pytest.param("::1", None, None, id="ipv6-loopback"),
    pytest.param("LocalHost", None, None, id="localhost"),
    pytest.param("localhost-ntp.internal", None, "localhost-ntp.internal", id="only-named-like-localhost"),
])
def test_server_names_take_the_checks_syntax_and_loopback_is_none(host: str, port: str | None,
                                                                  name: str | None) -> None:
    assert server_name(host, port) == name


def test_every_spelling_of_the_node_itself_is_left_out_of_a_daemons_servers(tmp_path: Path) -> None:
    write(tmp_path, "/etc/chrony.conf", """\
        server 0x7f.1
        server 2130706433
        pool 127.1 iburst
        server 0177.0.0.1
        server ::ffff:127.0.0.1
        server localhost.
        server ntp.localhost
        server 0.0.0.0 port 1123
        server 128.0.0.1
        server 0x80.1
        server ntp.example.org
        """)
    assert find(tmp_path).servers == ("128.0.0.1", "0x80.1", "ntp.example.org")


def hostile_confdir_line() -> str:
    return "confdir" + " d" * ((MAX_FILE_BYTES - 100) // 2) + "\n"  # one line just under the byte bound


@pytest.mark.parametrize(("files", "refused"), [
    pytest.param({"/etc/chrony.conf": hostile_confdir_line()}, "/etc/chrony.conf:1", id="confdir-d-d-d"),
    pytest.param({"/etc/chrony.conf": "include /etc/inc/*.conf\n",
                  **{f"/etc/inc/{i:02}.conf": hostile_confdir_line() for i in range(31)}},
                 "/etc/inc/00.conf:1", id="confdir-d-d-d-in-31-included-files"),
    pytest.param({"/etc/chrony.conf": "include d/*.conf\n" * 3800}, "/etc/chrony.conf:65", id="include-repeated"),
    pytest.param({"/etc/chrony.conf": "confdir " + " ".join(f"a{i}" for i in range(10_000)) + "\n"},
                 "/etc/chrony.conf:1", id="confdir-of-distinct-directories"),
    pytest.param({"/etc/ntp.conf": "".join(f"includefile /etc/missing/{i}.conf\n" for i in range(3000))},
                 "/etc/ntp.conf:65", id="includefile-repeated"),
])
def test_a_config_asking_for_unbounded_work_is_refused_naming_the_line_and_the_bound(
        tmp_path: Path, files: dict[str, str], refused: str) -> None:
    """The issue's inputs: before the work bounds, 16 s to minutes of listing the same directory again and again in
    an executor thread nothing could stop."""
    for i in range(1000):
        write(tmp_path, f"/etc/d/e{i:04}", "")
    for path, text in files.items():
        write(tmp_path, path, text)
    found = find(tmp_path)
    assert (found.servers, found.refused) == ((), f"{refused}: more than {MAX_FOLLOWED} includes and directories to "
                                                  "follow in one read")


def test_a_refused_read_names_no_server_even_those_found_before(tmp_path: Path) -> None:
    write(tmp_path, "/etc/chrony.conf", "server ntp-a.internal\n" + "include /etc/x.conf\n" * (MAX_FOLLOWED + 1))
    write(tmp_path, "/etc/ntp.conf", "server ntpd.internal\n")
    found = find(tmp_path)
    assert (found.daemon, found.servers, found.read) == ("", (), ("/etc/chrony.conf",))
    assert found.refused.startswith(f"/etc/chrony.conf:{MAX_FOLLOWED + 2}: more than")
