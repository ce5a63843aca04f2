/* Compiled where the Level Zero headers are installed (libze-dev): the
 * loader declarations in preload/ze_api.h must agree with ze_api.h and
 * ze_loader.h.  A mismatch is a compile error.  (The zex* functions have
 * no Debian header to check against.) */
#include <level_zero/loader/ze_loader.h>
#include <level_zero/ze_api.h>

#include "../../preload/ze_api.h"

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

int main(void) { return 0; }
