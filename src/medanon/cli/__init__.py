"""The ``medanon`` command line: a thin layer over the library."""
