"""Shared test setup: speed gates report instead of fail (shared CI machines are noisy)."""
import os

# Set before any kernel is started so nbval / nbclient kernels inherit it.
os.environ.setdefault("LABKIT_SPEED", "report")
os.environ.setdefault("PYTHONWARNINGS", "ignore::DeprecationWarning")
