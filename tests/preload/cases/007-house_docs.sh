# The documents true to the code.  Nothing is run under hostpin: the case
# reads README.md, docs/knobs.md and CONTRIBUTING.md against the tree.
# - docs/knobs.md's table (between the "knobs:" markers) names every knob of
#   preload/base/options.def once, and no other, each with options.def's default
#   (scripts/readme-knobs --update rewrites it); every "`HOSTPIN_X` (default
#   `V`)" in README says options.def's default too.
# - CONTRIBUTING.md's map of preload/ names every preload/*/*.c, and only files that exist.
# - CONTRIBUTING.md's "Every file, by directory" listing names each file (and
#   subdirectory) of registry/ preload/ status/ python/ man/ scripts/ and
#   tests/{unit,preload,fakes,stress,bench}/ exactly as the tree has them:
#   none missing, none that is not there.
# - man/hostpin-reference.7's generated lists (every knob, every hooked CUDA
#   entry point) and man/hostpin.7's list of every knob's name match
#   options.def and the hooks' .def files (scripts/man-lists --update
#   rewrites them).
readme=$top/README.md
knobs_md=$top/docs/knobs.md        # the table of every knob
contrib=$top/CONTRIBUTING.md       # the map of preload/ and the file listing
defs=$top/preload/base/options.def
# NAME DEFAULT of every knob, from options.def
def_knobs=$(sed -n 's/^HP_OPT(\([A-Z0-9_]*\), *[A-Z]*, *"\([^"]*\)".*/\1 \2/p' "$defs" | LC_ALL=C sort)
n_opt=$(grep -c '^HP_OPT(' "$defs")
[ "$(echo "$def_knobs" | grep -c .)" = "$n_opt" ] || bad "house_docs: could not read every HP_OPT line of options.def"
# NAME DEFAULT of every row of README's table ((empty) is an empty default)
table=$(sed -n '/^<!-- knobs: /,/^<!-- end of knobs -->/p' "$knobs_md")
readme_knobs=$(echo "$table" | sed -n 's/^| `HOSTPIN_\([A-Z0-9_]*\)` | [^|]* | `\([^`]*\)` |.*/\1 \2/p' |
	sed 's/ (empty)$/ /' | LC_ALL=C sort)
dups=$(echo "$table" | grep -o '^| `HOSTPIN_[A-Z0-9_]*`' | LC_ALL=C sort | uniq -d | tr -d '|`' | tr '\n' ' ')
if [ -n "$table" ] && [ -z "$dups" ] && [ "$readme_knobs" = "$def_knobs" ]; then
	ok "house_docs: docs/knobs.md's table lists the $n_opt knobs of options.def once each, with their defaults"
else
	bad "house_docs: docs/knobs.md's table differs from preload/base/options.def (run scripts/readme-knobs --update):${dups:+ twice: $dups}"
	diff <(echo "$def_knobs") <(echo "$readme_knobs") | sed -n 's/^[<>]/    &/p' | head -10
fi
# "`HOSTPIN_X` (default `V`)" in the prose
wrong=""
while read -r k v; do
	[ -n "$k" ] || continue
	d=$(echo "$def_knobs" | awk -v k="$k" '$1 == k { print $2; f = 1 } END { if (!f) print "(no such knob)" }')
	[ "$v" = "$d" ] || wrong="$wrong HOSTPIN_$k:$v/$d"
done < <(grep -o '`HOSTPIN_[A-Z0-9_]*` (default `[^`]*`' "$readme" | sed 's/`HOSTPIN_\([A-Z0-9_]*\)` (default `\([^`]*\)`/\1 \2/')
n_prose=$(grep -o '`HOSTPIN_[A-Z0-9_]*` (default `' "$readme" | grep -c .)
if [ "$n_prose" -ge 5 ] && [ -z "$wrong" ]; then ok "house_docs: the $n_prose defaults README's prose gives are options.def's"
else bad "house_docs: README's prose gives wrong defaults (README/options.def):$wrong (found $n_prose)"; fi

# The map of preload/: between "A map of preload/" and "Every file, by directory:"
map=$(sed -n '/^A map of preload\//,/^Every file, by directory:/p' "$contrib")
map_names=$(echo "$map" | grep -oE '\b[A-Za-z0-9_]+\.(c|h|def|map)\b' | LC_ALL=C sort -u)
missing="" stale=""
for f in "$top"/preload/*/*.c; do
	b=$(basename "$f"); echo "$map_names" | grep -qx "$b" || missing="$missing $b"
done
for b in $map_names; do [ -n "$(find "$top/preload" -name "$b" -print -quit)" ] || [ "$b" = registry.c ] || stale="$stale $b"; done
if [ -n "$map" ] && [ -z "$missing$stale" ]; then ok "house_docs: the map of preload/ names every preload/*/*.c ($(ls "$top"/preload/*/*.c | wc -l)) and only files that exist"
else bad "house_docs: the map of preload/ misses:${missing:- none}; names files that do not exist:${stale:- none}"; fi

# The listing: a line "    DIR/  ..." starts DIR's rows; a row "      NAMES  what
# they are" (six spaces) names its files before the first two spaces,
# separated by ", ".
listed=$(sed -n '/^Every file, by directory:/,/^## /p' "$contrib" | awk '
	/^    [^ ]/ { d = $1; if (d !~ /\/$/) d = ""; next }
	/^      [^ ]/ && d != "" {
		row = substr($0, 7); i = index(row, "  "); if (i) row = substr(row, 1, i - 1)
		n = split(row, a, ", "); for (j = 1; j <= n; j++) print d a[j] }' | LC_ALL=C sort)
intree() { # the files and subdirectories directly in DIR, as DIR/NAME and DIR/SUB/
	local d=$1
	if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
		git -C "$top" ls-files -co --exclude-standard -- "$d" |
			awk -v d="$d/" 'index($0, d) == 1 { r = substr($0, length(d) + 1); i = index(r, "/")
				print d (i ? substr(r, 1, i) : r) }'
	else
		(cd "$top" && find "$d" -mindepth 1 -maxdepth 1 \( -type f -printf '%p\n' -o -type d -printf '%p/\n' \))
	fi
}
dirs="registry preload preload/hooks preload/copy preload/policy preload/backend preload/node preload/base status python man scripts tests/unit tests/libfuzzer tests/preload tests/fakes tests/stress tests/bench"
tree=$(for d in $dirs; do intree "$d"; done | LC_ALL=C sort -u)
notlisted=$(comm -23 <(echo "$tree") <(echo "$listed") | tr '\n' ' ')
notthere=$(comm -13 <(echo "$tree") <(echo "$listed") | tr '\n' ' ')
if [ -n "$listed" ] && [ -z "$notlisted$notthere" ]; then
	ok "house_docs: CONTRIBUTING.md's file listing names the $(echo "$tree" | grep -c .) files of $dirs, and nothing else"
else bad "house_docs: CONTRIBUTING.md's file listing: not listed: ${notlisted:-none}; listed but not there: ${notthere:-none}"; fi

# What a newcomer reads first: README short (about 250 lines at most), its
# two commands (make demo, make check) within its first 20 lines; no
# tracker numbers ("issue 23"), development machines' paths or internal
# nicknames in the files users read (README, docs/, man/, bench/).
n=$(wc -l < "$readme")
if [ "$n" -le 260 ] && head -20 "$readme" | grep -q 'make demo' && head -20 "$readme" | grep -q 'make check'; then
	ok "house_docs: README is $n lines, make demo and make check in its first 20"
else bad "house_docs: README is $n lines (want <= 260); make demo/make check in the first 20: $(head -20 "$readme" | grep -c 'make demo\|make check') lines"; fi
private=$(cd "$top" && grep -rnEi 'issues? [0-9]|/work/|/root/out|/home/[a-z]|the house' README.md docs man \
	bench/*.md bench/*.txt 2>/dev/null | head -5)
[ -z "$private" ] && ok "house_docs: no tracker numbers, machine paths or nicknames in README, docs/, man/, bench/" ||
	{ bad "house_docs: users' files name private things:"; echo "$private" | sed 's/^/    /'; }

# -- the reference page's lists from the code (issue 42, item 5) --
# Injected: nothing; then a copy of the page with one generated line
# dropped.  Must hold: scripts/man-lists --check passes on the page, and
# fails, naming the list, on the copy.
if out=$("$top/scripts/man-lists" --check 2>&1); then
	ok "house_docs: hostpin-reference(7)'s lists of knobs and CUDA entry points, and hostpin(7)'s knob names, match options.def and the hooks' .def files"
else bad "house_docs: $out"; fi
mt=$(mktemp)
grep -v '^\\fBHOSTPIN_THRESHOLD\\fP$' "$top/man/hostpin-reference.7" > "$mt"
out=$(MAN_LISTS_PAGE=$mt "$top/scripts/man-lists" --check 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "differs from the code in: knobs (run scripts/man-lists --update)" &&
	ok "house_docs: scripts/man-lists --check fails on a page whose knob list lacks HOSTPIN_THRESHOLD" ||
	bad "house_docs: man-lists --check on an altered page (rc $rc): $out"
rm -f "$mt"
# hostpin(7) names every knob: a copy of it without HOSTPIN_PIN_AFTER's line
# in its generated list fails --check, naming the page and the list; every
# knob of options.def is in the page's list, as the user reads it.
mt=$(mktemp)
grep -v '^\.BR \\%HOSTPIN_PIN_AFTER ' "$top/man/hostpin.7" > "$mt"
out=$(MAN_LISTS_MANUAL=$mt "$top/scripts/man-lists" --check 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "differs from the code in: knob names (run scripts/man-lists --update)" &&
	! cmp -s "$mt" "$top/man/hostpin.7" &&
	ok "house_docs: scripts/man-lists --check fails on a hostpin(7) whose knob names lack HOSTPIN_PIN_AFTER" ||
	bad "house_docs: man-lists --check on an altered hostpin(7) (rc $rc): $out"
rm -f "$mt"
listed7=$(sed -n '/generated by scripts\/man-lists: knob names/,/end of generated knob names/p' "$top/man/hostpin.7" |
	sed -n 's/^\.BR \\%HOSTPIN_\([A-Z0-9_]*\) .*/\1/p' | LC_ALL=C sort)
[ -n "$listed7" ] && [ "$listed7" = "$(echo "$def_knobs" | cut -d' ' -f1)" ] &&
	ok "house_docs: hostpin(7) names each of the $n_opt knobs of options.def" ||
	bad "house_docs: hostpin(7)'s knob names differ from options.def: $(diff <(echo "$def_knobs" | cut -d' ' -f1) <(echo "$listed7") | grep '^[<>]' | tr '\n' ' ')"
