"""The fake NVML/CUDA driver (``fake``), the checker run over it in-process (``harness``) and
its child-process entry point (``fake_child``); the tests are in tests/fakedriver."""
