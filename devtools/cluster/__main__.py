"""``python -m devtools.cluster``: what ``scripts/cluster`` runs."""

import sys

from devtools.cluster.cli import main

sys.exit(main())
