"""The projector: ``events`` and ``snapshots`` into PostgreSQL, each row exactly once."""

from goaicore.projection.db import ForeignProjectionError, PositionConflictError
from services.projector.projector import Projector

__all__ = ["ForeignProjectionError", "PositionConflictError", "Projector"]
