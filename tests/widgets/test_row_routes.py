"""Edges routed through the rows they pass: each edge is routed again once all are known, taking other lanes
(nearer its head) where they cross fewer of the edges routed after it."""
from workbench.widgets.figures.row_routes import RowRouter


def test_a_long_edge_moves_to_lanes_clear_of_an_edge_routed_after_it():
    router = RowRouter([[0.0, 10.0]] * 5)
    first = router.route("long", [(4.0, 0.0), (7.0, -4.0)])
    assert [x for x, _ in first[1:-1]] == [0.0, 0.0, 0.0]  # knowing no other edge: the lane nearest its line
    router.route("short", [(-2.0, -1.0), (2.0, -2.0)])  # passes no row: across lane 0
    long, short = router.rerouted()
    assert long != first and long[-2] == (10.0, -3.0)
    assert short == [(-2.0, -1.0), (2.0, -2.0)]
    assert RowRouter._crossings(long, router.segments) == 0
