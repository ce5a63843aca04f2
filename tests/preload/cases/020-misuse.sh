# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- misuse aborts with a clear message ----
for how in double interior interior-odd; do
	out=$(env $P "$B/abuse" $how 2>&1); rc=$?
	if [ $rc -eq 134 ] && echo "$out" | grep -Eq "hostpin\[[0-9]+\]: free\(\): (double free|invalid pointer)"; then
		ok "abuse $how aborts: $(echo "$out" | grep -o 'free().*' | head -1)"
	else bad "abuse $how (rc $rc): $out"; fi
done

