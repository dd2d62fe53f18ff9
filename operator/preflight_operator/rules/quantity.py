"""Kubernetes resource quantities ("2", "512Mi", "1G", "2000m", 1e9), exactly.

Only what the rules need: a value as a Fraction, or None when Kubernetes would reject it.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_SUFFIX = {
    "": Fraction(1),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
# number, then a binary/decimal SI suffix or a decimal exponent (apimachinery's grammar)
_QUANTITY = re.compile(
    r"^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[mkMGTPE]|[eE][+-]?[0-9]+)?$"
)


def parse_quantity(value: object) -> Fraction | None:
    """The quantity's exact value, or None if it is not a valid quantity."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(value) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    match = _QUANTITY.match(value.strip())
    if not match:
        return None
    sign, number, suffix = match.groups()
    suffix = suffix or ""
    try:
        amount = Fraction(number)
    except (ValueError, ZeroDivisionError):
        return None
    if suffix[:1] in ("e", "E"):
        exponent = int(suffix[1:])
        if abs(exponent) > 64:  # keep a hostile "1e999999999" cheap
            return None
        amount *= Fraction(10) ** exponent
    else:
        amount *= _SUFFIX[suffix]
    return -amount if sign == "-" else amount


def format_bytes(amount: int | Fraction) -> str:
    """A byte count the way a manifest would say it (1Gi, 64Mi, 1500000)."""
    value = Fraction(amount)
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        unit = _SUFFIX[suffix]
        if value >= unit and value % unit == 0:
            return f"{value // unit}{suffix}"
    return str(int(value)) if value.denominator == 1 else str(float(value))
