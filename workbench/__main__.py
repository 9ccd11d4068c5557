"""``python -m workbench``: the command line (see ``workbench.cli``)."""
from workbench.cli import main

raise SystemExit(main())
