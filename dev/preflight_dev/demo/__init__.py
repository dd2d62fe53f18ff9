"""`make demo` (``python -m preflight_dev.demo``): see __main__.py."""
