"""Will vLLM find the weights? (check ``model-source``)

The answer was made during collection by ``preflight_contract.modelsource.check_source``
(in the pod's own env and volumes, bounded by the check's deadline): a local directory
holds config.json, every weight file its index names at its full size, and a tokenizer;
a Hub repo id has a complete cached copy, or the Hub answers, the revision exists, a gated
repo accepts the token and the cache has room for the download; ``HF_HUB_OFFLINE`` with
no complete cache is a failure; s3://, gs://, pvc:// are recognised and not checked.

A slow or unreachable Hub is a warning (vLLM may still reach it later); only an answer
that settles it (HTTP 401/403/404 with the Hub's error code, a missing or short file on a
volume) fails.

Unless an init container of the pod writes that volume after the check
(``PREFLIGHT_MODEL_WRITERS``, named by the injector): then what the check sees is not the
copy vLLM will load, and a fail becomes a warning naming the writers
(``preflight_contract.modelsource.written_later`` says why every fail is such a one). A
value that is not a list of container names is ignored, with a note in the result.
"""

from __future__ import annotations

from typing import Any, Dict, List

from preflight_check.checks.base import check, result, skipped
from preflight_check.facts import Facts
from preflight_check.options import Options
from preflight_contract import envnames
from preflight_contract.modelsource import written_later
from preflight_contract.report import CheckResult
from preflight_contract.verdicts import FAIL, PASS, SKIP, WARN

MODEL_SOURCE = "model-source"
_STATUS = {"pass": PASS, "warn": WARN, "fail": FAIL, "skip": SKIP}


@check(MODEL_SOURCE)
def model_source(facts: Facts, options: Options) -> List[CheckResult]:
    model = options.model_args.get("model")
    if not model:
        return skipped(MODEL_SOURCE, "no model: give the vLLM command line (--vllm-args)")
    found = facts.model
    ready = found.ready if found is not None else None
    writers = found.writers if found is not None else []
    ignored = found.writers_ignored if found is not None else ""
    note = f"; {envnames.MODEL_WRITERS} ignored: {ignored}" if ignored else ""
    extra: Dict[str, Any] = {"writers_ignored": ignored} if ignored else {}
    if ready is None:
        return result(
            MODEL_SOURCE,
            WARN,
            f"the source of model {model!r} was not checked before the deadline "
            f"({found.where if found is not None else 'not looked up'}){note}",
            "raise the check's deadline (PREFLIGHT_DEADLINE), or check the network path to the Hub",
            **extra,
        )
    ready = written_later(ready, writers)
    return result(
        MODEL_SOURCE,
        _STATUS.get(ready.status, WARN),
        f"model {model}: {ready.message} ({ready.ms:.0f} ms){note}",
        ready.fix,
        **{**ready.evidence, **extra},
    )
