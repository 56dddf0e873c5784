"""The small fleet the fleet tests plan end to end (about a minute each on 2 cores): two
Llama-3.1-8B services with different workloads and SLOs on sixteen H20 and eight H800."""

INVENTORY = """
name: fleet-test
gpus:
  - {type: H20, count: 16, price_per_hour: 1.0}
  - {type: H800, count: 8, price_per_hour: 2.0}
"""
FLEET = """
name: two-small
services:
  - name: chat
    model: llama-3.1-8b
    workload: azure-conv-2023
    slo: {ttft_ms: 2000, tpot_ms: 50}
    share: 0.6
  - name: code
    model: llama-3.1-8b
    workload: azure-code-2023
    slo: {ttft_ms: 4000, tpot_ms: 50}
    share: 0.4
"""
