"""Benchmark: the kubelet check's healthz probe against a hostile local server, RSS and descriptors flat over the runs.

A server on 127.0.0.1 answers each request with one of the issue-42 smuggling answers in turn: five answers sent
ahead of the one asked for, an interim `100 Continue` or `199` before the answer, a `204` followed by another answer,
three surplus bytes, an answer and then late bytes while the connection is idle, non-ASCII digits (`\\xb200`,
`Content-Length: \\xb2`, chunk size `-5`), and a plain `200`. The kubelet check's probe (`KubeletCheck.healthz`) runs
`--runs` times (default 100); the script prints this process's RSS (VmRSS) and open descriptors at run 1 and at the
last run, and how many runs were healthy, how many failed and how many raised (none may: cdfecd0 let ValueError
out). PYTHONPATH=<a checkout> runs it against that checkout's probe.

    .venv/bin/python -m hack.bench.healthz_smuggling --runs 100
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import re
from collections import Counter
from pathlib import Path

from agent.checks.kubelet import Config, KubeletCheck
from agent.host import HostRoot

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
SICK = b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\nsick"
ANSWERS = [
    OK * 6,  # five answers ahead of the one asked for
    b"HTTP/1.1 100 Continue\r\n\r\n" + SICK,
    b"HTTP/1.1 199 Hm\r\n\r\n" + OK,
    b"HTTP/1.1 204 No Content\r\n\r\n" + OK,
    OK + b"xyz",
    b"late",  # OK now, these bytes only once the connection is idle
    b"HTTP/1.1 \xb200 OK\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\nok",
    b"HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n",
    OK,
]


def rss_kib() -> int:
    match = re.search(r"^VmRSS:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.MULTILINE)
    return int(match[1]) if match else -1


def descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


class HostileServer:
    def __init__(self) -> None:
        self.requests = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                await reader.readuntil(b"\r\n\r\n")
                answer = ANSWERS[self.requests % len(ANSWERS)]
                self.requests += 1
                if answer == b"late":
                    writer.write(OK)
                    await writer.drain()
                    await asyncio.sleep(0.05)  # the server's pace, not a wait for the client: late on purpose
                writer.write(answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()


async def main(runs: int) -> None:
    server = HostileServer()
    listening = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    check = KubeletCheck(Config(healthz_url=f"http://127.0.0.1:{port}/healthz",
                                request_timeout=dt.timedelta(seconds=1)), HostRoot(Path("/nonexistent")))
    outcomes: Counter[str] = Counter()
    try:
        for run in range(1, runs + 1):
            try:
                failure = await check.healthz.probe()
            except Exception as e:  # noqa: BLE001 - what escaped the probe is the finding (cdfecd0: ValueError)
                outcomes[f"raised {type(e).__name__}"] += 1
                continue
            finally:
                if run in (1, runs):
                    print(f"run {run}: RSS {rss_kib()} KiB, open descriptors {descriptors()}", flush=True)
            outcomes["healthy" if failure is None else failure.split(":")[0]] += 1
    finally:
        await check.close()
        listening.close()
    print(f"{runs} probes, {server.requests} requests: " + ", ".join(f"{k} {v}" for k, v in outcomes.most_common()))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    asyncio.run(main(parser.parse_args().runs))
