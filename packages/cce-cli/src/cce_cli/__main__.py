"""Allow `python -m cce_cli`."""

import sys

from cce_cli.main import main

sys.exit(main())
