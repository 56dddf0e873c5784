"""The perf model's committed YAML data, parsed by libyaml where PyYAML was built with it.

The posed validation rows are several MB of YAML; PyYAML's pure-Python safe loader
takes about 3.5 s to read them, its libyaml binding about 0.3 s, and both give the
same documents (checked on every file under perfmodel/data when this was written).
Without libyaml the pure-Python loader reads them as before.
"""

from __future__ import annotations

from typing import Any

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """``yaml.safe_load(text)``, through libyaml when it is there."""
    return yaml.load(text, Loader=_LOADER)  # noqa: S506 -- a safe loader either way


__all__ = ["load_yaml"]
