"""The `scheduler` section: what it accepts is what kube-scheduler and the API server take (a pod's schedulerName is a
DNS subdomain, a topologyKey a label key, maxSkew an int32 above 0); the rest is refused at its file, line and field."""

from __future__ import annotations

import pytest

from nodemedic_common.config_errors import ConfigError
from remediator.policy.loader import parse_policy
from remediator.policy.scheduler import SchedulerSettings
from remediator.strategies import CATALOG

HEADER = "apiVersion: nodemedic.io/v1alpha1\nkind: RemediationPolicy\nscheduler:\n"  # the section's keys on line 4


def _constraint(skew: str = "1", key: str = "topology.kubernetes.io/zone") -> str:
    return f"  defaultConstraints:\n  - {{maxSkew: {skew}, topologyKey: {key}, whenUnsatisfiable: ScheduleAnyway}}\n"


def _read(section: str) -> SchedulerSettings:
    return parse_policy(HEADER + section, source="p.yaml", catalog=CATALOG).scheduler


@pytest.mark.parametrize(("section", "error"), [
    # A topologyKey that is no label key: kube-scheduler refuses its PodTopologySpreadArgs and does not start.
    (_constraint(key='"zone\\n\\"evil\\": 1"'), "p.yaml:5: scheduler.defaultConstraints[0].topologyKey: invalid key "
                                                "'zone\\n\"evil\": 1'"),
    (_constraint(key='"٣٣"'), "p.yaml:5: scheduler.defaultConstraints[0].topologyKey: invalid key '٣٣'"),
    (_constraint(key="a/"), "p.yaml:5: scheduler.defaultConstraints[0].topologyKey: invalid key 'a/'"),
    (_constraint(key="Example.com/zone"), "topologyKey: invalid key 'Example.com/zone': the prefix"),
    # maxSkew past int32: kube-scheduler cannot decode the configuration.
    (_constraint(skew="99999999999999999999"), "p.yaml:5: scheduler.defaultConstraints[0].maxSkew: must be at "
                                               "least 1 and at most 2147483647, got 99999999999999999999"),
    (_constraint(skew="2147483648"), "maxSkew: must be at least 1 and at most 2147483647, got 2147483648"),
    (_constraint(skew="0"), "maxSkew: must be at least 1 and at most 2147483647, got 0"),
    # schedulerNames a pod cannot carry (the API server checks spec.schedulerName as a DNS subdomain).
    ('  profile: "a..b-"\n', "p.yaml:4: scheduler.profile: invalid schedulerName 'a..b-': must be a lowercase DNS "
                             "subdomain"),
    ('  profile: "٣٣"\n', "p.yaml:4: scheduler.profile: invalid schedulerName '٣٣'"),  # str.isalnum takes these
    ("  profile: Nodemedic\n", "p.yaml:4: scheduler.profile: invalid schedulerName 'Nodemedic'"),
    (f"  profile: {'a' * 254}\n", "p.yaml:4: scheduler.profile: invalid schedulerName"),
    ('  otherSchedulers: [ok, "x-"]\n', "p.yaml:4: scheduler.otherSchedulers[1]: invalid schedulerName 'x-'"),
    ('  packingProfile: "a_b"\n', "p.yaml:4: scheduler.packingProfile: invalid schedulerName 'a_b'"),
], ids=["key-newline-quote", "key-arabic-digits", "key-empty-name", "key-upper-prefix", "skew-20-digits",
        "skew-int32-plus-1", "skew-0", "profile-dots-dash", "profile-arabic-digits", "profile-upper",
        "profile-254-chars", "other-trailing-dash", "packing-underscore"])
def test_what_kube_scheduler_or_the_api_server_refuses_is_refused_at_its_line(section: str, error: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _read(section)
    assert any(error in e for e in caught.value.errors), caught.value.errors


def test_the_bounds_themselves_are_accepted() -> None:
    longest = ".".join(["a" * 63] * 4)[:253]  # 253 characters, parts of 63
    s = _read(f"  profile: {longest}\n  otherSchedulers: [x1.example-2.com, '0']\n"
              + _constraint(skew="2147483647", key="example.com/Zone_1.x"))
    assert (s.profile, s.other_schedulers) == (longest, ("x1.example-2.com", "0"))
    assert [(c.max_skew, c.topology_key) for c in s.default_constraints] == [(2147483647, "example.com/Zone_1.x")]
