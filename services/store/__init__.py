"""The store worker (Faust): folds ``events`` into the ``snapshots`` table."""

from services.store.app import StoreApp, create_app

__all__ = ["StoreApp", "create_app"]
