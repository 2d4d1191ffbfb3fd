"""``python -m dra_metadata``: the same as the ``dra-metadata`` command."""

import sys

from ._cli import main

sys.exit(main())
