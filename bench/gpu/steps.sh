# Sourced after env.sh by GPU scripts from run 33 on (earlier runs' run.sh each define these
# themselves, as they ran): one line per step in the summary, the step's whole output in $L.
# t TAG BINARY LIMIT_S ARGS...  a test binary: its rc, seconds and last `test result` line.
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
# p TAG BINARY ARGS...  a perf run (120 s at most, JSON beside the log): op, size, algo, median us
# and #wrong of each row, then the rows' p10-p90 us where the JSON has them (perf from 2026-12-07
# on), then any error or panic line.
p() { local tag=$1 b=$2; shift 2; local s=$(date +%s); timeout 120 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$? $(( $(date +%s) - s ))s $(grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log | awk '{printf "%s %s %s %s #%s; ", $1, $2, $6, $7, $10}')$(spread $L/$tag.json)"; grep -E '^error|panicked' $L/$tag.log; }
# spread JSON  the p10-p90 (us) of each row of a perf JSON that records them; nothing otherwise.
spread() { python3 -c 'import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
print(" ".join("p10-p90 %.1f-%.1f;" % (r["p10_us"], r["p90_us"]) for r in rows if r.get("p10_us") is not None), end="")' "$1" 2>/dev/null; }
