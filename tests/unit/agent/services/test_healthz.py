"""The healthz probe's HTTP/1.1 against a scripted server on 127.0.0.1: what it keeps, what it gives up, what it says.

(Its debounce and the kubelet's and kube-proxy's use of it: test_kubelet.py, test_kube_proxy.py.)
"""

from __future__ import annotations

import asyncio
import datetime as dt
import shutil
import ssl
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agent.bounds import bounded, field_problems
from agent.model import CheckTiming
from agent.services.healthz import HEALTHZ_URL, RECHECK_INTERVAL, REQUEST_TIMEOUT, HealthzProbe, ProbeTiming
from agent.services.http_answer import MAX_LINE

TIMEOUT = dt.timedelta(seconds=2)
SECOND = dt.timedelta(seconds=1)
Answer = Callable[[int], bytes]  # the request's number (from 0) -> the bytes to send back


class Server:
    """Answers each request with `answer(n)`; closes the connection after it when `close_after(n)`. Counts the
    connections and the requests."""

    def __init__(self, answer: Answer, close_after: Callable[[int], bool] = lambda n: False, *,
                 one_per_connection: bool = False) -> None:
        self.answer, self.close_after = answer, close_after
        self.one_per_connection = one_per_connection  # a second request on a connection: closed unanswered
        self.connections = 0
        self.requests: list[bytes] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        answered = 0
        try:
            while True:
                request = await reader.readuntil(b"\r\n\r\n")
                if self.one_per_connection and answered:
                    break
                answered += 1
                n = len(self.requests)
                self.requests.append(request)
                writer.write(self.answer(n))
                await writer.drain()
                if self.close_after(n):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def probes(server: Server, count: int, *, url_path: str = "/healthz", between: float = 0.0,
           ssl_context: ssl.SSLContext | None = None) -> list[str | None]:
    async def main() -> list[str | None]:
        listening = await asyncio.start_server(server.handle, "127.0.0.1", 0, ssl=ssl_context)
        port = listening.sockets[0].getsockname()[1]
        scheme = "https" if ssl_context else "http"
        probe = HealthzProbe("Kubelet", f"{scheme}://127.0.0.1:{port}{url_path}", request_timeout=TIMEOUT,
                             failure_threshold=3, recheck_interval=5 * SECOND)
        results = []
        try:
            for _ in range(count):
                results.append(await probe.probe())
                await asyncio.sleep(between)
        finally:
            await probe.close()
            listening.close()
            await listening.wait_closed()
        return results

    return asyncio.run(main())


def answer(status: str = "200 OK", body: bytes = b"ok", headers: Sequence[str] = ()) -> bytes:
    lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def test_the_request_is_one_plain_get_of_the_path_and_query() -> None:
    server = Server(lambda n: answer())
    assert probes(server, 1, url_path="/healthz?verbose=1") == [None]
    (request,) = server.requests
    assert request.startswith(b"GET /healthz?verbose=1 HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"User-Agent: nodemedic-agent\r\n" in request


def test_a_kept_connection_serves_every_probe() -> None:
    server = Server(lambda n: answer() if n % 2 == 0 else answer("500 Internal Server Error", b"[-]ping failed"))
    assert probes(server, 4) == [None, "HTTP 500 '[-]ping failed'", None, "HTTP 500 '[-]ping failed'"]
    assert server.connections == 1


def test_an_answer_with_connection_close_is_honoured_and_the_next_probe_connects_again() -> None:
    server = Server(lambda n: answer(headers=["Connection: close"]), close_after=lambda n: True)
    assert probes(server, 3) == [None, None, None]
    assert server.connections == 3


def test_a_connection_the_server_closed_while_idle_is_replaced_without_a_failed_probe() -> None:
    server = Server(lambda n: answer(), close_after=lambda n: True)  # no Connection: close, closed all the same
    assert probes(server, 3, between=0.05) == [None, None, None]
    assert server.connections == 3


def test_a_connection_closed_just_as_the_probe_asks_is_tried_once_more_on_a_new_one() -> None:
    server = Server(lambda n: answer(), one_per_connection=True)  # the close comes only after the probe asked
    assert probes(server, 3) == [None, None, None]
    assert (server.connections, len(server.requests)) == (3, 3)


def test_a_chunked_failing_answer_is_quoted_from_its_first_chunk_and_its_connection_given_up() -> None:
    chunked = (b"HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"e\r\n[-]etcd failed\r\n0\r\n\r\n")
    server = Server(lambda n: chunked)
    assert probes(server, 2) == ["HTTP 503 '[-]etcd failed'"] * 2
    assert server.connections == 2


def test_a_healthy_answer_of_unknown_length_is_healthy_without_reading_to_the_end() -> None:
    server = Server(lambda n: b"HTTP/1.0 200 OK\r\n\r\nok")  # the body runs until the server closes
    assert probes(server, 2) == [None, None]
    assert server.connections == 2


@pytest.mark.parametrize(("reply", "expected"), [
    (b"SSH-2.0-OpenSSH_9.6\r\n", "ProbeError: the answer is not HTTP/1: b'SSH-2.0-OpenSSH_9.6\\r\\n'"),
    (b"HTTP/1.1 2x0 OK\r\n\r\n", "ProbeError: the answer is not HTTP/1: b'HTTP/1.1 2x0 OK\\r\\n'"),
    (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
     "ProbeError: the answer has a header line without a colon: b'no colon here\\r\\n'"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: lots\r\n\r\n",
     "ProbeError: the answer has a Content-Length that is not a number: 'lots'"),
    (b"HTTP/1.1 200 OK\r\nX: " + b"a" * (MAX_LINE + 10) + b"\r\n\r\n",
     f"ProbeError: the answer has a line longer than {MAX_LINE} bytes"),
    (b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 101 + b"\r\n", "ProbeError: the answer has more than 100 header lines"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nok", "the connection closed before the whole answer came"),
    (b"", "the connection closed before the whole answer came"),
], ids=["not-http", "bad-status", "bad-header", "bad-length", "long-line", "many-headers", "short-body", "nothing"])
def test_an_answer_the_probe_cannot_read_is_a_failed_probe_that_says_why(reply: bytes, expected: str) -> None:
    server = Server(lambda n: reply, close_after=lambda n: True)
    assert probes(server, 1) == [expected]


@pytest.mark.parametrize(("reply", "expected"), [
    (b"HTTP/1.1 \xb200 OK\r\nContent-Length: 2\r\n\r\nok",
     "ProbeError: the answer is not HTTP/1: b'HTTP/1.1 \\xb200 OK\\r\\n'"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\nok",
     "ProbeError: the answer has a Content-Length that is not a number: '\u00b2'"),
    (b"HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n",
     "ProbeError: the answer has a chunk size that is not a number: b'-5\\r\\n'"),
], ids=["status-superscript-two", "length-superscript-two", "chunk-size-negative"])
def test_a_number_that_is_not_ascii_digits_is_a_failed_probe_not_a_crash(reply: bytes, expected: str) -> None:
    assert probes(Server(lambda n: reply), 2) == [expected] * 2


def test_answers_sent_ahead_are_never_read_as_the_next_probes_answers() -> None:
    sick = answer("500 Internal Server Error", b"sick")
    server = Server(lambda n: answer() * 6 if n == 0 else sick)  # five answers nobody asked for, then the truth
    results = probes(server, 3)
    assert results[0] is not None and results[0].startswith("ProbeError: the server sent 200 byte(s) past its answer")
    assert results[1:] == ["HTTP 500 'sick'"] * 2
    assert len(server.requests) == 3


@pytest.mark.parametrize("interim", [b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 199 Hm\r\nX: y\r\n\r\n"],
                         ids=["100-continue", "199"])
def test_interim_answers_are_passed_over_and_each_probe_reads_its_own_answer(interim: bytes) -> None:
    sick = answer("500 Internal Server Error", b"sick")
    server = Server(lambda n: interim + (answer() if n % 2 == 0 else sick))
    assert probes(server, 4) == [None, "HTTP 500 'sick'", None, "HTTP 500 'sick'"]
    assert server.connections == 1


@pytest.mark.parametrize(("reply", "surplus"), [
    (b"HTTP/1.1 204 No Content\r\n\r\n" + answer(), len(answer())),
    (answer() + b"xyz", 3),
], ids=["204-then-200", "three-bytes"])
def test_bytes_past_an_answer_fail_the_probe_and_drop_its_connection(reply: bytes, surplus: int) -> None:
    server = Server(lambda n: reply)
    results = probes(server, 3)
    assert all(r is not None and r.startswith(f"ProbeError: the server sent {surplus} byte(s) past its answer")
               for r in results), results
    assert server.connections == 3


def test_an_endpoint_that_never_answers_fails_within_the_request_timeout() -> None:
    async def main() -> str | None:
        async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.read()  # holds the connection, says nothing

        listening = await asyncio.start_server(hang, "127.0.0.1", 0)
        port = listening.sockets[0].getsockname()[1]
        probe = HealthzProbe("Kubelet", f"http://127.0.0.1:{port}/healthz",
                             request_timeout=dt.timedelta(milliseconds=200), failure_threshold=1,
                             recheck_interval=5 * SECOND)
        try:
            return await probe.probe()
        finally:
            await probe.close()
            listening.close()

    assert asyncio.run(main()) == "no answer within 200ms"


def test_an_https_endpoint_with_a_certificate_the_system_does_not_trust_is_a_failed_probe(tmp_path: Path) -> None:
    openssl = shutil.which("openssl")
    assert openssl, "the openssl command makes this test's self-signed certificate"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-keyout", str(tmp_path / "key.pem"), "-out", str(tmp_path / "cert.pem")],
                   check=True, capture_output=True, timeout=60)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    (result,) = probes(Server(lambda n: answer()), 1, ssl_context=context)
    assert result is not None and result.startswith("SSLCertVerificationError: ")
    assert "self-signed certificate" in result


@dataclass(frozen=True)
class Probing:
    """The settings a healthz-probing check declares with this module's bounds (as kubelet and kube-proxy do)."""

    timing: CheckTiming = field(default_factory=lambda: ProbeTiming(interval=30 * SECOND, timeout=15 * SECOND))
    healthz_url: str = bounded("http://127.0.0.1:10248/healthz", HEALTHZ_URL)
    request_timeout: dt.timedelta = bounded(SECOND, REQUEST_TIMEOUT)
    recheck_interval: dt.timedelta = bounded(5 * SECOND, RECHECK_INTERVAL)


def problems(config: Probing) -> list[str]:
    return [str(problem) for problem in field_problems(config)]


@pytest.mark.parametrize(("url", "error"), [
    ("http://127.0.0.1:99999/healthz", "healthzUrl: the port must be a number from 0 to 65535"),
    ("http://127.0.0.1:10248/gesundheit\u00e4", "healthzUrl: must be ASCII (percent-encode other characters)"),
    ("ftp://127.0.0.1/healthz", "healthzUrl: must be an http:// or https:// URL with a host, got "
                                "'ftp://127.0.0.1/healthz'"),
])
def test_validate_names_what_is_wrong_with_the_url(url: str, error: str) -> None:
    assert problems(Probing(healthz_url=url)) == [error]


@pytest.mark.parametrize(("recheck", "error"), [
    (dt.timedelta(milliseconds=200), "recheckInterval: must be at least 1s (findings reach the Node at most once a "
                                     "second), got 200ms"),
    (dt.timedelta(minutes=1), "recheckInterval: must not be longer than interval (30s), got 1m0s"),
])
def test_validate_bounds_the_recheck_interval(recheck: dt.timedelta, error: str) -> None:
    assert problems(Probing(recheck_interval=recheck)) == [error]


def test_the_request_must_end_before_the_check_is_cancelled() -> None:
    assert problems(Probing(request_timeout=15 * SECOND)) == [
        "requestTimeout: must be shorter than timeout (15s), got 15s"]
    assert problems(Probing(request_timeout=dt.timedelta(0))) == ["requestTimeout: must be positive, got 0s"]


def test_a_probe_may_time_out_past_its_interval_a_sampling_check_may_not() -> None:
    long = {"interval": 10 * SECOND, "timeout": 15 * SECOND}
    assert field_problems(ProbeTiming(**long)) == []
    assert [str(p) for p in field_problems(CheckTiming(**long))] == [
        "timeout: must not be longer than interval (10s), got 15s"]
    zero = ProbeTiming(timeout=dt.timedelta(0))
    assert [str(p) for p in field_problems(zero)] == ["timeout: must be positive, got 0s"]
