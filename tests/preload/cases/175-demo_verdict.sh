# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- make demo's verdict on step times (scripts/demo_verdict.py) ----
# Nothing runs under hostpin: synthetic step times (seconds, one a line;
# the first of ten is the warm-up and dropped) go to the verdict the demo
# prints.  Must hold: a difference is "clear" only when it is over 10% and
# each run's median lies outside the other run's min..max; everything else
# is "no clear difference", whatever the medians say.  Noisy runs with a
# 19% or 24% gap and overlapping ranges are the runs a busy machine gives.
dv=$(mktemp -d)
dv_times() { # FILE VALUES...: step times in seconds
	local f=$1; shift
	printf '%s\n' "$@" > "$dv/$f"
}
dv_check() { # WHAT EXPECT(clear-faster|clear-slower|none) PLAIN... -- HOSTPIN...
	local what=$1 want=$2 p=() h=() side=p out
	shift 2
	for v in "$@"; do
		if [ "$v" = -- ]; then side=h; continue; fi
		if [ $side = p ]; then p+=("$v"); else h+=("$v"); fi
	done
	dv_times plain "${p[@]}"; dv_times hostpin "${h[@]}"
	out=$(/usr/bin/python3 "$top/scripts/demo_verdict.py" "$dv/plain" "$dv/hostpin" 2>&1)
	case "$want:$out" in
	clear-faster:"steps "*"% faster: "*|clear-slower:"steps "*"% slower: "*|none:"no clear difference in step time ("*"%, within the spread)")
		ok "demo verdict, $what: '$out'" ;;
	*) bad "demo verdict, $what (want $want): '$out'" ;;
	esac
}
# 19% slower by the medians, ranges overlapping (each median inside the other's range)
dv_check "noise, +19% with overlapping ranges" none \
	0.5 0.080 0.090 0.095 0.100 0.100 0.100 0.110 0.130 0.140 -- \
	0.5 0.090 0.100 0.110 0.119 0.119 0.119 0.125 0.140 0.150
# 24% faster by the medians, still overlapping
dv_check "noise, -24% with overlapping ranges" none \
	0.5 0.080 0.095 0.100 0.100 0.100 0.105 0.110 0.120 0.140 -- \
	0.5 0.070 0.072 0.076 0.076 0.076 0.080 0.090 0.101 0.110
# over 10%, and hostpin's median inside plain's range (plain's not in hostpin's): not clear
dv_check "+15%, one median inside the other's range" none \
	0.5 0.095 0.097 0.100 0.100 0.100 0.102 0.110 0.120 0.125 -- \
	0.5 0.112 0.113 0.114 0.115 0.115 0.115 0.116 0.117 0.118
# disjoint ranges, but only 5% apart
dv_check "+5%, disjoint ranges" none \
	0.5 0.099 0.099 0.100 0.100 0.100 0.100 0.101 0.101 0.101 -- \
	0.5 0.104 0.104 0.105 0.105 0.105 0.105 0.106 0.106 0.106
# clear: 30% and 40% apart, ranges apart (each run's first step, 0.5 s,
# is the warm-up: counted, it would put every median inside both ranges)
dv_check "+30%, disjoint ranges" clear-slower \
	0.5 0.095 0.097 0.100 0.100 0.100 0.102 0.103 0.104 0.105 -- \
	0.5 0.125 0.127 0.130 0.130 0.130 0.132 0.133 0.134 0.135
dv_check "-40%, disjoint ranges" clear-faster \
	0.5 0.095 0.097 0.100 0.100 0.100 0.102 0.103 0.104 0.105 -- \
	0.5 0.055 0.058 0.060 0.060 0.060 0.061 0.062 0.063 0.064
rm -rf "$dv"
