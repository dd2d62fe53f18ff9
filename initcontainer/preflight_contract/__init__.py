"""preflight_contract: the vocabulary the checker and the operator share, defined once.

The checker (``preflight_check``, run inside vLLM images from a zipapp) and the operator
(``preflight_operator``) both import this package, and the operator imports nothing else
of the checker's side. It holds each shared concept once: the report schema (``report``),
the verdicts and their order (``verdicts``), the policy actions (``actions``), the check
ids (``check_ids``), the ``PREFLIGHT_*`` environment the injector writes and the checker
reads (``env``), vLLM's command line (``vllm_args``) and the model rules with where model
configs come from (``modelfacts``, ``modelsource``).

The rule: the standard library only, Python >= 3.9 (the zipapp runs with whatever python3
a vLLM image ships), strict typing. Nothing of the checker, the operator or the harness,
and no third-party package; import-linter enforces it in ``make lint`` (pyproject.toml,
``[tool.importlinter]``; docs/ARCHITECTURE.md, "Packages and their allowed dependencies").
"""
