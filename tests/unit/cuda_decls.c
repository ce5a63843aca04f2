/* Compiled only where the CUDA toolkit is installed (see Makefile): every
 * declaration in preload/backend/cuda_api.h must agree with cuda.h and
 * cuda_runtime_api.h.  A mismatch is a compile error. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>
#include <stddef.h>

#include "../../preload/backend/cuda_api.h"

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
HP_CUDART_FNS(CHECK_FN, cudaError_t, enum cudaMemcpyKind,
	      struct cudaMemcpy3DParms, struct cudaMemcpy3DBatchOp,
	      enum cudaDriverEntryPointQueryResult)
HP_CU_POLICY_FNS(CHECK_FN, CUresult)
HP_CU_POLICY_OPT_FNS(CHECK_FN, CUresult, CUstreamCaptureStatus,
		     CUstreamCaptureMode)
HP_CU_COPY_FNS(CHECK_FN, CUresult, CUDA_MEMCPY2D, CUDA_MEMCPY3D,
	       CUDA_MEMCPY3D_BATCH_OP)
HP_CU_LOOKUP_FNS(CHECK_FN, CUresult, CUdriverProcAddressQueryResult)
HP_CU_SYNC_COPY_FNS(CHECK_FN, CUresult, CUDA_MEMCPY2D, CUDA_MEMCPY3D)
HP_CU_ARRAY_FNS(CHECK_FN, CUresult, CUDA_ARRAY3D_DESCRIPTOR,
		CUDA_ARRAY_DESCRIPTOR)
HP_CUDART_SYNC_FNS(CHECK_FN, cudaError_t, enum cudaMemcpyKind,
		   struct cudaMemcpy3DParms)
/* (The CUDA 12.8 batch forms and cuGetProcAddress of 11.3 differ from
 * their checked successors by one trailing parameter only.) */

/* The descriptors hostpin reads: same size, same offsets. */
#define SAME(hp, tk, f)                                                       \
	_Static_assert(offsetof(hp, f) == offsetof(tk, f), #tk "." #f)
_Static_assert(sizeof(hp_CUDA_MEMCPY2D) == sizeof(CUDA_MEMCPY2D), "2D");
SAME(hp_CUDA_MEMCPY2D, CUDA_MEMCPY2D, srcMemoryType);
SAME(hp_CUDA_MEMCPY2D, CUDA_MEMCPY2D, srcHost);
SAME(hp_CUDA_MEMCPY2D, CUDA_MEMCPY2D, srcDevice);
SAME(hp_CUDA_MEMCPY2D, CUDA_MEMCPY2D, srcPitch);
SAME(hp_CUDA_MEMCPY2D, CUDA_MEMCPY2D, dstMemoryType);
SAME(hp_CUDA_MEMCPY2D, CUDA_MEMCPY2D, dstHost);
SAME(hp_CUDA_MEMCPY2D, CUDA_MEMCPY2D, dstDevice);
SAME(hp_CUDA_MEMCPY2D, CUDA_MEMCPY2D, dstPitch);
SAME(hp_CUDA_MEMCPY2D, CUDA_MEMCPY2D, Height);
_Static_assert(sizeof(hp_CUDA_MEMCPY3D) == sizeof(CUDA_MEMCPY3D), "3D");
SAME(hp_CUDA_MEMCPY3D, CUDA_MEMCPY3D, srcZ);
SAME(hp_CUDA_MEMCPY3D, CUDA_MEMCPY3D, srcMemoryType);
SAME(hp_CUDA_MEMCPY3D, CUDA_MEMCPY3D, srcHost);
SAME(hp_CUDA_MEMCPY3D, CUDA_MEMCPY3D, srcDevice);
SAME(hp_CUDA_MEMCPY3D, CUDA_MEMCPY3D, srcPitch);
SAME(hp_CUDA_MEMCPY3D, CUDA_MEMCPY3D, srcHeight);
SAME(hp_CUDA_MEMCPY3D, CUDA_MEMCPY3D, dstMemoryType);
SAME(hp_CUDA_MEMCPY3D, CUDA_MEMCPY3D, dstHost);
SAME(hp_CUDA_MEMCPY3D, CUDA_MEMCPY3D, dstDevice);
SAME(hp_CUDA_MEMCPY3D, CUDA_MEMCPY3D, dstPitch);
SAME(hp_CUDA_MEMCPY3D, CUDA_MEMCPY3D, dstHeight);
SAME(hp_CUDA_MEMCPY3D, CUDA_MEMCPY3D, Depth);
_Static_assert(sizeof(hp_CUDA_MEMCPY3D_BATCH_OP) ==
		   sizeof(CUDA_MEMCPY3D_BATCH_OP), "batch op");
SAME(hp_CUDA_MEMCPY3D_BATCH_OP, CUDA_MEMCPY3D_BATCH_OP, src.type);
SAME(hp_CUDA_MEMCPY3D_BATCH_OP, CUDA_MEMCPY3D_BATCH_OP, src.op.ptr.ptr);
SAME(hp_CUDA_MEMCPY3D_BATCH_OP, CUDA_MEMCPY3D_BATCH_OP, dst.type);
SAME(hp_CUDA_MEMCPY3D_BATCH_OP, CUDA_MEMCPY3D_BATCH_OP, dst.op.ptr.ptr);
SAME(hp_CUDA_MEMCPY3D_BATCH_OP, CUDA_MEMCPY3D_BATCH_OP, extent.depth);
_Static_assert(sizeof(hp_cudaMemcpy3DBatchOp) ==
		   sizeof(struct cudaMemcpy3DBatchOp), "runtime batch op");
SAME(hp_cudaMemcpy3DBatchOp, struct cudaMemcpy3DBatchOp, dst.op.ptr.ptr);
SAME(hp_cudaMemcpy3DBatchOp, struct cudaMemcpy3DBatchOp, extent);
_Static_assert(sizeof(hp_cudaMemcpy3DParms) == sizeof(struct cudaMemcpy3DParms),
	       "3D parms");
SAME(hp_cudaMemcpy3DParms, struct cudaMemcpy3DParms, srcPos);
SAME(hp_cudaMemcpy3DParms, struct cudaMemcpy3DParms, srcPtr);
SAME(hp_cudaMemcpy3DParms, struct cudaMemcpy3DParms, dstArray);
SAME(hp_cudaMemcpy3DParms, struct cudaMemcpy3DParms, dstPos);
SAME(hp_cudaMemcpy3DParms, struct cudaMemcpy3DParms, dstPtr);
SAME(hp_cudaMemcpy3DParms, struct cudaMemcpy3DParms, extent);
SAME(hp_cudaMemcpy3DParms, struct cudaMemcpy3DParms, kind);
_Static_assert(CU_MEMORYTYPE_HOST == HP_CU_MEMORYTYPE_HOST, "");
_Static_assert(CU_MEMORYTYPE_UNIFIED == HP_CU_MEMORYTYPE_UNIFIED, "");
_Static_assert(CU_MEMORYTYPE_ARRAY == HP_CU_MEMORYTYPE_ARRAY, "");
_Static_assert(CU_MEMCPY_OPERAND_TYPE_ARRAY == HP_CU_MEMCPY_OPERAND_TYPE_ARRAY,
	       "");
_Static_assert(CU_AD_FORMAT_UNSIGNED_INT8 == HP_CU_AD_FORMAT_UNSIGNED_INT8, "");
_Static_assert(CU_AD_FORMAT_UNSIGNED_INT16 == HP_CU_AD_FORMAT_UNSIGNED_INT16, "");
_Static_assert(CU_AD_FORMAT_UNSIGNED_INT32 == HP_CU_AD_FORMAT_UNSIGNED_INT32, "");
_Static_assert(CU_AD_FORMAT_SIGNED_INT8 == HP_CU_AD_FORMAT_SIGNED_INT8, "");
_Static_assert(CU_AD_FORMAT_SIGNED_INT16 == HP_CU_AD_FORMAT_SIGNED_INT16, "");
_Static_assert(CU_AD_FORMAT_SIGNED_INT32 == HP_CU_AD_FORMAT_SIGNED_INT32, "");
_Static_assert(CU_AD_FORMAT_HALF == HP_CU_AD_FORMAT_HALF, "");
_Static_assert(CU_AD_FORMAT_FLOAT == HP_CU_AD_FORMAT_FLOAT, "");
_Static_assert(sizeof(hp_CUDA_ARRAY3D_DESCRIPTOR) ==
		   sizeof(CUDA_ARRAY3D_DESCRIPTOR), "array 3D descriptor");
SAME(hp_CUDA_ARRAY3D_DESCRIPTOR, CUDA_ARRAY3D_DESCRIPTOR, Depth);
SAME(hp_CUDA_ARRAY3D_DESCRIPTOR, CUDA_ARRAY3D_DESCRIPTOR, Format);
SAME(hp_CUDA_ARRAY3D_DESCRIPTOR, CUDA_ARRAY3D_DESCRIPTOR, NumChannels);
_Static_assert(sizeof(hp_CUDA_ARRAY_DESCRIPTOR) ==
		   sizeof(CUDA_ARRAY_DESCRIPTOR), "array descriptor");
SAME(hp_CUDA_ARRAY_DESCRIPTOR, CUDA_ARRAY_DESCRIPTOR, Format);
SAME(hp_CUDA_ARRAY_DESCRIPTOR, CUDA_ARRAY_DESCRIPTOR, NumChannels);
SAME(hp_CUDA_MEMCPY3D_BATCH_OP, CUDA_MEMCPY3D_BATCH_OP, src.op.array.array);
SAME(hp_CUDA_MEMCPY3D_BATCH_OP, CUDA_MEMCPY3D_BATCH_OP, src.op.array.offset);
_Static_assert(CU_MEMCPY_OPERAND_TYPE_POINTER ==
		   HP_CU_MEMCPY_OPERAND_TYPE_POINTER, "");
_Static_assert(cudaMemcpyOperandTypePointer ==
		   HP_CU_MEMCPY_OPERAND_TYPE_POINTER, "");
_Static_assert(CU_EVENT_DISABLE_TIMING == HP_CU_EVENT_DISABLE_TIMING, "");
_Static_assert(CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM ==
		   HP_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "");
_Static_assert(CU_STREAM_CAPTURE_STATUS_NONE ==
		   HP_CU_STREAM_CAPTURE_STATUS_NONE, "");
_Static_assert(CUDA_ERROR_NOT_FOUND == HP_CUDA_ERROR_NOT_FOUND, "");
_Static_assert(cudaErrorSymbolNotFound == HP_CUDA_ERROR_NOT_FOUND, "");
HP_CUDART_OPT_FNS(CHECK_FN, cudaError_t, enum cudaStreamCaptureStatus)
_Static_assert(cudaStreamCaptureStatusNone == HP_cudaStreamCaptureStatusNone, "");

int main(void) { return 0; }

/* 3D peer copies and the entry points that end a context. */
_Static_assert(CUDA_ERROR_CONTEXT_IS_DESTROYED ==
		   HP_CUDA_ERROR_CONTEXT_IS_DESTROYED, "");
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuMemcpy3DPeerAsync),
					    CUresult (*)(const CUDA_MEMCPY3D_PEER *,
							 CUstream)),
	       "cuMemcpy3DPeerAsync");
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuMemcpy3DPeer),
					    CUresult (*)(const CUDA_MEMCPY3D_PEER *)),
	       "cuMemcpy3DPeer");
_Static_assert(sizeof(hp_CUDA_MEMCPY3D_PEER) == sizeof(CUDA_MEMCPY3D_PEER),
	       "3D peer");
SAME(hp_CUDA_MEMCPY3D_PEER, CUDA_MEMCPY3D_PEER, srcMemoryType);
SAME(hp_CUDA_MEMCPY3D_PEER, CUDA_MEMCPY3D_PEER, srcHost);
SAME(hp_CUDA_MEMCPY3D_PEER, CUDA_MEMCPY3D_PEER, srcPitch);
SAME(hp_CUDA_MEMCPY3D_PEER, CUDA_MEMCPY3D_PEER, srcHeight);
SAME(hp_CUDA_MEMCPY3D_PEER, CUDA_MEMCPY3D_PEER, dstMemoryType);
SAME(hp_CUDA_MEMCPY3D_PEER, CUDA_MEMCPY3D_PEER, dstHost);
SAME(hp_CUDA_MEMCPY3D_PEER, CUDA_MEMCPY3D_PEER, dstDevice);
SAME(hp_CUDA_MEMCPY3D_PEER, CUDA_MEMCPY3D_PEER, dstPitch);
SAME(hp_CUDA_MEMCPY3D_PEER, CUDA_MEMCPY3D_PEER, WidthInBytes);
SAME(hp_CUDA_MEMCPY3D_PEER, CUDA_MEMCPY3D_PEER, Depth);
_Static_assert(sizeof(hp_cudaMemcpy3DPeerParms) ==
		   sizeof(struct cudaMemcpy3DPeerParms), "3D peer parms");
SAME(hp_cudaMemcpy3DPeerParms, struct cudaMemcpy3DPeerParms, srcPtr);
SAME(hp_cudaMemcpy3DPeerParms, struct cudaMemcpy3DPeerParms, dstArray);
SAME(hp_cudaMemcpy3DPeerParms, struct cudaMemcpy3DPeerParms, dstPtr);
SAME(hp_cudaMemcpy3DPeerParms, struct cudaMemcpy3DPeerParms, extent);
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuDevicePrimaryCtxReset_v2),
					    CUresult (*)(hp_CUdevice)),
	       "cuDevicePrimaryCtxReset_v2");
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuDevicePrimaryCtxRelease_v2),
					    CUresult (*)(hp_CUdevice)),
	       "cuDevicePrimaryCtxRelease_v2");
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuCtxDestroy_v2),
					    CUresult (*)(hp_CUcontext)),
	       "cuCtxDestroy_v2");

/* The driver's answers about memory, hooked for invariant 14. */
HP_CU_QUERY_FNS(CHECK_FN, CUresult, CUpointer_attribute)
/* CUDA 13.2's copies with attributes: against a 13.2 (or newer) cuda.h
 * only (the toolkit may be older; the runtime wheel's headers are 13.2). */
#if CUDA_VERSION >= 13020
HP_CU_COPY132_FNS(CHECK_FN, CUresult, CUDA_MEMCPY3D_BATCH_OP)
HP_CUDART_COPY132_FNS(CHECK_FN, cudaError_t, struct cudaMemcpy3DBatchOp)
#endif
