"""Targeted: realistic cases from SEED with read_whole=true added to each; outcomes."""
import sys, collections
from tests.fuzz.realistic import realistic_cases
from tests.fuzz.differential import run_judged
seed, count = int(sys.argv[1]), int(sys.argv[2])
backend = sys.argv[3] if len(sys.argv) > 3 else "auto"
timing = backend != "netem"
tally = collections.Counter()
for case in realistic_cases(seed, count):
    settings = dict(case.settings); settings["read_whole"] = "true"
    case = case.replace(settings=tuple(sorted(settings.items())))
    outcome, first = run_judged(case, backend, timing=timing)
    tally[outcome.kind] += 1
    print(f"{outcome.kind:10} {case.command()}", flush=True)
    if outcome.kind not in ("agreed", "refused"):
        for line in outcome.detail[:6]: print("    ", line[:300], flush=True)
print(dict(tally))
