"""`--listen`: what both programs accept, and a usage error (exit 2, no traceback) for anything else."""

from __future__ import annotations

import argparse
import ipaddress
import re
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent import cli as agent_cli
from nodemedic_common.listen import listen_flag, split_listen
from remediator import cli as remediator_cli
from tests.unit.fuzz.strategies import FUZZ

BAD = ["8081", "host:", "host:http", ":70000", ":99999", "nonsense:port", "[::1", "[::1:80", "[nothost]:80",
       "::1:80", "a b:80", ":\uff18\uff10", ":-1", "a:b:c"]


@pytest.mark.parametrize(("listen", "expected"), [
    (":8081", ("0.0.0.0", 8081)), ("127.0.0.1:9101", ("127.0.0.1", 9101)), ("[::1]:9101", ("::1", 9101)),
    ("localhost:0", ("localhost", 0)), (":65535", ("0.0.0.0", 65535)),
])
def test_listen_addresses(listen: str, expected: tuple[str, int]) -> None:
    assert split_listen(listen) == expected


@pytest.mark.parametrize("listen", BAD)
def test_a_bad_listen_address_is_refused_by_name(listen: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"--listen {listen!r}")):
        split_listen(listen)


@pytest.mark.parametrize("main", [
    lambda v: agent_cli.main(["run", "--node-name", "n", "--listen", v]),
    lambda v: remediator_cli.main(["run", "--policy", "p.yaml", "--listen", v]),
], ids=["agent", "remediator"])
@pytest.mark.parametrize("listen", BAD)
def test_a_bad_listen_flag_is_a_usage_error_before_anything_starts(main: Callable[[str], int], listen: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(listen)
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "argument --listen: must be HOST:PORT" in err and "Traceback" not in err


@FUZZ
@given(text=st.text(max_size=30) | st.from_regex(r"(\[[0-9a-f:]*\]|[a-z0-9.:]*):[0-9]{0,7}", fullmatch=True))
def test_any_listen_text_is_accepted_with_a_port_in_range_or_refused_with_a_usage_error(text: str) -> None:
    try:
        assert listen_flag(text) == text
    except argparse.ArgumentTypeError:
        return
    if text:
        host, port = split_listen(text)
        assert 0 <= port <= 65535
        if ":" in host:  # only a bracketed IPv6 address may carry colons
            ipaddress.IPv6Address(host)
