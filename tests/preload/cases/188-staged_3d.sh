# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- staged 3D copies (stage_rect.c: hp_stage_3d, slice by slice) ----
# The program (staged2d.c, modes 3d_*) copies boxes (Depth slices of
# Height rows) between pitched host memory hostpin has not registered
# (below HOSTPIN_THRESHOLD) and the fake device, at nonzero X/Y/Z on both
# sides with pitches wider than the rows and slice heights taller than the
# box, through the driver (cuMemcpy3DAsync_v2 and _ptsz, cuMemcpy3D_v2 and
# _ptds) and the runtime (cudaMemcpy3DAsync, cudaMemcpy3D), and checks
# every byte of both buffers and pageable-memory semantics: an async H2D's
# source overwritten right after the call changes nothing, a D2H's data is
# there on return, a synchronous H2D's data is on the device on return,
# small copies queued before and after a staged one on the same stream
# land in order.
# Injected: FAKE_CUDA_NO_PAGEABLE, with which the fake driver flags any copy
# call whose pageable host bytes (all rows of a 3D copy together) reach
# that size (VIOLATION pageable-copy); FAKE_CUDA_FAIL on the staged 2D
# DMAs.  Must hold: with staging on, no flag for the staged forms (a
# library that passes 3D copies through is flagged); where hostpin must
# pass a 3D copy through (an array on one side, a LOD, below HOSTPIN_STAGE_MIN,
# HOSTPIN_STAGE=0) a flag, with the data still right.
S3_FLAGS="-L$F -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,$F"
build staged2d staged2d.c $S3_FLAGS || true
. ./staged_lib.sh
# s3d NAME WANT(staged|through) ENV... -- MODE (staged_lib.sh)
s3d() { staged_case "staged 3D" staged2d "$@"; }
if [ -x "$B/staged2d" ]; then
# without hostpin the program's own checks hold (pageable semantics)
for m in 3d_async 3d_sync 3d_odd 3d_order 3d_array 3d_lod; do
	out=$(timeout 120 env FAKE_CUDA_LOG=/dev/null "$B/staged2d" $m 2>&1) ||
		bad "staged2d $m fails without hostpin: $out"
done
s3d "async cuMemcpy3DAsync (stream, legacy, _ptsz), cudaMemcpy3DAsync (and _ptsz): source overwritten at return, D2H there at return" staged -- 3d_async
s3d "synchronous cuMemcpy3D, _ptds, cudaMemcpy3D (and _ptds): complete on return" staged -- 3d_sync
s3d "device slices as tall as the box (chunks across slices): odd width, packed or offset host slices" staged -- 3d_odd
s3d "slices of several slot-sized chunks (1 MiB ring)" staged \
	HOSTPIN_STAGE_BUFFER=1M HOSTPIN_STAGE_MIN=1M FAKE_CUDA_NO_PAGEABLE=1048576 -- 3d_async
s3d "chunks across slices through a 1 MiB ring (a slice boundary inside a slot)" staged \
	HOSTPIN_STAGE_BUFFER=1M HOSTPIN_STAGE_MIN=1M FAKE_CUDA_NO_PAGEABLE=1048576 -- 3d_odd
s3d "4 copy threads, 1 MiB ring" staged HOSTPIN_STAGE_THREADS=4 \
	HOSTPIN_STAGE_BUFFER=1M HOSTPIN_STAGE_MIN=1M FAKE_CUDA_NO_PAGEABLE=1048576 -- 3d_sync
s3d "order: small H2Ds before and after a staged 3D H2D, a D2H after them, on one stream" staged -- 3d_order
# an enqueue fails mid-pipeline (the third 2D DMA of the H2D, the fifth of
# the D2H: one DMA per slice through 8 MiB slots): each call returns the
# driver's error
s3d "an enqueue error mid-pipeline is the call's error" staged \
	FAKE_CUDA_FAIL=cuMemcpy2DAsync_v2:3:700,cuMemcpy2DAsync_v2:8:701 -- 3d_error
staged_errors "staged 3D" "$STAGE_OUT"
s3d "statistics count the staged 3D copies" staged HOSTPIN_STATS=1 -- 3d_async
echo "$STAGE_OUT" | grep -q "staged copies 10 (" &&
	ok "staged 3D: the report counts 10 staged copies (5 H2D, 5 D2H)" ||
	bad "staged 3D: report: $(echo "$STAGE_OUT" | grep 'staged copies')"
# a 3D array on the device side (cuArray3DCreate_v2, FLOAT): planned as
# any 3D copy, its layers one 3D DMA each (it went to the driver whole)
s3d "a 3D copy into and out of a 3D array is staged" staged -- 3d_array
# passed through unchanged, data right
s3d "a 3D copy with a LOD not 0 passes through" through -- 3d_lod
s3d "3D copies below HOSTPIN_STAGE_MIN pass through" through HOSTPIN_STAGE_MIN=32M -- 3d_async
s3d "HOSTPIN_STAGE=0: 3D copies pass through" through HOSTPIN_STAGE=0 -- 3d_sync
fi
# ---- 3D peer copies (peer3d.c): the plan decides whether one is this
# thread's (plan_rect.c: hp_stage_3d_peer) ----
# Between fresh blocks of hostpin's (HOSTPIN_THRESHOLD=1M: pending, their
# first copy) and the fake device.  A 3D peer copy whose contexts are each
# NULL or the one current on the calling thread is the 3D copy it is:
# staged, every form (cuMemcpy3DPeerAsync and _ptsz, cuMemcpy3DPeer and
# _ptds).  One naming a context not current there (device 1's from device
# 0's thread, device 0's from device 1's), or made on a thread with no
# context, goes to the driver as it is: every one of its copies reaches the
# fake as pageable memory (FAKE_CUDA_NO_PAGEABLE), data right in both.
build peer3d peer3d.c $S3_FLAGS || true
if [ -x "$B/peer3d" ]; then
for m in here other; do
	out=$(timeout 120 env FAKE_CUDA_LOG=/dev/null "$B/peer3d" $m 2>&1) ||
		bad "peer3d $m fails without hostpin: $out"
done
staged_case "3D peer" peer3d "contexts NULL or this thread's: staged, every form" \
	staged HOSTPIN_THRESHOLD=1M -- here
staged_case "3D peer" peer3d "contexts not this thread's (another device's, from another context's thread, none current): passed through" \
	through HOSTPIN_THRESHOLD=1M -- other
n=$(echo "$STAGE_OUT" | sed -n 's/^copies //p')
pv=$(echo "$STAGE_LOG" | grep -c "VIOLATION pageable-copy")
[ -n "$n" ] && [ "$pv" = "$n" ] &&
	ok "3D peer: each of the $n copies in another context went to the driver as it is" ||
	bad "3D peer: $pv of ${n:-?} copies in another context reached the driver unstaged"
fi
