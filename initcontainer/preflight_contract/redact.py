"""Secrets never leave a pod: the one redaction layer (issue 36 item 2; stdlib, Python 3.9).

Why: the checker and the operator quote what they read, and what they read carries
secrets. ``HF_ENDPOINT=http://user:password@mirror`` (often from a Secret) was quoted whole
in the checker's ``model-source`` message, and from there went into the termination
message, the GPUValidation, the Events and the logs, where anyone who may read those (far
more people than may read the Secret) saw it. So every text that is written anywhere (a
report, a termination message, a status, an Event, a log line, an admission answer, lint's
output) passes through :class:`Redactor` (or the module's :func:`text` / :func:`tree`, the
same rules without known values) first, and nothing else decides what a secret is.

What is replaced by :data:`MARK` (``***``; the reader sees that something was hidden):

* the userinfo of a URL: ``scheme://user:pass@host`` -> ``scheme://***@host``;
* an ``Authorization``/``Proxy-Authorization`` header's value (and a bare
  ``Bearer <token>``/``Basic <...>``), and headers named like a token or key
  (``X-Api-Key``, ``X-Auth-Token``, ...);
* the value of a query parameter named like a token, key, signature or credential: a
  presigned S3 URL's ``X-Amz-Signature``, ``X-Amz-Credential``, ``X-Amz-Security-Token``,
  Azure SAS's ``sig``, ``token``, ``access_token``, ``api_key``;
* ``NAME=value`` where NAME says token/key/password/secret/credential (``HF_TOKEN=hf_...``,
  ``AWS_SECRET_ACCESS_KEY=...``), and such a command-line flag's value (``--api-key X``,
  ``--hf-token=X``);
* the VALUE of every env variable that comes from a Secret (``valueFrom.secretKeyRef``,
  ``envFrom`` of a Secret; the injector names them in ``PREFLIGHT_SECRET_ENV``, since the
  checker cannot tell at run time) or whose name says token/key/password/secret/credential
  (:func:`secret_name`), wherever it appears in any text, by exact match (and its
  percent-encoded form).

Known values shorter than :data:`MIN_VALUE_LENGTH` (4) characters are not searched for:
replacing every ``1`` or ``on`` in a report would hide the report, and a 3-character
secret protects nothing. A value named like a secret that is a plain switch (``true``,
``0``; ``HF_HUB_DISABLE_IMPLICIT_TOKEN=1``) is not one either; a Secret's value is always
searched for when it is long enough. Over-redaction only hides text; it never changes a
verdict (redaction runs after every check has judged, on what is written).
"""

from __future__ import annotations

import functools
import re
from typing import Any, FrozenSet, Iterable, List, Mapping, Tuple

from preflight_contract import envnames
from preflight_contract.report import Report

MARK = "***"
MIN_VALUE_LENGTH = 4
# Bounds: a pod's env is hostile input too (a 1 MB value, 10 000 names).
MAX_VALUES = 256
MAX_VALUE_LENGTH = 16384
MAX_SECRET_ENV_CHARS = 16384
# The patterns cost about 2.5 us a character (measured: 0.5 s for 200,000, linear); a text
# longer than this is cut first (no message, status or Event is near it; a 1 MB string in
# a hostile report must not stall the checker or the operator).
MAX_TEXT = 65536

# An env name that says it holds a secret.
_SECRET_NAME = re.compile(
    r"(?i)(token(?!s|iz)|secret|passw|passphrase|credential|api[_-]?key|access[_-]?key|private[_-]?key"
    r"|(^|[_-])key($|[_-])|(^|[_-])auth($|[_-])|authorization|signature|(^|[_-])sig($|[_-]))"
)
# Values that are switches or numbers, not secrets, whatever the name says.
_SWITCH = re.compile(r"(?i)(true|false|yes|no|on|off|none|null|[-+]?\d+(\.\d+)?)\Z")

_NAME_WORDS = (
    r"(?:token(?!s|iz)|secret|passw(?:or)?d|passphrase|pwd|credential|api[_-]?key"
    r"|access[_-]?key|private[_-]?key|key(?!s|file|word|board)|sig(?!n?al|ma)|signature"
    r"|auth(?!or))"
)
# scheme://userinfo@ : the userinfo may hold anything but / ? # @ and white space
# (not an image digest: docker-pullable://repo@sha256:...)
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{0,31}://)[^/?#@\s'\"<>]+@(?!sha(?:256|512):)")
# Authorization: Bearer x / Authorization=Basic x / "authorization": "token x"
_AUTH_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization['\"]?\s*[:=]\s*['\"]?)"
    r"(?:(bearer|basic|token|digest)\s+)?[^\s'\",;]+"
)
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+([A-Za-z0-9._~+/=-]{4,})")
# X-Api-Key: x, X-Auth-Token: x, Private-Token: x
_TOKEN_HEADER = re.compile(
    r"(?i)\b((?:x-)?[a-z0-9-]*(?:api-key|auth-token|access-token|private-token|token|secret)"
    r"['\"]?\s*:\s*['\"]?)(?![{\[])[^\s'\",;]+"
)
# ?X-Amz-Signature=..., &sig=..., ;token=...
_QUERY = re.compile(r"(?i)([?&;][a-z0-9_.\-]*" + _NAME_WORDS + r"[a-z0-9_.\-]*=)[^&#\s'\"<>]*")
# HF_TOKEN=..., AWS_SECRET_ACCESS_KEY=... (an env-style name, any case, then = or ": ")
_ASSIGNMENT = re.compile(
    r"(?i)\b([A-Za-z_][A-Za-z0-9_]*" + _NAME_WORDS + r"[A-Za-z0-9_]*['\"]?)(=|:\s?)(?!\*\*\*)"
    r"(['\"]?)([^\s'\",;&]+)"
)
# --api-key X, --hf-token=X, --password X
_FLAG = re.compile(
    r"(?i)(--[a-z0-9-]*(?:token(?!s|iz)|secret|password|passwd|credential|api-key|access-key)"
    r"[a-z0-9-]*)(=|\s+)(?!\*\*\*|-)(['\"]?)[^\s'\",;]+"
)


def secret_name(name: str) -> bool:
    """Whether an env variable's name says it holds a secret (HF_TOKEN, AWS_SECRET_ACCESS_KEY,
    DB_PASSWORD, OPENAI_API_KEY, ...)."""
    return not name.startswith(envnames.PREFIX) and bool(_SECRET_NAME.search(name))


def _assignment(match: re.Match[str]) -> str:
    """``NAME=value`` hidden, but for a reference to a secret (``secretKeyRef: ...``,
    ``secretName: hf-token``: names of objects, not their contents) or a structure
    (``secret: {...}``)."""
    name = match.group(1).strip("'\"").lower()
    ours = name.startswith(envnames.PREFIX.lower())  # our own variables hold no secret
    if ours or name.endswith(("ref", "name")) or match.group(4)[:1] in ("{", "["):
        return match.group(0)
    return match.group(1) + match.group(2) + match.group(3) + MARK


def _bearer(match: re.Match[str]) -> str:
    """``Bearer <token>`` hidden; prose (``a bearer token``, ``the basic policy``: a
    short or lower-case word) left alone."""
    token = match.group(2)
    if len(token) < 8 or (token.isalpha() and token.islower()):
        return match.group(0)
    return match.group(1) + " " + MARK


# Every name rule needs one of these words: a text without any (most of them) skips them.
_HINT = re.compile(r"(?i)token|secret|passw|passphrase|pwd|credential|key|sig|auth")


def _patterns(value: str) -> str:
    """The pattern rules. Texts up to 4 KiB are cached (at most 4096 of them: 16 MiB at
    worst): a status is rewritten with the same texts at every reconcile (a 20 KB status
    took 31 ms uncached, in the event loop; 0.2 ms cached, 5 ms cold with the name rules
    running on every text)."""
    return _cached(value) if len(value) <= 4096 else _uncached(value)


@functools.lru_cache(maxsize=4096)
def _cached(value: str) -> str:
    return _uncached(value)


def _uncached(value: str) -> str:
    if "://" in value:
        value = _USERINFO.sub(lambda m: m.group(1) + MARK + "@", value)
    lowered = value.lower()
    if "bearer" in lowered or "basic" in lowered:
        value = _BEARER.sub(_bearer, value)
    if not _HINT.search(value):
        return value
    if "auth" in lowered:
        value = _AUTH_HEADER.sub(
            lambda m: m.group(1) + (m.group(2) + " " if m.group(2) else "") + MARK, value
        )
    if "=" in value:
        value = _QUERY.sub(lambda m: m.group(1) + MARK, value)
    if "=" in value or ":" in value:
        value = _TOKEN_HEADER.sub(lambda m: m.group(1) + MARK, value)
        value = _ASSIGNMENT.sub(_assignment, value)
    if "--" in value:
        value = _FLAG.sub(lambda m: m.group(1) + m.group(2) + m.group(3) + MARK, value)
    return value


class Redactor:
    """The pattern rules plus the exact values of known secrets."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        found: List[str] = []
        for raw in values:
            if not isinstance(raw, str):
                continue
            value = raw.strip()
            if len(value) < MIN_VALUE_LENGTH or len(value) > MAX_VALUE_LENGTH:
                continue
            for form in _forms(value):
                if form not in found:
                    found.append(form)
            if len(found) >= MAX_VALUES:
                break
        found.sort(key=len, reverse=True)  # the longest first: a value inside another
        self.values: Tuple[str, ...] = tuple(found)
        self._exact = re.compile("|".join(re.escape(v) for v in found)) if found else None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str], secret_env: Iterable[str] = ()) -> Redactor:
        """The values to hide in a process's env: those of ``secret_env`` (the Secret-derived
        names, when known) and of every name :func:`secret_name` says is one (a switch
        value excepted), and the passwords of URLs in any value."""
        values = [environ[n] for n in sorted(set(secret_env)) if isinstance(environ.get(n), str)]
        for name, value in sorted(environ.items()):
            if secret_name(name) and isinstance(value, str) and not _SWITCH.match(value.strip()):
                values.append(value)
        # a URL's password is a value too: quoted elsewhere without its URL
        for value in [v for v in environ.values() if isinstance(v, str)]:
            for match in _USERINFO_PASSWORD.finditer(value[:MAX_VALUE_LENGTH]):
                values.append(match.group(1))
        return cls(values)

    def text(self, value: Any) -> str:
        """``value`` (made a str) with every secret replaced by :data:`MARK`."""
        out = value if isinstance(value, str) else str(value)
        if len(out) > MAX_TEXT:
            out = out[: MAX_TEXT - 1] + "\u2026"
        if self._exact is not None:
            out = self._exact.sub(MARK, out)
        return _patterns(out)

    def tree(self, value: Any, *, depth: int = 64) -> Any:
        """A JSON-like document with every string (keys too) passed through :meth:`text`;
        deeper than ``depth`` the rest is dropped."""
        if isinstance(value, str):
            return self.text(value)
        if depth <= 0:
            return None
        if isinstance(value, dict):
            return {self.text(k): self.tree(v, depth=depth - 1) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.tree(v, depth=depth - 1) for v in value]
        return value

    def report(self, report: Report) -> Report:
        """A ``preflight_contract.report.Report``, redacted in place (and returned): every
        text a report carries (messages, remediations, evidence, plan, inventory, GPU
        names, the error, the group summary)."""
        for check in report.checks:
            check.message = self.text(check.message)
            check.remediation = self.text(check.remediation)
            check.evidence = self.tree(check.evidence)
        for gpu in report.gpus:
            gpu.name = self.text(gpu.name)
        report.plan = self.tree(report.plan)
        report.inventory = self.tree(report.inventory)
        report.group = self.tree(report.group)
        report.error = self.text(report.error)
        report.host = self.text(report.host)
        return report


_USERINFO_PASSWORD = re.compile(r"(?i)\b[a-z][a-z0-9+.-]{0,31}://[^/?#@\s:]*:([^/?#@\s]+)@")


def _forms(value: str) -> List[str]:
    """The value as it may be quoted: itself, percent-encoded (a URL), JSON/repr-escaped."""
    import urllib.parse  # noqa: PLC0415  (stdlib; only when a secret is known)

    forms = [value, urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value)]
    escaped = value.encode("unicode_escape").decode("ascii").replace('"', '\\"')
    forms.append(escaped)
    return [f for f in forms if len(f) >= MIN_VALUE_LENGTH]


PATTERNS = Redactor()


def text(value: Any) -> str:
    """``value`` with the pattern rules applied (no known values: the operator's sinks,
    which never see a Secret's value)."""
    return PATTERNS.text(value)


def tree(value: Any) -> Any:
    """A JSON-like document with the pattern rules applied to every string."""
    return PATTERNS.tree(value)


# -- the names the injector passes: PREFLIGHT_SECRET_ENV --------------------------------

_ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]{0,252}\Z")
MAX_SECRET_ENV = 256


def secret_env_names(container: Mapping[str, Any], secrets_all: bool = False) -> List[str]:
    """The names of a container's env variables whose value comes from a Secret:
    ``env[].valueFrom.secretKeyRef``, and every name of an ``envFrom`` Secret whose keys we
    cannot list (returned as ``PREFIX*``, the prefix envFrom gives them; ``*`` for none).
    At most MAX_SECRET_ENV, each a valid env name, in order, each once."""
    out: List[str] = []

    def add(name: str) -> None:
        if name not in out and len(out) < MAX_SECRET_ENV:
            out.append(name)

    env_from = container.get("envFrom")
    for entry in env_from if isinstance(env_from, list) else []:
        if isinstance(entry, Mapping) and isinstance(entry.get("secretRef"), Mapping):
            prefix = entry.get("prefix")
            prefix = prefix if isinstance(prefix, str) and _ENV_NAME.match(prefix) else ""
            add(prefix + "*")
    env = container.get("env")
    for entry in env if isinstance(env, list) else []:
        if not isinstance(entry, Mapping):
            continue
        name = entry.get("name")
        source = entry.get("valueFrom")
        if (
            isinstance(name, str)
            and _ENV_NAME.match(name)
            and isinstance(source, Mapping)
            and isinstance(source.get("secretKeyRef"), Mapping)
        ):
            add(name)
    return out


def parse_secret_env(text: str) -> List[str]:
    """The checker's reading of PREFLIGHT_SECRET_ENV: names (``PREFIX*`` entries kept as
    they are), bounded; anything malformed is skipped, never an error (redaction only
    ever hides more)."""
    if not isinstance(text, str) or len(text) > MAX_SECRET_ENV_CHARS:
        return []
    out: List[str] = []
    for part in text.split(","):
        name = part.strip()
        bare = name[:-1] if name.endswith("*") else name
        if (bare == "" and name == "*") or _ENV_NAME.match(bare):
            out.append(name)
        if len(out) >= MAX_SECRET_ENV:
            break
    return out


# Names a process has that never come from a tenant's Secret through envFrom: the image's
# and the kubelet's own (PATH, HOSTNAME, the Service links), and ours.
_NOT_FROM_ENV_FROM = re.compile(
    r"(PATH|HOME|HOSTNAME|PWD|OLDPWD|SHLVL|TERM|LANG|LANGUAGE|TZ|USER|SHELL|_|"
    r"LC_\w*|KUBERNETES_\w*|PREFLIGHT_\w*|NVIDIA_\w*|CUDA_\w*|LD_\w*|PYTHON\w*|"
    r"\w+_SERVICE_HOST|\w+_SERVICE_PORT\w*|\w+_PORT(_\w+)?)\Z"
)


def expand_secret_env(names: Iterable[str], environ: Mapping[str, str]) -> FrozenSet[str]:
    """``PREFIX*`` entries (an ``envFrom`` Secret) made the names of ``environ`` they cover.
    For ``*`` (no prefix: any name may come from it) the image's and kubelet's own names
    are left out (:data:`_NOT_FROM_ENV_FROM`), and so are values that are switches, numbers
    or paths: hiding every ``/usr/bin`` or ``1`` would hide the report, not a secret."""
    out = set()
    for name in names:
        if not name.endswith("*"):
            out.add(name)
            continue
        prefix = name[:-1]
        for key, value in environ.items():
            if not key.startswith(prefix) or _NOT_FROM_ENV_FROM.match(key):
                continue
            if not prefix and (_SWITCH.match(value.strip()) or value.startswith("/")):
                continue
            out.add(key)
    return frozenset(out)


def for_process(environ: Mapping[str, str], secret_env: str = "") -> Redactor:
    """The checker's redactor: its own env, with the injector's PREFLIGHT_SECRET_ENV
    (``secret_env``, the value as the checker read it)."""
    names = expand_secret_env(parse_secret_env(secret_env), environ)
    return Redactor.from_environ(environ, names)


__all__ = [
    "MARK",
    "MIN_VALUE_LENGTH",
    "Redactor",
    "expand_secret_env",
    "for_process",
    "parse_secret_env",
    "secret_env_names",
    "secret_name",
    "text",
    "tree",
]
