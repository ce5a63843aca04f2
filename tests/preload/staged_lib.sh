# Sourced by the staged-copy cases (176, 184, 185, 187, 188, 199):
# one run of a staged-copy program under hostpin, judged on its output and
# the fake driver's log.
# staged_case LABEL PROG NAME WANT(staged|through|any) ENV... -- MODE
# Runs $B/PROG MODE with HOSTPIN_CACHE=0, HOSTPIN_THRESHOLD=256M and
# FAKE_CUDA_NO_PAGEABLE=4194304 (ENV... may override them); sets STAGE_OUT
# (its output) and STAGE_LOG (the fake's log).  Must hold: exit 0, the line
# "PROG MODE: ok", no VIOLATION but pageable-copy ones, none of those when
# WANT is staged and some when it is through (any: either), no overlapping registration,
# no context of hostpin's own, every registration released at exit.
staged_case() {
	local label=$1 prog=$2 name=$3 want=$4; shift 4
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
	local log rc why=""
	log=$(mktemp)
	STAGE_OUT=$(timeout 120 env $P HOSTPIN_CACHE=0 HOSTPIN_THRESHOLD=256M \
		FAKE_CUDA_NO_PAGEABLE=4194304 FAKE_CUDA_LOG="$log" "${envs[@]}" \
		"$B/$prog" "$@" 2>&1); rc=$?
	STAGE_LOG=$(cat "$log"); rm -f "$log"
	[ $rc -eq 0 ] || why="$why rc=$rc"
	echo "$STAGE_OUT" | grep -q "$prog $1: ok" || why="$why no-ok-line"
	local pv ov
	pv=$(echo "$STAGE_LOG" | grep -c "VIOLATION pageable-copy")
	ov=$(echo "$STAGE_LOG" | grep VIOLATION | grep -vc "pageable-copy")
	[ "$ov" = 0 ] || why="$why $(echo "$STAGE_LOG" | grep VIOLATION | grep -v pageable-copy | head -2)"
	if [ "$want" = staged ]; then
		[ "$pv" = 0 ] || why="$why pageable-copies-reached-the-driver:$pv"
	elif [ "$want" = through ]; then
		[ "$pv" -gt 0 ] || why="$why not-passed-through"
	fi
	echo "$STAGE_LOG" | grep -q OVERLAP && why="$why overlapping-registration"
	echo "$STAGE_LOG" | grep -q CTXCREATE && why="$why context-created"
	echo "$STAGE_LOG" | grep -q "EXIT live=0\$" || why="$why $(echo "$STAGE_LOG" | grep EXIT | head -1)"
	if [ -z "$why" ]; then ok "$label: $name"
	else bad "$label: $name:$why"; echo "$STAGE_OUT" | tail -4 | sed 's/^/    /'; fi
}
# staged_errors LABEL OUT: the program's "htod CODE" and "dtoh CODE" lines
# in OUT must be the errors the case injected (700 and 701).
staged_errors() {
	if echo "$2" | grep -q "^htod 700$" && echo "$2" | grep -q "^dtoh 701$"; then
		ok "$1: the injected errors surfaced (700, 701)"
	else bad "$1: injected errors not returned: $(echo "$2" | grep -E '^(htod|dtoh)' | tr '\n' ' ')"; fi
}
