# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- the launcher, scripts/hostpin (built as build/hostpin) ----
H=$top/build/hostpin
ver=$(cat "$top/VERSION")
out=$("$H" --version 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$out" = "hostpin $ver" ] && ok "hostpin --version: hostpin $ver" || bad "--version (rc $rc): $out"
out=$("$H" -V 2>&1)
[ "$out" = "hostpin $ver" ] && ok "hostpin -V" || bad "-V: $out"
lj=$(mktemp)
for form in "--backend=mlock --stats-file=$lj" "--backend mlock --stats-file $lj" "-b mlock -j $lj"; do
	rm -f "$lj"
	# shellcheck disable=SC2086
	out=$("$H" $form --threshold=64K -- "$B/pinmany" 2>&1); rc=$?
	if [ $rc -eq 0 ] && grep -q '"backend": "mlock"' "$lj" && ! grep -q '"pin_calls": 0,' "$lj"; then ok "options as '$form'"
	else bad "options as '$form' (rc $rc): $out $(cat "$lj" 2>/dev/null)"; fi
done
rm -f "$lj"
out=$("$H" --backend=mlock /bin/echo -b x -- y 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$out" = "-b x -- y" ] && ok "a command without --, its own options left alone (as numactl)" || bad "command without -- (rc $rc): $out"
out=$("$H" -s echo via-path 2>&1); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -qx via-path && echo "$out" | grep -q "job report" && ok "a command found on PATH, without --" || bad "command on PATH (rc $rc): $out"
out=$("$H" /no/such/prog 2>&1); rc=$?
[ $rc -eq 127 ] && [ "$out" = "hostpin: /no/such/prog: command not found" ] && ok "missing program: 'command not found', rc 127" || bad "missing program (rc $rc): $out"
out=$("$H" -b mlock -- no-such-command-hp 2>&1); rc=$?
[ $rc -eq 127 ] && [ "$out" = "hostpin: no-such-command-hp: command not found" ] && ok "missing program on PATH: rc 127" || bad "missing program on PATH (rc $rc): $out"
out=$("$H" "$top/VERSION" 2>&1); rc=$?
[ $rc -eq 126 ] && echo "$out" | grep -q "hostpin: $top/VERSION: permission denied" && ok "a file that is not executable: rc 126" || bad "not executable (rc $rc): $out"
out=$("$H" -b -- /bin/echo ran 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "^hostpin: -b needs a value, got '--'" && ! echo "$out" | grep -q ran && ok "-b -- cmd: '--' is not taken as the backend" || bad "-b -- (rc $rc): $out"
out=$("$H" --threshold 2>&1); rc=$?
[ $rc -eq 2 ] && [ "$out" = "hostpin: --threshold needs a value" ] && ok "a missing value at the end" || bad "missing value (rc $rc): $out"
out=$("$H" --log --strict /bin/true 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "^hostpin: --log needs a value, got '--strict'" && ok "an option is not taken as a value" || bad "option as value (rc $rc): $out"
out=$("$H" --backend=cuda9 /bin/true 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "^hostpin: --backend: 'cuda9' is not one of: auto none mlock cuda level_zero" && ok "an unknown backend named with the choices" || bad "bad backend (rc $rc): $out"
out=$("$H" --stats=1 /bin/true 2>&1); rc=$?
[ $rc -eq 2 ] && [ "$out" = "hostpin: --stats takes no value" ] && ok "a flag given a value" || bad "flag with value (rc $rc): $out"
out=$("$H" --frobnicate /bin/true 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "^hostpin: unknown option '--frobnicate'" && ok "an unknown option" || bad "unknown option (rc $rc): $out"
out=$("$H" 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "^hostpin: no command given" && ok "no command" || bad "no command (rc $rc): $out"
# bash completion
comp() { bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _hostpin; echo "${COMPREPLY[*]}"' _ "$top/scripts/hostpin.bash-completion" "$@"; }
r1=$(comp hostpin --ba) r2=$(comp hostpin --backend m) r3=$(comp hostpin --backend = le) r4=$(comp hostpin -l "") r5=$(comp hostpin -s --ver)
if [ "$r1" = "--backend" ] && [ "$r2" = "mlock" ] && [ "$r3" = "level_zero" ] && [ "$r4" = "off error warn info debug" ] && [ "$r5" = "--version" ]; then
	ok "bash completion: options, backends (also after =), log levels"
else bad "bash completion: '$r1' '$r2' '$r3' '$r4' '$r5'"; fi
r6=$(comp hostpin -b mlock ech)
echo " $r6 " | grep -q " echo " && ok "bash completion: the command after the options" || bad "completion of the command: '$r6'"
