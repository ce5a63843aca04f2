# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- statistics stay consistent through cache reuse and evictions ----
# After the program freed everything: blocks now and bytes now are 0, the
# peaks within what was live at once, in hostpin_stats() (the program
# checks), the text report and the JSON, with no cache, a cap that forces
# evictions, and a cache that holds everything.
build stats_mix stats_mix.c
for cache in 0 40M 1G; do
	d=$(mktemp -d)
	out=$(env $P HOSTPIN_BACKEND=mlock HOSTPIN_CACHE=$cache HOSTPIN_STATS=1 HOSTPIN_STATS_FILE="$d/s.json" \
		"$B/stats_mix" 2>&1); rc=$?
	read -r mb mby mbound < <(echo "$out" | sed -n 's/^bounds //p')
	# the text report's sizes are human (0B, 34.0M): bytes now must read
	# 0B; the peak in bytes is checked in the JSON
	text=$(echo "$out" | sed -n 's/.*blocks now \([0-9]*\) (\([^)]*\)), peak \([0-9]*\) (\([^)]*\)).*/\1 \2 \3 \4/p')
	json=$(python3 -c "import json;s=json.load(open('$d/s.json'));print(s['blocks_now'],s['bytes_now'],s['blocks_peak'],s['bytes_peak'],s['cache_evictions'])" 2>/dev/null)
	why=""
	[ $rc -eq 0 ] || why="$why rc=$rc"
	for src in text json; do
		read -r bn byn bp byp _ <<<"${!src}"
		if [ $src = text ]; then
			if [ "$bn" != 0 ] || [ "$byn" != 0B ] || [ "$bp" != "$mb" ] ||
				! [[ "$byp" =~ ^[0-9]+\.[0-9][KMGT]$ ]]; then why="$why text:'$text'"; fi
			continue
		fi
		if [ -z "$byp" ] || [ "$bn" != 0 ] || [ "$byn" != 0 ] || [ "$bp" != "$mb" ] ||
			[ "${#byp}" -gt 19 ] || [ "$byp" -lt "${mby:-0}" ] || [ "$byp" -gt "${mbound:-0}" ]; then
			why="$why $src:'${!src}'"
		fi
	done
	ev=${json##* }
	case $cache in 40M) [ "${ev:-0}" -ge 1 ] || why="$why no-eviction" ;; esac
	if [ -z "$why" ]; then
		ok "stats after everything freed, HOSTPIN_CACHE=$cache: 0 blocks and bytes now, peaks bounded (text, JSON, in-process; ${ev:-?} evictions)"
	else bad "stats, HOSTPIN_CACHE=$cache (bounds $mb $mby $mbound):$why"; echo "$out" | grep -v "^hostpin.*:   [a-z]" | tail -4 | sed 's/^/    /'; fi
	rm -rf "$d"
done
