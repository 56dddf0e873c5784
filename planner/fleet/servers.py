"""Servers: the unit a fleet is bought, racked and launched in.

A GPU type comes in servers of ``gpus_per_node`` GPUs (8 on an HGX board or a common
PCIe server; a rack-scale NVLink domain such as GB200 NVL72 is one "server" of 72).  A
server holds one GPU type, and an engine launches an island either on whole servers or
on a share of one server.  So at *server granularity* an island of a type with node
size ``N`` has

* ``k N`` GPUs (``k >= 1`` whole servers), or
* a power of two that divides ``N`` and is below it (1, 2, 4 of 8): a share of one
  server, which other shares of the same type may fill.

The inventory's count of a type is ``W`` whole servers and, when the count is not a
multiple of ``N``, one partial server of ``r < N`` GPUs that only shares can use (the
plan says so).

**Packing.**  Shares are powers of two dividing ``N``, so their sizes divide one another
and ``N``.  For such *divisible* item sizes a layout's islands fit the ``W`` full
servers and the partial one if and only if, for every share size ``q`` (and ``q = N``),

.. math::  \\sum_{g \\ge q} g\\, n_g \\;\\le\\; W N + \\lfloor r / q \\rfloor q ,

(necessary: the islands of at least ``q`` GPUs use multiples of ``q`` in the partial
server; sufficient: first-fit in decreasing size leaves every full server's free room a
multiple of the next size, so it wastes nothing -- Coffman, Garey and Johnson, "Bin
packing with divisible item sizes", J. Complexity 3 (1987)).  The exact MILP writes
these as linear rows; :meth:`ServerShape.pack` assigns islands to servers by that
first-fit, which the tests check against the inequalities.

At *GPU granularity* (``--island-granularity gpu``, the thesis's free sizes) any size is
allowed and only the GPU count binds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

GRANULARITIES = ("server", "gpu")


def default_gpus_per_node(gpu) -> tuple[int, str]:
    """The catalog's server size of a GPU type and where it comes from: its scale-up
    domain (``perfmodel.hardware.GPU.gpus_per_domain``) -- 8 on an HGX/DGX baseboard
    and on the common 8-GPU PCIe servers, the whole NVLink domain for rack-scale parts
    (GB200/GB300 NVL72: 72, Rubin NVL144: 144), whose trays an engine sees as one
    NVLink fabric."""
    n = int(gpu.gpus_per_domain)
    if n > 8:
        return n, f"rack-scale NVLink domain of {n} GPUs (NVIDIA {gpu.name} datasheet)"
    if str(gpu.arch).startswith("cdna"):
        return n, f"AMD OAM platform of {n} GPUs on one Infinity Fabric (AMD datasheet)"
    if gpu.scaleup_gbps >= 150:  # NVLink-class (perfmodel.kernels.transfer)
        return n, f"HGX/DGX baseboard of {n} NVLink GPUs (NVIDIA HGX reference design)"
    return n, f"common {n}-GPU PCIe server (e.g. Supermicro/Dell 4U 8-GPU PCIe chassis)"


def is_power_of_two(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


@dataclass(frozen=True)
class ServerShape:
    """The servers of one GPU type: ``servers`` full ones of ``gpus_per_node`` GPUs and
    one partial server of ``partial`` GPUs (0: none)."""

    gpus_per_node: int
    servers: int
    partial: int = 0

    @classmethod
    def of(cls, gpus: int, gpus_per_node: int) -> ServerShape:
        return cls(gpus_per_node, gpus // gpus_per_node, gpus % gpus_per_node)

    @property
    def gpus(self) -> int:
        return self.servers * self.gpus_per_node + self.partial

    @property
    def shares(self) -> list[int]:
        """Island sizes below a server: powers of two dividing it."""
        n = self.gpus_per_node
        return [q for q in (2 ** k for k in range(n.bit_length())) if q < n and n % q == 0]

    def allowed(self, size: int) -> bool:
        """Whether an island of ``size`` GPUs is whole servers or a share of one."""
        n = self.gpus_per_node
        return size >= 1 and (size % n == 0 or (size < n and n % size == 0
                                                 and is_power_of_two(size)))

    def sizes(self, lo: int = 1, hi: int | None = None) -> list[int]:
        """Allowed sizes in ``[lo, hi]`` (``hi``: every GPU of the type)."""
        top = self.gpus if hi is None else min(hi, self.gpus)
        out = [q for q in self.shares if lo <= q <= top]
        k = max(1, math.ceil(lo / self.gpus_per_node))
        while k * self.gpus_per_node <= top:
            out.append(k * self.gpus_per_node)
            k += 1
        return out

    def snap_down(self, size: int) -> int:
        """The largest allowed size not above ``size`` (0 if none)."""
        n = self.gpus_per_node
        if size >= n:
            return size // n * n
        return max((q for q in self.shares if q <= size), default=0)

    def levels(self) -> list[tuple[int, int]]:
        """``(q, capacity)``: the packing rows of the module docstring, one per share
        size and one for whole servers; islands of ``>= q`` GPUs use at most
        ``capacity`` GPUs."""
        n = self.gpus_per_node
        full = self.servers * n
        return [(q, full + self.partial // q * q) for q in self.shares] + [(n, full)]

    def packs(self, sizes: Iterable[int]) -> bool:
        """Whether islands of ``sizes`` GPUs fit the servers (every size allowed)."""
        sizes = list(sizes)
        if not all(self.allowed(g) for g in sizes):
            return False
        return all(sum(g for g in sizes if g >= q) <= cap for q, cap in self.levels())

    def pack(self, sizes: Sequence[int]) -> list[tuple[int, ...]] | None:
        """Servers of each island (indices: ``0 .. servers - 1`` full servers, in order of
        first use; ``servers`` is the partial one), or None when they do not fit.

        Whole-server islands take fresh full servers; shares go first-fit in decreasing
        size into the partial server and the open full servers, opening a full server
        when none has room."""
        if not self.packs(sizes):
            return None
        n = self.gpus_per_node
        out: list[tuple[int, ...]] = [()] * len(sizes)
        used = 0  # full servers opened
        for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
            if sizes[i] >= n:
                k = sizes[i] // n
                out[i] = tuple(range(used, used + k))
                used += k
        free: dict[int, int] = {self.servers: self.partial} if self.partial else {}
        for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
            g = sizes[i]
            if g >= n:
                continue
            spot = next((s for s, room in free.items() if room >= g), None)
            if spot is None:
                if used >= self.servers:
                    return None  # cannot happen when packs() holds (module docstring)
                spot, used = used, used + 1
                free[spot] = n
            free[spot] -= g
            out[i] = (spot,)
        return out


@dataclass(frozen=True)
class Server:
    """One server of a placed plan."""

    index: int  # plan-wide, in placement order
    gpu: str
    gpus: int  # GPUs the server has (gpus_per_node, or the partial server's)
    islands: tuple[int, ...]  # plan island indices on it
    used: int  # GPUs of it the islands use
    partial: bool = False

    def to_dict(self) -> dict:
        return {"index": self.index, "gpu": self.gpu, "gpus": self.gpus,
                "islands": list(self.islands), "gpus_used": self.used,
                "partial": self.partial}


def assign_servers(islands: Sequence[tuple[str, int]], shapes: dict[str, ServerShape],
                   order: Sequence[int] | None = None
                   ) -> tuple[list[Server], list[tuple[int, ...]]] | None:
    """Place ``islands`` ((type, size), plan order) on servers of their type.

    Returns the servers (numbered plan-wide: types' servers in the order their first
    island appears in ``order``, the placement order) and each island's server indices;
    None when some type's islands do not fit its servers."""
    order = list(range(len(islands))) if order is None else list(order)
    rank = {i: k for k, i in enumerate(order)}
    by_type: dict[str, list[int]] = {}
    for i in order:
        by_type.setdefault(islands[i][0], []).append(i)
    local: dict[tuple[str, int], list[int]] = {}  # (type, local server) -> islands
    for t, members in by_type.items():
        packed = shapes[t].pack([islands[i][1] for i in members])
        if packed is None:
            return None
        for i, where in zip(members, packed, strict=True):
            for s in where:
                local.setdefault((t, s), []).append(i)
    # number servers by the earliest island (in placement order) they hold
    keys = sorted(local, key=lambda key: (min(rank[i] for i in local[key]), key[1]))
    index = {key: k for k, key in enumerate(keys)}
    servers = []
    for key in keys:
        t, s = key
        shape = shapes[t]
        part = s == shape.servers and shape.partial > 0
        on_it = tuple(sorted(local[key]))
        per = shape.gpus_per_node
        used = sum(min(islands[i][1], per) for i in on_it)
        servers.append(Server(index[key], t, shape.partial if part else per, on_it, used,
                              part))
    placement = [tuple(index[key] for key in keys if i in local[key])
                 for i in range(len(islands))]
    return servers, placement


def server_errors(plan_islands: Sequence[dict], servers: Sequence[dict],
                  shapes: dict[str, ServerShape]) -> list[str]:
    """What breaks the server rules in a plan dict's islands and servers: an island that
    straddles part of a server, a server holding two GPU types, more servers of a type
    than the inventory has (empty when none)."""
    errors = []
    for k, isl in enumerate(plan_islands):
        t, g = str(isl["gpu"]), int(isl["size"])
        shape = shapes.get(t)
        if shape is not None and not shape.allowed(g):
            errors.append(f"islands[{k}] ({t} x {g}) is not whole {shape.gpus_per_node}-GPU "
                          "servers nor a power-of-two share of one")
        elif shape is not None and isl.get("servers") is not None:
            want = max(1, g // shape.gpus_per_node)
            if len(isl["servers"]) != want:
                errors.append(f"islands[{k}] ({t} x {g}) sits on {len(isl['servers'])} "
                              f"servers, not {want}")
    seen: dict[int, set[str]] = {}
    for isl in plan_islands:
        for s in isl.get("servers") or []:
            seen.setdefault(int(s), set()).add(str(isl["gpu"]))
    for s, types in sorted(seen.items()):
        if len(types) > 1:
            errors.append(f"server {s} holds {sorted(types)}: a server has one GPU type")
    count: dict[str, list[dict]] = {}
    for srv in servers:
        count.setdefault(str(srv["gpu"]), []).append(srv)
        if int(srv["gpus_used"]) > int(srv["gpus"]):
            errors.append(f"server {srv['index']} ({srv['gpu']}) holds {srv['gpus_used']} "
                          f"GPUs of its {srv['gpus']}")
    for t, group in count.items():
        shape = shapes.get(t)
        if shape is None:
            continue
        full = sum(1 for s in group if not s.get("partial"))
        part = sum(1 for s in group if s.get("partial"))
        if full > shape.servers or part > (1 if shape.partial else 0):
            errors.append(f"{len(group)} {t} servers used but the inventory has "
                          f"{shape.servers}" + (f" and one of {shape.partial} GPUs"
                                                if shape.partial else ""))
    return errors


__all__ = ["GRANULARITIES", "Server", "ServerShape", "assign_servers", "default_gpus_per_node",
           "is_power_of_two", "server_errors"]
