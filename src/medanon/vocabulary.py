"""One vocabulary for every metric medanon shows (issue 33): the glossary, and the display names
the CLI tables and the HTML report print.

A quantity has one display name wherever it is shown (a CLI table, a CLI message, the report),
and two quantities never share one. JSON keys and manifest fields are a published contract and
keep their own (older) spelling: each :class:`Term` names the key(s) that carry it, so a reader
of ``--json`` output can find the row of the glossary for a column they see.

This module sits in the lowest layer and imports nothing: ``medanon release``, ``ingest`` and
``export`` print metric names too, and must not load the report or the metrics (issue 30), and
the report (``report/html.py``) renders the same tuple as its Glossary section. docs/metrics.md
("Vocabulary") is generated from it; tests/unit/test_vocabulary.py keeps the three in step and
checks every CLI table header against it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GLOSSARY", "Term", "glossary_markdown", "name_for_key", "resolve_header"]

#: the key column of terms that no ``--json`` output or manifest carries (read in the report)
REPORT_ONLY = "(report only)"


@dataclass(frozen=True)
class Term:
    """One row of the glossary.

    Attributes:
        label: The row's heading: the display name, or several related ones joined by ", ".
        meaning: What it measures, and where it is shown.
        keys: The JSON keys and manifest fields that carry it: a key, a dotted path inside an
            output, or a key followed by the outputs that use it in parentheses. Only the terms
            the report computes for itself say :data:`REPORT_ONLY`.
        better: Which direction is better ("–" where there is none).
        names: Every display name of the quantity; by default the label split at ", ".
    """

    label: str
    meaning: str
    keys: tuple[str, ...]
    better: str
    names: tuple[str, ...] = ()

    @property
    def display_names(self) -> tuple[str, ...]:
        return self.names or tuple(self.label.split(", "))

    @property
    def key_names(self) -> tuple[str, ...]:
        """The bare keys: each listed key without the outputs in parentheses, a dotted path's
        last part ("statistics.<mgps|bcpnn|prr>.recall" -> "recall")."""
        return tuple(part.rsplit(".", 1)[-1] for k in self.keys if k != REPORT_ONLY
                     for part in k.split(" (", 1)[0].split(", "))


# -- display names the CLI tables print (constants, so that a header cannot drift) -------------
K, THETA = "k", "θ"
EPSILON_PER_CASE, MAX_EPSILON_PER_CASE = "ε per case", "max ε per case"
NOMINAL_EPSILON_PER_CASE = "nominal ε per case"
NIL, NIL_STAR, MEAN_NIL = "NIL", "NIL*", "mean NIL"
DIR, DIR_HARD, DIR_POSTERIOR, MAX_DIR = "DIR", "DIR hard", "DIR posterior", "max DIR"
DSR, DSR_HARD, DSR_POSTERIOR = "DSR", "DSR hard", "DSR posterior"
ATTACKER, ATTACKS, SSGR = "attacker", "attacks", "SSGR"
RR, AR_REV, RR_HARD = "RR", "AR_rev", "RR hard"
REIDENTIFIED_GROUPS, DISCLOSING_GROUPS = "re-identified groups", "disclosing groups"
COUNT, PRR, SIGNAL = "count", "PRR", "signal"
MGPS_RECALL, MGPS_PRECISION = "MGPS recall", "MGPS precision"
BCPNN_RECALL, BCPNN_PRECISION = "BCPNN recall", "BCPNN precision"
PRR_RECALL, PRR_PRECISION = "PRR recall", "PRR precision"
RECALL, KEPT, SIGNALS = "recall", "kept", "signals"
SPEARMAN_EBGM, SPURIOUS_MGPS, UNDECIDED = "Spearman EBGM", "spurious (MGPS)", "undecided"
MANUFACTURED = "manufactured (opposite stratum)"
SAME_QUARTER, LATER, EARLIER, NEVER = "same quarter", "later", "earlier", "never"
RELEASE_ONLY, MEAN_DELAY = "release only", "mean delay (q)"
WITHHELD, WITHHELD_SHARE, UNBOUNDED_TERMS = "withheld", "withheld share", "unbounded terms"
VERIFY_GATE, VERIFY_NOW = "verify gate", "verify now"
MEAN_RELATIVE_ERROR = "mean relative error"
#: the signal rules of ``medanon signals`` (its flags' suffixes) -> the statistic's display name
RULE_NAMES = {"mgps": "MGPS", "bcpnn": "BCPNN", "prr": "PRR", "mgps_fdr": "MGPS FDR",
              "prr_fdr": "PRR FDR"}


def signals_of(rule: str) -> str:
    """The column of ``medanon signals`` counting the pairs a rule flags (e.g. "MGPS signals")."""
    return f"{RULE_NAMES[rule]} {SIGNALS}"


#: which side of an original-versus-release comparison a column shows (a header may end so)
SIDE_SUFFIXES = (" orig/rel", " orig / rel", " orig", " rel", " (original)", " (rel)")
#: an aggregate over releases or cases (a header may start so): "max DIR", "mean NIL"
AGGREGATE_PREFIXES = ("max ", "mean ")


# -- the glossary --------------------------------------------------------------------------------
GLOSSARY: tuple[Term, ...] = (
    Term("k", "every QID-group must keep at least k candidate cases",
         ("k (manifest method.parameters; attack --json)",), "higher protects more"),
    Term("θ (theta)", "the largest share a sensitive term may have among a group's candidates; "
         "θ = 1 sets no limit for that term",
         ("theta (manifest method.parameters)", "details.theta_table (manifest)"),
         "lower protects more", names=("θ", "theta")),
    Term("θ raised", "protected terms whose θ cap --on-infeasible raise-theta raised, as too many "
         "cases hold them for it", ("caps_raised (release --json)", "raised_theta (manifest)",
                                    "theta_raised (plan)", "theta_raised_tasks (experiments)"),
         "none is best", names=("θ raised", "theta raised")),
    Term("unbounded terms", "sensitive terms a release leaves at θ = 1 (no limit): a group may "
         "consist only of cases holding one", ("unbounded_terms (release --json, plan)",
                                               "default_unbounded (release --json)"),
         "none is best", names=("unbounded terms", "unbounded")),
    Term("ε (epsilon)", "differential-privacy loss parameter of a release or a step",
         ("epsilon (manifest method.parameters, ipa --json)",), "lower protects more",
         names=("ε", "epsilon")),
    Term("ε per case", "the ε an ε-DP release spends on each case it holds (the largest, where "
         "its cases differ); summed over the releases a case appears in",
         ("epsilon_per_case (release --json, ledger --json per_period)",), "lower protects more",
         names=("ε per case", "epsilon per case")),
    Term("max ε per case", "the largest total ε of a case, summed over every ε-DP release of the "
         "store", ("series_max_epsilon_per_case (release --json)", "max_epsilon (ledger --json)"),
         "lower protects more", names=("max ε per case", "series maximum epsilon per case")),
    Term("nominal ε per case", "the ε parameter of a release WITHOUT an ε-DP claim (e.g. "
         "--dp-variant paper): it sets the noise scale, bounds nothing and is never summed",
         ("nominal_epsilon_per_case (release --json, ledger --json non_dp)",), "–",
         names=("nominal ε per case", "nominal epsilon per case")),
    Term("ε per step", "how a one-off DP table release splits its ε over its steps",
         ("epsilon_per_step (ipa --json)",), "–"),
    Term("life span", "how many periods apart the model assumes releases can be linked through a "
         "CaseID", ("lifespan (manifest method.parameters)",), "longer covers more"),
    Term("NIL", "normalized information loss of 001, read from the published rows: how far values "
         "were generalized (0 none, 1 all); 'mean NIL' averages it over the releases",
         ("nil (evaluate --json, plan, experiments)",), "lower is better"),
    Term("NIL per case", "NIL weighted by group size: the mean over the published cases of their "
         "group's NIL",
         ("nil_cases (experiments)",), "lower is better"),
    Term("NIL all cases", "NIL counting each withheld case as full loss (1)",
         ("nil_all (experiments)",), "lower is better"),
    Term("NIL*, IL*", "NIL with 000's IL* per value, against the original values (covers "
         "perturbed values too)", ("nil_star (evaluate --json, experiments)",), "lower is better"),
    Term("NIL* all cases", "NIL* counting each withheld case as full loss (1)",
         ("nil_star_all (experiments)",), "lower is better"),
    Term("DIR", "disclosure-identity ratio: share of groups an attacker linking releases (B-, F-, "
         "L-attacks; MD where declared) narrows to fewer than k candidates; the headline, as the "
         "release's attacker measures it; 'max DIR' is the largest over the releases",
         ("dir (evaluate --json, attack --json, experiments)", "dir_max (plan)"),
         "lower is safer"),
    Term("DIR hard", "DIR of the hard-exclusion attacker: exclusions that hold for sure; what the "
         "verify gate checks (equals DIR on releases without perturbed QIDs)",
         ("dir_hard (evaluate --json, attack --json)",
          "dir (verify --json, manifest verification)"), "lower is safer"),
    Term("DIR posterior", "DIR of the likelihood-weighted attacker on perturbed QIDs (the headline "
         "DIR of strict PPMS-DP releases; not measured elsewhere)",
         ("dir_posterior (evaluate --json, attack --json)",), "lower is safer"),
    Term("DSR", "disclosure-sensitive ratio: share of groups where a term's share among the "
         "remaining candidates exceeds its θ (the θ in force, raised where it was); the headline, "
         "as the release's attacker measures it",
         ("dsr (evaluate --json, attack --json, experiments)", "dsr_max (plan)"),
         "lower is safer"),
    Term("DSR requested", "DSR against the θ the setting asked for, where the method raised it",
         ("dsr_requested (experiments)",), "lower is safer"),
    Term("DSR hard", "DSR of the hard-exclusion attacker; what the verify gate checks",
         ("dsr_hard (evaluate --json, attack --json)",
          "dsr (verify --json, manifest verification)"), "lower is safer"),
    Term("DSR posterior", "DSR of the likelihood-weighted attacker on perturbed QIDs",
         ("dsr_posterior (evaluate --json, attack --json)",), "lower is safer"),
    Term("attacker", "hard-exclusion: drops only candidates that cannot be the target (CaseID "
         "links, generalized QIDs); likelihood-weighted: also weighs candidates by their noisy QID "
         "values (strict PPMS-DP); the same words in JSON",
         ("attacker (evaluate --json, attack --json)",), "–"),
    Term("attacks", "B/F/L: 001's linking attacks (B: the case's earlier releases, F: its later "
         "releases, L: its first appearance); MD: 002's medication-discontinuation attack, where "
         "declared", ("attacks (verify --json, evaluate --json, attack --json)",
                      "md_applied (attack --json)"), "–"),
    Term("SSGR", "share of groups whose substantial-symptom records exceed α (002's SS-attack)",
         ("ssgr (verify --json, evaluate --json, attack --json, experiments)",),
         "lower is safer"),
    Term("RR", "record-linkage risk of 000: mean probability of linking a known person to their "
         "published record", ("rr (evaluate --json, experiments)",), "lower is safer"),
    Term("AR_rev", "attribute risk of 000 (revised): mean probability of learning a person's "
         "sensitive term", ("ar_rev (evaluate --json, experiments)",), "lower is safer"),
    Term("RR hard, AR_rev hard", "RR and AR_rev of the hard-exclusion attacker (equal to RR and "
         "AR_rev on releases without perturbed QIDs)",
         ("rr_hard (evaluate --json)", "ar_rev_hard (evaluate --json)"), "lower is safer"),
    Term("re-identified", "cases whose candidate set shrinks to one under record linkage (RR; DP: "
         "own posterior above 1/2)", ("reidentified (evaluate --json, plan)",
                                      "reidentified_hard (evaluate --json)"), "lower is safer",
         names=("re-identified", "re-identified (RR)")),
    Term("re-identified groups", "groups the linking attacks narrow to a single candidate case",
         ("reidentified_groups (attack --json)",), "lower is safer"),
    Term("disclosing groups", "groups in which every candidate the linking attacks leave holds one "
         "sensitive term (every member, when they leave none): the term is disclosed whatever its "
         "θ, θ = 1 included, which DSR cannot see; summed over the releases in plan",
         ("disclosing_groups (evaluate --json, attack --json, plan)",), "lower is safer"),
    Term("posterior bound", "largest posterior the combined DP bound allows an attacker who "
         "weighs noisy values", ("bound.max_posterior (verify --json, manifest verification)",),
         "lower is safer"),
    Term("count, n", "the reports with both the drug and the reaction: a, the reports that "
         "satisfy a signal rule (001's count); n, a screened pair's",
         ("count (evaluate --json signals)", "a (evaluate --json signals)",
          "n (signals table, evaluate --json screening)"), "closer to the original is better"),
    Term("PRR", "proportional reporting ratio [a/(a+b)] / [c/(c+d)]; ∞ when c = 0, n/a when "
         "undefined, 0 when a < 3 (001)", ("prr (evaluate --json signals, signals table)",),
         "closer to the original is better"),
    Term("PRR ∞", "signal rules, counted over rules × releases, whose PRR is infinite (c = 0: "
         "the reaction is never reported without the drug)", ("infinite (report data)",), "–"),
    Term("ROR", "reporting odds ratio (a·d)/(b·c)", ("ror (evaluate --json signals, signals table)",),
         "closer to the original is better"),
    Term("HA (Haldane–Anscombe)", "corrected ratio (+0.5 in every cell), shown beside ∞",
         ("prr_corrected (evaluate --json signals, signals table)", "ror_corrected"),
         "closer to the original is better"),
    Term("χ²", "Yates-corrected chi-square of the 2×2 table (signal needs ≥ 4 unless PRR = ∞)",
         ("chi2_yates (signals table)", "chi_square (evaluate --json signals)"),
         "closer to the original is better"),
    Term("signal", "a ≥ 3 and (PRR = ∞ or PRR ≥ 2 and χ² ≥ 4) (Evans 2001 / MHRA)",
         ("signal (evaluate --json signals)",), "kept: yes; lost or gained: no"),
    Term("signals", "how many pairs (or rules) signal: by one statistic's rule in `medanon "
         "signals` (MGPS EB05 ≥ 2, BCPNN IC025 > 0, Evans PRR; FDR: with the false-discovery "
         "control), or in the original data",
         ("signal_mgps, signal_bcpnn, signal_prr, signal_mgps_fdr, signal_prr_fdr (signals "
          "table)", "signals_original (evaluate --json screening)",
          "signals_release (evaluate --json screening)"), "–",
         names=("signals", *(f"{n} signals" for n in RULE_NAMES.values()))),
    Term("EBGM, EB05", "MGPS empirical-Bayes geometric mean of the observed/expected ratio and the "
         "5th percentile of its posterior (DuMouchel 1999); FDA screens with EB05 ≥ 2",
         ("ebgm (signals table)", "eb05 (signals table, evaluate --json screening)"),
         "closer to the original is better"),
    Term("IC, IC025", "BCPNN information component log2((n+½)/(E+½)) and the 2.5th percentile of "
         "its posterior (WHO-UMC); a signal when IC025 > 0",
         ("ic (signals table)", "ic025 (signals table)"), "closer to the original is better"),
    Term("kept, lost, gained", "signal rules, counted over rules × releases: the rule signals in "
         "both the original and the release (kept), in the original only (lost), in the release "
         "only (gained; the JSON and CSV keys keep the older name spurious, signals_spurious); "
         "screening's planted rules: kept as well",
         ("kept, lost, spurious (report data)", "signals_spurious (CSV)",
          "kept (evaluate --json screening.planted_summary)"), "kept high; lost and gained 0"),
    Term("recall", "screening: share of the original's signals the release keeps, per statistic "
         "(MGPS EB05 ≥ 2, BCPNN IC025 > 0, Evans PRR)",
         ("statistics.<mgps|bcpnn|prr>.recall (evaluate --json screening)",
          "mgps_recall (plan)", "prr_recall (plan)",
          "recall (evaluate --json screening.planted_summary)"), "higher is better",
         names=("recall", MGPS_RECALL, BCPNN_RECALL, PRR_RECALL)),
    Term("precision", "screening: share of the release's signals the original has, per statistic",
         ("statistics.<mgps|bcpnn|prr>.precision (evaluate --json screening)",
          "mgps_precision (plan)"), "higher is better",
         names=("precision", MGPS_PRECISION, BCPNN_PRECISION, PRR_PRECISION)),
    Term("spurious", "screening only: a drug–reaction pair that signals (MGPS EB05 ≥ 2) in the "
         "release but not in the original, in the same scope or stratum (1 − precision as a "
         "count); for signal rules the word is 'gained'",
         ("spurious (evaluate --json screening)",), "0 is best",
         names=("spurious", SPURIOUS_MGPS)),
    Term("manufactured (opposite stratum)", "screening: planted rules that signal in the release "
         "in the stratum opposite to their condition", ("manufactured_opposite (evaluate --json "
                                                        "screening.planted_summary)",),
         "0 is best"),
    Term("Spearman", "rank correlation of the pairs' signal scores (EBGM, IC), original versus "
         "release", ("statistics.<mgps|bcpnn>.spearman (evaluate --json screening)",),
         "closer to 1 is better", names=("Spearman", SPEARMAN_EBGM, "Spearman EBGM / IC")),
    Term("undecided", "screening: reports whose published cell straddles a stratum's edge, left "
         "out of that stratum", ("undecided (evaluate --json screening)",), "fewer is better"),
    Term("same quarter, later, earlier, never, release only, mean delay (q)", "cumulative "
         "screening: of the pairs that signal in the original, those that first signal in the "
         "release in the same quarter, later (mean delay in quarters), earlier or never; and "
         "pairs that signal in the release only",
         ("same_quarter, later, earlier, never, release_only, mean_delay_quarters (evaluate "
          "--json screening.first_signal)",), "same quarter is best"),
    Term("count bias, PRR bias", "release − original for the count a and the PRR; |…|: the mean "
         "absolute value over the rules", ("count_bias (evaluate --json signals)",
                                           "prr_bias (evaluate --json signals)",
                                           "count_bias_abs (experiments)",
                                           "prr_bias_abs (experiments)"),
         "closer to 0 is better",
         names=("count bias", "PRR bias", "|count bias|", "|PRR bias|")),
    Term("perturbed", "a value published with DP noise: specific-looking but not the original",
         ("details.perturbed_qids (manifest: the QIDs published so)",), "–"),
    Term("verify gate", "the verify gate's verdict when the release was published (passed, "
         "violated, no-model)", ("verdict (release --json)", "verification.verdict (manifest)",
                                 "gate (plan, experiments)"), "passed"),
    Term("verify now", "the verify gate's verdict on each release, run over the series as it "
         "stands (passed, violated, no-model); a later release can break an earlier one",
         ("verdict (verify --json)",), "passed"),
    Term("withheld", "cases (table releases: records) the method left out of a release",
         ("suppressed (release --json, ipa --json)",
          "counts.suppressed (operator-only manifest facts; table releases: manifest)",
          "withheld_cases (operator-only details, experiments)"), "fewer is better"),
    Term("withheld share", "withheld cases as a share of the cases a release could have held",
         ("withheld_share (plan, experiments)",), "lower is better"),
    Term("suppressed terms", "(case, term) pairs whose sensitive term was suppressed so that the "
         "case fits a group; the case stays published (not 'withheld')",
         ("suppressed_terms (release --json, plan, experiments)",
          "counts.suppressed_terms (operator-only manifest facts)"), "fewer is better"),
    Term("suppressed (*)", "QID values published as '*': generalized to the top of their "
         "hierarchy, saying nothing (not a withheld case, not a suppressed term)", (REPORT_ONLY,),
         "fewer is better"),
    Term("rows not released", "share of the DEMO rows (one per report version) that reached no "
         "release: superseded versions, follow-ups combined into their case, duplicates, FDA "
         "deletions, reports dropped for missing values, withheld cases", (REPORT_ONLY,), "–"),
    Term("IL, NCP, EMD, Rate", "004's information loss of a table release, IL = NCP "
         "(generalization) + EMD (distribution distance) + Rate (suppressed and counterfeit "
         "records)", ("information_loss (ipa --json)", "il (experiments)",
                      "ncp, emd, rate (ipa --json, experiments)"), "lower is better",
         names=("information loss", "IL", "NCP", "EMD", "Rate")),
    Term("counterfeit", "records an anatomized table release adds so that each class holds "
         "enough distinct sensitive values", ("counterfeit (ipa --json)",), "fewer is better"),
    Term("mean relative error", "of an analysis query on the release against the input",
         ("queries[].mean_relative_error (ipa --json)",), "lower is better"),
    Term("CIL", "003's clinical information loss over the patients with a sensitive code",
         ("cil (clinsim --json, experiments)",), "lower is better"),
    Term("KL", "Kullback–Leibler divergence of the code frequencies, original ‖ release",
         ("kl (clinsim --json, experiments)",), "lower is better"),
    Term("frequency L1", "L1 distance of the sensitive codes' frequencies, original vs release",
         ("frequency_l1_sensitive (clinsim --json)",), "lower is better"),
    Term("MAP", "mean average precision of the inference attack predicting sensitive codes; "
         "'MAP (003's scoring)' scores it on the sensitive inputs as 003 does",
         ("map (clinsim --json, experiments)", "map_sensitive_inputs (experiments)"),
         "lower is safer", names=("MAP", "MAP (003's scoring)")),
    Term("Publish / with care / do not publish as is", "the report's first section's decision "
         "per series: read from verify, the attacks (re-identified, DIR, DSR), the terms at "
         "θ = 1, empty, held back and withheld releases, and the MGPS recall of the screening "
         "(each case once)", (REPORT_ONLY,), "–"),
)


#: display name -> its term (tests/unit/test_vocabulary.py checks that no name is in two terms)
NAMES: dict[str, Term] = {}
for _term in GLOSSARY:
    for _name in _term.display_names:
        NAMES.setdefault(_name, _term)


def resolve_header(header: str) -> Term | None:
    """The term a table header shows: the header itself, or with a side (" orig", " rel",
    " (original)", ...) and an aggregate ("max ", "mean ") taken off; None if it names none."""
    header = header.replace("\u00ad", "")  # a soft hyphen only breaks a narrow column
    candidates = [header]
    for suffix in SIDE_SUFFIXES:
        if header.endswith(suffix):
            candidates.append(header[: -len(suffix)])
    for c in list(candidates):
        candidates += [c[len(p):] for p in AGGREGATE_PREFIXES if c.startswith(p)]
    for c in candidates:
        if c in NAMES:
            return NAMES[c]
    return None


def name_for_key(key: str) -> str:
    """The display name of a JSON/CSV key (e.g. the experiments' metric columns), from the first
    term listing it: where a term has as many display names as keys they pair in order ("NCP"
    for ncp), else its first name. Raises KeyError for a key no term lists."""
    for term in GLOSSARY:
        keys, names = term.key_names, term.display_names
        if key in keys:
            return names[keys.index(key)] if len(keys) == len(names) else names[0]
    raise KeyError(key)


def glossary_markdown() -> str:
    """The glossary as the Markdown table of docs/metrics.md ("Vocabulary")."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    def key(text: str) -> str:  # the key as code, the outputs that carry it as text
        if text == REPORT_ONLY:
            return text
        bare, paren, where = text.partition(" (")
        return f"`{bare}`" + (f" ({where}" if paren else "")

    lines = ["| display name | meaning | JSON key(s) | better |", "|---|---|---|---|"]
    lines += [f"| {cell(t.label)} | {cell(t.meaning)} | "
              f"{'; '.join(cell(key(k)) for k in t.keys)} | {cell(t.better)} |"
              for t in GLOSSARY]
    return "\n".join(lines) + "\n"
