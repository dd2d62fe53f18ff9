"""`make demo` (``python -m preflight_operator.demo``): see __main__.py."""
