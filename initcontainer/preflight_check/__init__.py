"""vllm-preflight's checker: validates a pod's GPU view before vLLM starts.

Runs as the `preflight-check` init container (from a self-contained zipapp, with the
python3 of the vLLM image itself) and standalone as `vllm-preflight check`.
"""

__version__ = "0.1.0"
