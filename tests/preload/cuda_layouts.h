/* The CUDA copy descriptors as a program sees them (cuda.h's and
 * cuda_runtime_api.h's layouts), for the test programs that call the fake
 * driver and runtime; the fakes keep their own declarations. */
#ifndef CUDA_LAYOUTS_H
#define CUDA_LAYOUTS_H
#include <stddef.h>

typedef unsigned long long dptr;
/* CUDA_MEMCPY2D */
typedef struct { size_t sx, sy; int st; const void *sh; dptr sd; void *sa; size_t sp; size_t dx, dy; int dt; void *dh; dptr dd; void *da; size_t dp; size_t w, h; } M2D;
/* CUDA_MEMCPY3D */
typedef struct { size_t sx, sy, sz, slod; int st; const void *sh; dptr sd; void *sa, *r0; size_t sp, sheight; size_t dx, dy, dz, dlod; int dt; void *dh; dptr dd; void *da, *r1; size_t dp, dheight; size_t w, h, depth; } M3D;
/* cudaPitchedPtr, cudaMemcpy3DParms, cudaMemcpy3DPeerParms */
struct pitched { void *ptr; size_t pitch, xsize, ysize; };
struct parms3d { void *sa; size_t sp[3]; struct pitched src; void *da; size_t dp[3]; struct pitched dst; size_t ext[3]; int kind; };
struct peer3d { void *sa; size_t sp[3]; struct pitched src; int sdev; void *da; size_t dp[3]; struct pitched dst; int ddev; size_t ext[3]; };
#endif
