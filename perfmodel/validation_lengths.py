"""Length shapes of the variable-length datasets some validation rows ran.

A row posed at its dataset's *mean* prompt and output lengths prices every decoding
sequence at context ``isl + osl / 2``.  That is right for a fixed-length benchmark and
wrong for a dataset whose lengths vary: in a steady batch (in-flight batching, an
MLPerf Offline or Server run) a request occupies a slot for as long as it decodes, so
the running batch over-represents the long answers (the inspection paradox).  Over the
batch, time-weighted by the steps each request spends in it,

* the prompt a decoding sequence carries averages ``E[s d] / E[d]``, and
* the tokens it has generated so far average ``E[d^2] / (2 E[d])``,

the same rule the planner applies to its own workloads (``Workload.decode_residence``,
``WorkloadShape.held_by_length``).  Throughput is unchanged in form (``B / E[d]``
requests per step); only the attention context and the KV each sequence holds move.

A dataset's shape is stored as two dimensionless ratios of its per-sample table,

    a = E[s d] / (E[s] E[d])      b = E[d^2] / E[d]^2 = 1 + CV(d)^2,

so a row keeps the mean lengths its own run reports (an MLPerf submission's
TOKENS_PER_SAMPLE differs from the reference answers' mean) and takes only the shape
from the reference table:  decode context ``a isl + b osl / 2``.  Why the reference
answers' shape stands for the submission's: the submitters' outputs are the same
prompts answered under the same max-token cap.  Their means do differ from the
reference's (DeepSeek-R1 submissions 3,654-3,769 generated tokens per sample against the
reference 4,043; Llama-2-70B 273-301 against 219; Mixtral 143-146 against 145), so
the shape is an assumption, and every row that takes one reports its error without it
(``perfmodel.validation.FLIPS["lengths"]``).

The shapes are derived by ``scripts/dataset_length_shapes.py`` from per-sample tables
of the official MLPerf dataset files (cited in ``perfmodel/data/length_shapes.yaml``);
a row takes one when its posed ``dataset`` field starts with one of the shape's
``match`` prefixes.  The posed rows were written before this rule and are not edited
to fit it: the match is on the text they already carry.  One exception, and it adds no
choice: the five MLPerf v4.1 rows of ``posed/amd.yaml`` named their dataset only in
the file's comment ("Dataset: 24,576 OpenOrca samples"); it was copied into their
``dataset`` field.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from perfmodel.data_yaml import load_yaml

SHAPES_FILE = "data/length_shapes.yaml"


@dataclass(frozen=True)
class LengthShape:
    """A dataset's length shape (module docstring): ``a`` and ``b``."""

    name: str
    prompt_ratio: float  # a = E[s d] / (E[s] E[d])
    output_ratio: float  # b = E[d^2] / E[d]^2
    samples: int
    match: tuple[str, ...]

    def decode_context(self, isl: float, osl: float) -> float:
        """Mean context of a decoding sequence of the running batch, tokens."""
        return self.prompt_ratio * isl + 0.5 * self.output_ratio * osl

    def held(self, isl: float, osl: float) -> float:
        """Tokens a decoding sequence holds beyond the mean prompt ``isl`` (what
        ``aggregated_point(held=...)`` takes; ``osl / 2`` for fixed lengths)."""
        return max(self.decode_context(isl, osl) - isl, 0.0)


def shape_from_samples(name: str, inputs, outputs, match: tuple[str, ...] = ()
                       ) -> LengthShape:
    """The :class:`LengthShape` of a per-sample table (prompt and output tokens)."""
    s = np.asarray(inputs, float)
    d = np.asarray(outputs, float)
    if s.shape != d.shape or s.size == 0:
        raise ValueError(f"{name}: need equal, non-empty input and output columns "
                         f"(got {s.size} and {d.size})")
    if np.any(s < 0) or np.any(d <= 0):
        raise ValueError(f"{name}: lengths must be non-negative and outputs positive")
    a = float(np.mean(s * d) / (np.mean(s) * np.mean(d)))
    b = float(np.mean(d * d) / np.mean(d) ** 2)
    return LengthShape(name, a, b, int(s.size), tuple(match))


@lru_cache(maxsize=1)
def shapes() -> tuple[LengthShape, ...]:
    """Every shipped shape (``perfmodel/data/length_shapes.yaml``)."""
    doc = load_yaml(resources.files("perfmodel").joinpath(SHAPES_FILE).read_text())
    return tuple(LengthShape(name, float(v["prompt_ratio"]), float(v["output_ratio"]),
                             int(v["samples"]), tuple(v["match"]))
                 for name, v in (doc.get("datasets") or {}).items())


def shape_for(dataset: str) -> LengthShape | None:
    """The shape of the dataset a row names (None: fixed lengths, or no table)."""
    if not dataset:
        return None
    for shape in shapes():
        if any(dataset.startswith(prefix) for prefix in shape.match):
            return shape
    return None


__all__ = ["LengthShape", "SHAPES_FILE", "shape_for", "shape_from_samples", "shapes"]
