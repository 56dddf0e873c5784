"""perfmodel.kernels.transfer.provenance: every GPU says where its kernel timings come
from, and a plan on a GPU priced from another vendor's measurements says so."""

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
        if not p.measured:
            assert p.compute_from in gpu_catalog(), name
            source = get_gpu(p.compute_from)
            assert source.kernel_system in systems
            assert p.compute_vendor == gpu_vendor(source)
            assert p.cross_vendor == (gpu_vendor(source) != gpu_vendor(gpu))


def test_amd_parts_are_flagged_as_priced_from_another_vendor():
    p = provenance(get_gpu("MI300X"))
    assert not p.measured and p.vendor == "amd" and p.compute_vendor == "nvidia"
    assert p.cross_vendor and "unvalidated for its vendor" in p.sentence()
    assert not provenance(get_gpu("H800")).cross_vendor  # Hopper from Hopper


def test_the_report_warns_about_a_cross_vendor_gpu_only():
    from planner.report.answer import _transfer_caveats as caveats

    def plan(gpu: str) -> dict:
        return {"request": {"workload": "w", "inventory": {"name": "i", "gpus": []},
                            "slo": {"ttft_ms": 2000, "tpot_ms": 50}},
                "summary": {"gpus_used": {gpu: 8}, "gpus_available": {gpu: 8},
                            "closed_loop": {"bound": "analytic"}},
                "prices": {gpu: 1.0}}

    assert any(c.startswith("MI300X: no measured kernels") for c in caveats(plan("MI300X")))
    assert not any("no measured kernels" in c for c in caveats(plan("H100-SXM")))
