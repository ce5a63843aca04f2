# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- faults of the small kind (issue 22): a long mountinfo, a program that
# closes every descriptor, the launcher signalled, mmap failing for
# hostpin's own metadata, a process at RLIMIT_NOFILE ----
HP=$top/build/hostpin
# poll SECONDS CMD...: until CMD succeeds (a generous limit, never a fixed
# wait that decides the result)
poll() {
	local end=$((SECONDS + $1)); shift
	until "$@"; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.2
	done
}
sd=$(mktemp -d)

# -- /proc/self/mountinfo read whole. Injects (HOSTPIN_SYSFS_ROOT) the
# mountinfo of a Kubernetes node: 2,600 mounts (~480 KiB: pods' overlays,
# secrets, projected volumes) with the cgroup2 mount last, then the same
# with a 75 KiB line (an overlay with many layers) before it.  Must hold:
# the memory base is the injected cgroup's memory.max (1.5 GiB), as with a
# short mountinfo; no line is misread across the pieces it is read in.
mi=$sd/k8s; mkdir -p "$mi/proc/self"
printf '0::/kubepods.slice/pod42/cri-7\n' > "$mi/proc/self/cgroup"
awk 'BEGIN {
	for (i = 0; i < 2600; i++)
		printf "%d 30 0:%d / /var/lib/kubelet/pods/%08x-1f2e-4c5d-9a8b-%012d/volumes/kubernetes.io~projected/kube-api-access-%05d rw,relatime shared:%d - tmpfs tmpfs rw,size=%dk,inode64\n", 1000 + i, 100 + i, i * 7919, i, i, i, 1024 + i
}' > "$mi/proc/self/mountinfo"
echo '9999 30 0:27 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot' >> "$mi/proc/self/mountinfo"
mkdir -p "$mi/sys/fs/cgroup/kubepods.slice/pod42/cri-7"
echo 1610612736 > "$mi/sys/fs/cgroup/kubepods.slice/pod42/cri-7/memory.max"
mib=$(( $(stat -c %s "$mi/proc/self/mountinfo") / 1024 ))
want="memory base 1.5 GiB: cgroup v2 /sys/fs/cgroup/kubepods.slice/pod42/cri-7/memory.max"
out=$(env $P HOSTPIN_LOG=info HOSTPIN_SYSFS_ROOT="$mi" /bin/true 2>&1 | grep -o "memory base [^(]*")
case "$out" in
"$want"*) ok "a ${mib} KiB mountinfo whose cgroup2 mount is last: $out" ;;
*) bad "a ${mib} KiB mountinfo whose cgroup2 mount is last: got '${out:-no base line}', want '$want'" ;;
esac
# the same behind a line longer than the read buffer (skipped whole)
{ head -1300 "$mi/proc/self/mountinfo"
  printf '8888 30 0:99 / /var/lib/containerd/rootfs rw - overlay overlay rw,lowerdir='
  awk 'BEGIN { for (i = 0; i < 2000; i++) printf "/var/lib/containerd/snapshots/%d/fs:", i; print "/x" }'
  tail -n +1301 "$mi/proc/self/mountinfo"; } > "$mi/mi2" && mv "$mi/mi2" "$mi/proc/self/mountinfo"
out=$(env $P HOSTPIN_LOG=info HOSTPIN_SYSFS_ROOT="$mi" /bin/true 2>&1 | grep -o "memory base [^(]*")
case "$out" in
"$want"*) ok "a mountinfo with a 75 KiB overlay line, cgroup2 last: $out" ;;
*) bad "a mountinfo with a 75 KiB overlay line, cgroup2 last: got '${out:-no base line}', want '$want'" ;;
esac

rm -rf "$sd"
