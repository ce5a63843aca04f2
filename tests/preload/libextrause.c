/* A library that calls libextra.so's unknown copy entry point by a linked
 * reference (it imports cuMemcpyFancyAsync): a call no driver lookup sees. */
int cuMemcpyFancyAsync(void *dst, const void *src, unsigned long n, void *s);
int extra_use(void *dst, const void *src, unsigned long n);
int extra_use(void *dst, const void *src, unsigned long n)
{
	return cuMemcpyFancyAsync(dst, src, n, 0);
}
