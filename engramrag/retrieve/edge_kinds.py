"""The index's edge kinds (as stored in graph.npz) and which statement predicates make a hierarchy edge."""

import numpy as np

MENTION, RELATION, HIERARCHY, SYNONYM = 0, 1, 2, 3
EDGE_KINDS = {MENTION: "mention", RELATION: "relation", HIERARCHY: "hierarchy", SYNONYM: "synonym"}
HIERARCHY_PREDICATES = frozenset({"has_section", "part_of", "broader", "narrower", "subclass_of", "has_part"})


def edge_key(low: np.ndarray, high: np.ndarray, kind: np.ndarray, node_count: int) -> np.ndarray:
    """Each edge's key: ``(low * node_count + high) * len(EDGE_KINDS) + kind``, ascending as (low, high, kind)."""
    key = low * node_count
    key += high
    key *= len(EDGE_KINDS)
    key += kind
    return key
