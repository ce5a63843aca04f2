# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- the layers of preload/ call only downward (issues 23, 35) ----
# Layers, top to bottom, one folder each: preload/hooks/ -> preload/copy/ ->
# preload/policy/ -> preload/backend/ and preload/node/ (one level) ->
# preload/base/ -> the registry.  A backend reports what happened (a lost
# device, an ended context) through its return values or the event word in
# backend.h; it never calls the policy.
# The calls: compiles each preload/*/*.c to an object with the library's
# flags and reads the symbols each one uses (nm -u) against those the others
# define (nm --defined-only).  Must hold: no object uses a symbol an object of
# a higher layer defines, but for the "FILE -> SYMBOL: why" lines of
# scripts/layers.allow; numa uses nothing a particular backend defines.
# Prints each offending pair (user -> symbol owner).
# The includes: scripts/check-layers passes on this tree (make check runs
# it too, as its own tier), and fails, naming the file and line, on a copy
# of the tree given an upward include, and on a registry that includes
# preload/.
hl_dir=$top/build/test/house
rm -rf "$hl_dir"
mkdir -p "$hl_dir"
hl_ok=1
hl_rank() {
	case $1 in
	hooks) echo 7 ;; copy) echo 6 ;; policy) echo 5 ;; backend | node) echo 4 ;;
	base) echo 3 ;; *) echo 0 ;;
	esac
}
for hl_c in "$top"/preload/*/*.c; do
	hl_l=$(basename "$(dirname "$hl_c")")
	hl_o=$hl_dir/$hl_l.$(basename "$hl_c" .c).o
	$CC -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -DHP_VERSION="\"$(cat "$top/VERSION")\"" \
		${CFLAGS:--O2 -g} -fPIC -fvisibility=hidden -c -o "$hl_o" "$hl_c" || hl_ok=0
done
if [ $hl_ok = 1 ]; then
	# "symbol layer.file" for every symbol an object defines
	for hl_o in "$hl_dir"/*.o; do
		nm --defined-only "$hl_o" | awk -v o="$(basename "$hl_o" .o)" '$2 ~ /^[A-Z]$/ {print $3, o}'
	done | sort -k1,1 >"$hl_dir/defs"
	hl_allow=$(sed -n 's/^\(preload\/[^ ]*\.c\) -> \([A-Za-z_][A-Za-z0-9_]*\):.*/\1 \2/p' "$top/scripts/layers.allow")
	hl_up="" hl_n=0 hl_allowed=0
	for hl_o in "$hl_dir"/*.o; do
		hl_u=$(basename "$hl_o" .o)
		hl_ur=$(hl_rank "${hl_u%%.*}")
		while read -r hl_s hl_d; do
			[ -n "$hl_s" ] || continue
			hl_n=$((hl_n + 1))
			[ "$(hl_rank "${hl_d%%.*}")" -gt "$hl_ur" ] || continue
			if echo "$hl_allow" | grep -qx "preload/${hl_u%%.*}/${hl_u#*.}.c $hl_s"; then
				hl_allowed=$((hl_allowed + 1)); continue
			fi
			hl_up="$hl_up
    ${hl_u%%.*}/${hl_u#*.}.c -> $hl_s (defined in ${hl_d%%.*}/${hl_d#*.}.c, a layer above)"
		done < <(nm -u "$hl_o" | awk '{print $NF}' | sort -u | join - "$hl_dir/defs")
	done
	if [ -z "$hl_up" ]; then
		ok "layers: each of the $hl_n calls between preload/'s objects goes to its own layer or below ($hl_allowed allowed by scripts/layers.allow)"
	else bad "layers: calls go up a layer (not in scripts/layers.allow):$hl_up"; fi
	# numa.c asks the contract for the device's node, never a backend by name
	hl_up=$(nm -u "$hl_dir/node.numa.o" | awk '{print $NF}' | sort -u | join - "$hl_dir/defs" |
		awk '$2 ~ /^backend\.backend_/')
	if [ -z "$hl_up" ]; then
		ok "layers: numa names no backend (the contract's device_node)"
	else bad "layers: numa names a backend:"; echo "$hl_up" | sed 's/^/    /'; fi
else
	bad "layers: preload/*/*.c do not compile one by one"
fi

# the include check, on this tree and on two copies that break it
if out=$("$top/scripts/check-layers" 2>&1); then ok "layers: $out"
else bad "layers: scripts/check-layers fails on this tree:"; echo "$out" | sed 's/^/    /'; fi
hl_t=$hl_dir/tree
mkdir -p "$hl_t"
cp -r "$top/preload" "$top/registry" "$top/status" "$hl_t/"
# base/log.c including the copy engine's header, after its first include
sed -i '0,/^#include "/s//#include "..\/copy\/stage.h"\n#include "/' "$hl_t/preload/base/log.c"
hl_line=$(grep -n '^#include "../copy/stage.h"' "$hl_t/preload/base/log.c" | cut -d: -f1)
out=$("$top/scripts/check-layers" "$hl_t" 2>&1); hl_rc=$?
if [ $hl_rc = 1 ] && echo "$out" | grep -q "^preload/base/log.c:$hl_line: includes preload/copy/stage.h: base may include only"; then
	ok "layers: check-layers fails on base/log.c including copy/stage.h, naming preload/base/log.c:$hl_line and the rule"
else bad "layers: check-layers passed an upward include (rc $hl_rc):"; echo "$out" | sed 's/^/    /'; fi
cp "$top/preload/base/log.c" "$hl_t/preload/base/log.c"
sed -i '0,/^#include "/s//#include "..\/preload\/hp.h"\n#include "/' "$hl_t/registry/registry.c"
out=$("$top/scripts/check-layers" "$hl_t" 2>&1); hl_rc=$?
if [ $hl_rc = 1 ] && echo "$out" | grep -q "^registry/registry.c:[0-9]*: includes preload/hp.h: the registry is standalone"; then
	ok "layers: check-layers fails on the registry including preload/hp.h"
else bad "layers: check-layers passed a registry that includes preload/ (rc $hl_rc):"; echo "$out" | sed 's/^/    /'; fi
