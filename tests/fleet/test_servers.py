"""Servers are real (issue 27, item 1): island sizes, packing, inventories, searches."""

from __future__ import annotations

import random

import pytest

from planner.core.errors import PlannerError
from planner.fleet.inventory import inventory_from_dict
from planner.fleet.servers import ServerShape, assign_servers, server_errors
from planner.outer.protocol import SearchSpace, TypeSupply


def test_allowed_sizes_are_whole_servers_or_power_of_two_shares():
    shape = ServerShape.of(64, 8)
    assert shape.sizes() == [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64]
    assert not shape.allowed(3) and not shape.allowed(12) and not shape.allowed(17)
    nvl = ServerShape.of(144, 72)
    assert nvl.shares == [1, 2, 4, 8]  # powers of two dividing 72
    assert nvl.sizes() == [1, 2, 4, 8, 72, 144]
    assert ServerShape.of(20, 10).shares == [1, 2]
    assert shape.snap_down(23) == 16 and shape.snap_down(7) == 4 and shape.snap_down(0) == 0


def _brute_force_packs(shape: ServerShape, sizes: list[int]) -> bool:
    """Exhaustive assignment of shares to servers (small cases only)."""
    n = shape.gpus_per_node
    whole = sum(g // n for g in sizes if g >= n)
    if whole > shape.servers:
        return False
    caps = [n] * (shape.servers - whole) + ([shape.partial] if shape.partial else [])
    shares = sorted((g for g in sizes if g < n), reverse=True)

    def place(k: int, room: list[int]) -> bool:
        if k == len(shares):
            return True
        for i in range(len(room)):
            if room[i] >= shares[k]:
                room[i] -= shares[k]
                if place(k + 1, room):
                    return True
                room[i] += shares[k]
        return False

    return place(0, caps)


def test_packing_inequalities_match_exhaustive_search_and_first_fit():
    rng = random.Random(7)
    for _ in range(3000):
        node = rng.choice([2, 4, 8, 10, 72])
        shape = ServerShape(node, rng.randint(0, 3), rng.randint(0, node - 1))
        if shape.gpus == 0:
            continue
        options = shape.sizes()
        sizes = [rng.choice(options) for _ in range(rng.randint(1, 7))]
        expect = _brute_force_packs(shape, sizes)
        assert shape.packs(sizes) == expect, (shape, sizes)
        placed = shape.pack(sizes)
        assert (placed is not None) == expect
        if placed is not None:
            load: dict[int, int] = {}
            for g, where in zip(sizes, placed, strict=True):
                assert len(where) == max(1, g // node)
                for s in where:
                    load[s] = load.get(s, 0) + min(g, node)
            for s, used in load.items():
                assert used <= (shape.partial if s == shape.servers else node)


def test_partial_server_holds_only_shares():
    shape = ServerShape.of(12, 8)  # one server and 4 GPUs of another
    assert shape.partial == 4
    assert shape.packs([8, 4]) and shape.packs([4, 4, 4]) and not shape.packs([8, 8])
    assert not shape.packs([4, 4, 4, 1])


def test_assign_servers_keeps_one_type_per_server():
    shapes = {"A": ServerShape.of(16, 8), "B": ServerShape.of(8, 8)}
    islands = [("A", 4), ("B", 4), ("A", 4), ("B", 2), ("A", 8)]
    placed = assign_servers(islands, shapes)
    assert placed is not None
    servers, where = placed
    for srv in servers:
        assert {islands[i][0] for i in srv.islands} == {srv.gpu}
        assert srv.used <= srv.gpus
    assert len(servers) == 3
    plan_islands = [{"gpu": t, "size": g, "servers": list(w)}
                    for (t, g), w in zip(islands, where, strict=True)]
    assert server_errors(plan_islands, [s.to_dict() for s in servers], shapes) == []
    # a hand-made breach of each rule is caught
    bad = [dict(plan_islands[0], servers=list(where[1]))] + plan_islands[1:]
    assert any("holds" in e for e in server_errors(bad, [], shapes))
    assert any("not whole" in e for e in server_errors([{"gpu": "A", "size": 12}], [],
                                                         shapes))
    extra = [s.to_dict() for s in servers] + [dict(servers[0].to_dict(), index=9)] * 2
    assert any("servers used" in e for e in server_errors(plan_islands, extra, shapes))


def test_inventory_counts_in_servers_and_checks_gpus_per_node():
    inv = inventory_from_dict({"gpus": [
        {"type": "H200", "servers": 4, "price_per_hour": 4.0},
        {"type": "H100-SXM", "count": 12, "gpus_per_node": 4, "price_per_hour": 3.0},
        {"type": "GB200-NVL72", "count": 72, "price_per_hour": 6.0}]}, "inv.yaml")
    h200, h100, gb = inv.entries
    assert (h200.count, h200.node) == (32, 8)
    assert (h100.shape.servers, h100.shape.partial, h100.node_source) == (3, 0, "inventory")
    assert gb.node == 72 and "NVLink domain" in gb.node_source
    again = inventory_from_dict(inv.to_dict(), "plan.json")
    assert [e.node for e in again.entries] == [8, 4, 72]
    for item, words in (({"gpus_per_node": 0}, "gpus_per_node"),
                        ({"gpus_per_node": 2.5}, "gpus_per_node"),
                        ({"gpus_per_node": 16}, "scale-up domain"),
                        ({"servers": 2}, "exactly one of")):
        with pytest.raises(PlannerError) as err:
            inventory_from_dict({"gpus": [{"type": "H200", "count": 16, **item}]}, "inv.yaml")
        msg = str(err.value)
        assert "inv.yaml" in msg and "H200" in msg and words in msg and "\n" not in msg


def test_search_space_fits_only_packable_layouts():
    inv = inventory_from_dict({"gpus": [{"type": "H200", "count": 20, "price_per_hour": 4.0},
                                        {"type": "H20", "count": 16, "price_per_hour": 1.0}]},
                              "inv.yaml")
    space = SearchSpace.from_inventory(inv)
    free = SearchSpace.from_inventory(inv, granularity="gpu")
    assert space.fits((("H200", 16), ("H200", 4)))
    assert not space.fits((("H200", 12),))  # straddles part of a server
    assert free.fits((("H200", 12),))
    assert not space.fits((("H200", 16), ("H200", 4), ("H200", 2)))  # 22 > 20 GPUs
    assert space.fits((("H200", 8), ("H200", 8), ("H200", 4)))  # 4 in the partial server
    assert not space.fits((("H200", 16), ("H200", 8)))  # three servers' worth
    h200 = space.types[0]
    assert h200.fit_sizes([12, 5, 3]) == [8, 4, 2]
    assert TypeSupply("X", 64, 1.0, 3, 8).sizes() == [4, 8, 16, 24, 32, 40, 48, 56, 64]
