/* A fake Level Zero GPU driver for tests, loaded by the real Debian loader
 * (libze1) through ZE_ENABLE_ALT_DRIVERS=<absolute path>.  It exports every
 * Get*ProcAddrTable function the loader may ask for (the tables it does not
 * implement are left empty), answers zeInit, zeDriverGet,
 * zeDriverGetProperties, zeDriverGetExtensionFunctionAddress, zeDeviceGet and
 * zeDeviceGetProperties, and keeps its own table of host-pointer imports
 * with the error codes of Intel's driver.  Every call is logged with the
 * caller's pid to $FAKE_ZE_LOG (FAKE_ZE_NAME tags the lines when two fakes
 * are loaded); imports of unmapped memory, imports still present when their
 * memory is unmapped, and calls with a handle that is not this driver's own
 * are flagged as VIOLATION.  FAKE_ZE_FAIL="fn:N[:code],..." fails the Nth
 * call of fn; FAKE_ZE_NO_IMPORT=1 makes the driver lack the extension.
 * FAKE_ZE_CTX_ALLOC=malloc|mmap: zeContextCreate allocates a 32 MiB buffer
 * for itself, as real drivers allocate command and staging buffers there,
 * kept until zeContextDestroy; any call into the driver made meanwhile (a
 * preloaded allocator discovering the driver or importing the buffer) is
 * a VIOLATION.  FAKE_ZE_CTX_FREE_IN_CALL=1: zeContextDestroy frees that
 * buffer inside the call; any call into the driver from inside the free
 * (releasing its import) is a VIOLATION. */
#include <dlfcn.h>
#include <fcntl.h>
#include <level_zero/ze_ddi.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>

#define FAKE_RESULT ze_result_t
#define FAKE_UNINIT ZE_RESULT_ERROR_UNINITIALIZED
#define FAKE_DEFAULT_FAIL ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY
#define FAKE_FAIL_ENV "FAKE_ZE_FAIL"
#define FAKE_HELD "imported"
#include "fake_common.h"

struct _ze_driver_handle_t {
	int magic;
};
struct _ze_device_handle_t {
	int magic;
};
static struct _ze_driver_handle_t drv = {0x5a5a};
static struct _ze_device_handle_t gpu = {0x6b6b};

#ifndef FAKE_TAG
#define FAKE_TAG "ze"
#endif

static void fake_child(void)
{
	nheld = 0; /* imports are not inherited */
	pthread_mutex_init(&mu, NULL);
}

__attribute__((constructor)) static void fake_init(void)
{
	const char *p = getenv("FAKE_ZE_LOG");
	if (p)
		logfd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	tag = FAKE_TAG;
	pthread_atfork(NULL, NULL, fake_child);
}

/* FAKE_ZE_ALLOC_IN_CALL=malloc|new: zeDriverGetProperties allocates 4 MiB
 * for itself (fake_alloc_in_call), as a driver does inside its entry
 * points. */
#define ZENTRY(fn) ENTRY(fn)

#define OWN_DRIVER(h)                                                         \
	if ((h) != &drv) {                                                    \
		logf_("VIOLATION foreign-driver-handle %p", (void *)(h));     \
		RETURN(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);                  \
	}

static ze_result_t f_init(ze_init_flags_t flags)
{
	ZENTRY("zeInit");
	(void)flags;
	initialized = 1;
	RETURN(ZE_RESULT_SUCCESS);
}

static ze_result_t f_driver_get(uint32_t *count, ze_driver_handle_t *h)
{
	ZENTRY("zeDriverGet");
	NEED_INIT;
	if (h && *count >= 1)
		h[0] = &drv;
	*count = 1;
	RETURN(ZE_RESULT_SUCCESS);
}

static ze_result_t f_driver_api(ze_driver_handle_t h, ze_api_version_t *v)
{
	(void)h;
	*v = ZE_API_VERSION_CURRENT;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t f_driver_props(ze_driver_handle_t h,
				  ze_driver_properties_t *p)
{
	fake_alloc_in_call(getenv("FAKE_ZE_ALLOC_IN_CALL"));
	ZENTRY("zeDriverGetProperties");
	NEED_INIT;
	OWN_DRIVER(h);
	memset(p->uuid.id, 0x42, sizeof(p->uuid.id));
	p->driverVersion = 1;
	RETURN(ZE_RESULT_SUCCESS);
}

static int usm_overlaps(const void *p, size_t n);

/* FAKE_ZE_IMPORT_HOOK=1: a test program may export fake_ze_import_hook(p,
 * n), called after each import the fake made, outside its lock, before the
 * call returns, so the program can hold the importing thread there (the
 * gate of FAKE_CUDA_REGISTER_HOLD_AFTER's kind) while other threads run.
 * (Looked up only then: no dlsym inside the driver otherwise.) */
static void import_hook(void *p, size_t n)
{
	static void (*hook)(void *, size_t);
	static int looked;
	const char *e = getenv("FAKE_ZE_IMPORT_HOOK");
	if (!e || *e != '1')
		return;
	if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
		*(void **)&hook = dlsym(RTLD_DEFAULT, "fake_ze_import_hook");
		__atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
	}
	if (hook)
		hook(p, n);
}

static ze_result_t x_import_made(ze_driver_handle_t h, void *p, size_t n);
static ze_result_t x_import(ze_driver_handle_t h, void *p, size_t n)
{
	ze_result_t r = x_import_made(h, p, n);
	if (r == ZE_RESULT_SUCCESS)
		import_hook(p, n);
	return r;
}

static ze_result_t x_import_made(ze_driver_handle_t h, void *p, size_t n)
{
	ZENTRY("zexDriverImportExternalPointer");
	NEED_INIT;
	OWN_DRIVER(h);
	if (!p || !n)
		RETURN(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (!mapped(p, n)) {
		logf_("VIOLATION import-unmapped %p %zu", p, n);
		RETURN(ZE_RESULT_ERROR_INVALID_ARGUMENT);
	}
	if (usm_overlaps(p, n))
		/* the driver's own USM memory, registered by it already */
		logf_("VIOLATION import-usm %p %zu", p, n);
	if (find(p, n, 0) >= 0) {
		logf_("OVERLAP %p %zu", p, n);
		RETURN(ZE_RESULT_ERROR_INVALID_ARGUMENT);
	}
	if (nheld == MAXHELD)
		RETURN(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
	held[nheld].base = p, held[nheld].len = n;
	nheld++;
	logf_("IMPORT %p %zu", p, n);
	RETURN(ZE_RESULT_SUCCESS);
}

static ze_result_t x_release(ze_driver_handle_t h, void *p)
{
	ZENTRY("zexDriverReleaseImportedPointer");
	NEED_INIT;
	OWN_DRIVER(h);
	int i = find(p, 1, 1);
	if (i < 0)
		RETURN(ZE_RESULT_ERROR_INVALID_ARGUMENT);
	logf_("RELEASE %p %zu", p, held[i].len);
	held[i] = held[--nheld];
	RETURN(ZE_RESULT_SUCCESS);
}

static ze_result_t x_base(ze_driver_handle_t h, void *p, void **base)
{
	ZENTRY("zexDriverGetHostPointerBaseAddress");
	NEED_INIT;
	OWN_DRIVER(h);
	int i = find(p, 1, 0);
	if (i < 0)
		RETURN(ZE_RESULT_ERROR_INVALID_ARGUMENT);
	if (base)
		*base = held[i].base;
	RETURN(ZE_RESULT_SUCCESS);
}

#include "fake_ze_cmd.h"
#include "fake_ze_missing.h"
#include "fake_ze_rt.h"

static ze_result_t f_ext_addr(ze_driver_handle_t h, const char *name,
			      void **fn)
{
	ZENTRY("zeDriverGetExtensionFunctionAddress");
	NEED_INIT;
	OWN_DRIVER(h);
	void *f = rt_ext_addr(name);
	if (f)
		;
	else if (strcmp(name, "zeCommandListHostSynchronize") == 0)
		f = (void *)f_list_host_sync; /* 1.6, past loader 1.8 */
	else if (!getenv("FAKE_ZE_NO_IMPORT")) {
		if (strcmp(name, "zexDriverImportExternalPointer") == 0)
			f = (void *)x_import;
		else if (strcmp(name, "zexDriverReleaseImportedPointer") == 0)
			f = (void *)x_release;
		else if (strcmp(name, "zexDriverGetHostPointerBaseAddress") == 0)
			f = (void *)x_base;
	}
	if (!f)
		RETURN(ZE_RESULT_ERROR_INVALID_ARGUMENT);
	*fn = f;
	RETURN(ZE_RESULT_SUCCESS);
}

static ze_result_t f_device_get(ze_driver_handle_t h, uint32_t *count,
				ze_device_handle_t *d)
{
	ZENTRY("zeDeviceGet");
	NEED_INIT;
	OWN_DRIVER(h);
	if (d && *count >= 1)
		d[0] = &gpu;
	*count = 1;
	RETURN(ZE_RESULT_SUCCESS);
}

static ze_result_t f_device_props(ze_device_handle_t d,
				  ze_device_properties_t *p)
{
	ZENTRY("zeDeviceGetProperties");
	NEED_INIT;
	if (d != &gpu)
		RETURN(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	p->type = ZE_DEVICE_TYPE_GPU;
	p->vendorId = 0x8086;
	snprintf(p->name, sizeof(p->name), "hostpin fake GPU");
	rt_device_props(p);
	RETURN(ZE_RESULT_SUCCESS);
}

/* The device's PCI address: FAKE_ZE_PCI ("DDDD:BB:DD.F", hex; default
 * 0000:4d:00.0). */
static ze_result_t f_device_pci(ze_device_handle_t d, ze_pci_ext_properties_t *p)
{
	ZENTRY("zeDevicePciGetPropertiesExt");
	NEED_INIT;
	if (d != &gpu)
		RETURN(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (p->stype != ZE_STRUCTURE_TYPE_PCI_EXT_PROPERTIES)
		RETURN(ZE_RESULT_ERROR_INVALID_ENUMERATION);
	const char *e = getenv("FAKE_ZE_PCI");
	unsigned dom = 0, bus = 0x4d, dev = 0, fn = 0;
	if (e && sscanf(e, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
		RETURN(ZE_RESULT_ERROR_INVALID_ARGUMENT);
	p->address.domain = dom, p->address.bus = bus;
	p->address.device = dev, p->address.function = fn;
	p->maxSpeed.genVersion = p->maxSpeed.width = -1;
	p->maxSpeed.maxBandwidth = -1;
	RETURN(ZE_RESULT_SUCCESS);
}

/* zeContextCreate's own buffer (FAKE_ZE_CTX_ALLOC), allocated with in_call
 * raised and not under mu, as a driver allocates under its own lock: a
 * call into the driver from inside the allocation is a VIOLATION (the
 * ENTRY check), where a real driver would deadlock. */
#define CTX_BUF ((size_t)32 << 20)
static struct _ze_context_handle_t {
	int magic;
} ctx = {0x7c7c};
static char *ctx_buf;
static int ctx_mapped;

static ze_result_t f_context_create(ze_driver_handle_t h,
				    const ze_context_desc_t *desc,
				    ze_context_handle_t *c)
{
	(void)desc;
	const char *how = getenv("FAKE_ZE_CTX_ALLOC");
	if (how && *how && !ctx_buf) {
		in_call = 1;
		ctx_mapped = strcmp(how, "mmap") == 0;
		char *b = ctx_mapped ? mmap(NULL, CTX_BUF, PROT_READ | PROT_WRITE,
					    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
				     : malloc(CTX_BUF);
		if (b != MAP_FAILED && b != NULL) {
			memset(b, 0x33, CTX_BUF);
			ctx_buf = b;
		}
		in_call = 0;
	}
	ZENTRY("zeContextCreate");
	NEED_INIT;
	OWN_DRIVER(h);
	if (!ctx_buf && how && *how)
		RETURN(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
	*c = &ctx;
	RETURN(ZE_RESULT_SUCCESS);
}

static ze_result_t f_context_destroy(ze_context_handle_t c)
{
	{
		ZENTRY("zeContextDestroy");
		NEED_INIT;
		if (c != &ctx)
			RETURN(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
		pthread_mutex_unlock(&mu);
	}
	/* Freed after the call's own work, without in_call: where the
	 * allocator releases an import of this buffer, it calls in here.
	 * FAKE_ZE_CTX_FREE_IN_CALL=1: freed inside the call, as a driver
	 * frees under its own lock: a call into the driver from inside the
	 * free (an allocator releasing its import) is a VIOLATION, where a
	 * real driver would deadlock. */
	char *b = ctx_buf;
	const char *e = getenv("FAKE_ZE_CTX_FREE_IN_CALL");
	int inside = e && *e == '1';
	ctx_buf = NULL;
	in_call = inside;
	if (b && ctx_mapped)
		munmap(b, CTX_BUF);
	else
		free(b);
	in_call = 0;
	return ZE_RESULT_SUCCESS;
}

/* For test programs: the buffer zeContextCreate allocated (NULL: none). */
void *fake_ze_ctx_buffer(void)
{
	return ctx_buf;
}

/* For test programs: is [p, p+n) inside one import of this driver? */
int fake_ze_is_imported(const void *p, size_t n)
{
	return held_covers(p, n);
}

__attribute__((destructor)) static void fake_fini(void)
{
	pthread_mutex_lock(&mu);
	audit();
	logf_("EXIT live=%d", nheld);
	pthread_mutex_unlock(&mu);
}

ZE_DLLEXPORT ze_result_t ZE_APICALL
zeGetGlobalProcAddrTable(ze_api_version_t v, ze_global_dditable_t *t)
{
	(void)v;
	memset(t, 0, sizeof(*t));
	t->pfnInit = f_init;
	fill_missing("Global", t, sizeof(*t));
	return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL
zeGetDriverProcAddrTable(ze_api_version_t v, ze_driver_dditable_t *t)
{
	(void)v;
	memset(t, 0, sizeof(*t));
	t->pfnGet = f_driver_get;
	t->pfnGetApiVersion = f_driver_api;
	t->pfnGetProperties = f_driver_props;
	t->pfnGetExtensionFunctionAddress = f_ext_addr;
	rt_driver(t);
	fill_missing("Driver", t, sizeof(*t));
	return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL
zeGetDeviceProcAddrTable(ze_api_version_t v, ze_device_dditable_t *t)
{
	(void)v;
	memset(t, 0, sizeof(*t));
	t->pfnGet = f_device_get;
	t->pfnGetProperties = f_device_props;
	t->pfnPciGetPropertiesExt = f_device_pci;
	rt_device(t);
	fill_missing("Device", t, sizeof(*t));
	return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL
zeGetContextProcAddrTable(ze_api_version_t v, ze_context_dditable_t *t)
{
	(void)v;
	memset(t, 0, sizeof(*t));
	t->pfnCreate = f_context_create;
	t->pfnDestroy = f_context_destroy;
	rt_context(t);
	fill_missing("Context", t, sizeof(*t));
	return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL
zeGetMemProcAddrTable(ze_api_version_t v, ze_mem_dditable_t *t)
{
	(void)v;
	memset(t, 0, sizeof(*t));
	t->pfnAllocHost = f_alloc_host;
	t->pfnAllocShared = f_alloc_shared;
	t->pfnAllocDevice = f_alloc_device;
	t->pfnFree = f_mem_free;
	t->pfnGetAllocProperties = f_mem_props;
	rt_mem(t);
	fill_missing("Mem", t, sizeof(*t));
	return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL
zeGetCommandQueueProcAddrTable(ze_api_version_t v, ze_command_queue_dditable_t *t)
{
	(void)v;
	memset(t, 0, sizeof(*t));
	t->pfnCreate = f_queue_create;
	t->pfnDestroy = f_queue_destroy;
	t->pfnExecuteCommandLists = f_queue_exec;
	t->pfnSynchronize = f_queue_sync;
	fill_missing("CommandQueue", t, sizeof(*t));
	return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL
zeGetCommandListProcAddrTable(ze_api_version_t v, ze_command_list_dditable_t *t)
{
	(void)v;
	memset(t, 0, sizeof(*t));
	t->pfnCreate = f_list_create;
	t->pfnCreateImmediate = f_list_create_imm;
	t->pfnClose = f_list_close;
	t->pfnReset = f_list_reset;
	t->pfnDestroy = f_list_destroy;
	t->pfnAppendMemoryCopy = f_copy;
	t->pfnAppendMemoryCopyRegion = f_copy_region;
	t->pfnAppendMemoryCopyFromContext = f_copy_ctx;
	rt_list(t);
	fill_missing("CommandList", t, sizeof(*t));
	return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL
zeGetEventPoolProcAddrTable(ze_api_version_t v, ze_event_pool_dditable_t *t)
{
	(void)v;
	memset(t, 0, sizeof(*t));
	t->pfnCreate = f_pool_create;
	t->pfnDestroy = f_pool_destroy;
	fill_missing("EventPool", t, sizeof(*t));
	return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL
zeGetEventProcAddrTable(ze_api_version_t v, ze_event_dditable_t *t)
{
	(void)v;
	memset(t, 0, sizeof(*t));
	t->pfnCreate = f_event_create;
	t->pfnDestroy = f_event_destroy;
	t->pfnHostSynchronize = f_event_sync;
	t->pfnQueryStatus = f_event_query;
	rt_event(t);
	fill_missing("Event", t, sizeof(*t));
	return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL
zeGetFenceProcAddrTable(ze_api_version_t v, ze_fence_dditable_t *t)
{
	(void)v;
	memset(t, 0, sizeof(*t));
	t->pfnCreate = f_fence_create;
	t->pfnDestroy = f_fence_destroy;
	t->pfnHostSynchronize = f_fence_sync;
	t->pfnQueryStatus = f_fence_query;
	rt_fence(t);
	fill_missing("Fence", t, sizeof(*t));
	return ZE_RESULT_SUCCESS;
}

