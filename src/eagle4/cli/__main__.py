import sys

from eagle4.cli import main

sys.exit(main())
