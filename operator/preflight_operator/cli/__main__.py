"""`python -m preflight_operator.cli` is `vllm-preflight`."""

import sys

from preflight_operator.cli import main

sys.exit(main())
