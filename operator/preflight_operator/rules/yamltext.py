"""YAML the rules read out of objects (a --config file from a ConfigMap, a RayService's
serveConfigV2): without aliases, and bounded.

PyYAML builds an alias as a shared reference, so loading a billion-laughs document is
cheap; walking or printing it is not (a few lines of `&a [*b, *b, ...]` are 10^9 items to
`json.dumps` or `str`). The rules turn such values into command-line tokens, and they may
run inside the operator (small objects are judged in-process, rulesworker.plain): no
alias is taken, and no text over MAX_BYTES. vLLM's --config files and Ray Serve configs
have no use for aliases.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_BYTES = 1 << 20


class NotRead(yaml.YAMLError):
    """Valid YAML perhaps, but not read here (an alias, or too large): unknown, not wrong."""


class _NoAliasLoader(yaml.SafeLoader):
    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            mark = event.start_mark
            raise NotRead(
                f"an alias (*{event.anchor}) at line {mark.line + 1}: aliases are not read here"
            )
        return super().compose_node(parent, index)


def load(text: str) -> Any:
    """The document; raises NotRead (an alias, too large) or yaml.YAMLError (not YAML)."""
    if len(text) > MAX_BYTES:
        raise NotRead(f"larger than {MAX_BYTES >> 20} MiB")
    return yaml.load(text, Loader=_NoAliasLoader)
