"""``python -m goaicore``."""

import sys

from goaicore.cli import main

sys.exit(main())
