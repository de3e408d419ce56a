"""The write policy: per path pattern, which front-matter fields and sections an agent may change, and who confirms.

A person writes it once as YAML, and every confirmation row then binds the field domain it gave and the
policy's version, the content hash of the policy text in force (the file's exact text together with the
permission mode, trusted folders and window), with that text kept in the decisions store under its hash
(``agent_policies``), so a row reads the same months later whatever the file says by then.

Where it is read from: ``<home>/policy.yaml`` when it exists, else ``<vault>/.engram/policy.yaml``, else the
built-in default (every path writable, unconstrained, any person confirms: the behaviour before policies).
The home's file wins because agents cannot reach the home, while the vault's is a file in the folder agents
write to (the tools refuse hidden entries such as ``.engram/``, but an agent with a shell is another matter).

The format::

    confirmers: any            # who may approve, unless a rule names others: "any" or a list of names
    rules:                     # the first rule whose pattern matches the vault path decides
      - paths: ["projects/*.md", "areas/**"]   # * stays inside one folder, ** crosses folders
        fields: [status, tags] # front-matter fields an agent may change; "*" for any
        sections: [Status]     # sections (heading text) it may replace; "*" for any
        confirmers: [dana]     # optional: only these people may approve writes here

With a policy file, a path no rule matches is not writable by agents at all, and a rule that allows nothing
refuses too: a policy is a list of what is allowed. ``learn`` writes whole new notes into ``learned/``, so a
policy that keeps it needs a rule such as ``{paths: ["learned/**"], fields: ["*"], sections: ["*"]}``. A call
may narrow its domain further (``--allow-field``, the MCP ``allow_fields``) but never widen it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from engramrag.agent import confirmations
from engramrag.agent.confirmations import Refused
from engramrag.agent.domains import ANY, FieldDomain
from engramrag.decisions.store import DecisionsStore
from engramrag.store import Home

HOME_FILE = "policy.yaml"
VAULT_FILE = ".engram/policy.yaml"
BUILT_IN = "built-in"
ANY_PERSON = "any"


@dataclass(frozen=True)
class Rule:
    """One rule: path patterns, the fields and sections they allow (``*`` for any), who may confirm (empty: any)."""

    paths: tuple[str, ...]
    fields: frozenset[str]
    sections: frozenset[str]
    confirmers: tuple[str, ...] = ()

    def matches(self, relative_path: str) -> bool:
        return any(_glob(pattern).fullmatch(relative_path) for pattern in self.paths)

    def domain(self) -> FieldDomain:
        return FieldDomain(self.fields, self.sections, self.confirmers)


@dataclass(frozen=True)
class WritePolicy:
    """The policy as read: where from (``home``, ``vault`` or ``built-in``), its exact text, and its rules."""

    source: str = BUILT_IN
    file: str | None = None
    text: str | None = None
    rules: tuple[Rule, ...] = ()
    confirmers: tuple[str, ...] = field(default=())

    @property
    def built_in(self) -> bool:
        return self.source == BUILT_IN

    def domain_for(self, relative_path: str, narrowing: FieldDomain | None = None) -> FieldDomain:
        """The domain a write to ``relative_path`` has: the matching rule's, narrowed by the call; Refused when the
        policy allows nothing there or the narrowing asks for more than the rule allows."""
        if self.built_in:
            allowed = FieldDomain(confirmers=self.confirmers)
        else:
            rule = next((rule for rule in self.rules if rule.matches(relative_path)), None)
            if rule is None:
                raise Refused(
                    "domain",
                    f"the write policy ({self.file}) has no rule for {relative_path}, so agents may not write it; "
                    "nothing was written. Ask the person who keeps the policy to add a rule for this path.",
                )
            allowed = rule.domain() if rule.confirmers else FieldDomain(rule.fields, rule.sections, self.confirmers)
            if not allowed.fields and not allowed.sections:
                raise Refused(
                    "domain",
                    f"the write policy ({self.file}) lets agents change nothing in {relative_path}; nothing was "
                    "written.",
                )
        return narrow(allowed, narrowing, relative_path)


def narrow(allowed: FieldDomain, requested: FieldDomain | None, relative_path: str) -> FieldDomain:
    """``requested`` when it asks for no more than ``allowed`` (which keeps its confirmers), else Refused.

    A narrowing names everything the call may change: fields it leaves out are not writable, whatever the policy.
    """
    if requested is None or (requested.unconstrained and not requested.confirmers):
        return allowed
    wider = []
    if not allowed.unconstrained:
        wider += [f"field {name!r}" for name in sorted(requested.fields) if not _allows(allowed.fields, name)]
        wider += [f"section {name!r}" for name in sorted(requested.sections) if not _allows(allowed.sections, name)]
    if wider:
        raise Refused(
            "domain",
            f"the call asks to allow {', '.join(wider)} in {relative_path}, more than the write policy allows "
            f"(fields {sorted(allowed.fields) or 'none'}, sections {sorted(allowed.sections) or 'none'}); nothing "
            "was written. A call can narrow the policy's domain, never widen it.",
        )
    return FieldDomain(requested.fields, requested.sections, allowed.confirmers)


def check_still_allowed(
    row_domain: Mapping[str, Any], current: WritePolicy, relative_path: str, operator: str | None = None
) -> None:
    """Refuse a confirmation whose bound domain the policy in force now no longer allows (it was tightened)."""
    bound = FieldDomain.from_row(row_domain)
    try:
        now_allowed = current.domain_for(relative_path)
    except Refused as refusal:
        raise Refused("policy", f"the write policy changed since this was proposed: {refusal}") from refusal
    if not now_allowed.unconstrained and bound.unconstrained:
        raise Refused(
            "policy",
            f"the write policy changed since this was proposed: {relative_path} now allows only fields "
            f"{sorted(now_allowed.fields)} and sections {sorted(now_allowed.sections)}; propose the write again.",
        )
    if not now_allowed.unconstrained:
        try:
            narrow(now_allowed, FieldDomain(bound.fields, bound.sections), relative_path)
        except Refused as refusal:
            raise Refused("policy", f"the write policy changed since this was proposed: {refusal}") from refusal
    if operator is not None and not confirmer_allowed(operator, now_allowed.confirmers):
        raise Refused(
            "policy",
            f"the write policy now lets only {', '.join(now_allowed.confirmers)} confirm writes to {relative_path}, "
            f"not {operator}; one of them must decide a new proposal.",
        )


def load(home: Home, vault: str | Path) -> WritePolicy:
    """The policy in force for this home and vault (home file, else vault file, else built-in)."""
    for source, path in (("home", Path(home.root) / HOME_FILE), ("vault", Path(vault) / VAULT_FILE)):
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            return parse(text, source, str(path))
    return WritePolicy()


def parse(text: str, source: str = "vault", file: str = VAULT_FILE) -> WritePolicy:
    """The policy in ``text``; ValueError naming the file and what is wrong when it cannot be read as one."""
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as error:
        raise ValueError(f"the write policy {file} is not valid YAML: {error}") from None
    if not isinstance(data, Mapping):
        raise ValueError(f"the write policy {file} must be a mapping with 'rules'")
    rules = data.get("rules") or []
    if not isinstance(rules, list):
        raise ValueError(f"'rules' in {file} must be a list of {{paths, fields, sections, confirmers}}")
    parsed = []
    for index, rule in enumerate(rules, 1):
        if not isinstance(rule, Mapping) or not rule.get("paths"):
            raise ValueError(f"rule {index} of {file} needs 'paths' (a list of path patterns)")
        parsed.append(
            Rule(
                _names(rule["paths"], f"rule {index} paths", file),
                frozenset(_names(rule.get("fields", []), f"rule {index} fields", file)),
                frozenset(_names(rule.get("sections", []), f"rule {index} sections", file)),
                _confirmers(rule.get("confirmers", ANY_PERSON), file),
            )
        )
    return WritePolicy(source, file, text, tuple(parsed), _confirmers(data.get("confirmers", ANY_PERSON), file))


def policy_text(rules: WritePolicy, mode: str, trusted_paths: Sequence[str], window_s: float) -> str:
    """The canonical text a policy version names: the file's exact text (or none) and the settings beside it."""
    described = {
        "source": rules.source,
        "file": rules.file,
        "text": rules.text,
        "mode": mode,
        "trusted_paths": list(trusted_paths),
        "window_s": window_s,
    }
    return json.dumps(described, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def version_of(text: str) -> str:
    return "policy:blake2b:" + hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def remember(home: Home, version: str, text: str, now: datetime | None = None) -> None:
    """Keep the policy text under its version (content-addressed, written once)."""
    with DecisionsStore.for_home(home)._write() as connection:
        connection.execute(
            "INSERT OR IGNORE INTO agent_policies (version, text, recorded_at) VALUES (?, ?, ?)",
            (version, text, (now or datetime.now(UTC)).isoformat(timespec="seconds")),
        )


def recorded(home: Home, version: str) -> dict[str, Any] | None:
    """The policy text a row's ``policy_version`` names, parsed, or None when the store has no such version."""
    with DecisionsStore.for_home(home)._connection() as connection:
        row = connection.execute(
            "SELECT version, text, recorded_at FROM agent_policies WHERE version = ?", (version,)
        ).fetchone()
    if row is None:
        return None
    return {"version": row[0], "policy": json.loads(row[1]), "recorded_at": row[2]}


def confirmer_allowed(operator: str, confirmers: Sequence[str]) -> bool:
    """Whether ``operator`` may approve under ``confirmers`` (empty: any person); see ``confirmations.decide``."""
    return confirmations.confirmer_allowed(operator, confirmers)


def _allows(allowed: frozenset[str], name: str) -> bool:
    return ANY in allowed or name in allowed


def _names(value: Any, what: str, file: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise ValueError(f"{what} in {file} must be a list of names")
    return tuple(item.strip() for item in value)


def _confirmers(value: Any, file: str) -> tuple[str, ...]:
    if value is None or (isinstance(value, str) and value.strip().lower() in (ANY_PERSON, "any person")):
        return ()
    return _names(value, "confirmers", file)


def _glob(pattern: str) -> re.Pattern[str]:
    parts = re.split(r"(\*\*/?|\*|\?)", pattern.strip().lstrip("/"))
    translated = {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}
    return re.compile("".join(translated.get(part, re.escape(part)) for part in parts))


__all__ = [
    "ANY_PERSON",
    "BUILT_IN",
    "HOME_FILE",
    "VAULT_FILE",
    "Rule",
    "WritePolicy",
    "check_still_allowed",
    "load",
    "narrow",
    "parse",
    "policy_text",
    "recorded",
    "remember",
    "version_of",
]
