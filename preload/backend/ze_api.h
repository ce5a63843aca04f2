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
/* backend_level_zero.c: the program's zeInit or zeInitDrivers succeeded:
 * discover the drivers (the only place hostpin does). */
void hp_ze_note_init(void) __attribute__((visibility("hidden")));

#endif
