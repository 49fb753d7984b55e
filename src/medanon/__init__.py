"""medanon: publish medical microdata without giving away the people in it."""

# Keep this module light: every ``medanon`` command imports it, ``--version`` included. Public
# names that need pandas, DuckDB or matplotlib belong behind a module ``__getattr__`` (as in
# medanon.store and medanon.report); tests/system/test_cli_startup.py checks the module set.
__version__ = "0.1.0"
