/* CUDA runtime hooks: graph capture (capture.c), begin and end.  How the
 * runtime hooks are put together: cudart.h. */
#define HP_CUDART_capture(name) HP_CUDART_EMIT(name)
#include "cudart.h"

#define HP_CUDART_EMIT HP_CUDART_SLOTS
#include "hooks_cudart.def"
#undef HP_CUDART_EMIT

/* CUDA graph capture (capture.c): counted here where the runtime is
 * hooked, at the driver otherwise (the driver's hooks pass through inside
 * these). */
typedef hp_cudaError_t (*hp_cudaStreamBeginCapture_t)(hp_cudaStream_t, int);
typedef hp_cudaError_t (*hp_cudaStreamEndCapture_t)(hp_cudaStream_t, void **);
HP_BODY hp_cudaError_t begin_capture(void *f, int ptsz, hp_cudaStream_t s,
				    int mode)
{
	hp_cudaStreamBeginCapture_t fn = (hp_cudaStreamBeginCapture_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(s, mode);
	hp_cudaStream_t cs = s == NULL && ptsz ? HP_CU_STREAM_PER_THREAD : s;
	int c;
	HP_GUARDED(c = hp_capture_begin(cs, mode));
	hp_cudaError_t e = fn(s, mode);
	if (e != 0)
		HP_GUARDED(hp_capture_begin_failed(cs, c));
	hp_hook_leave();
	return e;
}
/* cudaStreamBeginCaptureToGraph (CUDA 12.3): into the program's graph, in
 * the mode it names; counted as any other. */
typedef hp_cudaError_t (*hp_cudaStreamBeginCaptureToGraph_t)(
    hp_cudaStream_t, void *, const void *, const void *, size_t, int);
HP_BODY hp_cudaError_t begin_capture_tg(void *f, int ptsz, hp_cudaStream_t s,
				       void *g, const void *deps,
				       const void *data, size_t n, int mode)
{
	hp_cudaStreamBeginCaptureToGraph_t fn =
	    (hp_cudaStreamBeginCaptureToGraph_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(s, g, deps, data, n, mode);
	hp_cudaStream_t cs = s == NULL && ptsz ? HP_CU_STREAM_PER_THREAD : s;
	int c;
	HP_GUARDED(c = hp_capture_begin(cs, mode));
	hp_cudaError_t e = fn(s, g, deps, data, n, mode);
	if (e != 0)
		HP_GUARDED(hp_capture_begin_failed(cs, c));
	hp_hook_leave();
	return e;
}
HP_BODY hp_cudaError_t end_capture(void *f, int ptsz, hp_cudaStream_t s,
				  void **g)
{
	hp_cudaStreamEndCapture_t fn = (hp_cudaStreamEndCapture_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(s, g);
	hp_cudaStream_t cs = s == NULL && ptsz ? HP_CU_STREAM_PER_THREAD : s;
	HP_GUARDED(hp_capture_end_wait(cs));
	hp_cudaError_t e = fn(s, g);
	HP_GUARDED(hp_capture_end(cs, e));
	hp_hook_leave();
	return e;
}

/* ---- graph capture ---- */
HP_EXPORT hp_cudaError_t cudaStreamBeginCapture(hp_cudaStream_t s, int mode)
{
	return begin_capture(NEXT(cudaStreamBeginCapture), 0, s, mode);
}

HP_EXPORT hp_cudaError_t cudaStreamBeginCapture_ptsz(
    hp_cudaStream_t s, int mode)
{
	return begin_capture(NEXT(cudaStreamBeginCapture_ptsz), 1, s, mode);
}

HP_EXPORT hp_cudaError_t cudaStreamBeginCaptureToGraph(
    hp_cudaStream_t s, void *g, const void *deps, const void *data, size_t n,
    int mode)
{
	return begin_capture_tg(NEXT(cudaStreamBeginCaptureToGraph), 0, s, g,
				deps, data, n, mode);
}

HP_EXPORT hp_cudaError_t cudaStreamBeginCaptureToGraph_ptsz(
    hp_cudaStream_t s, void *g, const void *deps, const void *data, size_t n,
    int mode)
{
	return begin_capture_tg(NEXT(cudaStreamBeginCaptureToGraph_ptsz), 1, s,
				g, deps, data, n, mode);
}

HP_EXPORT hp_cudaError_t cudaStreamEndCapture(hp_cudaStream_t s, void **g)
{
	return end_capture(NEXT(cudaStreamEndCapture), 0, s, g);
}

HP_EXPORT hp_cudaError_t cudaStreamEndCapture_ptsz(hp_cudaStream_t s, void **g)
{
	return end_capture(NEXT(cudaStreamEndCapture_ptsz), 1, s, g);
}

/* This family's part of the table (cudart_lookup.c). */
const struct hp_cudart_name hp_cudart_capture[] = {
#define HP_CUDART_EMIT HP_CUDART_ENTRY
#include "hooks_cudart.def"
#undef HP_CUDART_EMIT
	{0}};
