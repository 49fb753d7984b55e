"""The role of every manifest leaf (issue 41: "every manifest leaf has a role").

Every column of a release has a role since issue 29 (:mod:`medanon.published.roles`); so does
every leaf of its ``manifest.json``. A leaf is one of:

* ``setting``: a declared public setting: the format, the library version, the method and its
  parameters, the schema's columns and hierarchies, the randomness kind, timestamps, and the
  model's texts (rebuilt from those settings by the model the manifest declares, so they hold
  no count of the input);
* ``recomputed``: a value ``medanon verify`` recomputes from the published rows (the number of
  published cases and groups, the gate's verdict and ratios);
* ``mechanism``: the output or accounting of a declared differentially private mechanism, its
  ε in ``privacy_spent`` (``privacy``, ``differential_privacy_steps`` for one-off releases);
* ``declared``: a bounded dependence on the input that the release's privacy model declares
  (:attr:`medanon.models.base.PrivacyModel.input_dependence` lists the same patterns and says
  what each reveals): the frequency rule's θ bands, θs raised on the public grid
  :data:`RAISE_THETA_GRID`, HA's ss-rule thresholds, ClinSimRR's protected set;
* ``operator``: a fact about the input, the withheld cases or the run that nothing published
  recomputes and no mechanism accounts for (input report and case counts, withheld counts,
  anchors, new cases, term counts, failed seeds, merged groups, ingest counts, ...). Such a leaf
  never reaches the manifest: :func:`split_operator_facts` moves it to the operator-only facts
  the store keeps (``release_private``, ``medanon inspect``), and :func:`operator_view` puts it
  back for the operator's own reports.

A pattern is a dotted path; ``*`` stands for any key (term names, columns, QIDs), ``[]`` for
any list index and a final ``**`` for any subtree. A leaf no pattern matches has no role:
:func:`unroled_leaves` names it, and the manifest-leaf test fails on it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence

__all__ = ["LEAF_ROLES", "LEAF_ROLE_NAMES", "MANIFEST_FACTS", "OPERATOR", "RAISE_THETA_GRID",
           "ROLE_TABLES", "leaf_paths", "leaf_role", "operator_view", "pattern_matches",
           "split_operator_facts", "unroled_leaves"]

#: the key of the operator-only facts (``release_private.details``) that holds the leaves
#: :func:`split_operator_facts` took out of the manifest
MANIFEST_FACTS = "manifest_facts"
LEAF_ROLE_NAMES = ("setting", "recomputed", "mechanism", "declared", "operator")
OPERATOR = "operator"

#: the public grid a θ raised by ``on_infeasible="raise-theta"`` is taken from: the smallest
#: multiple of it at or above the term's share of the period's anchors. The grid point is all
#: the manifest says of that share (docs/theta.md, "Raised θ").
RAISE_THETA_GRID = 0.05

_SET, _REC, _MECH, _DECL, _OP = LEAF_ROLE_NAMES

#: (pattern, role, what the leaf holds) of the leaves every format shares; the first pattern
#: that matches a leaf gives its role (the format's own table follows, :data:`ROLE_TABLES`).
LEAF_ROLES: tuple[tuple[str, str, str], ...] = (
    # -- every release format
    ("format", _SET, "the release format's name and version"),
    ("period", _SET, "the period label"),
    ("published_at", _SET, "the clock time of publication"),
    ("library.**", _SET, "the library's name and version"),
    ("rng.**", _SET, "the randomness kind, generator and (seeded runs) seed"),
    ("hierarchies.**", _SET, "the public hierarchies"),
    ("method.name", _SET, "the method"),
    ("method.privacy_model", _SET, "the declared privacy model"),
    ("method.final", _SET, "the series' final release (release --final)"),
    ("method.acknowledged.**", _SET, "safety overrides the publisher gave"),
    ("method.guarantee", _SET, "the model's guarantee text, rebuilt from its settings"),
    ("method.does_not_guarantee", _SET, "the model's non-guarantee text"),
    ("method.model.parameters.theta_table.overrides.*", _DECL,
     "per-term θ (see details.theta_table.overrides)"),
    ("method.model.parameters.theta_table.**", _SET, "the θ table's default and caps"),
    ("method.model.parameters.ss_min_counts.*", _DECL, "HA's ss thresholds (details.ss_min_counts)"),
    ("method.model.parameters.p_s", _DECL, "ClinSimRR's p_S (protected.p_S)"),
    ("method.model.parameters.protected_codes", _DECL, "ClinSimRR's |Y_P| (protected.size)"),
    ("method.model.parameters.block_size", _DECL, "ClinSimRR's block size"),
    ("method.model.**", _SET, "the declared model: name, parameters, attacks, texts"),
    ("method.parameters.**", _SET, "the method's parameters as given"),
)

#: the leaves of a periodic release's manifest (``medanon-release/1``)
LEAF_ROLES_PERIODIC: tuple[tuple[str, str, str], ...] = (
    ("columns.**", _SET, "the schema's columns and each column's role"),
    ("case_ids.mode", _SET, "how the series publishes CaseIDs: keyed pseudonyms or the real ones"),
    ("case_ids.reveals", _SET, "what the published CaseIDs reveal, from the mode"),
    ("case_ids.order", _SET, "real CaseIDs: the order the gate reads them in"),
    ("case_ids.highest_earlier", _REC,
     "real CaseIDs: the highest CaseID published before the release (verify recomputes it from "
     "the earlier releases' rows)"),
    ("counts.cases", _REC, "published rows"),
    ("counts.groups", _REC, "distinct published groups"),
    ("counts.counterfeit", _REC, "counterfeit rows (0: no periodic method adds any)"),
    ("counts.reports", _OP, "input reports of the period"),
    ("counts.suppressed", _OP, "withheld cases (grouping and case budget)"),
    ("counts.suppressed_terms", _OP, "terms removed from published cases"),
    ("details.groups", _REC, "distinct published groups"),
    ("details.anchor_kind", _SET, "which records count towards k (the method's rule)"),
    ("details.theta_table.default", _SET, "the default θ"),
    ("details.theta_table.caps.*", _SET, "the protected terms' caps"),
    ("details.theta_table.overrides.*", _DECL,
     "per-term θ: a θ file's or cap's (settings), the frequency rule's band, a θ raised on "
     "the public grid"),
    ("details.raised_theta.*.theta", _DECL, "the θ the term had before it was raised"),
    ("details.raised_theta.*.raised_to", _DECL, "the grid point the θ was raised to"),
    ("details.raised_theta.*.grid", _SET, "the public grid of raised θs"),
    ("details.raised_theta.*.cap", _SET, "the protected term's cap that gave way"),
    ("details.raised_theta.*.count", _OP, "the term's count over the input"),
    ("details.ss_min_counts.*", _DECL, "HA's ss-rule thresholds"),
    ("details.domains.**", _SET, "PPMS-DP's public domains"),
    ("details.dp_variant", _SET, "PPMS-DP's variant"),
    ("details.dp_aware_grouping.**", _SET, "the ε per case the dp-aware grouping was designed "
     "for and the k it grows (functions of k and ε)"),
    ("details.noise_source.**", _SET, "the noise's generator"),
    ("details.perturbed_qids.**", _SET, "the QIDs perturbed"),
    ("details.label_levels.*", _SET, "PPMS-DP_all's label levels (functions of ε and the "
     "hierarchy)"),
    ("details.label_consistency.*", _SET, "the labels' worst-case consistency (ditto)"),
    ("details.exact_groups.**", _REC, "paper variant: groups whose numeric values are published "
     "exactly (their values are all equal)"),
    ("details.cases", _OP, "input cases"),
    ("details.new_cases", _OP, "input cases new to the series"),
    ("details.old_cases_covered", _OP, "old cases whose QIDs were widened"),
    ("details.anchors", _OP, "input anchors"),
    ("details.leftovers_placed", _OP, "leftovers the grouping placed"),
    ("details.withheld_cases", _OP, "withheld cases"),
    ("details.withheld_reason", _OP, "why cases were withheld (present when some were)"),
    ("details.failed_seeds", _OP, "grouping seeds that failed"),
    ("details.search_budget_stops", _OP, "grouping searches stopped by their budget"),
    ("details.preformed_groups", _OP, "groups formed inside exact QID classes"),
    ("details.groups_before_merging", _OP, "PPMS-DP groups before merging"),
    ("details.groups_merged_away", _OP, "PPMS-DP groups merged away"),
    ("details.suppressed_terms.**", _OP, "terms suppressed from the release, with counts"),
    ("details.suppressed_terms_reason", _OP, "why HA suppressed terms of some cases"),
    ("details.cases_with_suppressed_terms", _OP, "cases HA suppressed terms of"),
    ("details.md_records", _OP, "HA: md records of the input"),
    ("details.new_md_records", _OP, "HA: new md records of the input"),
    ("details.ss_records", _OP, "HA: ss records of the input"),
    ("ingest.kept_missing", _SET, "whether reports lacking a value were kept"),
    ("ingest.required.**", _SET, "the columns that filter reads"),
    ("ingest.note", _SET, "records given without an ingest report"),
    ("ingest.counts", _SET, "where the ingest counts are (operator-only)"),
    ("ingest.dropped_reports", _OP, "reports dropped for missing values"),
    ("ingest.dropped_by_column.**", _OP, "ditto, per column"),
    ("ingest.deleted_reports", _OP, "reports FDA deleted"),
    ("ingest.superseded_reports", _OP, "superseded case versions"),
    ("privacy_spent.guarantee", _SET, "the model's guarantee text"),
    ("privacy_spent.does_not_guarantee", _SET, "the model's non-guarantee text"),
    ("privacy_spent.case_budget.epsilon", _SET, "the per-case budget"),
    ("privacy_spent.case_budget.spend_per_case", _MECH, "ε this release spends per case"),
    ("privacy_spent.case_budget.action", _SET, "what a case over budget gets"),
    ("privacy_spent.case_budget.over_budget", _OP, "input cases over budget"),
    ("privacy_spent.case_budget.withheld_cases", _OP, "cases withheld for the budget"),
    ("privacy_spent.**", _MECH, "the mechanisms that ran and their ε"),
    ("verification.bound.epsilon_case_max", _MECH, "the largest ε a case of the release has "
     "spent over the series (the ledger's sum of each release's declared ε per case)"),
    ("verification.**", _REC, "the gate's verdict, ratios and bound, as verify recomputes them"),
)

#: the leaves of a one-off table release's manifest (``medanon-tabular-release/1``)
LEAF_ROLES_TABULAR: tuple[tuple[str, str, str], ...] = (
    ("columns.**", _SET, "the table's columns"),
    ("counts.released_rows", _REC, "published rows"),
    ("counts.classes", _REC, "published classes"),
    ("counts.records", _REC, "k-anonymity: input records (every one is published, suppressed "
     "ones in class '*'); DP methods: a constant 'withheld' text"),
    ("counts.suppressed", _REC, "k-anonymity: rows published in class '*'; DP methods: a "
     "constant 'withheld' text"),
    ("counts.counterfeit", _REC, "counterfeit rows (0, or a constant 'withheld' text)"),
    ("node.*", _MECH, "the lattice node (IPA: chosen by a DP mechanism; dphist: given; kanon: "
     "recomputed from the published classes)"),
    ("informative_domain.**", _SET, "the public domain of the informative attribute"),
    ("privacy.**", _MECH, "the mechanisms that ran and their ε, and the model's texts"),
    ("verification.**", _REC, "the verdict on the declared model"),
)

#: the leaves of a one-off EHR release's manifest (``medanon-ehr-release/1``)
LEAF_ROLES_EHR: tuple[tuple[str, str, str], ...] = (
    ("columns.**", _SET, "the release's columns"),
    ("codes.tree.leaves", _DECL, "leaves of the code tree extended with the auxiliary split"),
    ("codes.**", _SET, "the code system, level and hierarchy package"),
    ("counts.patients", _REC, "published patients"),
    ("counts.admissions", _REC, "published admissions"),
    ("counts.elements", _REC, "published elements"),
    ("dates_reliable", _SET, "whether the input's admission dates order admissions"),
    ("dependence_graph.nodes", _DECL, "nodes of the graph learned on the auxiliary split"),
    ("dependence_graph.**", _SET, "the dependence graph's settings"),
    ("identifiers.**", _SET, "how identifiers are pseudonymized"),
    ("protected.**", _DECL, "the protected set Y_P, computed from the auxiliary split and the "
     "sensitive codes"),
    ("sensitive.**", _SET, "the sensitive codes"),
    ("split.auxiliary_patients", _DECL, "patients of the auxiliary split (not published)"),
    ("split.evaluation_patients", _REC, "published patients"),
    ("split.**", _SET, "how patients are split"),
    ("time.**", _SET, "what the time column holds"),
    ("privacy.**", _MECH, "the mechanisms that ran and their ε, and the model's texts"),
    ("verification.**", _REC, "the verdict on the declared model"),
)

#: the role tables by the release format's family (the ``format`` leaf before its ``/``)
ROLE_TABLES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "medanon-release": LEAF_ROLES + LEAF_ROLES_PERIODIC,
    "medanon-tabular-release": LEAF_ROLES + LEAF_ROLES_TABULAR,
    "medanon-ehr-release": LEAF_ROLES + LEAF_ROLES_EHR,
}

_PARSED = {family: tuple((tuple(p.split(".")), role, what) for p, role, what in table)
           for family, table in ROLE_TABLES.items()}


def _family(manifest: Mapping) -> str:
    return str(manifest.get("format") or "medanon-release/1").split("/")[0]


def _key(segment: object) -> str:
    return "[]" if isinstance(segment, int) else str(segment)


def _match(pattern: tuple[str, ...], path: tuple, *, empty: bool = False) -> bool:
    """Whether ``pattern`` matches the leaf ``path`` (``empty``: an empty mapping or list at
    ``path``, which a pattern for its items, or a subtree pattern, matches)."""
    for i, seg in enumerate(pattern):
        if seg == "**":
            return True
        if i >= len(path):
            return empty and i == len(path) and seg in ("*", "[]")
        key = _key(path[i])
        if seg == "*":
            if isinstance(path[i], int):
                return False
        elif seg != key:
            return False
    return len(pattern) == len(path)


def pattern_matches(pattern: str, path: Sequence, *, empty: bool = False) -> bool:
    """Whether the dotted ``pattern`` (``*``, ``[]``, a final ``**``) matches the leaf ``path``
    (:attr:`medanon.models.base.PrivacyModel.input_dependence` uses the same patterns)."""
    return _match(tuple(pattern.split(".")), tuple(path), empty=empty)


def leaf_paths(manifest: object, path: tuple = ()) -> Iterator[tuple[tuple, bool]]:
    """Every leaf of a JSON value as (path of keys and list indices, is an empty container)."""
    if isinstance(manifest, Mapping):
        if not manifest:
            yield path, True
        for key, value in manifest.items():
            yield from leaf_paths(value, (*path, key))
    elif isinstance(manifest, (list, tuple)):
        if not manifest:
            yield path, True
        for i, value in enumerate(manifest):
            yield from leaf_paths(value, (*path, i))
    else:
        yield path, False


def leaf_role(path: Sequence, *, empty: bool = False, family: str = "medanon-release"
              ) -> str | None:
    """The role of the leaf at ``path`` in a manifest of the format ``family`` (None: no
    pattern of its :data:`ROLE_TABLES` entry matches, or an unknown format)."""
    path = tuple(path)
    for pattern, role, _ in _PARSED.get(family, ()):
        if _match(pattern, path, empty=empty):
            return role
    return None


def unroled_leaves(manifest: Mapping) -> list[str]:
    """The leaves of a manifest without a role, or with role ``operator`` (which a published
    manifest must not hold), as dotted paths."""
    out = []
    family = _family(manifest)
    for path, empty in leaf_paths(manifest):
        role = leaf_role(path, empty=empty, family=family)
        if role is None or role == OPERATOR:
            out.append(".".join(_key(p) if isinstance(p, int) else p for p in path)
                       + (f" ({role})" if role else ""))
    return out


def split_operator_facts(manifest: dict) -> list[list]:
    """Remove every ``operator`` leaf from ``manifest``, in place; return them as
    ``[[key, ...], value]`` pairs (JSON-serializable) for the store's operator-only facts.

    A mapping left empty by the removal is removed too, so that the shape of the manifest does
    not tell whether a fact existed (``details.suppressed_terms`` only when terms were
    suppressed); a mapping that was empty before stays.
    """
    moved: list[list] = []
    family = _family(manifest)
    for path, empty in list(leaf_paths(manifest)):
        if leaf_role(path, empty=empty, family=family) != OPERATOR:
            continue
        parent = manifest
        for key in path[:-1]:
            parent = parent[key]
        moved.append([list(path), copy.deepcopy(parent[path[-1]])])
        del parent[path[-1]]
        # drop the mappings this removal emptied
        for depth in range(len(path) - 1, 0, -1):
            holder = manifest
            for key in path[:depth - 1]:
                holder = holder[key]
            if isinstance(holder[path[depth - 1]], dict) and not holder[path[depth - 1]]:
                del holder[path[depth - 1]]
            else:
                break
    return moved


def operator_view(manifest: Mapping, facts: Sequence[Sequence] | None) -> dict:
    """A copy of ``manifest`` with the operator-only ``facts`` (:func:`split_operator_facts`)
    put back where they were: what the operator's reports read. Never published."""
    out = copy.deepcopy(dict(manifest))
    for path, value in facts or ():
        holder = out
        for key in path[:-1]:
            holder = holder.setdefault(key, {})
        holder[path[-1]] = copy.deepcopy(value)
    return out
