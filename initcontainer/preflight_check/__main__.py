"""`python -m preflight_check` and the zipapp: run `vllm-preflight check` directly."""

from __future__ import annotations

import sys


def run() -> int:
    from preflight_check.cli import main  # noqa: PLC0415 - keeps `import preflight_check.__main__` cheap

    return main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(run())
