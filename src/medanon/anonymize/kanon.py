"""Full-domain k-anonymity with minimal information loss: paper 004's k-anonymization baseline.

Paper 004 compares IPA with "k-anonymization [17]", i.e. Incognito (LeFevre, DeWitt and
Ramakrishnan, SIGMOD 2005): full-domain generalization over the lattice of the dimensions' levels,
choosing a k-anonymous node. Among the k-anonymous nodes this module returns one with the least
information loss, measured as in paper 004 (NCP; a k-anonymous release inserts nothing, so its EMD
and Rate are 0).

Search (Incognito's roll-up plus Flash-style predictive tagging and a bound):

- group counts of a node are rolled up from a counted, more specific node
  (:class:`~medanon.anonymize.lattice.RollUp`);
- k-anonymity with a suppression limit is monotone: the records suppressed at a node (those in
  classes smaller than k) include those suppressed at any generalization of it. So a node above a
  k-anonymous node is k-anonymous and one below a non-anonymous node is not; such nodes are tagged
  without counting;
- the NCP of a node with nothing suppressed is a lower bound of its NCP (a suppressed record costs
  1) computable from the marginals, and it grows up the lattice. Nodes are visited in increasing
  bound order and the search stops once the bound exceeds the best loss found.

With ``max_suppression = 0`` (the default, Incognito's original definition) the first k-anonymous
node visited is optimal. Suppressed records are released with every dimension ``*`` (their
informative value kept), forming one class; as in ARX, that class is not itself held to k.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import _fail, check_fraction, check_int
from ..data.tabular import TabularData
from ..errors import InfeasibleError
from ..models.single import KAnonymityModel
from .lattice import Lattice, Node, RollUp, marginals, node_ncp, record_classes, record_ncp_bound
from .tabular import ClassRelease, TabularResult, node_level_names

__all__ = ["FullDomainKAnonymity"]



class FullDomainKAnonymity:
    """Optimal full-domain k-anonymity (module docstring).

    Args:
        k: Minimum class size (an integer >= 2).
        max_suppression: Largest share of records that may be suppressed, in [0, 1).

    Raises:
        ValidationError: on a bad parameter.
    """

    name = "kanon"

    def __init__(self, *, k: int = 10, max_suppression: float = 0.0) -> None:
        self.k = check_int(k, name="k", owner="FullDomainKAnonymity", minimum=2)
        #: the privacy model the method satisfies: it writes the guarantee texts
        self.model = KAnonymityModel(k=self.k)
        self.max_suppression = check_fraction(max_suppression, name="max_suppression",
                                              owner="FullDomainKAnonymity", low_open=False,
                                              high=1.0)
        if self.max_suppression >= 1.0:
            raise _fail("max_suppression", "FullDomainKAnonymity", "a number in [0, 1)",
                        max_suppression)

    def parameters(self) -> dict[str, Any]:
        return {"k": self.k, "max_suppression": self.max_suppression}

    def anonymize(self, data: TabularData, **_: Any) -> TabularResult:
        """Search the lattice and release the best k-anonymous node.

        Raises:
            InfeasibleError: the table has fewer than k records and suppression may not hide them.
        """
        lattice = Lattice(data.top_node)
        rollup = RollUp(data, with_informative=False)
        hists = marginals(data)
        bound = {node: record_ncp_bound(data.hierarchies, hists, node) for node in lattice.nodes}
        limit = int(np.floor(self.max_suppression * len(data) + 1e-9))
        anonymous: dict[Node, int] = {}     # node -> suppressed records (when counted)
        not_anonymous: set[Node] = set()
        best: tuple[float, Node] | None = None
        counted = tagged = 0
        for node in sorted(lattice.nodes, key=lambda n: (bound[n], sum(n), n)):
            if best is not None and bound[node] > best[0]:
                break
            if any(s in not_anonymous for s in lattice.successors(node)):
                not_anonymous.add(node)
                tagged += 1
                continue
            below = [anonymous[p] for p in lattice.predecessors(node) if p in anonymous]
            if below and min(below) == 0:
                anonymous[node] = 0   # nothing suppressed below, so nothing here: loss = bound
                tagged += 1
                loss = bound[node]
            else:
                counted += 1
                table = rollup.table(node)
                small = table.count < self.k
                suppressed = int(table.count[small].sum())
                if suppressed > limit:
                    not_anonymous.add(node)
                    continue
                anonymous[node] = suppressed
                keep = ~small
                ncp = node_ncp(data.hierarchies, node, [c[keep] for c in table.codes])
                loss = (float(table.count[keep] @ ncp) + suppressed) / len(data)
            if best is None or loss < best[0]:
                best = (loss, node)
        if best is None:
            raise InfeasibleError(f"No node of the lattice is {self.k}-anonymous: the table has "
                                  f"{len(data)} records and at most {limit} may be suppressed.")
        node = best[1]
        release = self._release(data, node)
        published, fake = release.frame(None)
        n_star = int(release.starred[release.row_class].sum())
        return TabularResult(
            method=self.name, node=node, node_labels=node_level_names(data, node),
            table=published, is_counterfeit=fake, loss=release.loss(), records=len(data),
            suppressed=n_star, counterfeit=0,
            classes=len(release.starred), parameters=self.parameters(), privacy_losses=(),
            privacy_model=self.model,
            details={"lattice": {"nodes": len(lattice), "counted": counted, "tagged": tagged,
                                 "pruned_by_bound": len(lattice) - counted - tagged,
                                 "tables_rolled_up": rollup.tables_built}})

    def _release(self, data: TabularData, node: Node) -> ClassRelease:
        ec_codes, ec_of_record, counts = record_classes(data, node)
        release = ClassRelease.from_classes(data, node, ec_codes, counts < self.k, ec_of_record)
        return release
