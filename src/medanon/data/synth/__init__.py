"""Synthetic data generators (FAERS-layout periodic series)."""

from .faers import PLANTED_SIGNALS, SignalRule, SynthSummary, write_faers_series

__all__ = ["PLANTED_SIGNALS", "SignalRule", "SynthSummary", "write_faers_series"]
