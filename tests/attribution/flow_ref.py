"""Edmonds–Karp written out (breadth-first augmenting paths on a residual matrix), independent of
networkx: the attention-flow values of Abnar & Zuidema from the same capacities."""

from __future__ import annotations

from collections import deque


def edmonds_karp(cap: list[list[float]], s: int, t: int) -> float:
    """Maximum flow from ``s`` to ``t`` with capacities ``cap[u][v]`` (a dense square list)."""
    n = len(cap)
    res = [row[:] for row in cap]
    total = 0.0
    while True:
        parent = [-1] * n
        parent[s] = s
        queue = deque([s])
        while queue and parent[t] == -1:
            u = queue.popleft()
            for v in range(n):
                if parent[v] == -1 and res[u][v] > 1e-15:
                    parent[v] = u
                    queue.append(v)
        if parent[t] == -1:
            return total
        push, v = float("inf"), t
        while v != s:
            push = min(push, res[parent[v]][v])
            v = parent[v]
        v = t
        while v != s:
            res[parent[v]][v] -= push
            res[v][parent[v]] += push
            v = parent[v]
        total += push


def flow_values(A_tilde, layer: int) -> list[list[float]]:
    """``values[i][j]``: max flow from output node i after ``layer`` to input token j, node
    (l, i) numbered l·L + i, edge (l + 1, i) → (l, j) with capacity Ã_l[i][j]."""
    L = len(A_tilde[0])
    n = (layer + 2) * L
    cap = [[0.0] * n for _ in range(n)]
    for l in range(layer + 1):
        for i in range(L):
            for j in range(L):
                cap[(l + 1) * L + i][l * L + j] = float(A_tilde[l][i][j])
    return [[edmonds_karp(cap, (layer + 1) * L + i, j) for j in range(L)] for i in range(L)]
