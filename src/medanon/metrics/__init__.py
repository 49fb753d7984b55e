"""Metrics computed on published releases (never on an algorithm's internals)."""

from .information_loss import normalized_information_loss

__all__ = ["normalized_information_loss"]
