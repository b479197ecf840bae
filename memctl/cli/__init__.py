"""The memctl command line: a thin layer over the core that turns errors into one-line
messages. Command groups live in one module each and register on `app`."""

from memctl.cli.app import app, main

__all__ = ["app", "main"]
