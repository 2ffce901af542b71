"""Helpers for attnscope's own tests, benchmarks and tools — never imported by the library.

* :mod:`attnscope.testing.tiny` — tiny random checkpoints written by ``transformers`` (a test
  dependency) for every family, to check parity against it.
* :mod:`attnscope.testing.headless` — Debian's Chromium driven headless by Playwright (a test
  dependency), for the browser tests, the viewer benchmark and the screenshots.

``tests/test_layering.py`` checks that no other module of the package imports this one.
"""
