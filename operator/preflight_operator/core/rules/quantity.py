"""Kubernetes resource quantities ("2", "512Mi", "1G", "2000m", "1E", 1e9), exactly.

The grammar and the value are apimachinery's (k8s.io/apimachinery/pkg/api/resource,
``parseQuantityString``, ``ParseQuantity`` and the suffixer), so that a quantity the API
server admits is never "malformed" here and one it rejects never passes:

* a sign, digits, an optional ``.`` and digits (each part may be empty: ``+`` and ``.`` are
  zero, as they are to the API server);
* then a suffix: binary ``Ki Mi Gi Ti Pi Ei``, decimal ``n u m "" k M G T P E``, or a decimal
  exponent ``e``/``E`` followed by a signed integer. ``E`` alone is the suffix 10^18 and
  ``Ei`` is 2^60: ``E`` is an exponent only when digits follow it;
* surrounding spaces are dropped, as ``Quantity.UnmarshalJSON`` does for every manifest
  (it trims the JSON text: a tab or newline arrives escaped as ``\\t`` and is not trimmed,
  so only the Unicode spaces JSON leaves as they are count);
* a non-zero value is rounded away from zero to a whole number of nano units, and a binary
  quantity is capped at 2^63-1, as the API server stores them.

Not applied here, because it belongs to the field: the API server's v1 conversion rounds
every ResourceList value (requests, limits, a quota's hard) up to milli units, so a GPU
limit of "1n" is stored as "1m" (not a whole device either way).
tests/e2e/test_quantity_roundtrip.py checks both against a real API server.

Bounded work for hostile input: more than ``MAX_DIGITS`` digits or an exponent beyond
``MAX_EXPONENT`` is None ("not a quantity we evaluate"), never seconds of big-number
arithmetic, and never Python's 4300-digit ``int()`` limit.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import NamedTuple

MAX_DIGITS = 3000
MAX_EXPONENT = 1000
_INT64_MAX = 2**63 - 1
_NANO = 10**9

_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
# unicode.IsSpace characters that encoding/json writes unescaped (strings.TrimSpace drops them)
_JSON_SPACES = " \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u202f\u205f\u3000"

# byte multiples, for format_bytes
_SUFFIX = {
    "Ei": Fraction(2**60),
    "Pi": Fraction(2**50),
    "Ti": Fraction(2**40),
    "Gi": Fraction(2**30),
    "Mi": Fraction(2**20),
    "Ki": Fraction(2**10),
}


class _Parts(NamedTuple):
    negative: bool
    integer: str  # digits before the point, leading zeros dropped ("" for none)
    fraction: str  # digits after the point
    suffix: str
    has_digits: bool  # any digit before the suffix, zeros included


def _scan(text: str) -> _Parts | None:
    """apimachinery's parseQuantityString: the pieces, or None for ErrFormatWrong."""
    pos, end = 0, len(text)
    negative = False
    if pos < end and text[pos] in "+-":
        negative = text[pos] == "-"
        pos += 1
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    has_digits = pos > start
    integer = text[start:pos].lstrip("0")
    fraction = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        fraction = text[start:pos]
        has_digits = has_digits or pos > start
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        return None  # something after the suffix that is not an exponent's digits
    return _Parts(negative, integer, fraction, text[suffix_start:], has_digits)


def _exponent(suffix: str) -> int | None:
    """The suffixer's `e<int>` / `E<int>`: strconv.ParseInt(.., 10, 64), then int32()."""
    digits = suffix[1:]
    body = digits[1:] if digits[:1] in ("+", "-") else digits
    if not body or not all(c in _DIGITS for c in body) or len(body) > 19:
        return None
    value = int(digits)
    if not -(2**63) <= value < 2**63:
        return None
    return (value + 2**31) % 2**32 - 2**31  # Go's int32(parsed) wraps


def parse_quantity(value: object) -> Fraction | None:
    """The quantity's value as the API server stores it, or None if it rejects it."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Fraction(value) if abs(value).bit_length() <= 4 * MAX_DIGITS else None
    if isinstance(value, float):
        return _stored(Fraction(value), binary=False) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    return _parse_quantity_text(value.strip(_JSON_SPACES))


# The same few quantities ("2", "1Gi") are read several times per container by the rules
# (the device count by four rules, /dev/shm by three): parsed once each. Fractions are
# immutable, so sharing them is safe; 4,096 texts bound the memory (each is at most a
# manifest's field).
@functools.lru_cache(maxsize=4096)
def _parse_quantity_text(text: str) -> Fraction | None:
    """A quantity string (JSON spaces stripped), as apimachinery's ParseQuantity reads it."""
    if not text:
        return None
    parts = _scan(text)
    if parts is None:
        return None
    if len(parts.integer) + len(parts.fraction) > MAX_DIGITS:
        return None
    scale = _suffix_scale(parts.suffix)
    if scale is None:
        return None
    base, exponent, binary = scale
    if not parts.has_digits and (exponent >= 50 if binary else exponent < -9):
        # without digits ("Pi", "-e-12") apimachinery's exact path is used and parses the
        # empty number text, which fails; its int64 path (the other suffixes) gives zero
        return None
    digits = (parts.integer + parts.fraction) or "0"
    if digits.strip("0") == "":
        return Fraction(0)  # zero whatever the exponent
    if abs(exponent) > MAX_EXPONENT:
        return None
    amount = Fraction(int(digits), 10 ** len(parts.fraction)) * Fraction(base) ** exponent
    stored = _stored(amount, binary=binary)
    return -stored if parts.negative else stored


def _suffix_scale(suffix: str) -> tuple[int, int, bool] | None:
    """(base, exponent, binary?) of a suffix: decimal (k, M), binary (Ki) or e/E notation."""
    if suffix in _DECIMAL:
        return 10, _DECIMAL[suffix], False
    if suffix in _BINARY:
        return 2, _BINARY[suffix], True
    if len(suffix) > 1 and suffix[0] in "eE":
        found = _exponent(suffix)
        return None if found is None else (10, found, False)
    return None


def _stored(amount: Fraction, *, binary: bool) -> Fraction:
    """Round a magnitude up to whole nano units; cap binary quantities at 2^63-1."""
    sign = -1 if amount < 0 else 1
    magnitude = abs(amount)
    nanos = magnitude * _NANO
    if nanos.denominator != 1:
        magnitude = Fraction(math.ceil(nanos), _NANO)
    if binary and magnitude > _INT64_MAX:
        magnitude = Fraction(_INT64_MAX)
    return sign * magnitude


def format_bytes(amount: int | Fraction) -> str:
    """A byte count the way a manifest would say it (1Gi, 64Mi, 1500000)."""
    value = Fraction(amount)
    for suffix, unit in _SUFFIX.items():
        if value >= unit and value % unit == 0:
            return f"{value // unit}{suffix}"
    return str(int(value)) if value.denominator == 1 else str(float(value))
