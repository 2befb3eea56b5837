"""`python -m cce_fixtures` runs the same command as the `cce-fixtures` script."""

from cce_fixtures.cli import main

raise SystemExit(main())
