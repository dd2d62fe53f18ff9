"""The rules, one small pure function each, registered by importing these modules.

Every module of this package is imported here, found by name (``pkgutil``): a new module
of rules needs no line anywhere else. Before, each was listed by hand, and a module left
off the list registered nothing with no test failing (tried: a throwaway rule in a new
module was simply never run). Order matters only for presentation: findings are listed in
module-name order within a severity (the hand-written list was that order already).
"""

from __future__ import annotations

import importlib
import pkgutil

MODULES: tuple[str, ...] = tuple(
    sorted(info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_"))
)

for _name in MODULES:
    importlib.import_module(f"{__name__}.{_name}")
