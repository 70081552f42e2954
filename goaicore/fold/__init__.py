"""The pure fold of conversation events into snapshots."""

from goaicore.fold.fold import fold, python_fold
from goaicore.fold.policy import DEFAULT_POLICY, FOLD_VERSION, FoldPolicy

__all__ = ["DEFAULT_POLICY", "FOLD_VERSION", "FoldPolicy", "fold", "python_fold"]
