"""hack/bench/remediator_memory.py's fit: the growth it reports is the one in the measurements."""

from __future__ import annotations

import pytest

from hack.bench import remediator_memory
from hack.bench.remediator_memory import least_squares


def test_an_exact_linear_growth_is_found_again() -> None:
    sizes = [(500, 15_000), (1_000, 40_000), (2_000, 60_000)]
    peaks = [80 + 0.012 * pods + 0.05 * nodes for nodes, pods in sizes]
    a, per_pod, per_node = least_squares([[1.0, float(p), float(n)] for n, p in sizes], peaks)
    assert (a, per_pod, per_node) == pytest.approx((80, 0.012, 0.05))


def test_noisy_measurements_give_the_line_closest_to_them() -> None:
    a, b = least_squares([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]], [1.0, 2.0, 4.0])
    assert (a, b) == pytest.approx((5 / 6, 1.5))


def test_sizes_that_cannot_tell_nodes_from_pods_are_refused() -> None:
    with pytest.raises(ValueError, match="pods per node differ"):
        least_squares([[1.0, 30.0, 1.0], [1.0, 60.0, 2.0], [1.0, 90.0, 3.0]], [1.0, 2.0, 3.0])


def test_a_size_the_machine_cannot_bring_up_in_time_is_said_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    # 2,000 nodes / 60,000 pods on the 2-CPU machine: kwok had not made every pod Running after 900 s.
    def too_slow(nodes: int, pods: int, *_: object) -> None:
        raise TimeoutError("timed out after 900s waiting for every pod Running (kwok)")

    monkeypatch.setattr(remediator_memory, "unbuilt", lambda _: False)
    monkeypatch.setattr(remediator_memory, "measure", too_slow)
    monkeypatch.setattr("sys.argv", ["remediator_memory", "--sizes", "2000:60000"])
    assert remediator_memory.main() == 1
    err = capsys.readouterr().err
    assert "2000 nodes, 60000 pods: timed out after 900s waiting for every pod Running (kwok); not measured" in err
    assert "Traceback" not in err
