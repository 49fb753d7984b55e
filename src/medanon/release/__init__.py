"""Releases: the published format (rows + manifest), series on disk, and the publish flow."""
