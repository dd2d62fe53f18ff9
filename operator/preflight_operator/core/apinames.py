"""Whether a name may enter an API path (pure): one rule for every call the operator and
the webhook make.

Why (issue 34): a pod's ownerReference is written by whoever creates the pod, and its
``name`` went into the GET of the owner, escaped with ``urllib.parse.quote`` whose default
keeps ``/``. An owner named ``../../../api/v1/nodes/gpu-1`` made the webhook read another
path with the operator's credentials (a Node's labels then chose the pod's policy), and an
ownerReference's ``apiVersion`` (group and version) went into the path unchecked too.

The rule is the API server's own (k8s.io/apimachinery ``IsDNS1123Subdomain`` and
``IsDNS1123Label``): every name the operator puts in a path (pods, workloads and serving
stacks' objects, GPUValidations, PreflightPolicies, Events, Leases, Nodes, custom
resources) must be a DNS-1123 subdomain of at most 253 characters, a namespace, an API
version or a resource's plural a DNS-1123 label of at most 63, and an API group a DNS-1123
subdomain. A name that fails the rule cannot name an object the API server stored, so it is
not a reference: it is refused before any call is made, and the caller says so (a logged
refusal or a finding), never an escaped guess.
"""

from __future__ import annotations

import re

MAX_NAME = 253  # IsDNS1123Subdomain
MAX_LABEL = 63  # IsDNS1123Label
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_RE = re.compile(rf"{_LABEL}(\.{_LABEL})*")
_LABEL_RE = re.compile(_LABEL)

# What each part of a path is held to: (pattern, most characters, what it is called).
NAME = "name"
NAMESPACE = "namespace"
GROUP = "API group"
VERSION = "API version"
PLURAL = "resource"
_RULES = {
    NAME: (_SUBDOMAIN_RE, MAX_NAME, "a DNS-1123 subdomain"),
    GROUP: (_SUBDOMAIN_RE, MAX_NAME, "a DNS-1123 subdomain"),
    NAMESPACE: (_LABEL_RE, MAX_LABEL, "a DNS-1123 label"),
    VERSION: (_LABEL_RE, MAX_LABEL, "a DNS-1123 label"),
    PLURAL: (_LABEL_RE, MAX_LABEL, "a DNS-1123 label"),
}


class MalformedReference(ValueError):
    """A name that no stored object can have; no API call was made with it."""


def problem(part: str, value: object) -> str:
    """Why ``value`` may not stand in a path as ``part`` (NAME, NAMESPACE, GROUP, VERSION,
    PLURAL); "" when it may. ``fullmatch``: Go's ``$`` admits no trailing newline."""
    pattern, most, rule = _RULES[part]
    if not isinstance(value, str):
        return f"{part} is not a string"
    if len(value) > most or not pattern.fullmatch(value):
        shown = value[:80] + ("..." if len(value) > 80 else "")
        return f"{part} {shown!r} is not {rule} of at most {most} characters"
    return ""


def checked(part: str, value: object) -> str:
    """``value`` when it may stand in a path as ``part``; raises MalformedReference."""
    why = problem(part, value)
    if why:
        raise MalformedReference(f"malformed reference: {why}; no API call made")
    assert isinstance(value, str)
    return value


def node_path(node: object) -> str:
    """The API path of a Node (cluster-scoped, core group); raises MalformedReference."""
    return f"/api/v1/nodes/{checked(NAME, node)}"
