"""``evaluate``: every model rule, in RULE_IDS order; the entry point callers use.

Separate so that the rules' order is read in one place.
"""

from __future__ import annotations

from typing import List, Optional

from preflight_contract.modelfacts.records import Gpu, ModelFacts, Serving, Verdict
from preflight_contract.modelfacts.rules_fit import rule_max_len, rule_weights_fit
from preflight_contract.modelfacts.rules_parallel import (
    rule_ep_experts,
    rule_mamba_groups,
    rule_pp_layers,
    rule_tp_heads,
    rule_tp_kv_heads,
)
from preflight_contract.modelfacts.rules_support import rule_arch_registered, rule_dtype, rule_quant


def evaluate(facts: ModelFacts, serving: Serving, gpu: Optional[Gpu] = None) -> List[Verdict]:
    """Every model rule, in RULE_IDS order."""
    return [
        rule_tp_heads(facts, serving),
        rule_tp_kv_heads(facts, serving),
        rule_ep_experts(facts, serving),
        rule_pp_layers(facts, serving),
        rule_max_len(facts, serving),
        rule_weights_fit(facts, serving, gpu),
        rule_dtype(facts, serving, gpu),
        rule_quant(facts, serving, gpu),
        rule_mamba_groups(facts, serving),
        rule_arch_registered(facts, facts.auto_map, serving),
    ]
