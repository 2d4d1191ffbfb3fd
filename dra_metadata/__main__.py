"""``python -m dra_metadata``: the same as the ``dra-metadata`` command."""

import sys

from ._cli import console_main

sys.exit(console_main())
