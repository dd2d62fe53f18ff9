"""Finding a model's config files: a directory, the Hugging Face cache, or the Hub.

The imperative shell around ``modelfacts``: it reads files and (only at run time, in the
pod) asks the Hub, always with a short bounded timeout. Every failure becomes a reason
string, never an exception, so the model rules say "unknown" instead of crashing.

Order at run time, as vLLM itself resolves ``--model``:

1. the model is a directory (a mounted volume): its files;
2. the Hugging Face cache: ``HF_HUB_CACHE``, else ``HF_HOME``/hub, else
   ``~/.cache/huggingface/hub``; the snapshot ``refs/main`` points to (else the newest);
3. the Hub API at ``HF_ENDPOINT`` (default https://huggingface.co) with ``HF_TOKEN`` as a
   bearer token: ``/<org>/<name>/resolve/main/<file>``. Skipped when ``HF_HUB_OFFLINE``
   is set, as vLLM and huggingface_hub skip it.

Modules
-------
The package face re-exports the public names (``__all__`` as before; the other public
names too), so ``from preflight_contract.modelsource import ...`` reads as before; the
parts, split by concern (issue 37):

* ``find``: finding the config files (a directory, the cache, the Hub: ``find_model``);
* ``directory_check``: ``Readiness`` and whether a directory holds the weights vLLM loads
  (``check_directory``);
* ``source_check``: the cache, the Hub and the volume (``check_hub``), behind
  ``check_source``;
* ``writers``: the init containers that write the model's volume after the check
  (PREFLIGHT_MODEL_WRITERS) and ``written_later``;
* ``collect``: ``FoundModel`` and ``collect_model``, all of the above as one fact.
"""

from __future__ import annotations

from preflight_contract.modelfacts import INDEX
from preflight_contract.modelsource.collect import FoundModel, collect_model
from preflight_contract.modelsource.directory_check import BIN_INDEX as BIN_INDEX
from preflight_contract.modelsource.directory_check import MAX_HEADER_BYTES as MAX_HEADER_BYTES
from preflight_contract.modelsource.directory_check import READY_FAIL as READY_FAIL
from preflight_contract.modelsource.directory_check import READY_PASS as READY_PASS
from preflight_contract.modelsource.directory_check import READY_SKIP as READY_SKIP
from preflight_contract.modelsource.directory_check import READY_WARN as READY_WARN
from preflight_contract.modelsource.directory_check import SCHEMES as SCHEMES
from preflight_contract.modelsource.directory_check import SINGLE_WEIGHTS as SINGLE_WEIGHTS
from preflight_contract.modelsource.directory_check import ST_INDEX as ST_INDEX
from preflight_contract.modelsource.directory_check import TOKENIZER_FILES as TOKENIZER_FILES
from preflight_contract.modelsource.directory_check import TRUTHY as TRUTHY
from preflight_contract.modelsource.directory_check import WEIGHT_FORMATS as WEIGHT_FORMATS
from preflight_contract.modelsource.directory_check import Readiness
from preflight_contract.modelsource.directory_check import check_directory as check_directory
from preflight_contract.modelsource.find import DEFAULT_ENDPOINT as DEFAULT_ENDPOINT
from preflight_contract.modelsource.find import (
    DEFAULT_TIMEOUT_S,
    directory_lookup,
    fetch_hub,
    find_model,
    read_cache,
    read_model_dir,
)
from preflight_contract.modelsource.find import MAX_FILE_BYTES as MAX_FILE_BYTES
from preflight_contract.modelsource.find import Files as Files
from preflight_contract.modelsource.find import ModelLookup as ModelLookup
from preflight_contract.modelsource.find import cache_dirs as cache_dirs
from preflight_contract.modelsource.find import is_repo_id as is_repo_id
from preflight_contract.modelsource.find import keeps_credentials as keeps_credentials
from preflight_contract.modelsource.source_check import cached_snapshot as cached_snapshot
from preflight_contract.modelsource.source_check import check_hub as check_hub
from preflight_contract.modelsource.source_check import check_source
from preflight_contract.modelsource.source_check import on_volume as on_volume
from preflight_contract.modelsource.writers import (
    MAX_MODEL_WRITERS,
    model_writers_value,
    parse_model_writers,
    written_later,
)
from preflight_contract.modelsource.writers import (
    MAX_MODEL_WRITERS_CHARS as MAX_MODEL_WRITERS_CHARS,
)

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "INDEX",
    "MAX_MODEL_WRITERS",
    "FoundModel",
    "Readiness",
    "check_source",
    "collect_model",
    "directory_lookup",
    "fetch_hub",
    "find_model",
    "model_writers_value",
    "parse_model_writers",
    "read_cache",
    "read_model_dir",
    "written_later",
]
