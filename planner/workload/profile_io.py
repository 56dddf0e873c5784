"""Reading and writing profile files (the format: :mod:`planner.workload.profile`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import yaml

from perfmodel.reading import read_yaml
from planner.core.atomic import write_text_atomic
from planner.core.errors import PlannerError
from planner.workload.profile import Profile, profile_from_dict
from planner.workload.profile_builtins import BUILTIN_PROFILES, builtin_profile


def load_profile(ref: str | Path) -> Profile:
    """A built-in profile by name (:mod:`planner.workload.profile_builtins`) or a YAML
    file; relative workload paths are taken beside the file."""
    name = str(ref)
    if name in BUILTIN_PROFILES:
        return builtin_profile(name)
    p = Path(ref)
    if not p.exists():
        raise PlannerError(f"profile '{ref}' is neither a file nor a built-in profile "
                           f"({', '.join(BUILTIN_PROFILES)})")
    prof = profile_from_dict(read_yaml(p, "profile file"), str(ref))
    fixed = {k: str(p.parent / v) if not Path(v).is_absolute() and (p.parent / v).exists()
             else v for k, v in prof.workloads.items()}
    return replace(prof, workloads=fixed)




def write_profile(path: Path, prof: Profile, header: str = "") -> None:
    """The profile as YAML, written atomically; rates rounded to 6 significant digits."""
    data = prof.to_dict()
    for slot in data["slots"]:
        slot["rate"] = float(f"{slot['rate']:.6g}")
        if "mix" in slot:
            mix = {k: float(f"{v:.6g}") for k, v in slot["mix"].items()}
            # keep the shares summing to 1 after rounding: the last takes the remainder
            last = list(mix)[-1]
            mix[last] = round(1.0 - sum(v for k, v in mix.items() if k != last), 9)
            slot["mix"] = mix
    text = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
    write_text_atomic(path, (f"# {header}\n" if header else "") + text)


__all__ = ["load_profile", "write_profile"]
