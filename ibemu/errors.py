"""Errors that reach the user as one clear line (exit code 2), never a traceback."""


class UserError(Exception):
    """Bad input from the user: a scenario, a capture, an option."""
