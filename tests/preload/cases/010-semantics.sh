# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- semantics, plain and across the matrix ----
run "semantics without hostpin" -- "$B/semantics"
while read -r env; do
	case $env in ''|'#'*) continue ;; esac
	run "semantics [$env]" $P HP_EXPECT_ACTIVE=1 $env -- "$B/semantics"
done < "$top/tests/preload/matrix/semantics"
run "semantics [HOSTPIN_DISABLE=1]" $P HOSTPIN_DISABLE=1 -- "$B/semantics"

