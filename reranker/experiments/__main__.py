import sys

from reranker.experiments import main

sys.exit(main())
