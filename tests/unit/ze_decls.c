/* Compiled where the Level Zero headers are installed (libze-dev): the
 * loader declarations in preload/backend/ze_api.h must agree with ze_api.h and
 * ze_loader.h.  A mismatch is a compile error.  (The zex* functions have
 * no Debian header to check against.) */
#include <level_zero/loader/ze_loader.h>
#include <level_zero/ze_api.h>

#include "../../preload/backend/ze_api.h"

_Static_assert(sizeof(ze_result_t) == sizeof(hp_ze_result_t), "ze_result_t");
_Static_assert(__builtin_types_compatible_p(ze_driver_handle_t,
					    hp_ze_driver_handle_t),
	       "ze_driver_handle_t");
_Static_assert(__builtin_types_compatible_p(ze_device_handle_t,
					    hp_ze_device_handle_t),
	       "ze_device_handle_t");
_Static_assert(__builtin_types_compatible_p(ze_init_flags_t,
					    hp_ze_init_flags_t),
	       "ze_init_flags_t");
_Static_assert(ZE_RESULT_SUCCESS == HP_ZE_RESULT_SUCCESS, "");
_Static_assert(ZEL_HANDLE_DRIVER == HP_ZEL_HANDLE_DRIVER, "");

#define CHECK_FN(name, R, params)                                             \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&name),        \
						    R(*) params),             \
		       #name " differs from the Level Zero headers");
HP_ZE_LOADER_FNS(CHECK_FN, ze_result_t, ze_init_flags_t, zel_handle_type_t)

#include <stddef.h>
#define SAME_FIELD(f, g)                                                      \
	_Static_assert(offsetof(ze_pci_ext_properties_t, f) ==                \
			   offsetof(struct hp_ze_pci_ext_properties, g),      \
		       "ze_pci_ext_properties_t." #f);
SAME_FIELD(stype, stype)
SAME_FIELD(pNext, pNext)
SAME_FIELD(address.domain, domain)
SAME_FIELD(address.bus, bus)
SAME_FIELD(address.device, device)
SAME_FIELD(address.function, function)
SAME_FIELD(maxSpeed.maxBandwidth, maxBandwidth)
_Static_assert(sizeof(ze_pci_ext_properties_t) ==
		   sizeof(struct hp_ze_pci_ext_properties),
	       "ze_pci_ext_properties_t");
_Static_assert(ZE_STRUCTURE_TYPE_PCI_EXT_PROPERTIES ==
		   HP_ZE_STRUCTURE_TYPE_PCI_EXT_PROPERTIES, "");
_Static_assert(__builtin_types_compatible_p(
		   __typeof__(&zeDevicePciGetPropertiesExt),
		   ze_result_t (*)(ze_device_handle_t, ze_pci_ext_properties_t *)),
	       "zeDevicePciGetPropertiesExt");

/* The driver tables' slots ze_copy.c patches, and the region layout. */
#include <level_zero/ze_ddi.h>
#define SLOT(T, f, i)                                                         \
	_Static_assert(offsetof(T, f) == (i) * sizeof(void *), #T "." #f);
SLOT(ze_command_list_dditable_t, pfnCreateImmediate, HP_ZE_CL_CREATE_IMMEDIATE)
SLOT(ze_command_list_dditable_t, pfnDestroy, HP_ZE_CL_DESTROY)
SLOT(ze_command_list_dditable_t, pfnReset, HP_ZE_CL_RESET)
SLOT(ze_command_list_dditable_t, pfnAppendMemoryCopy, HP_ZE_CL_COPY)
SLOT(ze_command_list_dditable_t, pfnAppendMemoryCopyRegion, HP_ZE_CL_COPY_REGION)
SLOT(ze_command_list_dditable_t, pfnAppendMemoryCopyFromContext,
     HP_ZE_CL_COPY_FROM_CONTEXT)
SLOT(ze_command_list_dditable_t, pfnAppendImageCopyToMemory,
     HP_ZE_CL_IMAGE_TO_MEMORY)
SLOT(ze_command_list_dditable_t, pfnAppendImageCopyFromMemory,
     HP_ZE_CL_IMAGE_FROM_MEMORY)
SLOT(ze_command_list_dditable_t, pfnAppendImageCopyToMemoryExt,
     HP_ZE_CL_IMAGE_TO_MEMORY_EXT)
SLOT(ze_command_list_dditable_t, pfnAppendImageCopyFromMemoryExt,
     HP_ZE_CL_IMAGE_FROM_MEMORY_EXT)
SLOT(ze_command_queue_dditable_t, pfnDestroy, HP_ZE_CQ_DESTROY)
SLOT(ze_command_queue_dditable_t, pfnExecuteCommandLists, HP_ZE_CQ_EXECUTE)
SLOT(ze_command_queue_dditable_t, pfnSynchronize, HP_ZE_CQ_SYNCHRONIZE)
SLOT(ze_event_dditable_t, pfnHostSynchronize, HP_ZE_EV_HOST_SYNCHRONIZE)
SLOT(ze_event_dditable_t, pfnQueryStatus, HP_ZE_EV_QUERY_STATUS)
SLOT(ze_fence_dditable_t, pfnHostSynchronize, HP_ZE_FENCE_HOST_SYNCHRONIZE)
SLOT(ze_fence_dditable_t, pfnQueryStatus, HP_ZE_FENCE_QUERY_STATUS)
_Static_assert(ZE_MAKE_VERSION(1, 3) == HP_ZE_API_VERSION(1, 3), "version");
_Static_assert(sizeof(ze_copy_region_t) == sizeof(struct hp_ze_region) &&
		   sizeof(ze_image_region_t) == sizeof(struct hp_ze_region) &&
		   offsetof(ze_copy_region_t, depth) ==
		       offsetof(struct hp_ze_region, depth) &&
		   offsetof(ze_image_region_t, depth) ==
		       offsetof(struct hp_ze_region, depth),
	       "regions");
_Static_assert(__builtin_types_compatible_p(
		   __typeof__(&zeCommandListAppendMemoryCopy),
		   ze_result_t (*)(ze_command_list_handle_t, void *, const void *,
				   size_t, ze_event_handle_t, uint32_t,
				   ze_event_handle_t *)),
	       "zeCommandListAppendMemoryCopy");

int main(void) { return 0; }
