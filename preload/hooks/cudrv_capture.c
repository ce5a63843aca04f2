/* CUDA driver hooks: graph capture (capture.c), begin and end.  How the
 * driver hooks are put together: cudrv.h. */
#define HP_CUDRV_capture(base, since, stream, name) HP_CUDRV_EMIT(base, since, stream, name)
#include "cudrv.h"

#define HP_CUDRV_EMIT HP_CUDRV_SLOTS
#include "hooks_cudrv.def"
#undef HP_CUDRV_EMIT

/* CUDA graph capture (capture.c).  Counted at the begin (before the
 * driver's: from then on hostpin makes no call a capture prohibits) and
 * the end (after it; then what waited runs).  The form without a mode
 * captures in global mode (0). */
typedef hp_CUresult (*hp_cuStreamBeginCapture_t)(hp_cudaStream_t);
typedef hp_CUresult (*hp_cuStreamBeginCapture_v2_t)(hp_cudaStream_t, int);
typedef hp_CUresult (*hp_cuStreamEndCapture_t)(hp_cudaStream_t, void **);
static hp_cudaStream_t cap_stream(hp_cudaStream_t s, int ptsz)
{
	return s == NULL && ptsz ? HP_CU_STREAM_PER_THREAD : s;
}
HP_BODY hp_CUresult begin_capture_v2(void *f, int ptsz, hp_cudaStream_t s,
				    int mode)
{
	hp_cuStreamBeginCapture_v2_t fn = (hp_cuStreamBeginCapture_v2_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(s, mode);
	int c;
	HP_GUARDED(c = hp_capture_begin(cap_stream(s, ptsz), mode));
	hp_CUresult e = fn(s, mode);
	if (e != HP_CUDA_SUCCESS)
		HP_GUARDED(hp_capture_begin_failed(cap_stream(s, ptsz), c));
	hp_hook_leave();
	return e;
}
HP_BODY hp_CUresult begin_capture(void *f, int ptsz, hp_cudaStream_t s)
{
	hp_cuStreamBeginCapture_t fn = (hp_cuStreamBeginCapture_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(s);
	int c;
	HP_GUARDED(c = hp_capture_begin(cap_stream(s, ptsz), 0));
	hp_CUresult e = fn(s);
	if (e != HP_CUDA_SUCCESS)
		HP_GUARDED(hp_capture_begin_failed(cap_stream(s, ptsz), c));
	hp_hook_leave();
	return e;
}
/* cuStreamBeginCaptureToGraph (CUDA 12.3): a capture into a graph the
 * program made, in the mode it names; counted as any other. */
typedef hp_CUresult (*hp_cuStreamBeginCaptureToGraph_t)(
    hp_cudaStream_t, void *, const void *, const void *, size_t, int);
HP_BODY hp_CUresult begin_capture_tg(void *f, int ptsz, hp_cudaStream_t s,
				    void *g, const void *deps,
				    const void *data, size_t n, int mode)
{
	hp_cuStreamBeginCaptureToGraph_t fn =
	    (hp_cuStreamBeginCaptureToGraph_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(s, g, deps, data, n, mode);
	int c;
	HP_GUARDED(c = hp_capture_begin(cap_stream(s, ptsz), mode));
	hp_CUresult e = fn(s, g, deps, data, n, mode);
	if (e != HP_CUDA_SUCCESS)
		HP_GUARDED(hp_capture_begin_failed(cap_stream(s, ptsz), c));
	hp_hook_leave();
	return e;
}
HP_BODY hp_CUresult end_capture(void *f, int ptsz, hp_cudaStream_t s, void **g)
{
	hp_cuStreamEndCapture_t fn = (hp_cuStreamEndCapture_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(s, g);
	HP_GUARDED(hp_capture_end_wait(cap_stream(s, ptsz)));
	hp_CUresult e = fn(s, g);
	HP_GUARDED(hp_capture_end(cap_stream(s, ptsz), e));
	hp_hook_leave();
	return e;
}

/* ---- graph capture ---- */
HP_EXPORT hp_CUresult cuStreamBeginCapture(hp_cudaStream_t s)
{
	return begin_capture(NEXT(cuStreamBeginCapture), 0, s);
}

static hp_CUresult lk_cuStreamBeginCapture(hp_cudaStream_t s)
{
	return begin_capture(LOOKED_UP(cuStreamBeginCapture), 0, s);
}

HP_EXPORT hp_CUresult cuStreamBeginCapture_ptsz(hp_cudaStream_t s)
{
	return begin_capture(NEXT(cuStreamBeginCapture_ptsz), 1, s);
}

static hp_CUresult lk_cuStreamBeginCapture_ptsz(hp_cudaStream_t s)
{
	return begin_capture(LOOKED_UP(cuStreamBeginCapture_ptsz), 1, s);
}

HP_EXPORT hp_CUresult cuStreamBeginCapture_v2(hp_cudaStream_t s, int mode)
{
	return begin_capture_v2(NEXT(cuStreamBeginCapture_v2), 0, s, mode);
}

static hp_CUresult lk_cuStreamBeginCapture_v2(hp_cudaStream_t s, int mode)
{
	return begin_capture_v2(LOOKED_UP(cuStreamBeginCapture_v2), 0, s, mode);
}

HP_EXPORT hp_CUresult cuStreamBeginCapture_v2_ptsz(hp_cudaStream_t s, int mode)
{
	return begin_capture_v2(NEXT(cuStreamBeginCapture_v2_ptsz), 1, s, mode);
}

static hp_CUresult lk_cuStreamBeginCapture_v2_ptsz(hp_cudaStream_t s, int mode)
{
	return begin_capture_v2(LOOKED_UP(cuStreamBeginCapture_v2_ptsz), 1, s,
				mode);
}

HP_EXPORT hp_CUresult cuStreamBeginCaptureToGraph(hp_cudaStream_t s, void *g,
					       const void *deps,
					       const void *data, size_t n,
					       int mode)
{
	return begin_capture_tg(NEXT(cuStreamBeginCaptureToGraph), 0, s, g,
				deps, data, n, mode);
}

static hp_CUresult lk_cuStreamBeginCaptureToGraph(hp_cudaStream_t s, void *g,
						  const void *deps,
						  const void *data, size_t n,
						  int mode)
{
	return begin_capture_tg(LOOKED_UP(cuStreamBeginCaptureToGraph), 0, s,
				g, deps, data, n, mode);
}

HP_EXPORT hp_CUresult cuStreamBeginCaptureToGraph_ptsz(
    hp_cudaStream_t s, void *g, const void *deps, const void *data, size_t n,
    int mode)
{
	return begin_capture_tg(NEXT(cuStreamBeginCaptureToGraph_ptsz), 1, s,
				g, deps, data, n, mode);
}

static hp_CUresult lk_cuStreamBeginCaptureToGraph_ptsz(
    hp_cudaStream_t s, void *g, const void *deps, const void *data, size_t n,
    int mode)
{
	return begin_capture_tg(LOOKED_UP(cuStreamBeginCaptureToGraph_ptsz), 1,
				s, g, deps, data, n, mode);
}

HP_EXPORT hp_CUresult cuStreamEndCapture(hp_cudaStream_t s, void **g)
{
	return end_capture(NEXT(cuStreamEndCapture), 0, s, g);
}

static hp_CUresult lk_cuStreamEndCapture(hp_cudaStream_t s, void **g)
{
	return end_capture(LOOKED_UP(cuStreamEndCapture), 0, s, g);
}

HP_EXPORT hp_CUresult cuStreamEndCapture_ptsz(hp_cudaStream_t s, void **g)
{
	return end_capture(NEXT(cuStreamEndCapture_ptsz), 1, s, g);
}

static hp_CUresult lk_cuStreamEndCapture_ptsz(hp_cudaStream_t s, void **g)
{
	return end_capture(LOOKED_UP(cuStreamEndCapture_ptsz), 1, s, g);
}

/* This family's part of the lookup table (cudrv_lookup.c). */
const struct hp_cudrv_variant hp_cudrv_capture[] = {
#define HP_CUDRV_EMIT HP_CUDRV_ENTRY
#include "hooks_cudrv.def"
#undef HP_CUDRV_EMIT
	{0}};
