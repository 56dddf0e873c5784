"""Command-line interface (typer).  Each sub-command lives in its own module."""
