"""Notebook views of an Ir, drawn with plotly over ``workbench.analysis`` data, updating live.

- ``CallTreeView(ir)``: graphs and the call sites between them (call, repeat ×N, branch).
- ``ModelView(ir, graph=None)``: a graph grouped by IPU, name scope and runs of ops, one group at a time,
  Netron-like op boxes; the same pictures as the JupyterLab extension's Model tab.
- ``GraphView(ir, graph=None)``: one graph's ops and tensors; call sites expand inline; search.
- ``LivenessView(ir, device=None)``: memory per IPU over the schedule, and code liveness per graph.
- ``ReplicaGroupView(ir_or_session, grouping=None)``: replicas coloured by group, the groups of each
  collective and variable, and per-group variable values after a run.
- ``ScheduleView(ir_or_session, unit="cycles")``: when each op runs per replica and IPU, from the last
  run's trace (simulated cycles, or seconds of a profiled run), else the static schedule.
- ``SessionStepperView(session, inputs)``: buttons that step a run op by op, the live tensors of every
  replica, and the current op selected for the views sharing its selection.

``DiffView(before, after)``: two versions of a graph side by side (Irs, Graphs or ``to_json`` snapshots
taken before a transform edits the Ir), the ops added, removed and changed marked, runs of ops folded by name
scope into rows that open on a click, and the transform summed up per scope and per op type on top.

``Workbench(ir_or_session, inputs=None)`` (``show``) puts them all in tabs, sharing one selection,
with a stepper tab for a Session; ``report(sources, path)`` writes them to one standalone HTML file.

Every view takes an Ir or a Session (a Session also brings its device and run events) and:

- is live: Ir events (ops, tensors, graphs added) and Session events (runs, attach/detach) refresh
  it once per debounce window (``window`` seconds, ``scheduler`` from ``live``; ``live=False`` to
  freeze it). ``view.version`` counts refreshes; ``view.close()`` stops following;
- draws a static ``view.figure`` (a plotly ``go.Figure``) built by ``figures`` from plain data, and a
  ``view.widget`` (ipywidgets box around a plotly ``FigureWidget``) that follows each refresh;
- displays as its widget in a kernel, and as a static plotly figure and HTML elsewhere
  (``_repr_mimebundle_``); ``view.to_html()`` gives the HTML.

Views share a ``Selection`` (traitlets model: ``graph``, ``op``, ``tensor``, ``step``), so they can sit
side by side or in tabs and follow one another: pass the same ``selection=`` to each. Clicking a graph
in the call tree sets ``graph``; clicking an op in the graph view sets ``op`` (and ``graph``); clicking
a step in the liveness view sets ``step`` and ``op``. The graph view shows ``selection.graph`` and
marks ``op``/``tensor``; the liveness view marks the steps of ``op``.

>>> selection = Selection()
>>> tree, graph = CallTreeView(ir, selection=selection), GraphView(ir, selection=selection)
"""
from .call_tree_view import CallTreeView
from .diff_view import DiffView
from .graph_view import GraphView
from .html_report import report
from .live import Debouncer, LiveBinding, ManualScheduler
from .liveness_view import LivenessView
from .model_view import ModelView
from .replica_group_view import ReplicaGroupView
from .schedule_view import ScheduleView
from .selection import Selection
from .stepper_view import SessionStepperView
from .tabs import Workbench, show
from .view import View

__all__ = ["CallTreeView", "DiffView", "GraphView", "LivenessView", "ModelView", "ReplicaGroupView", "ScheduleView", "Selection",
           "SessionStepperView", "View", "Workbench", "show", "report", "Debouncer", "LiveBinding",
           "ManualScheduler"]
