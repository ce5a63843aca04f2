/* Compiled only where the CUDA toolkit is installed (see Makefile): every
 * declaration in preload/cuda_api.h must agree with cuda.h and
 * cuda_runtime_api.h.  A mismatch is a compile error. */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "../../preload/cuda_api.h"

_Static_assert(sizeof(CUresult) == sizeof(hp_CUresult), "CUresult");
_Static_assert(sizeof(cudaError_t) == sizeof(hp_cudaError_t), "cudaError_t");
_Static_assert(sizeof(enum cudaMemcpyKind) == sizeof(hp_cudaMemcpyKind),
	       "cudaMemcpyKind");
_Static_assert(__builtin_types_compatible_p(CUdevice, hp_CUdevice), "CUdevice");
_Static_assert(__builtin_types_compatible_p(CUcontext, hp_CUcontext),
	       "CUcontext");
_Static_assert(__builtin_types_compatible_p(cudaStream_t, hp_cudaStream_t),
	       "cudaStream_t");
_Static_assert(__builtin_types_compatible_p(cudaEvent_t, hp_cudaEvent_t),
	       "cudaEvent_t");
_Static_assert(CUDA_SUCCESS == HP_CUDA_SUCCESS, "");
_Static_assert(CUDA_ERROR_NOT_INITIALIZED == HP_CUDA_ERROR_NOT_INITIALIZED, "");
_Static_assert(CUDA_ERROR_INVALID_CONTEXT == HP_CUDA_ERROR_INVALID_CONTEXT, "");
_Static_assert(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED ==
		   HP_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "");
_Static_assert(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED ==
		   HP_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "");
_Static_assert(CU_MEMHOSTREGISTER_PORTABLE == HP_CU_MEMHOSTREGISTER_PORTABLE, "");
_Static_assert(cudaMemcpyHostToHost == HP_cudaMemcpyHostToHost, "");
_Static_assert(cudaMemcpyHostToDevice == HP_cudaMemcpyHostToDevice, "");
_Static_assert(cudaMemcpyDeviceToHost == HP_cudaMemcpyDeviceToHost, "");
_Static_assert(cudaMemcpyDefault == HP_cudaMemcpyDefault, "");
_Static_assert(cudaEventDisableTiming == HP_cudaEventDisableTiming, "");
_Static_assert(cudaErrorNotReady == HP_cudaErrorNotReady, "");

/* Each prototype, with the toolkit's result type, must match the toolkit's
 * own declaration exactly. */
#define CHECK_FN(name, R, params)                                             \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&name),        \
						    R(*) params),             \
		       #name " differs from the toolkit");
HP_CU_DRIVER_FNS(CHECK_FN, CUresult)
HP_CUDART_FNS(CHECK_FN, cudaError_t, enum cudaMemcpyKind)
HP_CUDART_OPT_FNS(CHECK_FN, cudaError_t, enum cudaStreamCaptureStatus)
_Static_assert(cudaStreamCaptureStatusNone == HP_cudaStreamCaptureStatusNone, "");

int main(void) { return 0; }
