/* The few Level Zero loader and driver-extension declarations hostpin uses,
 * declared here so the build needs no Level Zero headers (no Debian header
 * declares the zex* functions at all).  tests/unit/ze_decls.c checks the
 * loader ones against ze_api.h and ze_loader.h where they are installed. */
#ifndef HP_ZE_API_H
#define HP_ZE_API_H

#include <stddef.h>
#include <stdint.h>

typedef int hp_ze_result_t;
typedef uint32_t hp_ze_init_flags_t;
typedef struct _ze_driver_handle_t *hp_ze_driver_handle_t;
typedef struct _ze_device_handle_t *hp_ze_device_handle_t;
typedef int hp_zel_handle_type_t;

#define HP_ZE_RESULT_SUCCESS 0
#define HP_ZEL_HANDLE_DRIVER 0

/* Loader entry points: X(name, R, params); K is the handle-type enum. */
#define HP_ZE_LOADER_FNS(X, R, F, K)                                          \
	X(zeInit, R, (F flags))                                               \
	X(zeDriverGet, R, (uint32_t * pCount, hp_ze_driver_handle_t * phDrivers)) \
	X(zeDriverGetExtensionFunctionAddress, R,                             \
	  (hp_ze_driver_handle_t hDriver, const char *name,                   \
	   void **ppFunctionAddress))                                         \
	X(zeDeviceGet, R,                                                     \
	  (hp_ze_driver_handle_t hDriver, uint32_t * pCount,                  \
	   hp_ze_device_handle_t * phDevices))                                \
	X(zelLoaderTranslateHandle, R,                                        \
	  (K handleType, void *handleIn, void **handleOut))

/* zeDevicePciGetPropertiesExt (ze_api.h 1.3+): the device's PCI address,
 * for its NUMA node.  Optional; tests/unit/ze_decls.c checks the layout. */
#define HP_ZE_STRUCTURE_TYPE_PCI_EXT_PROPERTIES 0x10008
struct hp_ze_pci_ext_properties {
	int stype;
	void *pNext;
	uint32_t domain, bus, device, function;
	int32_t genVersion, width;
	int64_t maxBandwidth;
};
typedef hp_ze_result_t (*hp_zeDevicePciGetPropertiesExt_t)(
    hp_ze_device_handle_t hDevice, struct hp_ze_pci_ext_properties *p);

/* Driver extension functions (Intel compute-runtime), by name through
 * zeDriverGetExtensionFunctionAddress. */
#define HP_ZEX_FNS(X, R)                                                      \
	X(zexDriverImportExternalPointer, R,                                  \
	  (hp_ze_driver_handle_t hDriver, void *ptr, size_t size))            \
	X(zexDriverReleaseImportedPointer, R,                                 \
	  (hp_ze_driver_handle_t hDriver, void *ptr))                         \
	X(zexDriverGetHostPointerBaseAddress, R,                              \
	  (hp_ze_driver_handle_t hDriver, void *ptr, void **baseAddress))

#define HP_FN_TYPEDEF(name, R, params) typedef R(*hp_##name##_t) params;
HP_ZE_LOADER_FNS(HP_FN_TYPEDEF, hp_ze_result_t, hp_ze_init_flags_t,
		 hp_zel_handle_type_t)
HP_ZEX_FNS(HP_FN_TYPEDEF, hp_ze_result_t)
#undef HP_FN_TYPEDEF

/* A driver's host-pointer import functions. */
struct hp_zex_fns {
#define HP_FN_FIELD(name, R, params) hp_##name##_t name;
	HP_ZEX_FNS(HP_FN_FIELD, hp_ze_result_t)
#undef HP_FN_FIELD
};
/* A driver's tables of entry points (ze_ddi.h), which the loader fills
 * from the driver's zeGet*ProcAddrTable: read and patched by slot index
 * (tests/unit/ze_decls.c checks the indices against ze_ddi.h).  A slot
 * added in a later version is touched only when the table asked for is of
 * that version or later. */
#define HP_ZE_API_VERSION(maj, min) (((maj) << 16) | (min))
#define HP_ZE_CL_CREATE_IMMEDIATE 1
#define HP_ZE_CL_DESTROY 2
#define HP_ZE_CL_RESET 4
#define HP_ZE_CL_COPY 8
#define HP_ZE_CL_COPY_REGION 10
#define HP_ZE_CL_COPY_FROM_CONTEXT 11
#define HP_ZE_CL_IMAGE_TO_MEMORY 14
#define HP_ZE_CL_IMAGE_FROM_MEMORY 15
#define HP_ZE_CL_IMAGE_TO_MEMORY_EXT 26   /* 1.3 */
#define HP_ZE_CL_IMAGE_FROM_MEMORY_EXT 27 /* 1.3 */
#define HP_ZE_CQ_DESTROY 1
#define HP_ZE_CQ_EXECUTE 2
#define HP_ZE_CQ_SYNCHRONIZE 3
#define HP_ZE_EV_HOST_SYNCHRONIZE 3
#define HP_ZE_EV_QUERY_STATUS 4
#define HP_ZE_FENCE_HOST_SYNCHRONIZE 2
#define HP_ZE_FENCE_QUERY_STATUS 3
typedef hp_ze_result_t (*hp_ze_get_table_t)(uint32_t version, void **table);
/* ze_copy_region_t, ze_image_region_t: the same six fields */
struct hp_ze_region {
	uint32_t originX, originY, originZ, width, height, depth;
};
typedef void *hp_ze_h; /* a list, queue, event, context, image or fence */
typedef hp_ze_result_t (*hp_zeCommandListAppendMemoryCopy_t)(
    hp_ze_h l, void *dst, const void *src, size_t n, hp_ze_h ev, uint32_t nw,
    hp_ze_h *w);
typedef hp_ze_result_t (*hp_zeCommandListAppendMemoryCopyRegion_t)(
    hp_ze_h l, void *dst, const struct hp_ze_region *dr, uint32_t dpitch,
    uint32_t dslice, const void *src, const struct hp_ze_region *sr,
    uint32_t spitch, uint32_t sslice, hp_ze_h ev, uint32_t nw, hp_ze_h *w);
typedef hp_ze_result_t (*hp_zeCommandListAppendMemoryCopyFromContext_t)(
    hp_ze_h l, void *dst, hp_ze_h ctx, const void *src, size_t n, hp_ze_h ev,
    uint32_t nw, hp_ze_h *w);
typedef hp_ze_result_t (*hp_zeCommandListAppendImageCopyToMemory_t)(
    hp_ze_h l, void *dst, hp_ze_h img, const struct hp_ze_region *r,
    hp_ze_h ev, uint32_t nw, hp_ze_h *w);
typedef hp_ze_result_t (*hp_zeCommandListAppendImageCopyFromMemory_t)(
    hp_ze_h l, hp_ze_h img, const void *src, const struct hp_ze_region *r,
    hp_ze_h ev, uint32_t nw, hp_ze_h *w);
typedef hp_ze_result_t (*hp_zeCommandListAppendImageCopyToMemoryExt_t)(
    hp_ze_h l, void *dst, hp_ze_h img, const struct hp_ze_region *r,
    uint32_t pitch, uint32_t slice, hp_ze_h ev, uint32_t nw, hp_ze_h *w);
typedef hp_ze_result_t (*hp_zeCommandListAppendImageCopyFromMemoryExt_t)(
    hp_ze_h l, hp_ze_h img, const void *src, const struct hp_ze_region *r,
    uint32_t pitch, uint32_t slice, hp_ze_h ev, uint32_t nw, hp_ze_h *w);
typedef hp_ze_result_t (*hp_ze_one_t)(hp_ze_h h); /* destroy, reset */
typedef hp_ze_result_t (*hp_ze_sync_t)(hp_ze_h h, uint64_t timeout);
typedef hp_ze_result_t (*hp_zeCommandQueueExecuteCommandLists_t)(
    hp_ze_h q, uint32_t n, hp_ze_h *lists, hp_ze_h fence);
typedef hp_ze_result_t (*hp_zeCommandListCreateImmediate_t)(
    hp_ze_h ctx, hp_ze_h dev, const void *desc, hp_ze_h *list);

/* ze_inflight.c: copies appended from imported host memory that may not
 * have run yet.  A range they touch is not released (ze_unpin answers
 * EAGAIN: the policy keeps the block mapped and retries) until the list
 * they are in was executed and its queue (or the fence given with the
 * execution) synchronised, or, on an immediate list, the list or the
 * copy's signal event (or a later one of that list) was. */
#define HP_ZE_HIDDEN __attribute__((visibility("hidden")))
HP_ZE_HIDDEN void hp_ze_inflight_add(hp_ze_h list, const void *p, size_t n,
				     hp_ze_h ev);
HP_ZE_HIDDEN void hp_ze_inflight_exec(hp_ze_h q, uint32_t n, hp_ze_h *lists,
				      hp_ze_h fence);
HP_ZE_HIDDEN void hp_ze_inflight_immediate(hp_ze_h list);
HP_ZE_HIDDEN void hp_ze_inflight_event_done(hp_ze_h ev);
HP_ZE_HIDDEN void hp_ze_inflight_fence_done(hp_ze_h fence);
HP_ZE_HIDDEN void hp_ze_inflight_queue_synced(hp_ze_h q);
HP_ZE_HIDDEN void hp_ze_inflight_list_synced(hp_ze_h list);
HP_ZE_HIDDEN void hp_ze_inflight_list_reset(hp_ze_h list, int destroyed);
HP_ZE_HIDDEN int hp_ze_inflight_busy(const void *p, size_t n);
HP_ZE_HIDDEN void hp_ze_inflight_fork_child(void);

/* backend_level_zero.c: the program's zeInit or zeInitDrivers succeeded:
 * discover the drivers (the only place hostpin does). */
void hp_ze_note_init(void) __attribute__((visibility("hidden")));

#endif
