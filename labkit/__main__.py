"""``python -m labkit`` = the ``labkit`` console script."""
import sys

from labkit.cli import main

sys.exit(main())
