"""The projector process: ``events`` and ``snapshots`` into PostgreSQL, each row once.

The projection itself (rows, writer, positions) is :mod:`goaicore.projection`; this
package is the deployable process around it, run by ``goaicore projector``.
"""

from goaicore_projector.main import main

__all__ = ["main"]
