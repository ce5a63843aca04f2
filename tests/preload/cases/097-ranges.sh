# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- range shapes, refused releases, the coverage check and context
# lifetime, against the fake CUDA driver (cuda_prog's cuda_ranges.h modes) ----
# Registration states are checked here: blocks are registered at
# allocation (HOSTPIN_PIN_AFTER=0); 140-footprint tests the Nth copy.
P_SAVE=$P; P="$P HOSTPIN_PIN_AFTER=0"
cuda "a program registration starting below hostpin's lowest block and ending inside it" 0 0 -- straddle
cuda "two program registrations in one block: registered again only when both are gone" 0 0 -- two_foreign
cuda "refused unregistration: munmap, MAP_FIXED and free leave the range mapped (leaked)" 0 2 \
	FAKE_CUDA_FAIL=cuMemHostUnregister:1,cuMemHostUnregister:2 -- munmap_leak
cuda "a 2D copy whose host side runs into a block from outside is waited for" 0 0 -- runs_into
d=$(mktemp -d)
out=$(timeout 60 env $P HP_EXPECT_ACTIVE=1 HOSTPIN_CACHE=1G HP_LATE_EXTRA="$B/libextrause.so" FAKE_CUDA_LOG="$d/log" \
	FAKE_CUDA_DELAY_US=3000 "$B/cuda_prog" coverage_late 2>&1); rc=$?
n=$(echo "$out" | grep -c "libextrause.so calls cuMemcpyFancyAsync")
if [ $rc -eq 0 ] && [ "$n" = 1 ] && fakelog "$d/log"; then
	ok "coverage: an object linking an unknown driver copy, loaded late, unregisters registered and cached blocks (1 message)"
else bad "coverage loaded late (rc $rc, $n messages): $(echo "$out" | tail -3)"; fi
rm -rf "$d"
for prog in cuda_prog cuda_static cuda_dl; do
	cudaprog $prog "context: cudaDeviceReset sends blocks back to pending, registered again later ($prog)" 0 0 -- reset_rt
done
for how in linked gpa entry dlsym; do
	cuda "context: cuDevicePrimaryCtxReset ($how) sends blocks back to pending" 0 0 HP_CTX_PATH=$how -- reset_drv
done
for how in linked gpa; do
	cuda "context: the last cuDevicePrimaryCtxRelease ($how) sends blocks back to pending" 0 0 HP_CTX_PATH=$how -- release_drv
done
for how in linked dlsym; do
	cuda "context: cuCtxDestroy ($how) sends blocks back to pending" 0 0 HP_CTX_PATH=$how -- destroy_drv
done
# ---- the same shapes against the fake Level Zero driver ----
zerun "an import starting below hostpin's lowest block and ending inside it" 0 -- straddle
zerun "two imports of the program in one block: imported again only when both are gone" 0 -- two_foreign
d=$(mktemp -d)
out=$(timeout 60 env $P HP_EXPECT_ACTIVE=1 HOSTPIN_CACHE=0 ZE_ENABLE_ALT_DRIVERS="$ZE1" FAKE_ZE_LOG="$d/log" \
	FAKE_ZE_FAIL=zexDriverReleaseImportedPointer:1 "$B/ze_prog" munmap_leak 2>&1); rc=$?
main=$(head -1 "$d/log" | cut -d' ' -f1)
if [ $rc -eq 0 ] && ! grep -q VIOLATION "$d/log" && grep -q "^$main ze EXIT live=1\$" "$d/log"; then
	ok "level zero: refused release: munmap leaves the imported range mapped (leaked, still imported)"
else bad "level zero refused release (rc $rc): $(grep -m2 'VIOLATION\|EXIT' "$d/log") $(echo "$out" | tail -2)"; fi
rm -rf "$d"
P=$P_SAVE
