"""medanon: publish medical microdata without giving away the people in it."""

__version__ = "0.1.0"
