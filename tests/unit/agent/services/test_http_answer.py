"""The healthz probe's HTTP/1.1 answer reader on its own: bytes in, one answer (or how many bytes it needs) out.

(The probe over a real connection: test_healthz.py; random and mutated answers:
tests/unit/fuzz/test_healthz_answers.py.)
"""

from __future__ import annotations

import pytest

from agent.services.http_answer import MAX_HEAD, MAX_LINE, MAX_NEEDED, Answer, ProbeError, Read, read_answer

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


def test_an_answer_with_its_length_is_read_to_its_end_and_its_connection_kept() -> None:
    assert read_answer(OK, ended=False) == Read(Answer(200, b"ok", True), len(OK))


@pytest.mark.parametrize(("data", "error"), [
    (b"HTTP/1.1 \xb200 OK\r\nContent-Length: 2\r\n\r\nok", "the answer is not HTTP/1: b'HTTP/1.1 \\xb200 OK\\r\\n'"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\nok", "the answer has a Content-Length that is not a number: '²'"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\nok", "the answer has a Content-Length that is not a number: '-2'"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
     "the answer has differing Content-Length values: '2, 3'"),
    (b"HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n",
     "the answer has a chunk size that is not a number: b'-5\\r\\n'"),
    (b"HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\n\r\n\xb2\r\nhello\r\n0\r\n\r\n",
     "the answer has a chunk size that is not a number: b'\\xb2\\r\\n'"),
    (b"HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhello\r\n0\r\n\r\n",
     "the answer has a chunk that does not end where its size says: b'2\\r\\n'"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\nok",
     "the answer has both Transfer-Encoding and Content-Length"),
    (b"HTTP/1.1 200 OK\r\n folded: header\r\n\r\n", "the answer has a header line that is not `name: value`: "
                                                    "b' folded: header\\r\\n'"),
    (b"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", "the answer has a header line that is not `name: value`: "
                                            "b'X: a\\rb\\r\\n'"),
    (b"HTTP/2 200\r\n\r\n", "the answer is not HTTP/1: b'HTTP/2 200\\r\\n'"),
    (b"HTTP/1.1 099 Low\r\n\r\n", "the answer is not HTTP/1: b'HTTP/1.1 099 Low\\r\\n'"),
], ids=["status-superscript-two", "length-superscript-two", "length-negative", "lengths-differ", "chunk-negative",
        "chunk-superscript-two", "chunk-overruns", "te-and-length", "folded-header", "bare-cr", "http2", "status-099"])
def test_only_what_http_1_allows_is_read_every_number_in_ascii_digits(data: bytes, error: str) -> None:
    with pytest.raises(ProbeError) as raised:
        read_answer(data, ended=True)
    assert str(raised.value) == error


@pytest.mark.parametrize("interim", [b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 199 Whatever\r\nX: y\r\n\r\n",
                                     b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n"],
                         ids=["100", "199", "100-then-102"])
def test_interim_answers_are_passed_over_to_the_final_one(interim: bytes) -> None:
    assert read_answer(interim + OK, ended=False) == Read(Answer(200, b"ok", True), len(interim + OK))


@pytest.mark.parametrize("data", [
    OK + b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", OK + b"xyz",
    b"HTTP/1.1 204 No Content\r\n\r\n" + OK, b"HTTP/1.1 304 Not Modified\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nokHTTP/1.1 200 OK\r\n",
], ids=["answer-ahead", "three-bytes", "204-then-200", "304-with-a-body", "after-connection-close"])
def test_bytes_past_an_answer_whose_end_is_known_fail_it(data: bytes) -> None:
    with pytest.raises(ProbeError, match=r"^the server sent \d+ byte\(s\) past its answer: "):
        read_answer(data, ended=False)


def test_a_101_is_a_final_answer_whose_connection_is_not_kept() -> None:
    data = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n"
    assert read_answer(data, ended=False) == Read(Answer(101, b"", False), len(data))


@pytest.mark.parametrize(("data", "answer"), [
    (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", Answer(200, b"ok", False)),
    (b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok", Answer(200, b"ok", True)),
    (b"HTTP/1.1 200 OK\r\nConnection: foo, close\r\nContent-Length: 2\r\n\r\nok", Answer(200, b"ok", False)),
    (b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok", Answer(200, b"ok", True)),
    (b"HTTP/1.1 200\r\nContent-Length: 02\r\n\r\nok", Answer(200, b"ok", True)),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok", Answer(200, b"ok", True)),
], ids=["1.0-closes", "1.0-keep-alive", "close-in-a-list", "bare-lf", "no-reason-leading-zero", "same-length-twice"])
def test_whether_the_connection_is_kept_and_what_http_1_allows_besides_crlf(data: bytes, answer: Answer) -> None:
    assert read_answer(data, ended=False) == Read(answer, len(data))


def test_a_body_of_unknown_length_is_quoted_from_its_first_bytes_and_a_200_needs_none_of_it() -> None:
    head = b"HTTP/1.1 503 Busy\r\n\r\n"
    assert read_answer(head + b"sick", ended=False) == len(head) + 80  # the quote's bytes, or the connection's end
    assert read_answer(head + b"sick", ended=True) == Read(Answer(503, b"sick", False), len(head) + 4)
    assert read_answer(b"HTTP/1.1 200 OK\r\n\r\n", ended=False) == Read(Answer(200, b"", False), 19)
    long = f"HTTP/1.1 500 Oops\r\nContent-Length: {10**30}\r\n\r\n".encode()
    assert read_answer(long + b"x" * 100, ended=False) == Read(Answer(500, b"x" * 80, False), len(long) + 80)


def test_a_chunked_failure_is_quoted_across_its_chunks() -> None:
    data = b"HTTP/1.1 503 S\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\n[-]e\r\na\r\ntcd failed\r\n0\r\n\r\n"
    assert read_answer(data, ended=False) == Read(Answer(503, b"[-]etcd failed", False), len(data) - 2)


@pytest.mark.parametrize("cut", range(1, len(OK)))
def test_a_cut_answer_asks_for_more_and_never_for_less_than_it_has(cut: int) -> None:
    needed = read_answer(OK[:cut], ended=False)
    assert isinstance(needed, int) and cut < needed <= MAX_NEEDED


@pytest.mark.parametrize(("data", "error"), [
    (b"HTTP/1.1 200 OK\r\nX: " + b"a" * MAX_LINE, f"the answer has a line longer than {MAX_LINE} bytes"),
    (b"HTTP/1.1 100 Continue\r\n\r\n" * (MAX_HEAD // 25 + 1),
     f"the answer's status and header lines are longer than {MAX_HEAD} bytes"),
    (b"HTTP/1.1 200 OK\r\n" + (b"X: " + b"a" * 8000 + b"\r\n") * 5,
     f"the answer's status and header lines are longer than {MAX_HEAD} bytes"),
    (b"HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\n\r\n" + (b"1;" + b"e" * 8000 + b"\r\nx\r\n") * 13,
     f"the answer is not whole within its first {MAX_NEEDED} bytes"),
], ids=["long-line", "endless-interim", "long-head", "long-chunk-lines"])
def test_what_an_answer_may_take_is_bounded_so_its_reader_always_decides(data: bytes, error: str) -> None:
    with pytest.raises(ProbeError) as raised:
        read_answer(data, ended=False)
    assert str(raised.value) == error
