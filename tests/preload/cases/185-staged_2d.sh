# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- staged 2D copies (stage_rect.c: hp_stage_2d) ----
# The program (staged2d.c) copies rectangles between pitched host memory
# hostpin has not registered (below HOSTPIN_THRESHOLD) and the fake device,
# at offsets on both sides (srcXInBytes/srcY, dstXInBytes/dstY), through
# the driver (cuMemcpy2DAsync_v2 and _ptsz, cuMemcpy2D_v2 and _ptds, unified
# addressing) and the runtime (cudaMemcpy2DAsync, cudaMemcpy2D), and checks
# every byte of both buffers and pageable-memory semantics: an async H2D's
# source overwritten right after the call changes nothing, a D2H's data is
# there on return, a synchronous H2D's data is on the device on return.
# Injected: FAKE_CUDA_NO_PAGEABLE, with which the fake driver flags any copy
# call whose pageable host bytes (all rows of a 2D/3D copy together) reach
# that size (VIOLATION pageable-copy).  Must hold: with staging on, none
# for the staged forms (i5's library passes every 2D copy through: flagged);
# where hostpin must pass a copy through (rows wider than a slot,
# HOSTPIN_STAGE=0) some, with the data still right.
S2_FLAGS="-L$F -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,$F"
build staged2d staged2d.c $S2_FLAGS || true
. ./staged_lib.sh
# s2d NAME WANT(staged|through) ENV... -- MODE (staged_lib.sh)
s2d() { staged_case "staged 2D" staged2d "$@"; S2_OUT=$STAGE_OUT; }
if [ -x "$B/staged2d" ]; then
# without hostpin the program's own checks hold (pageable semantics)
for m in async sync odd big unified wide unaligned order; do
	out=$(timeout 120 env FAKE_CUDA_LOG=/dev/null "$B/staged2d" $m 2>&1) ||
		bad "staged2d $m fails without hostpin: $out"
done
s2d "async H2D/D2H (stream, legacy, per-thread, runtime): source overwritten at return, D2H there at return" staged -- async
s2d "synchronous cuMemcpy2D, _ptds, cudaMemcpy2D: complete on return" staged -- sync
s2d "width not a multiple of 4, odd offsets, packed host rows" staged -- odd
s2d "90 MB rectangle through the 64 MiB ring" staged -- big
s2d "90 MB rectangle through a 1 MiB ring (hundreds of slots, events)" staged \
	HOSTPIN_STAGE_BUFFER=1M HOSTPIN_STAGE_MIN=1M FAKE_CUDA_NO_PAGEABLE=1048576 -- big
s2d "90 MB rectangle, 4 copy threads (rows split among them)" staged HOSTPIN_STAGE_THREADS=4 -- big
s2d "order: a small D2H after a staged 2D H2D on the same stream sees its rows" staged -- order
# an enqueue fails mid-pipeline (the third 2D DMA of the H2D, the fifth of
# the D2H, through 8 MiB slots): each call returns the driver's error
s2d "an enqueue error mid-pipeline is the call's error" staged \
	FAKE_CUDA_FAIL=cuMemcpy2DAsync_v2:3:700,cuMemcpy2DAsync_v2:8:701 -- error
staged_errors "staged 2D" "$S2_OUT"
s2d "unified addressing: a host pointer the driver does not know, device memory" staged -- unified
s2d "statistics count the staged 2D copies" staged HOSTPIN_STATS=1 -- async
echo "$S2_OUT" | grep -q "staged copies 8 (" &&
	ok "staged 2D: the report counts 8 staged copies" ||
	bad "staged 2D: report: $(echo "$S2_OUT" | grep 'staged copies')"
# passed through unchanged, data right
s2d "rows wider than a slot pass through" through \
	HOSTPIN_STAGE_BUFFER=1M HOSTPIN_STAGE_MIN=1M FAKE_CUDA_NO_PAGEABLE=1048576 -- wide
s2d "cuMemcpy2DUnaligned is staged as cuMemcpy2D (its pitches are only refused within device memory)" staged -- unaligned
s2d "HOSTPIN_STAGE=0: 2D copies pass through" through HOSTPIN_STAGE=0 -- async
fi
