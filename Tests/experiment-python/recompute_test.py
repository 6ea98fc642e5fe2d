#!/usr/bin/env python3
"""Recomputes every figure of flagsd's experiment results from its per-unit export, with numpy, scipy and
statsmodels, and compares them (docs/experiment-statistics.md has the formulas).

    recompute_test.py results.json units.csv [results.json units.csv ...]

results.json is GET /v1/namespaces/{ns}/experiments/{key}; units.csv is GET …/units for the same phase. Prints
`ok <check>` or `FAIL <check>: <why>` per check; exits 1 when one failed.
"""
import json
import math
import sys

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy.special import gammaln
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

TOLERANCE = 1e-9
SRM_CONCENTRATION = 100.0
failures = []


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=TOLERANCE, abs_tol=1e-12)


class Check:
    def __init__(self, name):
        self.name = name
        self.problems = []

    def expect(self, condition, what):
        if not condition:
            self.problems.append(what)

    def equal(self, ours, theirs, what):
        self.expect(close(ours, theirs), f"{what}: flagsd {theirs}, recomputed {ours}")

    def report(self):
        if self.problems:
            failures.append(self.name)
            print(f"FAIL {self.name}: " + "; ".join(self.problems[:5]))
        else:
            print(f"ok {self.name}")


def cs_multiplier(units, alpha, planned):
    """The normal-mixture boundary of the asymptotic confidence sequence (Waudby-Smith et al. 2021), as a multiple
    of the standard error: sqrt(2(Nρ²+1)/(Nρ²) · log(sqrt(Nρ²+1)/α)), ρ² tuned for N*."""
    rho2 = (-2 * math.log(alpha) + math.log(-2 * math.log(alpha) + 1)) / planned
    x = units * rho2
    return math.sqrt(2 * (x + 1) / x * math.log(math.sqrt(x + 1) / alpha))


def srm_p_value(counts, shares):
    """Anytime-valid p of the sequential multinomial test (Lindon and Malek 2022), a Dirichlet(k·p) prior."""
    counts = np.asarray(counts, dtype=float)
    shares = np.asarray(shares, dtype=float) / sum(shares)
    a = SRM_CONCENTRATION * shares
    n = counts.sum()
    log_bf = gammaln(a.sum()) - gammaln(a.sum() + n) + np.sum(gammaln(a + counts) - gammaln(a)) \
        - np.sum(counts[counts > 0] * np.log(shares[counts > 0]))
    return 1.0 if log_bf <= 0 else math.exp(-log_bf)


def estimate(metric, table, arm):
    """(mean, variance of the mean) of an arm, plain: a mean per unit, or a ratio of sums by the delta method."""
    rows = table[table.arm == arm]
    if metric["kind"] == "ratio":
        y, d = rows[metric["numerator"]].to_numpy(), rows[metric["denominator"]].to_numpy()
        if len(y) == 0 or d.sum() <= 0:
            return None
        ratio = y.sum() / d.sum()
        if len(y) < 2:
            return ratio, None
        c = np.cov(y, d, ddof=1)
        per_unit = max(0.0, c[0, 0] - 2 * ratio * c[0, 1] + ratio * ratio * c[1, 1])
        return ratio, per_unit / (len(y) * d.mean() ** 2)
    y = rows[metric["name"]].to_numpy()
    if len(y) == 0:
        return None
    stats = DescrStatsW(y)
    return stats.mean, (stats.var * len(y) / (len(y) - 1)) / len(y) if len(y) >= 2 else None


def cuped(metric, table, control, arm):
    """CUPED (Deng et al. 2013): θ from the OLS slope of y on x over both arms (statsmodels), then per arm the
    adjusted mean and the variance of it; None when it does not apply (an arm under 2 units, no spread in x)."""
    name = metric["name"]
    both = table[table.arm.isin([control, arm])]
    x, y = both[name + ".pre"].to_numpy(), both[name].to_numpy()
    arms = {a: both[both.arm == a] for a in (control, arm)}
    if any(len(rows) < 2 for rows in arms.values()) or not np.any(x != 0) or np.var(x, ddof=1) <= 0:
        return None
    theta = sm.OLS(y, sm.add_constant(x)).fit().params[1]

    def adjusted(rows):
        xa, ya = rows[name + ".pre"].to_numpy(), rows[name].to_numpy()
        c = np.cov(xa, ya, ddof=1)
        per_unit = max(0.0, c[1, 1] - 2 * theta * c[0, 1] + theta * theta * c[0, 0])
        return ya.mean() - theta * (xa.mean() - x.mean()), per_unit / len(ya)

    return theta, adjusted(arms[control]), adjusted(arms[arm])


def check(results_path, units_path):
    results = json.load(open(results_path))
    units = pd.read_csv(units_path, dtype={"unit": str, "arm": str, "phase": str})
    flag = results["flag"]
    alpha, planned = results["statistics"]["alpha"], results["statistics"]["planned_units"]
    # One row per unit: a column per metric (the value since it entered) and per metric + ".pre".
    table = units.pivot_table(index=["unit", "arm"], columns="metric", values=["value", "pre"], aggfunc="first")
    table.columns = [metric if kind == "value" else metric + ".pre" for kind, metric in table.columns]
    table = table.reset_index()
    control = results["control"]

    arms = Check(f"{flag}: units per arm and phase match the export")
    arms.expect(set(units.phase) == {results["phase"]}, f"phases in the export {set(units.phase)}, results {results['phase']}")
    for arm in results["arms"]:
        arms.expect(int((table.arm == arm["arm"]).sum()) == arm["units"], f"{arm['arm']}: {arm['units']} units")
    arms.report()

    ratio = Check(f"{flag}: sample ratio p-value (scipy gammaln)")
    shares = [arm["expected_share"] for arm in results["arms"]]
    if results["sample_ratio"]["status"] == "not_checked":
        ratio.expect(any(share is None for share in shares), "not checked, yet every arm has a declared share")
    else:
        counts = [arm["units"] for arm in results["arms"]]
        p = srm_p_value(counts, shares)
        ratio.equal(p, results["sample_ratio"]["p_value"], "p")
        ratio.expect((p < results["sample_ratio"]["threshold"]) == (results["sample_ratio"]["status"] == "mismatch"), "status")
        ratio.expect(results["trustworthy"] == (results["sample_ratio"]["status"] != "mismatch"), "trustworthy")
    ratio.report()

    means = Check(f"{flag}: each arm's mean per metric (statsmodels DescrStatsW; ratios of sums)")
    differences = Check(f"{flag}: differences and their confidence sequences (statsmodels CompareMeans, OLS for CUPED)")
    lifts = Check(f"{flag}: relative lifts and their intervals (delta method)")
    verdicts = Check(f"{flag}: verdicts follow the intervals and each metric's direction")
    for metric in results["metrics"]:
        name = metric["name"]
        for arm in metric["arms"]:
            ours = estimate(metric, table, arm["arm"])
            means.equal(ours[0] if ours else None, arm["mean"], f"{name} {arm['arm']} mean")
        for comparison in metric["comparisons"]:
            arm = comparison["arm"]
            c, t = estimate(metric, table, control), estimate(metric, table, arm)
            adjustment = cuped(metric, table, control, arm) if metric["kind"] != "ratio" and c and t else None
            differences.expect(comparison["cuped"] == (adjustment is not None), f"{name} {arm}: cuped {comparison['cuped']}")
            if adjustment:
                _, c, t = adjustment
            elif metric["kind"] != "ratio" and c and t and c[1] is not None and t[1] is not None:
                # Welch's standard error of the plain difference, from statsmodels.
                rows = {a: table[table.arm == a][name].to_numpy() for a in (control, arm)}
                se = CompareMeans.from_data(rows[arm], rows[control]).std_meandiff_separatevar
                differences.expect(close(se * se, c[1] + t[1]), f"{name} {arm}: Welch standard error")
            difference = comparison["difference"]
            if not c or not t:
                differences.expect(difference["lower"] is None, f"{name} {arm}: an interval without estimates")
                continue
            diff = t[0] - c[0]
            differences.equal(diff, difference["estimate"], f"{name} {arm} difference")
            n = int((table.arm == control).sum() + (table.arm == arm).sum())
            if c[1] is None or t[1] is None or c[1] + t[1] <= 0:
                differences.expect(difference["lower"] is None and difference["upper"] is None, f"{name} {arm}: no interval without spread")
                continue
            half = cs_multiplier(n, alpha, planned) * math.sqrt(c[1] + t[1])
            differences.equal(diff - half, difference["lower"], f"{name} {arm} lower")
            differences.equal(diff + half, difference["upper"], f"{name} {arm} upper")
            if c[0] > 0:
                lift = t[0] / c[0] - 1
                se = math.sqrt(t[1] / c[0] ** 2 + t[0] ** 2 * c[1] / c[0] ** 4)
                relative = comparison["relative"] or {}
                lifts.equal(lift, relative.get("estimate"), f"{name} {arm} lift")
                lifts.equal(lift - cs_multiplier(n, alpha, planned) * se, relative.get("lower"), f"{name} {arm} lift lower")
                lifts.equal(lift + cs_multiplier(n, alpha, planned) * se, relative.get("upper"), f"{name} {arm} lift upper")
            lower, upper = diff - half, diff + half
            expected = "inconclusive"
            if lower > 0 or upper < 0:
                expected = "better" if (lower > 0) == (metric["better"] == "higher") else "worse"
            verdicts.expect(comparison["verdict"] == expected, f"{name} {arm}: {comparison['verdict']}, recomputed {expected}")
    for result in (means, differences, lifts, verdicts):
        result.report()


def main():
    arguments = sys.argv[1:]
    if not arguments or len(arguments) % 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    for index in range(0, len(arguments), 2):
        check(arguments[index], arguments[index + 1])
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
