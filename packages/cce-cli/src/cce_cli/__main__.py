"""Allow `python -m cce_cli` (through the same interrupt-safe entry as the script)."""

import sys

from cce_cli.entry import main

sys.exit(main())
