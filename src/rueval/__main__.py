"""`python -m rueval` runs the command line."""

from rueval.cli import main

main()
