"""ReplicaGroupView: the replicas of an Ir coloured by group, the groups of each collective and
variable, and each group's variable values after a run."""
from __future__ import annotations

from typing import Any, Optional, Sequence

from workbench.analysis.replica_groups import group_values, grouping_uses
from workbench.ir import ReplicaGrouping, Variable
from workbench.ops.registry import op_ipus

from .figures import replica_group_figure, values_table_html
from .figures.replica_figure import NARROW_OUTPUT, grouping_shape, users_in_words
from .style import count_of
from .view import View

LISTED_VARIABLES = 12  # with more variables than this, only those split into several groups get a values table


class ReplicaGroupView(View):
    """The grid shows ``grouping`` (default: the first collective's, else the first grouping of
    several groups, else all replicas in one group); the matrix every collective and listed variable.
    Bound to a Session, the table shows each group's variable values after each run (read with
    ``Session.get_tensors_data``, which copies weights to the host if a run left them on the device;
    one instance of a job of several shows them only once every instance has copied them).
    """

    live_kinds = frozenset({"op_added", "tensor_added", "graph_built", "graph_discarded", "run_finished",
                            "detached"})
    has_details = True

    def __init__(self, source: Any, grouping: Optional[ReplicaGrouping] = None,
                 variables: Optional[Sequence[Variable]] = None, **options):
        self.grouping = grouping
        self._variables = None if variables is None else list(variables)
        self.values = None
        self.values_elsewhere = False
        self.room = 0  # the pixels of width the page gives the figure (0: not heard yet)
        super().__init__(source, **options)

    def _compute(self) -> None:
        self.uses = grouping_uses(self.ir)  # every variable: those of one grouping fold into one row
        listed = set(self.listed_variables())
        self.values = None
        self.values_elsewhere = False
        if self.session is not None and self.session.run_count > 0 and listed:
            if len(self.ir.instances) > 1 and not self.session.weights_on_host:
                # Reading them here alone would start an exchange the other instances do not join.
                self.values_elsewhere = True
                return
            variables = self.listed_variables()
            data = self.session.get_tensors_data(variables)
            self.values = {variable: group_values(variable, data[variable]) for variable in variables}

    def listed_variables(self) -> list[Variable]:
        if self._variables is not None:
            return self._variables
        variables = list(self.ir.variables)
        if len(variables) <= LISTED_VARIABLES:
            return variables
        return [v for v in variables if v.replica_grouping.num_groups > 1 or v.retrieval_mode == "all_replicas"]

    @property
    def shown_grouping(self) -> ReplicaGrouping:
        if self.grouping is not None:
            return self.grouping
        uses = grouping_uses(self.ir)
        collectives = [use.grouping for use in uses if use.kind == "collective"]
        split = [use.grouping for use in uses if use.grouping.num_groups > 1]
        return (collectives or split or [self.ir.replica_grouping()])[0]

    def show(self, grouping: ReplicaGrouping) -> None:
        """Colour the grid by ``grouping``."""
        if not isinstance(grouping, ReplicaGrouping) or grouping._ir is not self.ir:
            raise ValueError(f"show takes a ReplicaGrouping of {self.ir!r}, got {grouping!r}")
        self.grouping = grouping
        self.redraw()

    def build_figure(self):
        instances = self.ir.instances
        title = count_of(self.ir.replication_factor, "replica") + (
            f" in {len(instances)} instances" if len(instances) > 1 else "")
        ipus = {ipu for graph in self.ir.graphs for op in graph.ops for ipu in op_ipus(op)}
        return replica_group_figure(self.shown_grouping, self.uses, title=title, instances=instances,
                                    narrow=0 < self.room < NARROW_OUTPUT, ipus=sorted(ipus))

    def fit(self, room: int) -> None:
        """In an output narrower than NARROW_OUTPUT pixels the legend goes under the picture."""
        narrow = 0 < room < NARROW_OUTPUT
        was = 0 < self.room < NARROW_OUTPUT
        self.room = room
        if narrow != was:
            self.redraw()

    def grouping_label(self, grouping: ReplicaGrouping) -> str:
        """A grouping in words, with the one collective or variable that uses it, else how many do: a
        menu's choice is cut where it is wider than the output, and the matrix names them all."""
        users = [use for use in grouping_uses(self.ir) if use.grouping == grouping]
        return grouping_shape(grouping) + (f", {users_in_words(users)}" if users else "")

    def details_html(self) -> str:
        """The table of each group's variable values after the last run (nothing before a run)."""
        if self.values_elsewhere:
            return ("<p class='ipu-wb-values'>The variables' values after the last run are on the devices of "
                    "the job's instances: call <code>session.weights_to_host()</code> (PopART: "
                    "<code>weightsToHost()</code>) on every instance before drawing this view on one.</p>")
        return values_table_html(self.values) if self.values and self.error is None else ""

    def _controls(self) -> list:
        import ipywidgets

        groupings = [self.shown_grouping]
        for use in grouping_uses(self.ir):
            if use.grouping not in groupings:
                groupings.append(use.grouping)
        if len(groupings) == 1:
            return []  # nothing to choose: the grid's title names the one grouping
        menu = ipywidgets.Dropdown(options=[(self.grouping_label(g), index) for index, g in enumerate(groupings)],
                                   value=0, description="grid:",  # as wide as its longest choice, within the output
                                   layout=ipywidgets.Layout(width="auto", max_width="100%"))
        menu.observe(lambda change: self.show(groupings[change["new"]]), names="value")
        return [menu]

    def __repr__(self) -> str:
        return f"ReplicaGroupView({self.ir!r}: {self.ir.replication_factor} replicas)"
