"""Where a vLLM release sits in the generated per-release tables (vllm_versions.py), for
the static rules (operator core/rules/vllmversion.py) and the model rules (modelfacts/),
which both judge by a release. Standard library only.

A table maps a name to the ranges ``(first, last)`` of ``RELEASES`` in which it holds. A
release in ``RELEASES`` is answered exactly; one between two generated releases only
where both agree (the release may have changed it); one before the oldest only where the
oldest lacks it.
"""

from __future__ import annotations

import functools
import re
from typing import Dict, Optional, Tuple

from preflight_contract import vllm_versions as facts

Version = Tuple[int, ...]
Table = Dict[str, facts.Ranges]


@functools.lru_cache(maxsize=1024)  # the table's release strings, and images' tags
def version_key(text: str) -> Version:
    """``0.6.3.post1`` -> (0, 6, 3, 0, 1); ``0.9.0.1`` -> (0, 9, 0, 1); patch 0 if absent."""
    base, _, post = text.partition(".post")
    parts = [int(p) for p in base.split(".")]
    while len(parts) < 3:
        parts.append(0)
    if post:
        parts += [0] * (4 - len(parts)) + [int(post)]
    return tuple(parts)


KEYS: Tuple[Version, ...] = tuple(version_key(r) for r in facts.RELEASES)

# What an image's vLLM distribution metadata may say of its version: PEP 440's characters
# and a local part (``0.11.2+cu129``, ``0.6.3+rocm624``), bounded. One definition: the
# checker keeps only such a text from the image it runs in, and the operator checks a pod's
# report against the same (a report is a claim; issue 38).
_INSTALLED = re.compile(r"[0-9A-Za-z.+_!-]{1,64}")
_RELEASE = re.compile(r"(\d+(?:\.\d+){1,3})(?:\.post(\d+))?")


def installed_version(value: object) -> str:
    """``value`` when it is such a version text, else "" (unknown)."""
    return value if isinstance(value, str) and _INSTALLED.fullmatch(value) else ""


def installed_release(text: str) -> Optional[Version]:
    """The release of an installed version: ``0.11.2+cu129`` -> (0, 11, 2); ``0.6.3.post1``
    -> (0, 6, 3, 0, 1); a dev or rc build, or anything else: None (compare nothing)."""
    found = _RELEASE.fullmatch(text.split("+", 1)[0])
    return version_key(found.group(0)) if found else None


def bracket(release: str) -> Tuple[Optional[int], Optional[int], bool]:
    """(index of the generated release at or just below, just above, exactly one of them)."""
    key = version_key(release)
    lo = hi = None
    for i, k in enumerate(KEYS):
        if k == key:
            return i, i, True
        if k < key:
            lo = i
        elif hi is None:
            hi = i
    return lo, hi, False


def holds(table: Table, name: str, index: int) -> bool:
    key = KEYS[index]
    return any(version_key(a) <= key <= version_key(b) for a, b in table.get(name, ()))


def fact(table: Table, name: str, release: str) -> Optional[bool]:
    """Does ``name`` hold in ``release``? None where the generated releases around it
    disagree (or it is after the newest and the newest has it: a later one may not)."""
    lo, hi, _ = bracket(release)
    answers = {holds(table, name, i) for i in (lo, hi) if i is not None}
    if lo is None and answers == {False}:
        return False  # older than every generated release, and the oldest lacks it
    return answers.pop() if len(answers) == 1 else None


def first_holding(table: Table, name: str) -> Optional[str]:
    """The first generated release in which ``name`` holds."""
    found = [version_key(a) for a, _ in table.get(name, ())]
    return facts.RELEASES[KEYS.index(min(found))] if found else None


# vllm_versions.MARKERS: an unregistered architecture goes to the Transformers backend
TRANSFORMERS_FALLBACK = "Transformers backend fallback"


def registers(arch: str, release: str) -> Optional[bool]:
    """Does vLLM ``release`` register architecture ``arch`` (its ``_VLLM_MODELS``, before
    0.6.3 ``_MODELS``)? None where the releases around it disagree."""
    return fact(facts.ARCHITECTURES, arch, release)


def falls_back_to_transformers(release: str) -> Optional[bool]:
    """Does vLLM ``release`` send an unregistered architecture to its Transformers backend
    (0.7.3 on) rather than fail at once? None where not known."""
    return fact(facts.MARKERS, TRANSFORMERS_FALLBACK, release)


def first_registering(arch: str) -> Optional[str]:
    """The first generated release that registers ``arch``."""
    return first_holding(facts.ARCHITECTURES, arch)
