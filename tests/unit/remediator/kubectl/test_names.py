"""`names`: a node or namespace name from the command line or the cluster is checked before it goes into a URL path:
valid DNS names pass unchanged, anything that could reach another path (`..`, `/`, `?`, upper case, too long) is
refused as a `BadName` naming the text."""

from __future__ import annotations

import pytest

from remediator.kubectl.names import BadName, namespace, node_name


@pytest.mark.parametrize("name", ["n", "ip-10-0-0-1.ec2.internal", "node-1", "0", "a" * 253])
def test_a_valid_node_name_is_returned_unchanged(name: str) -> None:
    assert node_name(name) == name


@pytest.mark.parametrize("name", ["", "../../metrics", "a/b", "Node-1", "-node", "node-", "node.", "a" * 254,
                                  "n?watch=1", "n%2F", "n\n", "nöde"])
def test_a_node_name_that_could_not_be_a_node_is_refused_naming_the_text(name: str) -> None:
    with pytest.raises(BadName) as caught:
        node_name(name)
    assert str(caught.value) == f"{name!r} is not a node name"


@pytest.mark.parametrize("name", ["ops", "kube-system", "a", "a" * 63])
def test_a_valid_namespace_is_returned_unchanged(name: str) -> None:
    assert namespace(name) == name


@pytest.mark.parametrize("name", ["", "a.b", "a" * 64, "../x", "Ops", "-ops", "ops-", "ops/x"])
def test_a_namespace_must_be_a_dns_label_and_a_dotted_name_is_refused(name: str) -> None:
    with pytest.raises(BadName, match="is not a namespace name"):
        namespace(name)
