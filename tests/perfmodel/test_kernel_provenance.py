"""perfmodel.kernels.transfer.provenance: every GPU says where its kernel timings come
from -- its own measurements, a measured GPU of its own vendor, or its vendor's priors --
and a plan on a GPU priced from another vendor's measurements says so."""

from __future__ import annotations

from perfmodel.hardware import get_gpu, gpu_catalog
from perfmodel.kernels.store import measured_systems
from perfmodel.kernels.transfer import provenance
from perfmodel.launch import gpu_vendor


def test_measured_gpus_use_their_own_kernels_and_others_name_their_source():
    systems = set(measured_systems())
    for name, gpu in gpu_catalog().items():
        p = provenance(gpu)
        assert p.measured == (gpu.kernel_system in systems), name
        if not p.measured and p.prior is None:
            assert p.compute_from in gpu_catalog(), name
            source = get_gpu(p.compute_from)
            assert source.kernel_system in systems
            assert p.compute_vendor == gpu_vendor(source) == gpu_vendor(gpu), name
            assert not p.cross_vendor and p.rule == "transfer"
        if p.prior is not None:  # a vendor with no measured GPU: its priors
            assert p.compute_from is None and not p.cross_vendor, name
            assert p.rule == "vendor prior"


def test_amd_parts_are_priced_from_amd_priors_not_another_vendor():
    for name in ("MI300X", "MI325X"):
        p = provenance(get_gpu(name))
        assert not p.measured and p.vendor == "amd" and p.prior == "priors_amd.yaml"
        assert p.compute_from is None and p.compute_vendor is None and not p.cross_vendor
        assert "AMD kernel priors (priors_amd.yaml)" in p.sentence()
        assert "unvalidated" not in p.sentence()
    assert not provenance(get_gpu("H800")).cross_vendor  # Hopper from Hopper


def test_the_report_warns_about_a_cross_vendor_gpu_only():
    from planner.report.answer import _transfer_caveats as caveats

    def plan(gpu: str) -> dict:
        return {"request": {"workload": "w", "inventory": {"name": "i", "gpus": []},
                            "slo": {"ttft_ms": 2000, "tpot_ms": 50}},
                "summary": {"gpus_used": {gpu: 8}, "gpus_available": {gpu: 8},
                            "closed_loop": {"bound": "analytic"}},
                "prices": {gpu: 1.0}}

    # priced from validated AMD priors: not a cross-vendor transfer, no caveat
    assert not any("no measured kernels" in c for c in caveats(plan("MI300X")))
    assert not any("no measured kernels" in c for c in caveats(plan("H100-SXM")))


def test_a_vendor_without_measurements_or_priors_still_transfers_across_and_says_so(
        monkeypatch):
    """Without AMD priors (a vendor with neither measured kernels nor priors -- the
    catalog's Intel part is measured) the rule falls back to another vendor's part,
    flagged cross-vendor, and the report warns."""
    from perfmodel.kernels import priors
    from planner.report.answer import _transfer_caveats as caveats

    monkeypatch.setattr(priors, "has_priors", lambda vendor: False)
    p = provenance(get_gpu("MI300X"))
    assert p.prior is None and p.compute_vendor == "nvidia" and p.cross_vendor
    assert p.rule == "cross-vendor transfer"
    assert "unvalidated for its vendor" in p.sentence()
    plan = {"request": {"workload": "w", "inventory": {"name": "i", "gpus": []},
                        "slo": {"ttft_ms": 2000, "tpot_ms": 50}},
            "summary": {"gpus_used": {"MI300X": 8}, "gpus_available": {"MI300X": 8},
                        "closed_loop": {"bound": "analytic"}},
            "prices": {"MI300X": 1.0}}
    assert any(c.startswith("MI300X: no measured kernels") for c in caveats(plan))
