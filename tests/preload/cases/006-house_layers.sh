# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- the layers of preload/ call only downward (issue 23) ----
# Layers, top to bottom, one folder each: preload/hooks/ -> preload/copy/ ->
# preload/policy/ -> preload/backend/ and preload/node/ -> preload/base/ ->
# the registry (scripts/check-layers checks the includes the same way).  A backend reports what
# happened (a lost device, an ended context) through its return values or
# the event word in backend.h; it never calls the policy.
# Injects nothing: compiles each preload/*.c to an object with the library's
# flags and reads the symbols each one uses (nm -u) against those the others
# define (nm --defined-only).  Must hold: no backend or node-facts object uses
# a symbol a policy object defines; no base object uses one a policy or
# backend object defines; numa uses nothing a particular backend defines.
# Prints each offending pair (user -> symbol owner).
hl_dir=$top/build/test/house
mkdir -p "$hl_dir"
hl_ok=1
for hl_c in "$top"/preload/*/*.c; do
	hl_o=$hl_dir/$(basename "$hl_c" .c).o
	$CC -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -DHP_VERSION="\"$(cat "$top/VERSION")\"" \
		${CFLAGS:--O2 -g} -fPIC -fvisibility=hidden -c -o "$hl_o" "$hl_c" || hl_ok=0
done
# the objects of a layer: the files of its folder
hl_layer() { local f; for f in "$top"/preload/$1/*.c; do basename "$f" .c; done | tr '\n' ' '; }
hl_policy=$(hl_layer policy)
hl_backends=$(hl_layer backend)
hl_node=$(hl_layer node)
hl_base=$(hl_layer base)
# defs FILE OBJ...: "symbol object" for every symbol the objects define
hl_defs() {
	local out=$1 o; shift
	for o in "$@"; do
		nm --defined-only "$hl_dir/$o.o" | awk -v o="$o" '$2 ~ /^[A-Z]$/ && $2 != "U" {print $3, o}'
	done | sort -k1,1 >"$out"
}
# uses DEFS OBJ...: "user -> symbol (owner)" for each undefined symbol of an
# object that DEFS defines
hl_uses() {
	local defs=$1 o; shift
	for o in "$@"; do
		nm -u "$hl_dir/$o.o" | awk '{print $NF}' | sort -u | join - "$defs" |
			awk -v o="$o" '{print o " -> " $1 " (" $2 ".o)"}'
	done
}
if [ $hl_ok = 1 ]; then
	hl_defs "$hl_dir/policy.defs" $hl_policy
	hl_defs "$hl_dir/lower.defs" $hl_policy $hl_backends
	hl_up=$(hl_uses "$hl_dir/policy.defs" $hl_backends $hl_node)
	if [ -z "$hl_up" ]; then
		ok "layers: backends and node facts ($hl_backends $hl_node) use nothing of the policy"
	else bad "layers: backends or node facts call up into the policy:"; echo "$hl_up" | sed 's/^/    /'; fi
	# numa.c asks the contract for the device's node, never a backend by name
	hl_defs "$hl_dir/named.defs" backend_cuda backend_host backend_level_zero
	hl_up=$(hl_uses "$hl_dir/named.defs" numa)
	if [ -z "$hl_up" ]; then
		ok "layers: numa names no backend (the contract's device_node)"
	else bad "layers: numa names a backend:"; echo "$hl_up" | sed 's/^/    /'; fi
	hl_up=$(hl_uses "$hl_dir/lower.defs" $hl_base)
	if [ -z "$hl_up" ]; then
		ok "layers: the base ($hl_base) uses nothing of the policy or the backends"
	else bad "layers: the base calls up into the policy or the backends:"; echo "$hl_up" | sed 's/^/    /'; fi
else
	bad "layers: preload/*/*.c do not compile one by one"
fi
