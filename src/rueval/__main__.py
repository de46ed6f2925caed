"""`python -m rueval` runs the command line."""

from rueval.cli import main

if __name__ == "__main__":  # not when a spawned worker process imports this module (rueval.audit.dataset_audit)
    main()
