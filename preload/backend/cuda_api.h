/* The few CUDA driver and runtime types, constants and prototypes hostpin
 * uses, declared here so the build needs no toolkit.  The struct tags match
 * cuda.h, so where the toolkit is installed tests/unit/cuda_decls.c checks
 * every declaration below against cuda.h and cuda_runtime_api.h. */
#ifndef HP_CUDA_API_H
#define HP_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

typedef int hp_CUresult;
typedef int hp_CUdevice;
typedef struct CUctx_st *hp_CUcontext;
typedef struct CUstream_st *hp_cudaStream_t;
typedef struct CUevent_st *hp_cudaEvent_t;
typedef int hp_cudaError_t;
typedef int hp_cudaMemcpyKind;
typedef unsigned long long hp_CUdeviceptr;
typedef struct CUarray_st *hp_CUarray;
typedef uint64_t hp_cuuint64_t; /* cuuint64_t */
typedef int hp_CUmemorytype;
typedef int hp_CUdriverProcAddressQueryResult;
typedef int hp_cudaDriverEntryPointQueryResult;
typedef struct CUmemcpyAttributes_st hp_CUmemcpyAttributes;
typedef struct cudaMemcpyAttributes hp_cudaMemcpyAttributes;
typedef struct CUarray_st *hp_cudaArray_t;

/* The copy descriptors hostpin reads the host side of.  Field for field the
 * toolkit's (tests/unit/cuda_decls.c checks sizes and offsets). */
typedef struct hp_CUDA_MEMCPY2D {
	size_t srcXInBytes, srcY;
	hp_CUmemorytype srcMemoryType;
	const void *srcHost;
	hp_CUdeviceptr srcDevice;
	hp_CUarray srcArray;
	size_t srcPitch;
	size_t dstXInBytes, dstY;
	hp_CUmemorytype dstMemoryType;
	void *dstHost;
	hp_CUdeviceptr dstDevice;
	hp_CUarray dstArray;
	size_t dstPitch;
	size_t WidthInBytes, Height;
} hp_CUDA_MEMCPY2D;
typedef struct hp_CUDA_MEMCPY3D {
	size_t srcXInBytes, srcY, srcZ, srcLOD;
	hp_CUmemorytype srcMemoryType;
	const void *srcHost;
	hp_CUdeviceptr srcDevice;
	hp_CUarray srcArray;
	void *reserved0;
	size_t srcPitch, srcHeight;
	size_t dstXInBytes, dstY, dstZ, dstLOD;
	hp_CUmemorytype dstMemoryType;
	void *dstHost;
	hp_CUdeviceptr dstDevice;
	hp_CUarray dstArray;
	void *reserved1;
	size_t dstPitch, dstHeight;
	size_t WidthInBytes, Height, Depth;
} hp_CUDA_MEMCPY3D;
typedef struct hp_CUmemcpy3DOperand {
	int type; /* HP_CU_MEMCPY_OPERAND_TYPE_* */
	union {
		struct {
			hp_CUdeviceptr ptr;
			size_t rowLength, layerHeight;
			struct { int type, id; } locHint;
		} ptr;
		struct {
			hp_CUarray array;
			struct { size_t x, y, z; } offset;
		} array;
	} op;
} hp_CUmemcpy3DOperand;
typedef struct hp_CUDA_MEMCPY3D_BATCH_OP {
	hp_CUmemcpy3DOperand src, dst;
	struct { size_t width, height, depth; } extent;
	int srcAccessOrder;
	unsigned int flags;
} hp_CUDA_MEMCPY3D_BATCH_OP;
/* Runtime descriptors: cudaMemcpy3DParms and cudaMemcpy3DBatchOp (whose
 * operands have the driver's layout). */
struct hp_cudaPitchedPtr {
	void *ptr;
	size_t pitch, xsize, ysize;
};
typedef struct hp_cudaMemcpy3DParms {
	hp_cudaArray_t srcArray;
	struct { size_t x, y, z; } srcPos;
	struct hp_cudaPitchedPtr srcPtr;
	hp_cudaArray_t dstArray;
	struct { size_t x, y, z; } dstPos;
	struct hp_cudaPitchedPtr dstPtr;
	struct { size_t width, height, depth; } extent;
	hp_cudaMemcpyKind kind;
} hp_cudaMemcpy3DParms;
typedef hp_CUDA_MEMCPY3D_BATCH_OP hp_cudaMemcpy3DBatchOp;
/* What the driver says of a CUDA array (cuArray3DGetDescriptor_v2,
 * cuArrayGetDescriptor_v2): its extent in elements (Height 0: 1D; Depth
 * 0: 2D), its format (HP_CU_AD_FORMAT_*) and channels per element. */
typedef struct hp_CUDA_ARRAY3D_DESCRIPTOR {
	size_t Width, Height, Depth;
	int Format;
	unsigned int NumChannels, Flags;
} hp_CUDA_ARRAY3D_DESCRIPTOR;
typedef struct hp_CUDA_ARRAY_DESCRIPTOR {
	size_t Width, Height;
	int Format;
	unsigned int NumChannels;
} hp_CUDA_ARRAY_DESCRIPTOR;

/* 3D peer copies (CUDA_MEMCPY3D_PEER, cudaMemcpy3DPeerParms): the 3D
 * layout with a context per side; either side may be host memory. */
typedef struct hp_CUDA_MEMCPY3D_PEER {
	size_t srcXInBytes, srcY, srcZ, srcLOD;
	hp_CUmemorytype srcMemoryType;
	const void *srcHost;
	hp_CUdeviceptr srcDevice;
	hp_CUarray srcArray;
	hp_CUcontext srcContext;
	size_t srcPitch, srcHeight;
	size_t dstXInBytes, dstY, dstZ, dstLOD;
	hp_CUmemorytype dstMemoryType;
	void *dstHost;
	hp_CUdeviceptr dstDevice;
	hp_CUarray dstArray;
	hp_CUcontext dstContext;
	size_t dstPitch, dstHeight;
	size_t WidthInBytes, Height, Depth;
} hp_CUDA_MEMCPY3D_PEER;
typedef struct hp_cudaMemcpy3DPeerParms {
	hp_cudaArray_t srcArray;
	struct { size_t x, y, z; } srcPos;
	struct hp_cudaPitchedPtr srcPtr;
	int srcDevice;
	hp_cudaArray_t dstArray;
	struct { size_t x, y, z; } dstPos;
	struct hp_cudaPitchedPtr dstPtr;
	int dstDevice;
	struct { size_t width, height, depth; } extent;
} hp_cudaMemcpy3DPeerParms;
typedef hp_CUresult (*hp_cuMemcpy3DPeerAsync_t)(const hp_CUDA_MEMCPY3D_PEER *p,
						 hp_cudaStream_t hStream);
typedef hp_CUresult (*hp_cuMemcpy3DPeer_t)(const hp_CUDA_MEMCPY3D_PEER *p);
typedef hp_cudaError_t (*hp_cudaMemcpy3DPeerAsync_t)(
    const hp_cudaMemcpy3DPeerParms *p, hp_cudaStream_t stream);
/* Entry points that end a context (its registrations die with it). */
typedef hp_CUresult (*hp_cuDevicePrimaryCtxReset_t)(hp_CUdevice dev);
typedef hp_CUresult (*hp_cuDevicePrimaryCtxRelease_t)(hp_CUdevice dev);
typedef hp_CUresult (*hp_cuCtxDestroy_t)(hp_CUcontext ctx);
typedef hp_cudaError_t (*hp_cudaDeviceReset_t)(void);

#define HP_CUDA_SUCCESS 0
#define HP_CUDA_ERROR_CONTEXT_IS_DESTROYED 709
#define HP_CUDA_ERROR_NOT_INITIALIZED 3
#define HP_CUDA_ERROR_INVALID_CONTEXT 201
#define HP_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED 712
#define HP_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED 713
#define HP_CU_MEMHOSTREGISTER_PORTABLE 0x01u
#define HP_cudaMemcpyHostToHost 0
#define HP_cudaMemcpyHostToDevice 1
#define HP_cudaMemcpyDeviceToHost 2
#define HP_cudaMemcpyDefault 4
#define HP_cudaEventDisableTiming 0x02u
#define HP_cudaErrorNotReady 600
#define HP_cudaStreamCaptureStatusNone 0
#define HP_CUDA_ERROR_NOT_FOUND 500 /* also cudaErrorSymbolNotFound */
#define HP_CU_MEMORYTYPE_HOST 1
#define HP_CU_MEMORYTYPE_DEVICE 2
#define HP_CU_MEMORYTYPE_ARRAY 3
#define HP_CU_MEMORYTYPE_UNIFIED 4
#define HP_CU_MEMCPY_OPERAND_TYPE_POINTER 1
#define HP_CU_MEMCPY_OPERAND_TYPE_ARRAY 2
/* CUarray_format: the formats whose element size hostpin knows (bytes of
 * one channel: 1, 2, 4) */
#define HP_CU_AD_FORMAT_UNSIGNED_INT8 0x01
#define HP_CU_AD_FORMAT_UNSIGNED_INT16 0x02
#define HP_CU_AD_FORMAT_UNSIGNED_INT32 0x03
#define HP_CU_AD_FORMAT_SIGNED_INT8 0x08
#define HP_CU_AD_FORMAT_SIGNED_INT16 0x09
#define HP_CU_AD_FORMAT_SIGNED_INT32 0x0a
#define HP_CU_AD_FORMAT_HALF 0x10
#define HP_CU_AD_FORMAT_FLOAT 0x20
#define HP_CU_EVENT_DISABLE_TIMING 0x2u
#define HP_CU_STREAM_PER_THREAD ((hp_cudaStream_t)0x2)
#define HP_CU_GET_PROC_ADDRESS_LEGACY_STREAM 0x1ull
#define HP_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 0x2ull
#define HP_CU_STREAM_CAPTURE_STATUS_NONE 0
/* CUstreamCaptureMode: a thread's capture interaction mode, relaxed */
#define HP_CU_CAPTURE_MODE_RELAXED 2

/* Driver entry points: X(name, R, params), R the result type. */
#define HP_CU_DRIVER_FNS(X, R)                                                \
	X(cuGetErrorName, R, (R error, const char **pStr))                    \
	X(cuDeviceGetCount, R, (int *count))                                  \
	X(cuDeviceGet, R, (hp_CUdevice * device, int ordinal))                \
	X(cuDevicePrimaryCtxGetState, R,                                      \
	  (hp_CUdevice dev, unsigned int *flags, int *active))                \
	X(cuCtxGetCurrent, R, (hp_CUcontext * pctx))                          \
	X(cuCtxGetDevice, R, (hp_CUdevice * device))                          \
	X(cuCtxPushCurrent_v2, R, (hp_CUcontext ctx))                         \
	X(cuCtxPopCurrent_v2, R, (hp_CUcontext * pctx))                       \
	X(cuMemHostRegister_v2, R,                                            \
	  (void *p, size_t bytesize, unsigned int Flags))                     \
	X(cuMemHostUnregister, R, (void *p))

/* Driver entry points the copy policy calls: X(name, R, params). */
#define HP_CU_POLICY_FNS(X, R)                                                \
	X(cuStreamSynchronize, R, (hp_cudaStream_t hStream))                  \
	X(cuEventCreate, R, (hp_cudaEvent_t * phEvent, unsigned int Flags))   \
	X(cuEventRecord, R, (hp_cudaEvent_t hEvent, hp_cudaStream_t hStream)) \
	X(cuEventSynchronize, R, (hp_cudaEvent_t hEvent))                     \
	X(cuEventDestroy_v2, R, (hp_cudaEvent_t hEvent))
/* ...and where the driver has it; S, M: the capture-status and
 * capture-mode enum types. */
#define HP_CU_POLICY_OPT_FNS(X, R, S, M)                                      \
	X(cuStreamIsCapturing, R, (hp_cudaStream_t hStream, S * captureStatus)) \
	X(cuCtxSynchronize, R, (void))                                        \
	X(cuLaunchHostFunc, R,                                                \
	  (hp_cudaStream_t hStream, void (*fn)(void *), void *userData))     \
	X(cuThreadExchangeStreamCaptureMode, R, (M * mode))

/* What hostpin asks the driver of a CUDA array (a 3D batch op's element
 * size; a 2D or 3D copy's array side, planned): X(name, R, params); D3,
 * D2: the descriptor types. */
#define HP_CU_ARRAY_FNS(X, R, D3, D2)                                         \
	X(cuArray3DGetDescriptor_v2, R, (D3 * pArrayDescriptor,              \
					 hp_CUarray hArray))                  \
	X(cuArrayGetDescriptor_v2, R, (D2 * pArrayDescriptor,                \
				       hp_CUarray hArray))

/* Driver copy entry points hostpin wraps (each also in its _ptsz form):
 * X(name, R, params); M2, M3, BOP: the descriptor types. */
#define HP_CU_COPY_FNS(X, R, M2, M3, BOP)                                                  \
	X(cuMemcpyHtoDAsync_v2, R,                                            \
	  (hp_CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,   \
	   hp_cudaStream_t hStream))                                          \
	X(cuMemcpyDtoHAsync_v2, R,                                            \
	  (void *dstHost, hp_CUdeviceptr srcDevice, size_t ByteCount,         \
	   hp_cudaStream_t hStream))                                          \
	X(cuMemcpyAsync, R,                                                   \
	  (hp_CUdeviceptr dst, hp_CUdeviceptr src, size_t ByteCount,          \
	   hp_cudaStream_t hStream))                                          \
	X(cuMemcpy2DAsync_v2, R,                                              \
	  (const M2 *pCopy, hp_cudaStream_t hStream))           \
	X(cuMemcpy3DAsync_v2, R,                                              \
	  (const M3 *pCopy, hp_cudaStream_t hStream))           \
	X(cuMemcpyHtoAAsync_v2, R,                                            \
	  (hp_CUarray dstArray, size_t dstOffset, const void *srcHost,        \
	   size_t ByteCount, hp_cudaStream_t hStream))                        \
	X(cuMemcpyAtoHAsync_v2, R,                                            \
	  (void *dstHost, hp_CUarray srcArray, size_t srcOffset,              \
	   size_t ByteCount, hp_cudaStream_t hStream))                        \
	X(cuMemcpyBatchAsync_v2, R,                                           \
	  (hp_CUdeviceptr * dsts, hp_CUdeviceptr * srcs, size_t * sizes,      \
	   size_t count, hp_CUmemcpyAttributes * attrs, size_t * attrsIdxs,   \
	   size_t numAttrs, hp_cudaStream_t hStream))                         \
	X(cuMemcpy3DBatchAsync_v2, R,                                         \
	  (size_t numOps, BOP * opList, unsigned long long flags,              \
	   hp_cudaStream_t hStream))

/* Synchronous driver copy entry points hostpin counts copies through (each
 * also in its _ptds form): X(name, R, params). */
#define HP_CU_SYNC_COPY_FNS(X, R, M2, M3)                                     \
	X(cuMemcpyHtoD_v2, R,                                                 \
	  (hp_CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount))  \
	X(cuMemcpyDtoH_v2, R,                                                 \
	  (void *dstHost, hp_CUdeviceptr srcDevice, size_t ByteCount))        \
	X(cuMemcpy, R,                                                        \
	  (hp_CUdeviceptr dst, hp_CUdeviceptr src, size_t ByteCount))         \
	X(cuMemcpy2D_v2, R, (const M2 *pCopy))                                \
	X(cuMemcpy2DUnaligned_v2, R, (const M2 *pCopy))                       \
	X(cuMemcpy3D_v2, R, (const M3 *pCopy))                                \
	X(cuMemcpyHtoA_v2, R,                                                 \
	  (hp_CUarray dstArray, size_t dstOffset, const void *srcHost,        \
	   size_t ByteCount))                                                 \
	X(cuMemcpyAtoH_v2, R,                                                 \
	  (void *dstHost, hp_CUarray srcArray, size_t srcOffset,              \
	   size_t ByteCount))

/* Synchronous runtime copy entry points (each also in its _ptds form). */
#define HP_CUDART_SYNC_FNS(X, R, K, P3)                                      \
	X(cudaMemcpy, R, (void *dst, const void *src, size_t count, K kind))  \
	X(cudaMemcpy2D, R,                                                    \
	  (void *dst, size_t dpitch, const void *src, size_t spitch,          \
	   size_t width, size_t height, K kind))                              \
	X(cudaMemcpy3D, R, (const P3 *p))                                     \
	X(cudaMemcpyToSymbol, R,                                              \
	  (const void *symbol, const void *src, size_t count, size_t offset,  \
	   K kind))                                                           \
	X(cudaMemcpyFromSymbol, R,                                            \
	  (void *dst, const void *symbol, size_t count, size_t offset,        \
	   K kind))

/* The CUDA 12.8 batch forms (before their _v2), which cuda.h no longer
 * declares under these names. */
typedef hp_CUresult (*hp_cuMemcpyBatchAsync_t)(
    hp_CUdeviceptr *dsts, hp_CUdeviceptr *srcs, size_t *sizes, size_t count,
    hp_CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
    size_t *failIdx, hp_cudaStream_t hStream);
typedef hp_CUresult (*hp_cuMemcpy3DBatchAsync_t)(
    size_t numOps, hp_CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx,
    unsigned long long flags, hp_cudaStream_t hStream);

/* CUDA 13.2's single copies with attributes (each also in its _ptsz form),
 * driver and runtime; checked against a 13.2 cuda.h where one is found
 * (tests/unit/cuda_decls.c).  BOP: the 3D batch op type. */
#define HP_CU_COPY132_FNS(X, R, BOP)                                          \
	X(cuMemcpyWithAttributesAsync, R,                                     \
	  (hp_CUdeviceptr dst, hp_CUdeviceptr src, size_t size,               \
	   hp_CUmemcpyAttributes * attr, hp_cudaStream_t hStream))            \
	X(cuMemcpy3DWithAttributesAsync, R,                                   \
	  (BOP * op, unsigned long long flags, hp_cudaStream_t hStream))
#define HP_CUDART_COPY132_FNS(X, R, B3)                                       \
	X(cudaMemcpyWithAttributesAsync, R,                                   \
	  (void *dst, const void *src, size_t size,                           \
	   hp_cudaMemcpyAttributes *attr, hp_cudaStream_t stream))            \
	X(cudaMemcpy3DWithAttributesAsync, R,                                 \
	  (B3 * op, unsigned long long flags, hp_cudaStream_t stream))

/* What the driver answers about host memory (invariant 14: for memory
 * hostpin registered, what it answers for pageable memory).  A: the
 * pointer-attribute enum type. */
#define HP_CU_QUERY_FNS(X, R, A)                                              \
	X(cuPointerGetAttribute, R,                                           \
	  (void *data, A attribute, hp_CUdeviceptr ptr))                      \
	X(cuPointerGetAttributes, R,                                          \
	  (unsigned int numAttributes, A *attributes, void **data,            \
	   hp_CUdeviceptr ptr))                                               \
	X(cuMemHostGetFlags, R, (unsigned int *pFlags, void *p))              \
	X(cuMemHostGetDevicePointer_v2, R,                                    \
	  (hp_CUdeviceptr * pdptr, void *p, unsigned int Flags))
/* The CUDA < 3.2 form (a 32-bit device pointer), still exported. */
typedef hp_CUresult (*hp_cuMemHostGetDevicePointer_t)(unsigned int *pdptr,
						       void *p,
						       unsigned int Flags);

/* Driver lookup entry points hostpin wraps. */
#define HP_CU_LOOKUP_FNS(X, R, Q)                                                \
	X(cuGetProcAddress_v2, R,                                             \
	  (const char *symbol, void **pfn, int cudaVersion,                   \
	   hp_cuuint64_t flags, Q *symbolStatus))
typedef hp_CUresult (*hp_cuGetProcAddress_t)(const char *symbol, void **pfn,
					      int cudaVersion,
					      hp_cuuint64_t flags);

/* Runtime entry points hostpin wraps or calls: X(name, R, params); K is the
 * copy-kind type (an enum in the toolkit, passed as an int). */
#define HP_CUDART_FNS(X, R, K, P3, B3, Q)                                                   \
	X(cudaMemcpyAsync, R,                                                 \
	  (void *dst, const void *src, size_t count, K kind,                  \
	   hp_cudaStream_t stream))                                           \
	X(cudaMemcpy2DAsync, R,                                               \
	  (void *dst, size_t dpitch, const void *src, size_t spitch,          \
	   size_t width, size_t height, K kind,                                \
	   hp_cudaStream_t stream))                                           \
	X(cudaStreamSynchronize, R, (hp_cudaStream_t stream))                 \
	X(cudaEventCreateWithFlags, R,                                        \
	  (hp_cudaEvent_t * event, unsigned int flags))                       \
	X(cudaEventRecord, R, (hp_cudaEvent_t event, hp_cudaStream_t stream)) \
	X(cudaEventSynchronize, R, (hp_cudaEvent_t event))                    \
	X(cudaEventDestroy, R, (hp_cudaEvent_t event))                        \
	X(cudaHostRegister, R, (void *ptr, size_t size, unsigned int flags))  \
	X(cudaHostUnregister, R, (void *ptr))                                 \
	X(cudaMemcpy3DAsync, R,                                               \
	  (const P3 *p, hp_cudaStream_t stream))            \
	X(cudaMemcpyToSymbolAsync, R,                                         \
	  (const void *symbol, const void *src, size_t count, size_t offset,  \
	   K kind, hp_cudaStream_t stream))                                   \
	X(cudaMemcpyFromSymbolAsync, R,                                       \
	  (void *dst, const void *symbol, size_t count, size_t offset,        \
	   K kind, hp_cudaStream_t stream))                                   \
	X(cudaMemcpy3DBatchAsync, R,                                          \
	  (size_t numOps, B3 *opList,                                         \
	   unsigned long long flags, hp_cudaStream_t stream))                 \
	X(cudaMemcpyBatchAsync, R,                                            \
	  (void *const *dsts, const void *const *srcs, const size_t *sizes,   \
	   size_t count, hp_cudaMemcpyAttributes *attrs, size_t *attrsIdxs,   \
	   size_t numAttrs, hp_cudaStream_t stream))                          \
	X(cudaGetDriverEntryPointByVersion, R,                                \
	  (const char *symbol, void **funcPtr, unsigned int cudaVersion,      \
	   unsigned long long flags,                                          \
	   Q *driverStatus))                                                  \
	X(cudaRuntimeGetVersion, R, (int *runtimeVersion))
/* cudaGetDriverEntryPoint: deprecated in CUDA 13 (still exported). */
typedef hp_cudaError_t (*hp_cudaGetDriverEntryPoint_t)(
    const char *symbol, void **funcPtr, unsigned long long flags,
    hp_cudaDriverEntryPointQueryResult *driverStatus);

/* Runtime entry points hostpin uses only where the runtime has them; S is
 * the capture-status enum type. */
#define HP_CUDART_OPT_FNS(X, R, S)                                            \
	X(cudaStreamIsCapturing, R, (hp_cudaStream_t stream, S * pCaptureStatus))

#define HP_FN_TYPEDEF(name, R, params) typedef R(*hp_##name##_t) params;
HP_CU_DRIVER_FNS(HP_FN_TYPEDEF, hp_CUresult)
HP_CU_POLICY_FNS(HP_FN_TYPEDEF, hp_CUresult)
HP_CU_POLICY_OPT_FNS(HP_FN_TYPEDEF, hp_CUresult, int, int)
HP_CU_COPY_FNS(HP_FN_TYPEDEF, hp_CUresult, hp_CUDA_MEMCPY2D, hp_CUDA_MEMCPY3D,
	       hp_CUDA_MEMCPY3D_BATCH_OP)
HP_CU_LOOKUP_FNS(HP_FN_TYPEDEF, hp_CUresult, hp_CUdriverProcAddressQueryResult)
HP_CU_COPY132_FNS(HP_FN_TYPEDEF, hp_CUresult, hp_CUDA_MEMCPY3D_BATCH_OP)
HP_CUDART_COPY132_FNS(HP_FN_TYPEDEF, hp_cudaError_t, hp_cudaMemcpy3DBatchOp)
HP_CU_QUERY_FNS(HP_FN_TYPEDEF, hp_CUresult, int)
HP_CU_ARRAY_FNS(HP_FN_TYPEDEF, hp_CUresult, hp_CUDA_ARRAY3D_DESCRIPTOR,
		hp_CUDA_ARRAY_DESCRIPTOR)
HP_CU_SYNC_COPY_FNS(HP_FN_TYPEDEF, hp_CUresult, hp_CUDA_MEMCPY2D,
		    hp_CUDA_MEMCPY3D)
HP_CUDART_SYNC_FNS(HP_FN_TYPEDEF, hp_cudaError_t, hp_cudaMemcpyKind,
		   hp_cudaMemcpy3DParms)
HP_CUDART_FNS(HP_FN_TYPEDEF, hp_cudaError_t, hp_cudaMemcpyKind,
	      hp_cudaMemcpy3DParms, hp_cudaMemcpy3DBatchOp,
	      hp_cudaDriverEntryPointQueryResult)
HP_CUDART_OPT_FNS(HP_FN_TYPEDEF, hp_cudaError_t, int)
#undef HP_FN_TYPEDEF

#endif
