# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- the house: every hooked entry point can be found by its name ----
# Checks the source, runs no program.  For every CUDA driver (cu*), CUDA
# runtime (cuda*) and Level Zero (ze*, zex*) name build/libhostpin.so
# exports, `grep -n 'NAME(' preload/` must find its definition: a line that
# starts with HP_EXPORT, the return type and NAME( (not a call, not a
# prototype ending in ";", not a macro that pastes the name together).
# One FAIL per name without one; one PASS when every name has one.
house_missing=""
house_names=$(nm -D --defined-only "$LIB" 2>/dev/null | awk '{print $3}' |
	sed 's/@.*//' | grep -E '^(cu|cuda|ze|zex)[A-Z]' | sort -u)
if [ -z "$house_names" ]; then
	bad "house: no cu*/cuda*/ze* export found in $LIB (nm -D)"
else
	for n in $house_names; do
		if ! grep -rnE "^HP_EXPORT[[:space:]]+[A-Za-z_][A-Za-z0-9_]*[[:space:]*]+$n\(" \
			"$top/preload/" | grep -qv ';[[:space:]]*$'; then
			bad "house: exported $n has no definition line in preload/ (grep -n '$n(' preload/)"
			house_missing="$house_missing $n"
		fi
	done
	[ -z "$house_missing" ] &&
		ok "house: each of the $(echo "$house_names" | wc -l) exported CUDA and Level Zero entry points is defined by its own name in preload/"
fi
