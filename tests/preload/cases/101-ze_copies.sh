# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- Level Zero memory and copies (issue 41) ----
# Injects: a driver that allocates USM host and shared memory itself
# inside zeMemAllocHost/zeMemAllocShared (posix_memalign, or operator new
# with FAKE_ZE_USM=new), as Intel's driver does.  Must hold: that memory is
# never hostpin's and never imported (the fake records an import of it as
# VIOLATION import-usm; ze_prog checks the fake's imports and the query
# API), under the defaults and HOSTPIN_PIN_AFTER=0.
for pa in 2 0; do
	for how in posix_memalign new; do
		zerun "USM host/shared/device memory ($how) is the driver's: never imported [PIN_AFTER=$pa]" 0 \
			HOSTPIN_PIN_AFTER=$pa FAKE_ZE_USM=$how -- usm
	done
done
