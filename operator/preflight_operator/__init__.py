"""vllm-preflight's operator: admission webhooks, injection and result collection.

Importing this package imports nothing heavy; kopf and the Kubernetes client are loaded
by the modules that need them, so `vllm-preflight check` and `lint` start fast.
"""

__version__ = "0.1.0"
