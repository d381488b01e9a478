"""A real Prometheus server (the pinned one, hack/kcp/versions.py) for the e2e tests: it scrapes the targets it is
given, evaluates rule files, and answers instant queries and the list of alerts over its HTTP API."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from hack.kcp import paths, procs
from hack.kcp.ports import free_port


@dataclass
class Prometheus:
    url: str
    record: procs.ProcessRecord
    config: Path

    def get(self, path: str, **params: str) -> Any:
        """The `data` of one API answer; RuntimeError with Prometheus's own error otherwise."""
        url = f"{self.url}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                doc = json.loads(r.read())
        except urllib.error.HTTPError as e:
            doc = json.loads(e.read() or b"{}")
        if doc.get("status") != "success":
            raise RuntimeError(f"GET {path} {params}: {doc.get('errorType')}: {doc.get('error')}")
        return doc["data"]

    def query(self, promql: str) -> list[dict[str, Any]]:
        """An instant query's vector: [{"metric": {...}, "value": [time, "text"]}, ...]."""
        data = self.get("/api/v1/query", query=promql)
        if data["resultType"] != "vector":
            raise RuntimeError(f"{promql}: a {data['resultType']}, not a vector")
        return list(data["result"])

    def alerts(self, state: str = "firing") -> list[dict[str, Any]]:
        """The alerts in `state` (firing or pending), each with its labels."""
        return [a for a in self.get("/api/v1/alerts")["alerts"] if a["state"] == state]

    def rules(self) -> list[dict[str, Any]]:
        """Every loaded rule, with its `health` (ok, err, unknown) and `lastError` after an evaluation."""
        return [r for g in self.get("/api/v1/rules")["groups"] for r in g["rules"]]

    def targets_up(self) -> dict[str, str]:
        """scrape URL -> health (up, down, unknown) of every active target."""
        return {t["scrapeUrl"]: t["health"] for t in self.get("/api/v1/targets")["activeTargets"]}

    def queries(self) -> list[str]:
        """Every query a client sent, in order, from Prometheus's query log."""
        log = self.config.with_name("queries.log")
        lines = log.read_text().splitlines() if log.exists() else []
        return [json.loads(line)["params"]["query"] for line in lines if line.strip()]

    def log(self) -> str:
        return Path(self.record.log).read_text(errors="replace")

    def stop(self) -> None:
        procs.stop(self.record)


def start(workdir: Path, scrape_configs: list[dict[str, Any]], rule_files: list[Path], *, interval: str = "1s",
          timeout: float = 60.0) -> Prometheus:
    """Start Prometheus on a free loopback port with the scrape configs and rule files, scraping and evaluating
    every `interval`; wait until it answers /-/ready."""
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "prometheus.yml"
    config.write_text(yaml.safe_dump({
        "global": {"scrape_interval": interval, "scrape_timeout": interval, "evaluation_interval": interval,
                   "query_log_file": str(workdir / "queries.log")},
        "rule_files": [str(f) for f in rule_files],
        "scrape_configs": scrape_configs,
    }, sort_keys=False))
    port = free_port()
    record = procs.start("prometheus", [
        str(paths.binary("prometheus")), f"--config.file={config}", f"--storage.tsdb.path={workdir / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}", "--log.format=json",
    ], workdir)
    server = Prometheus(f"http://127.0.0.1:{port}", record, config)
    deadline = time.monotonic() + timeout
    while True:
        if not procs.is_ours_and_alive(record):
            raise RuntimeError(f"prometheus exited; its log:\n{server.log()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{server.url}/-/ready", timeout=2) as r:
                if r.status == 200:
                    return server
        except OSError:
            pass
        if time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(f"prometheus not ready after {timeout:.0f}s; its log:\n{server.log()[-3000:]}")
        time.sleep(0.2)
