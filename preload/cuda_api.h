/* The few CUDA driver and runtime types, constants and prototypes hostpin
 * uses, declared here so the build needs no toolkit.  The struct tags match
 * cuda.h, so where the toolkit is installed tests/unit/cuda_decls.c checks
 * every declaration below against cuda.h and cuda_runtime_api.h. */
#ifndef HP_CUDA_API_H
#define HP_CUDA_API_H

#include <stddef.h>

typedef int hp_CUresult;
typedef int hp_CUdevice;
typedef struct CUctx_st *hp_CUcontext;
typedef struct CUstream_st *hp_cudaStream_t;
typedef struct CUevent_st *hp_cudaEvent_t;
typedef int hp_cudaError_t;
typedef int hp_cudaMemcpyKind;

#define HP_CUDA_SUCCESS 0
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

/* Driver entry points: X(name, R, params), R the result type. */
#define HP_CU_DRIVER_FNS(X, R)                                                \
	X(cuGetErrorName, R, (R error, const char **pStr))                    \
	X(cuDeviceGetCount, R, (int *count))                                  \
	X(cuDeviceGet, R, (hp_CUdevice * device, int ordinal))                \
	X(cuDevicePrimaryCtxGetState, R,                                      \
	  (hp_CUdevice dev, unsigned int *flags, int *active))                \
	X(cuCtxGetCurrent, R, (hp_CUcontext * pctx))                          \
	X(cuCtxPushCurrent_v2, R, (hp_CUcontext ctx))                         \
	X(cuCtxPopCurrent_v2, R, (hp_CUcontext * pctx))                       \
	X(cuMemHostRegister_v2, R,                                            \
	  (void *p, size_t bytesize, unsigned int Flags))                     \
	X(cuMemHostUnregister, R, (void *p))

/* Runtime entry points hostpin wraps or calls: X(name, R, params); K is the
 * copy-kind type (an enum in the toolkit, passed as an int). */
#define HP_CUDART_FNS(X, R, K)                                                   \
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
	X(cudaHostUnregister, R, (void *ptr))

/* Runtime entry points hostpin uses only where the runtime has them; S is
 * the capture-status enum type. */
#define HP_CUDART_OPT_FNS(X, R, S)                                            \
	X(cudaStreamIsCapturing, R, (hp_cudaStream_t stream, S * pCaptureStatus))

#define HP_FN_TYPEDEF(name, R, params) typedef R(*hp_##name##_t) params;
HP_CU_DRIVER_FNS(HP_FN_TYPEDEF, hp_CUresult)
HP_CUDART_FNS(HP_FN_TYPEDEF, hp_cudaError_t, hp_cudaMemcpyKind)
HP_CUDART_OPT_FNS(HP_FN_TYPEDEF, hp_cudaError_t, int)
#undef HP_FN_TYPEDEF

#endif
