"""Per-call HBM bytes of the seven kernels (KERNELS.md §10), ported from the spec's bytes_model.py (copy: tests/data/spec).

"Touched bytes" of a straightforward implementation, each input read once and each output written
once; the roofline of a call is ``(bytes_in + bytes_out) / HBM bandwidth`` of the card that ran it
(``eagle4.perf.card``). Figures from here are labelled provenance "model" wherever they are written.
"""

from __future__ import annotations


def k1(B, W, K, H, Eh, hot=True):
    bin_ = 4 * B * W * K + 4 * B * W + Eh * B * K * H + (16 * B * W * K if hot else 8 * B * W * K)
    bout = 4 * B * W * K + 4 * B * W * K + 8 * B * W * K + 8 * B * K + 8 * B * K + Eh * B * K * H + (
        8 * B * W * K if hot else 0)
    return bin_, bout


def k2(B, W, K, I, n0, n1):
    bin_ = 4 * B * W * K + 8 * B * W * K + 4 * n1 * B + 8 * B * K + 8 * B * K + 8 * B * W + B * K * I + 4 * B * n0
    bout = 44 * B * W * K + 8 * B * W + 12 * B * K + 4 * B * (n0 + K) + 4 * B * n1 + B * K * I
    return bin_, bout


def k3(B, K, n0):
    return 4 * B * (n0 + K), 4 * (K + 1)


def k4(B, T, Q, L, materialize_bool=False):
    def ceil8(x):
        return (x + 7) // 8
    bin_ = 16 * B + 4 * B * L + 16 * B * T
    bout = 4 * 4 * (B + 1) + 4 * B * (L + T) + B * ceil8(Q * (L + T)) + 8 * B * Q
    if materialize_bool:
        bin_ += B * Q * (L + T)
        bout += B * Q * (L + T)
    return bin_, bout


def k5(R, V, B, passes=1, write_probas=True, in_bytes=4):
    return passes * in_bytes * R * V + 4 * B, (4 * R * V if write_probas else 0) + 8 * R


def k6(B, Q, S, V, visited=None, sglang_style=False):
    visited = B * Q if visited is None else visited
    bin_ = 32 * B * Q + 4 * B * Q + 4 * B + 4 * visited + 4 * B * V + 8 * B * Q + B
    bout = 4 * B * Q + 4 * B * S + 4 * B
    if sglang_style:
        bout += 4 * B * Q * V
        bin_ += 4 * B * V + 4 * B * V
    return bin_, bout


def k7(B, Q, S, H, Eh, Nacc, U, Nunf, node_ids=True):
    bin_ = 4 * B * S + 4 * B + 4 * B + 4 * Nacc + 16 * B + 8 * B * Q + Eh * Nunf * H + (8 * B * Q if node_ids else 0)
    bout = (4 * B * S + 4 * B + 4 * (B + 1) + 4 * Nacc + 4 * Nacc + B * Q + 8 * (B * Q - Nacc) + 4 * Nacc + 8 * B
            + (8 * Nacc if node_ids else 0) + 8 * U + 4 * U + 4 * (U + 1) + 4 * Nunf + Eh * Nunf * H + 8 * Nunf
            + 8 * U + 8 * U + 4 * U + 4 * U + 4)
    return bin_, bout


def roofline_us(total_bytes: float, bps: float) -> float:
    """The HBM floor of moving ``total_bytes`` at ``bps`` bytes/s (a card's peak: ``eagle4.perf.card``), in us."""
    return total_bytes / bps * 1e6
