"""``python -m labkit.bench <lab|all>`` — the same as ``labkit bench``."""
from .cli import main

raise SystemExit(main())
