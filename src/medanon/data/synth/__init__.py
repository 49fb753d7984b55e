"""Synthetic data generators (FAERS-layout periodic series, a hospital-patient table)."""

from .faers import PLANTED_SIGNALS, SignalRule, SynthSummary, write_faers_series
from .profiles import PROFILES, SynthProfile
from .table import synth_patient_schema_toml, synth_patient_table, write_synth_table

__all__ = ["PLANTED_SIGNALS", "PROFILES", "SignalRule", "SynthProfile", "SynthSummary",
           "synth_patient_schema_toml", "synth_patient_table", "write_faers_series",
           "write_synth_table"]
