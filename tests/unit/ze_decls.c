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

int main(void) { return 0; }
