"""Load the remediation policy YAML into `model.Policy`, reporting every mistake as FILE:LINE: field.path: message.

This module only parses the file and dispatches: each top-level section is read by the module that defines it
(`rules.py`, `default_evictor.py`, `strategies.py` -> each strategy's `args.py`, `limits.py`, `eviction.py`,
`safety.py`, `notifications.py`, `autoscaler.py`, `window.py`, `metrics.py`, `node_selector.py`, `repair.py`), through
one `reader.Reader` that records every error, so one `validate` run lists them all."""

from __future__ import annotations

import os
import sys

import yaml

from nodemedic_common.config_errors import ConfigError
from nodemedic_common.inputs import Problem, read_text, yaml_problem
from nodemedic_common.terminal_text import printable
from remediator.policy import descheduler, descheduler_v1alpha1
from remediator.policy.autoscaler import read_autoscaler
from remediator.policy.dark import read_dark
from remediator.policy.default_evictor import read_evictor
from remediator.policy.eviction import read_eviction
from remediator.policy.limits import read_limits
from remediator.policy.measured_usage import check_sources, read_metrics_providers
from remediator.policy.migrations import read_migrations
from remediator.policy.model import Policy
from remediator.policy.node_selector import read_node_selector
from remediator.policy.notifications import read_notifications
from remediator.policy.reader import DOCUMENT, Reader, Section, is_null
from remediator.policy.repair import read_repair
from remediator.policy.rules import check_drains, read_rules
from remediator.policy.safety import check_acknowledged, read_safety, taken_risks
from remediator.policy.savings import read_savings
from remediator.policy.scheduler import read_scheduler
from remediator.policy.secret_files import DEFAULT_SECRETS_DIR
from remediator.policy.strategies import StrategyCatalog, consolidators, packers, read_strategies
from remediator.policy.window import read_window

API_VERSION = "nodemedic.io/v1alpha1"
DESCHEDULER_VERSIONS = (descheduler.V1ALPHA2, descheduler_v1alpha1.V1ALPHA1)
KIND = "RemediationPolicy"
_TOP_KEYS = ("apiVersion", "kind", "rules", "evictor", "strategies", "limits", "eviction", "safety", "notifications",
             "autoscaler", "maintenanceWindow", "metricsProviders", "nodeSelector", "scheduler", "repair",
             "darkNodes", "migrations", "savings")


def parse_policy(text: str, *, source: str, catalog: StrategyCatalog,
                 secrets_dir: str = DEFAULT_SECRETS_DIR) -> Policy:
    """The policy in `text`, or ConfigError listing every problem; `source` names the file in messages. A
    descheduler DeschedulerPolicy is read as it is (descheduler.py). `catalog`: the registered strategies
    (strategies.py). `{file: PATH}` secrets are read only from `secrets_dir` (secret_files.py)."""
    return _parse(text, source=source, catalog=catalog, convert=False, secrets_dir=secrets_dir)[0]


def convert_policy(text: str, *, source: str, catalog: StrategyCatalog,
                   secrets_dir: str = DEFAULT_SECRETS_DIR) -> str:
    """`text` as a nodemedic RemediationPolicy (for `convert`): a DeschedulerPolicy as the translation the loader
    validated, so the result plans identically; ConfigError when it does not validate."""
    return _parse(text, source=source, catalog=catalog, convert=True, secrets_dir=secrets_dir)[1]


def _parse(text: str, *, source: str, catalog: StrategyCatalog, convert: bool,
           secrets_dir: str) -> tuple[Policy, str]:
    try:
        loader = yaml.SafeLoader(text)
        # Before composing: depth and alias expansion are what make composing (and comparing) blow up.
        if problem := yaml_problem(text):
            raise ConfigError([f"{source}:{problem.line}: {DOCUMENT}: {problem.message}"])
    except yaml.YAMLError as e:  # a non-printable character, caught before parsing starts; a syntax error
        raise ConfigError([_syntax_error(source, text, e)]) from None
    try:
        documents: list[yaml.Node] = []
        while loader.check_node():
            node = loader.get_node()
            if node is not None:
                documents.append(node)
        r = Reader(source, loader, secrets_dir=secrets_dir)
        try:
            policy, root = _document(r, documents, catalog)
        finally:
            for warning in r.warnings:  # said whether or not the file loads: it is news either way
                print(warning, file=sys.stderr)
        converted = ""
        if convert:
            # Every value here is the user's own (a scalar, list or mapping of the file), moved under our keys.
            document = loader.construct_object(root, deep=True)
            risks = taken_risks(policy.safety, policy.limits, policy.evictor)
            if risks and isinstance(document, dict):
                # The DeschedulerPolicy chose these (descheduler reads them without acknowledgement); the
                # RemediationPolicy it becomes says so, as nodemedic's own files must, and so loads as it is.
                document.setdefault("safety", {})["acknowledge"] = list(risks)
            converted = yaml.safe_dump(document, sort_keys=False)
        return policy, converted
    except yaml.YAMLError as e:
        raise ConfigError([_syntax_error(source, text, e)]) from None
    finally:
        loader.dispose()


def _syntax_error(source: str, text: str, e: yaml.YAMLError) -> str:
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    # A ReaderError (a non-printable character) knows only its character offset, not a mark.
    line = mark.line + 1 if mark is not None else text.count("\n", 0, getattr(e, "position", 0)) + 1
    if isinstance(e, yaml.reader.ReaderError):
        code = e.character if isinstance(e.character, int) else ord(e.character)
        problem = f"unacceptable character #x{code:04x}: {e.reason}"
    else:
        problem = getattr(e, "problem", None) or str(e)
    return f"{source}:{line}: {DOCUMENT}: YAML syntax error: {problem}"


def _document(r: Reader, documents: list[yaml.Node], catalog: StrategyCatalog) -> tuple[Policy, yaml.Node]:
    if not documents or (len(documents) == 1 and is_null(documents[0])):
        raise ConfigError([f"{r.source}:1: {DOCUMENT}: the file is empty; a policy needs at least "
                           f"apiVersion: {API_VERSION} and kind: {KIND}"])
    if len(documents) > 1:
        r.error(documents[1], DOCUMENT, "a policy file holds exactly one YAML document; this is a second one")
    root = documents[0]
    version = descheduler.api_version(root)
    from_descheduler = version in DESCHEDULER_VERSIONS
    if from_descheduler:
        if version == descheduler_v1alpha1.V1ALPHA1:
            root = descheduler_v1alpha1.to_v1alpha2(r, root)
        root = descheduler.translate(r, root, nodemedic_api=API_VERSION, nodemedic_kind=KIND,
                                     kinds=catalog.kinds())
        if r.errors:
            raise ConfigError([message for _, message in sorted(r.errors, key=lambda e: e[0])])
    if not isinstance(root, yaml.MappingNode):
        r.wrong(root, DOCUMENT, f"a mapping with keys {', '.join(_TOP_KEYS)}", r.value(root, DOCUMENT))
        raise ConfigError([message for _, message in sorted(r.errors, key=lambda e: e[0])])
    top = r.mapping(root, "", _TOP_KEYS)
    for key, expected in (("apiVersion", API_VERSION), ("kind", KIND)):
        got = r.text(top, key, required=True)
        if got and got != expected:
            also = f" (or {', '.join(DESCHEDULER_VERSIONS)} for a DeschedulerPolicy)" if key == "apiVersion" else ""
            r.error(top.values[key], key, f"must be {expected}{also}, got {got!r}")
    policy = _sections(r, top, catalog, from_descheduler=from_descheduler)
    if r.errors:
        raise ConfigError([message for _, message in sorted(r.errors, key=lambda e: e[0])])
    return policy, root


def _sections(r: Reader, top: Section, catalog: StrategyCatalog, *, from_descheduler: bool) -> Policy:
    strategies = read_strategies(r, top, catalog)
    providers = read_metrics_providers(r, top)
    check_sources(r, top, [(s.name, s.args) for s in strategies], providers)
    policy = Policy(rules=read_rules(r, top), evictor=read_evictor(r, top), strategies=strategies,
                    limits=read_limits(r, top), eviction=read_eviction(r, top), safety=read_safety(r, top),
                    notifications=read_notifications(r, top),
                    autoscaler=read_autoscaler(r, top, consolidators(strategies, catalog)), window=read_window(r, top),
                    metrics=providers, node_selector=read_node_selector(r, top),
                    scheduler=read_scheduler(r, top, packs=bool(packers(strategies, catalog))),
                    repair=read_repair(r, top), dark=read_dark(r, top), migrations=read_migrations(r, top),
                    savings=read_savings(r, top))
    check_drains(r, top, policy.rules, tuple(s.name for s in strategies))
    if not from_descheduler:
        # A DeschedulerPolicy has no rules nor taints of nodemedic's and no safety section to acknowledge in: its
        # evictor flags mean what they mean in descheduler, and nodemedic's breaker and limits defaults apply.
        check_acknowledged(r, top, taken_risks(policy.safety, policy.limits, policy.evictor), policy.safety)
    return policy


def load_policy(path: str | os.PathLike[str], *, catalog: StrategyCatalog,
                secrets_dir: str = DEFAULT_SECRETS_DIR) -> Policy:
    # Messages name the file escaped: a newline or terminal control in its name must not forge lines of their own.
    path, source = os.fspath(path), printable(os.fspath(path))
    try:
        text = read_text(path)
    except OSError as e:
        raise ConfigError([f"{source}: cannot read the policy file: {e}"]) from None
    if isinstance(text, Problem):
        raise ConfigError([f"{source}:{text.line}: {DOCUMENT}: cannot read the policy file: {text.message}"])
    return parse_policy(text, source=source, catalog=catalog, secrets_dir=secrets_dir)


def validate_main(path: str, *, catalog: StrategyCatalog, secrets_dir: str = DEFAULT_SECRETS_DIR) -> int:
    """`nodemedic-remediator validate`: 0 and a one-line summary, or 2 with every error on stderr."""
    try:
        policy = load_policy(path, catalog=catalog, secrets_dir=secrets_dir)
    except ConfigError as e:
        for message in e.errors:
            print(message, file=sys.stderr)
        return 2
    strategies = ", ".join(s.name for s in policy.strategies) or "none"
    print(f"OK: {printable(path)}: {len(policy.rules)} rules, strategies: {strategies}")
    return 0
