"""The pure decisions: rules, the reconcile steps, injection, GPUValidation and Event bodies,
policy resolution. Nothing here does I/O or imports kopf, aiohttp, kubernetes or
prometheus_client; everything here can be tested with plain values."""
