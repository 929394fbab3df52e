#!/usr/bin/env python3
"""Sum the `phasecheck mutate --gpu --format json` outputs in a folder (scripts/gpu-mutate-corpus.sh):
the agreement matrix over all files, the disagreements, the share of the checker's hazards that
the GPU showed, and why the rest were not shown, by class."""
import collections, json, pathlib, sys

logs = pathlib.Path(sys.argv[1])
rows = ("checker_hazard", "checker_ok", "checker_other")
cols = ("gpu_hazard", "gpu_nothing_seen", "gpu_not_run")
matrix = {r: collections.Counter() for r in rows}
mutants = flagged = files = 0
disagreements, failed = [], []
not_shown = collections.Counter()     # class of the obstacle -> findings
not_run = collections.Counter()       # first words of the note -> mutants
rules_seen = collections.Counter()    # rule -> (confirmed) findings
rules_tried = collections.Counter()
for p in sorted(logs.glob("*.json")):
    try:
        d = json.loads(p.read_text())
    except Exception as e:  # noqa: BLE001 - a run without JSON is reported, not fatal
        failed.append("%s: %s" % (p.name, (p.with_suffix(".err").read_text()[-300:] if p.with_suffix(".err").exists() else e)))
        continue
    g = d.get("gpu") or {}
    if g.get("skipped"):
        failed.append("%s: GPU skipped: %s" % (p.name, g.get("error")))
        continue
    files += 1
    for r in rows:
        for c in cols:
            matrix[r][c] += g.get("matrix", {}).get(r, {}).get(c, 0)
    disagreements += g.get("disagreements", [])
    for f in d["files"]:
        for m in f.get("mutants", []):
            mutants += 1
            o = m.get("gpu") or {}
            if m["checker"]["verdict"] == "hazard":
                flagged += 1
            if o.get("hazard") is None:
                for n in o.get("notes", [])[:1]:
                    not_run[n.split(":")[0][:70]] += 1
            for fr in o.get("findings", []):
                rules_tried[fr["rule"]] += 1
                if fr["outcome"] == "confirmed":
                    rules_seen[fr["rule"]] += 1
                else:
                    classes = [w["class"] for w in fr.get("why_not_shown", [])] or ["(no class given)"]
                    aimed = fr.get("aimed_fuzz")
                    for c in classes:
                        not_shown[(fr["rule"], fr["outcome"], c, bool(aimed and aimed.get("shown")))] += 1

print("files with a GPU run: %d; mutants: %d (checker flags %d)" % (files, mutants, flagged))
print("%-22s %10s %13s %8s" % ("checker vs GPU", "GPU hazard", "nothing seen", "not run"))
for r in rows:
    print("%-22s %10d %13d %8d" % (r.replace("_", " "), *(matrix[r][c] for c in cols)))
ran = matrix["checker_hazard"]["gpu_hazard"] + matrix["checker_hazard"]["gpu_nothing_seen"]
if ran:
    print("share of the checker's hazards run on the GPU that it showed: %d of %d (%.0f%%)"
          % (matrix["checker_hazard"]["gpu_hazard"], ran, 100.0 * matrix["checker_hazard"]["gpu_hazard"] / ran))
print("disagreements (GPU hazard, checker ok): %s" % (", ".join(disagreements) or "none"))
print("replayed findings by rule (confirmed / replayed):")
for rule in sorted(rules_tried):
    print("  %-28s %d / %d" % (rule, rules_seen[rule], rules_tried[rule]))
print("replays that did not show their finding, by rule, outcome and class (aimed fuzz showed it?):")
for (rule, outcome, c, aimed), n in sorted(not_shown.items()):
    print("  %-28s %-14s %-22s aimed fuzz %s: %d" % (rule, outcome, c, "showed it" if aimed else "no", n))
print("mutants not run, by reason:")
for why, n in sorted(not_run.items(), key=lambda x: -x[1]):
    print("  %4d  %s" % (n, why))
for x in failed:
    print("NO RESULT %s" % x)
