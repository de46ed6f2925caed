"""Results files and their presentation."""
