"""The store worker (Faust): folds ``events`` into the ``snapshots`` table."""

from goaicore_store.app import create_app
from goaicore_store.topology import StoreApp

__all__ = ["StoreApp", "create_app"]
