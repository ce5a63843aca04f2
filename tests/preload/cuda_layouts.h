/* The CUDA copy descriptors as a program sees them (cuda.h's and
 * cuda_runtime_api.h's layouts and field names; positions, the extent and
 * cudaMemcpy3DParms' members shortened), for the test programs that call
 * the fake driver and runtime; the fakes keep their own declarations. */
#ifndef CUDA_LAYOUTS_H
#define CUDA_LAYOUTS_H
#include <stddef.h>

typedef unsigned long long dptr;
/* CUDA_MEMCPY2D */
typedef struct { size_t srcXInBytes, srcY; int srcMemoryType; const void *srcHost; dptr srcDevice; void *srcArray; size_t srcPitch; size_t dstXInBytes, dstY; int dstMemoryType; void *dstHost; dptr dstDevice; void *dstArray; size_t dstPitch; size_t WidthInBytes, Height; } M2D;
/* CUDA_MEMCPY3D */
typedef struct { size_t srcXInBytes, srcY, srcZ, srcLOD; int srcMemoryType; const void *srcHost; dptr srcDevice; void *srcArray, *reserved0; size_t srcPitch, srcHeight; size_t dstXInBytes, dstY, dstZ, dstLOD; int dstMemoryType; void *dstHost; dptr dstDevice; void *dstArray, *reserved1; size_t dstPitch, dstHeight; size_t WidthInBytes, Height, Depth; } M3D;
/* cudaPitchedPtr, cudaMemcpy3DParms, cudaMemcpy3DPeerParms */
struct pitched { void *ptr; size_t pitch, xsize, ysize; };
struct parms3d { void *srcArray; size_t spos[3]; struct pitched src; void *dstArray; size_t dpos[3]; struct pitched dst; size_t ext[3]; int kind; };
struct peer3d { void *srcArray; size_t spos[3]; struct pitched src; int srcDevice; void *dstArray; size_t dpos[3]; struct pitched dst; int dstDevice; size_t ext[3]; };
#endif
