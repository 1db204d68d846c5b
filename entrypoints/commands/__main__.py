"""`python -m entrypoints.commands`: the `runnel` command without its installed script."""

import sys

from entrypoints.commands.cli import main

sys.exit(main())
