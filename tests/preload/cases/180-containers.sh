# Sourced by tests/preload/run.sh.
# ---- README's "Containers" section, each line run as far as this machine
# allows without Docker (issue 25 item 4).  A "container" here is a mount
# namespace (`unshare -m`), with its own /dev/shm or /etc where a line is
# about those, or make compat's Debian 11 root as a chroot.  Nothing on the
# host is changed: /etc/ld.so.preload is written only in an overlay of /etc
# in a private mount namespace.  Without root: SKIP. ----
ST=$top/build/hostpin-status
d=$(mktemp -d)
chmod 755 "$d"
hdr="set -u; LIB='$LIB'; ST='$ST'; d='$d'"
isroot=0
[ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null && isroot=1
# The README lines the cases below run, read from README.md itself.
rd=$top/README.md
preload_line=$(sed -n 's/^    RUN echo \(\/[^ ]*libhostpin\.so\) > \/etc\/ld\.so\.preload.*/\1/p' "$rd")
[ -n "$preload_line" ] || bad "containers: README has no 'RUN echo .../libhostpin.so > /etc/ld.so.preload' line"
grep -q '^    RUN dpkg -i /tmp/hostpin_\*\.deb' "$rd" || bad "containers: README has no 'RUN dpkg -i' line"
grep -q '^    ENV LD_PRELOAD=libhostpin\.so' "$rd" || bad "containers: README has no 'ENV LD_PRELOAD=libhostpin.so' line"

if [ $isroot = 0 ]; then
	echo "SKIP: not root (or no unshare -m): containers' /etc, /dev/shm, chroot and memlock not injected"
else

# 1. ENV LD_PRELOAD versus /etc/ld.so.preload.  Injected: in a private
# mount namespace, an overlay on /etc whose ld.so.preload names the library
# (README's line, with this build's path).  Must hold: a process started
# with a cleared environment (env -i) has hostpin mapped under
# /etc/ld.so.preload, and has not with LD_PRELOAD in the environment only.
out=$(unshare -m bash -c "$hdr"'
	mkdir -p "$d/etc-up" "$d/etc-work"
	mount -t overlay overlay -o lowerdir=/etc,upperdir="$d/etc-up",workdir="$d/etc-work" /etc ||
		{ echo "no overlay"; exit; }
	echo "env-only: $(LD_PRELOAD="$LIB" env -i /bin/grep -c libhostpin /proc/self/maps)"
	echo "$LIB" > /etc/ld.so.preload
	echo "ld.so.preload: $(env -i /bin/grep -c libhostpin /proc/self/maps)"' 2>&1)
if echo "$out" | grep -q '^no overlay'; then
	echo "SKIP: no overlay mount on /etc here: /etc/ld.so.preload not tried ($out)"
elif echo "$out" | grep -q '^env-only: 0$' && echo "$out" | grep -q '^ld.so.preload: [1-9]'; then
	ok "containers: env -i drops ENV LD_PRELOAD, /etc/ld.so.preload still preloads hostpin"
else bad "containers: /etc/ld.so.preload vs LD_PRELOAD (want env-only 0, ld.so.preload >0):"; echo "$out" | sed 's/^/    /'; fi
if [ -e /etc/ld.so.preload ] && grep -q libhostpin /etc/ld.so.preload; then
	bad "containers: the host's /etc/ld.so.preload names hostpin after the test"
fi

# 2. --ipc=host or a shared /dev/shm.  Injected: "containers" as mount
# namespaces: A with a private tmpfs on /dev/shm and C with a directory
# bind-mounted on /dev/shm each hold one hostpin process; B looks at each
# way.  Must hold: B with a private /dev/shm of its own shows no process,
# A shows its own, and B with C's /dev/shm shared shows C's.
rm -f "$d/in" "$d/ups"; mkfifo "$d/in"; mkdir -p "$d/shared"
unshare -m bash -c "$hdr"'
	mount -t tmpfs -o size=4m,mode=1777 tmpfs /dev/shm
	env -u HOSTPIN_LEDGER LD_PRELOAD="$LIB" sh -c "echo up; echo pid=\$\$; read x" < "$d/in" >> "$d/ups" 2>&1' &
pa=$!
unshare -m bash -c "$hdr"'
	mount --bind "$d/shared" /dev/shm
	env -u HOSTPIN_LEDGER LD_PRELOAD="$LIB" sh -c "echo up; read x" < "$d/in" >> "$d/ups" 2>&1' &
pb=$!
exec 3>"$d/in"
ups "$d/ups" 2 || echo "not all up"
# A's own view: hostpin status in A's mount namespace (nsenter), not preloaded
asees=$(nsenter -t "$(sed -n 's/^pid=//p' "$d/ups")" -m env -u HOSTPIN_LEDGER "$ST" --all 2>&1 | tail -1)
priv=$(unshare -m bash -c "$hdr"'; mount -t tmpfs -o size=4m,mode=1777 tmpfs /dev/shm; env -u HOSTPIN_LEDGER "$ST" --all 2>&1 | tail -1')
shared=$(unshare -m bash -c "$hdr"'; mount --bind "$d/shared" /dev/shm; env -u HOSTPIN_LEDGER "$ST" --all 2>&1 | tail -1')
exec 3>&-
wait $pa $pb
if echo "$asees" | grep -q '^1 process' && ! echo "$priv" | grep -q '^[1-9][0-9]* process' &&
	echo "$shared" | grep -q '^1 process'; then
	ok "containers: private /dev/shm: B sees no process ($priv), A its own ($asees); shared /dev/shm: B sees C's ($shared)"
else bad "containers: ledger across /dev/shm (want A 1, private B none, B sharing C's 1): A '$asees', private B '$priv', shared B '$shared'"
	sed 's/^/    /' "$d/ups"; fi

# 3. A small /dev/shm.  Injected: a 1 MiB tmpfs on /dev/shm, filled before
# any hostpin process starts.  Must hold: python3 under the preload exits 0
# and hostpin says exactly one line, which starts as README says
# ("hostpin[PID]: no ledger:").
out=$(unshare -m bash -c "$hdr"'
	mount -t tmpfs -o size=1m,mode=1777 tmpfs /dev/shm || { echo "mount failed"; exit; }
	dd if=/dev/zero of=/dev/shm/fill bs=4k 2>/dev/null
	env -u HOSTPIN_LEDGER -u HOSTPIN_LOG LD_PRELOAD="$LIB" /usr/bin/python3 -c "b = bytearray(8 << 20); print(\"ran\")" 2>&1; echo "rc=$?"' 2>&1)
grep -q 'in one line starting `hostpin\[PID\]: no ledger:`' "$rd" ||
	bad "containers: README no longer says what a small /dev/shm prints"
if echo "$out" | grep -q '^rc=0$' && echo "$out" | grep -q '^ran$' && [ "$(echo "$out" | grep -c '^hostpin')" = 1 ] &&
	echo "$out" | grep -q '^hostpin\[[0-9]*\]: no ledger:'; then
	ok "containers: a full 1 MiB /dev/shm: python3 runs, one line: $(echo "$out" | grep '^hostpin' | cut -c1-70)..."
else bad "containers: a full 1 MiB /dev/shm (want ran, rc=0, one 'no ledger:' line):"; echo "$out" | sed 's/^/    /'; fi

# 4. memlock for the mlock backend.  Injected: RLIMIT_MEMLOCK of 64 KiB
# (Docker's usual default) for user nobody (setpriv: no CAP_IPC_LOCK).
# Must hold: a 64 MiB block is not locked, hostpin says once
# "RLIMIT_MEMLOCK too small (and no CAP_IPC_LOCK)" and the job exits 0.
# Then a limit that fits (unlimited where this machine lets root raise it,
# else the hard limit with a block under it), and root's CAP_IPC_LOCK under
# 64 KiB (--cap-add IPC_LOCK): the block is locked (VmLck).
vmlck='import sys; b = bytearray(int(sys.argv[1]) << 20); print([l.split()[1] for l in open("/proc/self/status") if l.startswith("VmLck")][0])'
asnobody() { prlimit --memlock="$1" setpriv --reuid=nobody --regid=nogroup --clear-groups "${@:2}"; }
# the library as nobody can read it: the clone may sit under a directory
# only root can enter (/root, mode 0700)
cp "$LIB" "$d/libhostpin.so"
out=$(asnobody 65536 env -u HOSTPIN_LOG LD_PRELOAD="$d/libhostpin.so" HOSTPIN_BACKEND=mlock /usr/bin/python3 -c "$vmlck" 64 2>&1; echo "rc=$?")
if echo "$out" | grep -q '^0$' && echo "$out" | grep -q '^rc=0$' &&
	[ "$(echo "$out" | grep -c 'RLIMIT_MEMLOCK too small (and no CAP_IPC_LOCK)')" = 1 ]; then
	ok "containers: memlock 64 KiB, mlock backend: nothing locked, one clear line, the job runs on"
else bad "containers: memlock 64 KiB (want VmLck 0, rc=0, one RLIMIT_MEMLOCK line):"; echo "$out" | sed 's/^/    /'; fi
if prlimit --memlock=unlimited true 2>/dev/null; then lim=unlimited mb=64
else lim=$(($(ulimit -Hl) * 1024)) mb=$(($(ulimit -Hl) / 2048)); fi
if [ "$lim" != unlimited ] && [ "$mb" -lt 2 ]; then
	echo "SKIP: memlock hard limit $(ulimit -Hl) KiB and no CAP_SYS_RESOURCE: no block fits to lock as nobody"
else
	out=$(asnobody "$lim" env -u HOSTPIN_LOG LD_PRELOAD="$d/libhostpin.so" HOSTPIN_BACKEND=mlock /usr/bin/python3 -c "$vmlck" "$mb" 2>&1; echo "rc=$?")
	if echo "$out" | grep -q '^rc=0$' && [ "$(echo "$out" | head -1)" -ge $((mb * 1024)) ] 2>/dev/null; then
		ok "containers: memlock $lim, mlock backend, nobody: the $mb MiB block is locked (VmLck $(echo "$out" | head -1) kB)"
	else bad "containers: memlock $lim (want VmLck >= $mb MiB, rc=0):"; echo "$out" | sed 's/^/    /'; fi
fi
out=$(prlimit --memlock=65536 env -u HOSTPIN_LOG LD_PRELOAD="$LIB" HOSTPIN_BACKEND=mlock /usr/bin/python3 -c "$vmlck" 64 2>&1; echo "rc=$?")
if echo "$out" | grep -q '^rc=0$' && [ "$(echo "$out" | head -1)" -ge 65536 ] 2>/dev/null; then
	ok "containers: memlock 64 KiB with CAP_IPC_LOCK (root): the 64 MiB block is locked"
else bad "containers: CAP_IPC_LOCK under 64 KiB (want VmLck >= 64 MiB):"; echo "$out" | sed 's/^/    /'; fi

# 5. The image: README's "RUN dpkg -i" and "ENV LD_PRELOAD=libhostpin.so"
# lines, and its /etc/ld.so.preload line, in two images used as containers
# (a chroot on an overlay with a tmpfs upper layer, so neither root
# changes): this machine's own root, and make compat's Debian 11 root where
# the package's library asks for no glibc newer than that root's (a deb
# built on a newer distribution does not fit it: said, not run).  Must
# hold: dpkg -i installs the package from make deb; /bin/true and python3
# under LD_PRELOAD=libhostpin.so (by name) exit 0 with hostpin mapped and
# say nothing; the package's launcher (the docker run line's "hostpin
# CMD", with --stats) runs python3 to exit 0 with one report; with README's ld.so.preload line, env -i /bin/grep has it
# mapped.
if ! make -s --no-print-directory -C "$top" deb > "$d/deb.log" 2>&1; then
	bad "containers: make deb failed"; sed 's/^/    /' "$d/deb.log" | tail -5
else
	deb=$(ls -t "$top"/build/hostpin_*.deb | head -1)
	# the newest glibc symbol version the library and hostpin-status (the
	# launcher's report) ask for (their references,
	# *UND*: it defines dlsym@GLIBC_2.34 itself, as scripts/compat-tier says)
	need=$(objdump -T "$LIB" "$ST" 2>/dev/null | grep -F '*UND*' | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)
	roots=/
	croot=${HOSTPIN_COMPAT_ROOT:-$top/build/bullseye}
	cglibc=$(ls "$croot"/lib/x86_64-linux-gnu/libc-2.*.so 2>/dev/null | sed -n 's/.*libc-\(2\.[0-9]*\)\.so$/\1/p' | head -1)
	if [ ! -x "$croot/usr/bin/python3" ] || [ -z "$cglibc" ]; then
		echo "SKIP: no Debian 11 root at $croot (make compat makes it; HOSTPIN_COMPAT_ROOT): the image lines run in this machine's root only"
	elif [ "$(printf '%s\n' "$need" "$cglibc" | sort -V | tail -1)" != "$cglibc" ]; then
		# README: a deb made on Debian 12 does not fit Debian 11; its
		# Depends says so, and dpkg refuses it there
		out=$(unshare -m bash -c "$hdr"'
			mkdir -p "$d/old"; mount -t tmpfs tmpfs "$d/old"; mkdir "$d/old/up" "$d/old/work" "$d/old/r"
			mount -t overlay overlay -o lowerdir="'"$croot"'",upperdir="$d/old/up",workdir="$d/old/work" "$d/old/r" ||
				{ echo "no overlay"; exit; }
			mkdir -p "$d/old/r/tmp"; cp "'"$deb"'" "$d/old/r/tmp/"
			chroot "$d/old/r" sh -c "dpkg -i /tmp/hostpin_*.deb" 2>&1; echo "dpkg rc=$?"' 2>&1)
		if echo "$out" | grep -q '^dpkg rc=[1-9]' && echo "$out" | grep -q "depends on libc6 (>= $need)"; then
			ok "containers: this make deb asks for GLIBC_$need; dpkg -i refuses it in the Debian 11 root (glibc $cglibc): 'depends on libc6 (>= $need)'"
		else bad "containers: a deb needing GLIBC_$need in the Debian 11 root (glibc $cglibc): want dpkg to refuse it"; echo "$out" | sed 's/^/    /' | tail -8; fi
	else roots="/ $croot"; fi
	for r in $roots; do
		out=$(unshare -m bash -c "$hdr"'
			mkdir -p "$d/img"; mount -t tmpfs tmpfs "$d/img"; mkdir "$d/img/up" "$d/img/work" "$d/img/r"
			mount -t overlay overlay -o lowerdir="'"$r"'",upperdir="$d/img/up",workdir="$d/img/work" "$d/img/r" ||
				{ echo "no overlay"; exit; }
			R=$d/img/r
			mount --bind /proc "$R/proc"; mount --bind /dev "$R/dev"; mkdir -p "$R/tmp"
			cp "'"$deb"'" "$R/tmp/"
			chroot "$R" sh -c "dpkg -i /tmp/hostpin_*.deb && rm /tmp/hostpin_*.deb" > "$d/dpkg.log" 2>&1; echo "dpkg rc=$?"
			chroot "$R" env -u HOSTPIN_LOG LD_PRELOAD=libhostpin.so /bin/true 2>&1; echo "true rc=$?"
			chroot "$R" env -u HOSTPIN_LOG LD_PRELOAD=libhostpin.so /usr/bin/python3 -c "print(sum(1 for l in open(\"/proc/self/maps\") if \"libhostpin\" in l) > 0)" 2>&1; echo "python3 rc=$?"
			chroot "$R" hostpin --stats /usr/bin/python3 -c "b = bytearray(8 << 20)" > "$d/launch.log" 2>&1; echo "launcher rc=$?"
			grep -c "^hostpin: job report: 1 process" "$d/launch.log" | sed "s/^/launcher reports: /"
			chroot "$R" sh -c "echo '"$preload_line"' > /etc/ld.so.preload"
			echo "ld.so.preload: $(chroot "$R" env -i /bin/grep -c libhostpin /proc/self/maps)"' 2>&1)
		what="this machine's root"; [ "$r" = / ] || what="the Debian 11 root"
		if echo "$out" | grep -q '^no overlay'; then
			echo "SKIP: no overlay mount of $r: the image lines not run in $what"
		elif echo "$out" | grep -q '^dpkg rc=0$' && echo "$out" | grep -q '^true rc=0$' && echo "$out" | grep -q '^True$' &&
			echo "$out" | grep -q '^python3 rc=0$' && echo "$out" | grep -q '^ld.so.preload: [1-9]' &&
			echo "$out" | grep -q '^launcher rc=0$' && echo "$out" | grep -q '^launcher reports: 1$' &&
			[ "$(echo "$out" | grep -c '^hostpin')" = 0 ]; then
			ok "containers: dpkg -i $(basename "$deb") in $what; /bin/true and python3 run under LD_PRELOAD=libhostpin.so and the launcher (hostpin --stats: one job report), env -i under /etc/ld.so.preload"
		else bad "containers: the image lines in $what:"; echo "$out" | sed 's/^/    /'; sed 's/^/    dpkg: /' "$d/dpkg.log" | tail -5; fi
	done
fi

fi # root

# The docker run line itself is not run (the case builds no image, and a
# test machine has no Docker daemon): its parts are, above.
echo "note: docker run itself is not run (no image built, no daemon needed): its --ipc=host, a small /dev/shm and --ulimit memlock are run above as mount namespaces and prlimit"

# 6. The image's wheel line (pip install, then hostpin.library_path() for
# LD_PRELOAD), run only where a wheel is already built (make wheel is item
# 1's, and slow): a fresh venv, pip install --no-index.  Must hold: the
# path printed exists, and /bin/true under it has hostpin mapped.
whl=$(ls -t "$top"/build/hostpin-*.whl 2>/dev/null | head -1)
if [ -z "$whl" ]; then
	echo "SKIP: no build/hostpin-*.whl (make wheel): the image's pip install line not run"
elif ! /usr/bin/python3 -m venv "$d/venv" > /dev/null 2>&1; then
	echo "SKIP: python3 -m venv does not work here: the image's pip install line not run"
else
	out=$("$d/venv/bin/pip" install --no-index -q "$whl" 2>&1; echo "pip rc=$?"
		l=$("$d/venv/bin/python3" -c 'import hostpin; print(hostpin.library_path())' 2>&1); echo "lib=$l"
		LD_PRELOAD=$l /bin/grep -c libhostpin /proc/self/maps)
	if echo "$out" | grep -q '^pip rc=0$' && echo "$out" | grep -q '^lib=/.*libhostpin\.so$' && [ "$(echo "$out" | tail -1)" -ge 1 ] 2>/dev/null; then
		ok "containers: pip install $(basename "$whl"); LD_PRELOAD=\$(hostpin.library_path()) preloads it"
	else bad "containers: the wheel line:"; echo "$out" | sed 's/^/    /'; fi
fi
rm -rf "$d"
