"""Which vLLM an image runs, and what that release accepts (issue 38).

Every rule used to read the command line as one release reads it (0.33.0). Clusters run
many: ``vllm/vllm-openai:v0.4.1`` does not read ``VLLM_PORT`` (vLLM reads it since 0.4.3,
vllm-project/vllm#4914), and ``--data-parallel-size-local`` on ``v0.6.3`` exits with
``error: unrecognized arguments``. The per-release facts are generated from the releases'
own source (preflight_contract.vllm_versions, hack/vllm/gen_versions.py).

The version is exact only for vLLM's own images with a release tag: the tag is the
release they were built from. ``latest``, ``nightly``, a digest, a custom image (even
one ``FROM vllm/vllm-openai:v0.6.3``: it may install another vLLM) are unknown, and the
answer says so.
"""

from __future__ import annotations

import datetime
import difflib
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from preflight_contract import vllm_versions as facts
from preflight_contract.vllm_release import KEYS, bracket, fact, holds, version_key

# vLLM's own images (docker.io/vllm/...): the tag names the release. -cuXXX and
# architecture suffixes are builds of the same release.
_OFFICIAL = re.compile(
    r"^(?:(?:docker\.io|index\.docker\.io|registry-1\.docker\.io)/)?"
    r"vllm/vllm-(?:openai|tpu)(?:-(?:cpu|rocm|xpu))?"
    r":v?(?P<version>\d+\.\d+(?:\.\d+)?(?:\.\d+)?(?:\.post\d+)?)"
    r"(?:-(?:cu\d+|x86_64|aarch64|arm64|amd64|ubuntu\d+\.\d+))*$"
)
_OFFICIAL_REPO = re.compile(
    r"^(?:(?:docker\.io|index\.docker\.io|registry-1\.docker\.io)/)?"
    r"vllm/vllm-(?:openai|tpu)(?:-(?:cpu|rocm|xpu))?(?::(?P<tag>[^@]*))?$"
)
# tags of vLLM's own images that move: the newest release (or newer), not one release
_MOVING = ("latest", "nightly")

OLDEST = facts.RELEASES[0]
NEWEST = facts.RELEASES[-1]

# An image whose release is not known (a custom or vendor image, an unnamed one) is taken
# as one of the releases PyPI received in the year up to the newest generated one. A
# heuristic, not a measurement: an option every release of that year accepts is not worth
# a word (`--data-parallel-size-local`, since 0.9.0 of May 2025), one that some of them
# refuse is (`--disable-log-requests`: 0.17.0-0.32.0 refuse it). Measured on 2026-12-07
# with `vllm-preflight lint --format json tests/data/realworld`, counting this rule's
# findings: 8 workloads warn with 365 days, 11 with 730, 36 with every release since
# 0.4.1 (22 of them for `--kv-transfer-config` of 0.6.5), 5 with the newest alone.
UNKNOWN_SPAN_DAYS = 365


def _recent(span_days: int) -> tuple[int, ...]:
    newest = datetime.date.fromisoformat(facts.UPLOADED[-1])
    return tuple(
        i
        for i, day in enumerate(facts.UPLOADED)
        if (newest - datetime.date.fromisoformat(day)).days <= span_days
    )


RECENT = _recent(UNKNOWN_SPAN_DAYS)
RECENT_TEXT = f"{facts.RELEASES[RECENT[0]]}-{NEWEST}, {facts.UPLOADED[RECENT[0]][:7]} on"


@dataclass(frozen=True)
class ImageVersion:
    """The vLLM an image runs, as far as the image reference says.

    ``release``: the version (``0.6.3``) when exact, else None. ``newest``: a moving tag
    of vLLM's own image (``latest``, ``nightly``): the newest release or later. ``why``:
    how it was decided, for messages."""

    release: str | None
    why: str
    newest: bool = False

    @property
    def known(self) -> bool:
        return self.release is not None


def image_version(image: object) -> ImageVersion:
    """Resolve the vLLM release of an image reference; never raises."""
    if not isinstance(image, str) or not image or len(image) > 512:
        return ImageVersion(None, "the image is not named")
    name, _, digest = image.partition("@")
    found = _OFFICIAL.match(name)
    if found:
        return ImageVersion(found.group("version"), f"the tag of vLLM's own image {name}")
    repo = _OFFICIAL_REPO.match(name)
    if repo:
        tag = repo.group("tag") or ("" if digest else "latest")
        if tag in _MOVING or "nightly" in tag:
            return ImageVersion(
                None, f"{name} is a moving tag (vLLM {NEWEST} or later)", newest=True
            )
        if not tag and digest:
            return ImageVersion(None, f"{image[:80]} names a digest this table does not know")
        return ImageVersion(None, f"the tag {tag!r} of {name.split(':')[0]} names no release")
    return ImageVersion(
        None,
        f"{name[:80]} is not vLLM's own image (a custom or vendor image may run any vLLM)",
    )


@functools.cache  # 2 x len(RELEASES) sets, from the static tables
def options_at(index: int, serve: bool) -> frozenset[str]:
    tables = (facts.OPTIONS, facts.SERVE_ONLY) if serve else (facts.OPTIONS,)
    return frozenset(n for t in tables for n in t if holds(t, n, index))


def ambiguous(name: str, index: int, serve: bool) -> tuple[str, ...]:
    """The release's options a long ``name`` abbreviates when it abbreviates more than one
    and is none of them: argparse then exits with "ambiguous option: --device could match
    --device-ids, --device-memory-utilization" (vLLM 0.34.0's own parser, the oracle)."""
    options = options_at(index, serve)
    if not name.startswith("--") or name in options:
        return ()
    matches = tuple(sorted(o for o in options if o.startswith(name)))
    return matches if len(matches) > 1 else ()


def abbreviation(name: str, version: ImageVersion, serve: bool) -> str | None:
    """The one option a long ``name`` abbreviates in the image's exact release (argparse's
    unique prefix), where ``name`` is no option of that release itself; None otherwise
    (the release not known exactly, ``name`` an option, or no single match)."""
    if version.release is None or not name.startswith("--"):
        return None
    lo, _, exact = bracket(version.release)
    if not exact or lo is None:
        return None
    options = options_at(lo, serve)
    matches = [o for o in options if o.startswith(name)]
    return matches[0] if name not in options and len(matches) == 1 else None


def _accepts(name: str, index: int, serve: bool) -> bool:
    """Does the release's parser take ``name`` as an option: exactly, as argparse's
    unique-prefix abbreviation (an abbreviation of several is refused: ``ambiguous``), or
    for one dash as a two-character option with its value attached (``-q4``)."""
    options = options_at(index, serve)
    if name in options:
        return True
    long = name.startswith("--")
    prefixed = sum(1 for o in options if o.startswith(name) and o.startswith("--") == long)
    if prefixed:
        return prefixed == 1 or not long
    return not long and len(name) > 2 and name[:2] in options


@functools.lru_cache(maxsize=4096)  # bounded: names come from any manifest
def releases_accepting(name: str, serve: bool) -> tuple[int, ...]:
    """The generated releases whose parser accepts ``name``. Memoised with options_at:
    uncached, judging one option walked every release's whole table (62 ms an option,
    about 0.5 s for a container's command line at admission, measured on 2026-12-06)."""
    return tuple(i for i in range(len(facts.RELEASES)) if _accepts(name, i, serve))


def ranges_text(indexes: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0.4.1-0.4.3, 0.5.1`` (generated releases)."""
    out: list[str] = []
    start = prev = None
    for i in [*indexes, -2]:
        if start is not None and i == prev + 1:  # type: ignore[operator]
            prev = i
            continue
        if start is not None and prev is not None:
            a, b = facts.RELEASES[start], facts.RELEASES[prev]
            out.append(a if a == b else f"{a}-{b}")
        start = prev = i
    return ", ".join(out)


@dataclass(frozen=True)
class OptionVerdict:
    """What the releases say about one option: ``refused`` (the judged release, or every
    release, refuses it: exact), ``doubt`` (some release that may be the image's lacks it;
    names them), or neither."""

    refused: bool
    doubt: bool
    detail: str
    error: str = ""  # argparse's own words where they are not "unrecognized arguments"


def judge_option(name: str, version: ImageVersion, serve: bool) -> OptionVerdict:
    """``name``: the option string as argparse sees it (``--x``, ``-x``; no ``=value``)."""
    having = releases_accepting(name, serve)
    everywhere = len(having) == len(facts.RELEASES)
    if everywhere:
        return OptionVerdict(False, False, "")
    if not having:
        # Exact only for a release the table spans: a release after NEWEST (a `latest`
        # pulled after this table was generated, a custom image) may have added it.
        within = version.release is not None and version_key(version.release) <= KEYS[-1]
        return OptionVerdict(
            within,
            not within,
            f"no vLLM release from {OLDEST} to {NEWEST} accepts it"
            + ("" if within else " (a later release may)")
            + _closest(name, None, serve),
        )
    first = facts.RELEASES[having[0]]
    if version.release is not None:
        lo, hi, exact = bracket(version.release)
        if exact and lo is not None:
            if lo in having:
                return OptionVerdict(False, False, "")
            several = ambiguous(name, lo, serve)
            if several:
                return OptionVerdict(
                    True,
                    False,
                    f"vLLM {version.release} reads it as an abbreviation of "
                    f"{', '.join(several[:4])}",
                    f"ambiguous option: {name} could match {', '.join(several)}",
                )
            since = (
                f"vLLM accepts it in {ranges_text(having)}"
                if having[0] < lo
                else f"vLLM accepts it since {first}"
            )
            return OptionVerdict(
                True,
                False,
                f"vLLM {version.release} does not accept it ({since})" + _closest(name, lo, serve),
            )
        sides = [i for i in (lo, hi) if i is not None]
        if sides and all(i in having for i in sides):
            return OptionVerdict(False, False, "")
        return OptionVerdict(
            False,
            True,
            f"vLLM {version.release} is not in the generated table; the releases beside it "
            + ", ".join(
                f"{facts.RELEASES[i]} {'accepts' if i in having else 'refuses'} it" for i in sides
            ),
        )
    if version.newest:
        if len(facts.RELEASES) - 1 in having:
            return OptionVerdict(False, False, "")
        return OptionVerdict(
            False,
            True,
            f"the newest release known here ({NEWEST}) does not accept it (accepted in "
            f"{ranges_text(having)})",
        )
    # Unknown release: one of the year's releases (RECENT). Options that only older
    # releases lack (`--distributed-executor-backend` before 0.4.3) are not worth a word.
    refusing = [i for i in RECENT if i not in having]
    if not refusing:
        return OptionVerdict(False, False, "")
    verb = "refuses" if len(refusing) == 1 else "refuse"
    return OptionVerdict(
        False, True, f"vLLM {ranges_text(refusing)} {verb} it (accepted in {ranges_text(having)})"
    )


def _closest(name: str, index: int | None, serve: bool) -> str:
    pool: set[str] = set()
    if index is None:
        for i in range(len(facts.RELEASES)):
            pool |= options_at(i, serve)
    else:
        pool = set(options_at(index, serve))
    close = difflib.get_close_matches(name, sorted(pool), n=1, cutoff=0.75)
    return f"; did you mean {close[0]}?" if close else ""


def env_read(name: str, version: ImageVersion) -> bool | None:
    """Does the image's vLLM read environment variable ``name`` (vllm/envs.py)? None when
    the version is not known (or falls between generated releases that disagree)."""
    return _fact(facts.ENV, name, version)


def marker(name: str, version: ImageVersion) -> bool | None:
    return _fact(facts.MARKERS, name, version)


def _fact(table: dict[str, facts.Ranges], name: str, version: ImageVersion) -> bool | None:
    return None if version.release is None else fact(table, name, version.release)
