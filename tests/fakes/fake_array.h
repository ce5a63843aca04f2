/* The fake driver's CUDA arrays, included by fake_copy.h: an array is
 * linear device memory (cuMemAlloc_v2's) with its own pitch, Width
 * elements of es bytes a row (es: its format's bytes times its channels),
 * max(Height, 1) rows a layer, max(Depth, 1) layers, as cuArrayCreate_v2
 * and cuArray3DCreate_v2 describe it; the descriptor queries answer what
 * it was made with.  Copies between an array and host memory move its
 * rows one by one (fake_copy.h's rows() and batch3d()). */

typedef struct {
	size_t Width, Height;
	int Format;
	unsigned NumChannels;
} FAKE_ARRAY_DESCRIPTOR;
typedef struct {
	size_t Width, Height, Depth;
	int Format;
	unsigned NumChannels, Flags;
} FAKE_ARRAY3D_DESCRIPTOR;

/* bytes of one channel of format f (CUarray_format); 1 for a format the
 * fake does not size (block-compressed, YUV: its bytes are not modelled) */
static size_t fmt_bytes(int f)
{
	switch (f) {
	case 0x02: case 0x09: case 0x10: /* (U)INT16, HALF */
		return 2;
	case 0x03: case 0x0a: case 0x20: /* (U)INT32, FLOAT */
		return 4;
	}
	return 1;
}

static CUresult array_make(CUarray *a, const FAKE_ARRAY3D_DESCRIPTOR *d)
{
	size_t es = fmt_bytes(d->Format) * (d->NumChannels ? d->NumChannels : 1);
	size_t pitch = d->Width * es;
	size_t n = pitch * (d->Height ? d->Height : 1) * (d->Depth ? d->Depth : 1);
	CUdeviceptr m;
	CUresult r = cuMemAlloc_v2(&m, n);
	if (r)
		return r;
	*a = raw(sizeof(**a));
	(*a)->mem = (char *)(uintptr_t)m, (*a)->size = n;
	(*a)->es = es, (*a)->pitch = pitch;
	(*a)->w = d->Width, (*a)->h = d->Height, (*a)->d = d->Depth;
	(*a)->fmt = d->Format, (*a)->ch = d->NumChannels, (*a)->flags = d->Flags;
	return OK;
}

CUresult cuArrayCreate_v2(CUarray *a, const FAKE_ARRAY_DESCRIPTOR *d)
{
	FAKE_ARRAY3D_DESCRIPTOR t = {d->Width, d->Height, 0, d->Format,
				     d->NumChannels, 0};
	return array_make(a, &t);
}

CUresult cuArray3DCreate_v2(CUarray *a, const FAKE_ARRAY3D_DESCRIPTOR *d)
{
	return array_make(a, d);
}

CUresult cuArray3DGetDescriptor_v2(FAKE_ARRAY3D_DESCRIPTOR *d, CUarray a)
{
	ENTRY("cuArray3DGetDescriptor_v2");
	if (d == NULL || a == NULL)
		RETURN(INVALID_VALUE);
	*d = (FAKE_ARRAY3D_DESCRIPTOR){a->w, a->h, a->d, a->fmt, a->ch,
				       a->flags};
	RETURN(OK);
}

CUresult cuArrayGetDescriptor_v2(FAKE_ARRAY_DESCRIPTOR *d, CUarray a)
{
	ENTRY("cuArrayGetDescriptor_v2");
	if (d == NULL || a == NULL)
		RETURN(INVALID_VALUE);
	*d = (FAKE_ARRAY_DESCRIPTOR){a->w, a->h, a->fmt, a->ch};
	RETURN(OK);
}

/* Array a's rows per layer and layers. */
static size_t arr_h(const struct CUarray_st *a) { return a->h ? a->h : 1; }
static size_t arr_d(const struct CUarray_st *a) { return a->d ? a->d : 1; }

/* Whether bytes [x, x+wb) of rows [y, y+h) of layers [z, z+d) lie in a
 * (the driver refuses a copy that leaves its array). */
static int arr_holds(const struct CUarray_st *a, size_t x, size_t wb,
		     size_t y, size_t h, size_t z, size_t d)
{
	return a && x <= a->pitch && wb <= a->pitch - x && y <= arr_h(a) &&
	       h <= arr_h(a) - y && z <= arr_d(a) && d <= arr_d(a) - z;
}
