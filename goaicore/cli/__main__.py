"""``python -m goaicore.cli``."""

import sys

from goaicore.cli import main

sys.exit(main())
