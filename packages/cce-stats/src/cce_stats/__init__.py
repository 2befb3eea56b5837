"""cce-stats: the statistics behind `cce relevance --compare`, bit-identical to CCE.

Why it exists: the evaluation harness compares retrieval backends with paired tests
on per-query deltas, and its default output must match the Rust reference byte for
byte, so the t-test and its special functions are re-implemented here in exactly the
reference's operation order — with no dependencies, so any eval tool can use them.
The package also owns the other paired tests behind the same protocol
(randomization, signed-rank, bootstrap), the macro-weighted and member-level tests
of a suite's mean, multiple-testing corrections, effect sizes and the sample-size
planning math (docs/statistics.md).
"""

from __future__ import annotations

from cce_stats.bootstrap import BOOTSTRAP_CALIBRATED_N
from cce_stats.corrections import CORRECTIONS, adjust_p_values
from cce_stats.distributions import (
    MAX_DF,
    MIN_ALPHA,
    MIN_DF,
    chi_square_quantile,
    ln_gamma,
    reg_inc_beta,
    seq_sum,
    t_two_sided_critical,
    t_two_sided_p,
)
from cce_stats.effects import effect_size_dz, sample_sd, wins_ties_losses
from cce_stats.paired import (
    PAIRED_TESTS,
    BootstrapTest,
    PairedTest,
    PairedTestResult,
    RandomizationTest,
    SignedRankTest,
    TTest,
    paired_test,
    paired_test_names,
)
from cce_stats.sizing import (
    MAX_SAMPLE_SIZE,
    effective_alpha,
    minimum_detectable_effect,
    required_sample_size,
    sd_confidence_interval,
)
from cce_stats.suites import (
    MACRO_TESTS,
    WeightedTTest,
    macro_effect_size,
    macro_paired_test,
    macro_weights,
    member_level_test,
    member_means,
    weighted_randomization_test,
    weighted_t_test,
)
from cce_stats.ttest import PairedTTest, paired_t_test

__all__ = [
    "BOOTSTRAP_CALIBRATED_N",
    "CORRECTIONS",
    "MACRO_TESTS",
    "MAX_DF",
    "MAX_SAMPLE_SIZE",
    "MIN_ALPHA",
    "MIN_DF",
    "PAIRED_TESTS",
    "BootstrapTest",
    "PairedTTest",
    "PairedTest",
    "PairedTestResult",
    "RandomizationTest",
    "SignedRankTest",
    "TTest",
    "WeightedTTest",
    "adjust_p_values",
    "chi_square_quantile",
    "effect_size_dz",
    "effective_alpha",
    "ln_gamma",
    "macro_effect_size",
    "macro_paired_test",
    "macro_weights",
    "member_level_test",
    "member_means",
    "minimum_detectable_effect",
    "paired_t_test",
    "paired_test",
    "paired_test_names",
    "reg_inc_beta",
    "required_sample_size",
    "sample_sd",
    "sd_confidence_interval",
    "seq_sum",
    "t_two_sided_critical",
    "t_two_sided_p",
    "weighted_randomization_test",
    "weighted_t_test",
    "wins_ties_losses",
]
