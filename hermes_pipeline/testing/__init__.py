"""Test doubles that ship with the package, for dry runs and tests (never used by a run itself)."""
