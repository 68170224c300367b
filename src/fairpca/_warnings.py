"""Warnings attributed to the user's line, whatever the depth of the call inside fairpca."""

import sys
import warnings
from pathlib import Path

__all__ = ["warn"]

_PACKAGE_DIR = str(Path(__file__).resolve().parent)


def warn(message, category=UserWarning):
    """Issue ``message`` as ``category``, pointing at the first caller outside fairpca.

    The stack level is found by walking out of the package's frames, so no
    caller has to count how deep inside the package it sits.
    """
    frame, level = sys._getframe(1), 2
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(
        _PACKAGE_DIR
    ):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
