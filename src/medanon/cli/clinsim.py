"""``medanon clinsim``: release diagnosis sequences with ClinSimRR or a baseline (paper 003).

A thin layer over the public API (:class:`medanon.Publisher` on :class:`medanon.EhrRecords`,
over :mod:`medanon.pipeline.clinsim`): options, the release folder, the pseudonym key file and
the summary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from ..data.synth.ehr import write_synth_ehr
from ..errors import ValidationError
from ..hierarchies.icd9 import SENSITIVE_PRESETS, sensitive_file_codes
from ..pipeline.ehr import Pseudonyms
from ..pipeline.methods import ehr_method
from ..published.format import check_new_folder, write_new_folder
from ..random import refuse_seeded_release
from . import console as ui
from .console import print_json, progress_bar


# -- the commands -----------------------------------------------------------------------------

def synth_ehr(out: Path, *, patients: int, seed: int, as_json: bool) -> None:
    write_new_folder(out, lambda folder: write_synth_ehr(folder, patients=patients, seed=seed),
                     what="Folder")
    files = sorted(str(p) for p in out.iterdir())
    if as_json:
        print_json({"out": str(out), "files": files, "patients": patients, "seed": seed})
    else:
        ui.out.print(f"Wrote synthetic diagnosis sequences of {patients} patients to {out}.")



def resolve_sensitive(level: str, *, sensitive_file: Path | None,
                      preset: str | None) -> list[str] | str:
    """The operator's sensitive codes (from a file, normalized) or a preset's name."""
    if sensitive_file is not None and preset is not None:
        raise ValidationError("Give either --sensitive FILE or --sensitive-preset NAME, not both.")
    if sensitive_file is not None:
        return sensitive_file_codes(sensitive_file, level)
    name = preset or "va-7332"
    if name not in SENSITIVE_PRESETS:
        raise ValidationError(f"Unknown sensitive-code preset {name!r}; known presets: "
                              f"{', '.join(sorted(SENSITIVE_PRESETS))}.")
    return name


def resolve_identifiers(*, pseudonym_key: Path | None, keep_ids: bool,
                        out: Path) -> tuple[Pseudonyms, bool]:
    """How the identifiers are published: ``(pseudonyms, key file to create)``.

    Without ``--pseudonym-key`` or ``--keep-ids`` the key is fresh from OS entropy, also in a
    seeded run: the seed is in the manifest, so a key derived from it would hide nothing.

    Raises:
        ValidationError: ``--keep-ids`` with ``--pseudonym-key``, a key file inside ``--out``, or
            an unusable key file.
    """
    if keep_ids and pseudonym_key is not None:
        raise ValidationError("Give either --pseudonym-key FILE or --keep-ids, not both.")
    if keep_ids:
        return Pseudonyms.raw(), False
    if pseudonym_key is not None:
        key, out_dir = Path(pseudonym_key).resolve(), Path(out).resolve()
        if key == out_dir or out_dir in key.parents:
            raise ValidationError(f"The --pseudonym-key file {str(pseudonym_key)!r} must not be in "
                                  f"the output folder {str(out)!r}: the key never leaves the operator.")
        return Pseudonyms.from_key_file(pseudonym_key)
    return Pseudonyms.fresh(), False


def clinsim(diagnoses: Path, *, admissions: Path | None, method: str, epsilon: str | None,
            gamma: float | None, alpha: float, b_max: int | None, sensitive_file: Path | None,
            preset: str | None, code_level: str, min_admissions: int, aux_fraction: float,
            delta_t_days: float, max_path_length: int, min_predictions: int, seed: int | None,
            allow_seeded: bool, out: Path, as_json: bool, pseudonym_key: Path | None = None,
            keep_ids: bool = False, time_resolution: str = "day",
            one_off: tuple | None = None) -> None:
    from ..api import EhrMethodName, EhrPublisher, EhrRecords, TimeResolution

    with ui.errors_as_flags():  # the library's checks, told in flags
        ehr_method(method, epsilon=epsilon, gamma=gamma, b_max=b_max, alpha=alpha,
                   max_path_length=max_path_length)  # only the EHR methods
    if code_level not in ("category", "full"):
        raise ValidationError(f"--code-level must be category or full; got {code_level!r}.")
    refuse_seeded_release(seed is not None and method != "suppression", allow_seeded)
    check_new_folder(out)
    identifiers, new_key = resolve_identifiers(pseudonym_key=pseudonym_key, keep_ids=keep_ids,
                                               out=out)
    # the key file to create: only ever a --pseudonym-key file (a fresh or raw key has none)
    created = pseudonym_key if new_key else None
    sensitive = resolve_sensitive(code_level, sensitive_file=sensitive_file, preset=preset)
    with ui.errors_as_flags():
        # method is one of --method's choices (typer checked it): an EHR method's name
        publisher = EhrPublisher(cast(EhrMethodName, method), epsilon=epsilon, gamma=gamma,
                                 b_max=b_max, alpha=alpha, max_path_length=max_path_length,
                                 sensitive=sensitive, delta_t_days=delta_t_days,
                                 aux_fraction=aux_fraction, min_predictions=min_predictions,
                                 compare=True, seed=seed,
                                 time_resolution=cast(TimeResolution, time_resolution))
    data = EhrRecords.read(diagnoses, admissions, code_level=code_level,
                           min_admissions=min_admissions)
    fingerprint = data.fingerprint()   # the events as a multiset: order-free, overlap-aware
    with ui.errors_as_flags():   # the ε this input spent in earlier one-off releases
        ledger, spend, over = ui.one_off_check(
            one_off, method, None if method == "suppression" else epsilon, fingerprint)
    with progress_bar(f"{method}: graph, plan, obfuscate, evaluate", 4) as step:
        release = publisher.publish(data, identifiers=identifiers, progress=step)
    if created is not None:
        identifiers.save_key(created)
    if over:
        release.manifest["method"].setdefault("acknowledged", []).append("allow_over_budget")
    try:
        release.write(out)
    except BaseException:
        if created is not None:              # the key of a release that was not written
            Path(created).unlink(missing_ok=True)
        raise
    ui.one_off_record(ledger, spend, fingerprint, method, out)
    # Operator-facing only (stdout, never the published folder): the input's digest lets the
    # operator check which file was released; the manifest holds no function of the input.
    summary = {**release.summary, "out": str(out)}
    if created is not None:
        summary["pseudonym_key_created"] = str(created)
    if not release.summary["dates_reliable"]:  # said where the steward looks, also with --json
        ui.err.print(f"note: time is published empty: {_dates_reason(summary)}.", soft_wrap=True,
                     markup=False)
    if as_json:
        print_json(summary)
        return
    _print_summary(summary)


def _dates_reason(summary: dict[str, Any]) -> str:
    """Why ``time`` is published empty, as the loader found it (e.g. ADMITTIME values with
    two-digit years, which no century can be told for)."""
    return str(summary.get("dates") or "the input gave no admission dates").rstrip(".")


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _print_summary(s: dict[str, Any]) -> None:
    ui.out.print(f"[bold]{s['method']}[/bold] released {s['elements_released']} elements of "
                 f"{s['patients']['evaluation']} patients to {s['out']}.")
    ui.out.print(f"Protected set: {s['protected_size']} codes ({s['sensitive_size']} sensitive, "
                 f"{s['added_for_leakage']} added for leakage, {s['added_for_blocking']} for blocking); "
                 f"block size {s['block_size']}.")
    ui.out.print(f"CIL {_fmt(s['cil'])} (patients with a sensitive code), KL {s['kl']:.4f}, "
                 f"MAP {_fmt(s['map'])}, frequency L1 on sensitive codes "
                 f"{s['frequency_l1_sensitive']:.4f}")
    if s["map"] is None:
        ui.out.print(f"MAP undefined: {s['map_undefined_reason']}.")
    for name, other in s.get("comparison", {}).items():
        label = ("UMAXRR on the same extended Y_P" if name == "umaxrr-yp"
                 else "UMAXRR on the sensitive set")
        ui.out.print(f"  {label} ({other['protected_size']} codes, not published): "
                     f"CIL {_fmt(other['cil'])}, KL {other['kl']:.4f}, MAP {_fmt(other['map'])}")
    ids = s["identifiers"]
    ui.out.print("Identifiers: " + (f"pseudonymized ({ids['key']})" if ids["pseudonymized"]
                                    else "raw SUBJECT_ID and HADM_ID (--keep-ids)"))
    ui.out.print(f"Time: days since each patient's first admission, floored to whole "
                 f"{s['time_resolution']}s (--time-resolution {s['time_resolution']})."
                 if s["dates_reliable"] else
                 f"Time: empty, the input's dates were unusable: {_dates_reason(s)}.")
    ui.out.print(f"Guarantee: {s['guarantee']}")
    ui.out.print(f"Not guaranteed: {s['does_not_guarantee']}")
