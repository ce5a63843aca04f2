/* What a runtime asks of the fake Level Zero driver beyond the hooks' tests
 * (included by fake_ze.c): the queries the Unified Runtime's Level Zero
 * adapter makes to create a platform and a device (make check-xpu: dpctl
 * over this fake through Debian's loader and tests/fakes/ze_loader_shim.c).
 * The device says it is a DG2-like GPU (IP version 0x030dc008), which the
 * adapter serves with its v1 path; one queue group does compute and copy.
 * No kernel runs: data moves by copies only. */
#define FAKE_IP_VERSION_EXT 0x1000f /* ze_device_ip_version_ext_t (1.5) */
struct fake_ip_version {
	ze_structure_type_t stype;
	void *pNext;
	uint32_t ipVersion;
};

static ze_result_t r_driver_ext(ze_driver_handle_t h, uint32_t *n,
				ze_driver_extension_properties_t *p)
{
	(void)h, (void)p;
	*n = 0;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t r_driver_ipc(ze_driver_handle_t h, ze_driver_ipc_properties_t *p)
{
	(void)h;
	p->flags = 0;
	return ZE_RESULT_SUCCESS;
}

/* the device's properties beyond the name and ids (f_device_props) */
static void rt_device_props(ze_device_properties_t *p)
{
	p->deviceId = 0x56a0;
	p->subdeviceId = 0;
	p->coreClockRate = 2000;
	p->maxMemAllocSize = (uint64_t)4 << 30;
	p->maxHardwareContexts = 64;
	p->maxCommandQueuePriority = 0;
	p->numThreadsPerEU = 8;
	p->physicalEUSimdWidth = 8;
	p->numEUsPerSubslice = 16;
	p->numSubslicesPerSlice = 4;
	p->numSlices = 8;
	p->timerResolution = 1000;
	p->timestampValidBits = 32;
	p->kernelTimestampValidBits = 32;
	p->flags = 0; /* discrete */
	memset(p->uuid.id, 0x11, sizeof(p->uuid.id));
	for (ze_base_properties_t *x = p->pNext; x; x = x->pNext)
		if ((int)x->stype == FAKE_IP_VERSION_EXT)
			((struct fake_ip_version *)x)->ipVersion = 0x030dc008;
}

static ze_result_t r_sub_devices(ze_device_handle_t d, uint32_t *n,
				 ze_device_handle_t *s)
{
	(void)d, (void)s;
	*n = 0;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t r_compute(ze_device_handle_t d, ze_device_compute_properties_t *p)
{
	(void)d;
	p->maxTotalGroupSize = 1024;
	p->maxGroupSizeX = p->maxGroupSizeY = p->maxGroupSizeZ = 1024;
	p->maxGroupCountX = p->maxGroupCountY = p->maxGroupCountZ = 1u << 30;
	p->maxSharedLocalMemory = 64 << 10;
	p->numSubGroupSizes = 2;
	p->subGroupSizes[0] = 8, p->subGroupSizes[1] = 16;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t r_module(ze_device_handle_t d, ze_device_module_properties_t *p)
{
	(void)d;
	p->spirvVersionSupported = ZE_MAKE_VERSION(1, 2);
	p->flags = ZE_DEVICE_MODULE_FLAG_FP16 | ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS;
	p->fp16flags = p->fp32flags = ZE_DEVICE_FP_FLAG_ROUND_TO_NEAREST;
	p->fp64flags = 0;
	p->maxArgumentsSize = 2048;
	p->printfBufferSize = 4 << 20;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t r_queue_groups(ze_device_handle_t d, uint32_t *n,
				  ze_command_queue_group_properties_t *p)
{
	(void)d;
	if (p && *n >= 1) {
		p[0].flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE |
			     ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
		p[0].maxMemoryFillPatternSize = 128;
		p[0].numQueues = 1;
	}
	*n = 1;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t r_memory(ze_device_handle_t d, uint32_t *n,
			    ze_device_memory_properties_t *p)
{
	(void)d;
	if (p && *n >= 1) {
		p[0].flags = 0;
		p[0].maxClockRate = 1000;
		p[0].maxBusWidth = 256;
		p[0].totalSize = (uint64_t)16 << 30;
		snprintf(p[0].name, sizeof(p[0].name), "HBM");
	}
	*n = 1;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t r_mem_access(ze_device_handle_t d,
				ze_device_memory_access_properties_t *p)
{
	(void)d;
	ze_memory_access_cap_flags_t rw = ZE_MEMORY_ACCESS_CAP_FLAG_RW |
					  ZE_MEMORY_ACCESS_CAP_FLAG_ATOMIC;
	p->hostAllocCapabilities = p->deviceAllocCapabilities = rw;
	p->sharedSingleDeviceAllocCapabilities = rw;
	p->sharedCrossDeviceAllocCapabilities = 0;
	p->sharedSystemAllocCapabilities = 0;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t r_cache(ze_device_handle_t d, uint32_t *n,
			   ze_device_cache_properties_t *p)
{
	(void)d;
	if (p && *n >= 1)
		p[0].flags = 0, p[0].cacheSize = 16 << 20;
	*n = 1;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t r_image(ze_device_handle_t d, ze_device_image_properties_t *p)
{
	(void)d;
	memset((char *)p + 2 * sizeof(void *), 0, sizeof(*p) - 2 * sizeof(void *));
	return ZE_RESULT_SUCCESS;
}

static ze_result_t r_ext_mem(ze_device_handle_t d,
			     ze_device_external_memory_properties_t *p)
{
	(void)d;
	p->memoryAllocationImportTypes = p->memoryAllocationExportTypes = 0;
	p->imageImportTypes = p->imageExportTypes = 0;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t r_p2p(ze_device_handle_t a, ze_device_handle_t b,
			 ze_device_p2p_properties_t *p)
{
	(void)a, (void)b;
	p->flags = 0;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t r_can_peer(ze_device_handle_t a, ze_device_handle_t b,
			      ze_bool_t *v)
{
	*v = a == b;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t r_status(ze_device_handle_t d)
{
	(void)d;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t r_timestamps(ze_device_handle_t d, uint64_t *host,
				uint64_t *dev)
{
	(void)d;
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	*host = *dev = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
	return ZE_RESULT_SUCCESS;
}

static void rt_driver(ze_driver_dditable_t *t)
{
	t->pfnGetExtensionProperties = r_driver_ext;
	t->pfnGetIpcProperties = r_driver_ipc;
}

static void rt_device(ze_device_dditable_t *t)
{
	t->pfnGetSubDevices = r_sub_devices;
	t->pfnGetComputeProperties = r_compute;
	t->pfnGetModuleProperties = r_module;
	t->pfnGetCommandQueueGroupProperties = r_queue_groups;
	t->pfnGetMemoryProperties = r_memory;
	t->pfnGetMemoryAccessProperties = r_mem_access;
	t->pfnGetCacheProperties = r_cache;
	t->pfnGetImageProperties = r_image;
	t->pfnGetExternalMemoryProperties = r_ext_mem;
	t->pfnGetP2PProperties = r_p2p;
	t->pfnCanAccessPeer = r_can_peer;
	t->pfnGetStatus = r_status;
	t->pfnGetGlobalTimestamps = r_timestamps;
}

/* a root device: no parent (spec 1.7, past loader 1.8: reached through the
 * shim's table slots) */
static ze_result_t r_root_device(ze_device_handle_t d, ze_device_handle_t *root)
{
	(void)d;
	*root = NULL;
	return ZE_RESULT_SUCCESS;
}

/* entry points newer than the loader's tables, by name */
static void *rt_ext_addr(const char *name)
{
	if (strcmp(name, "zeDeviceGetRootDevice") == 0)
		return (void *)r_root_device;
	return NULL;
}

static ze_result_t r_resident(ze_context_handle_t c, ze_device_handle_t d,
			      void *p, size_t n)
{
	(void)c, (void)d, (void)p, (void)n;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t r_ctx_status(ze_context_handle_t c)
{
	(void)c;
	return ZE_RESULT_SUCCESS;
}

/* the USM allocation holding p: its base and size */
static ze_result_t r_addr_range(ze_context_handle_t c, const void *p,
				void **base, size_t *n)
{
	(void)c;
	pthread_mutex_lock(&mu);
	int i = usm_find(p);
	if (i >= 0) {
		if (base)
			*base = usm[i].p;
		if (n)
			*n = usm[i].n;
	}
	pthread_mutex_unlock(&mu);
	return i >= 0 ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_ARGUMENT;
}

static void rt_context(ze_context_dditable_t *t)
{
	t->pfnGetStatus = r_ctx_status;
	t->pfnMakeMemoryResident = r_resident;
	t->pfnEvictMemory = r_resident;
}

static void rt_mem(ze_mem_dditable_t *t)
{
	t->pfnGetAddressRange = r_addr_range;
}

static void rt_fence(ze_fence_dditable_t *t)
{
	t->pfnReset = f_fence_reset;
}
