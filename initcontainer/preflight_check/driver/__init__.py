"""The only package that talks to the GPU driver (libcuda via ctypes, NVML via pynvml).

``api`` is the interface; ``libcuda`` and ``nvml`` are the real bindings, imported
lazily by whoever needs them so that importing the interface stays cheap.
"""
