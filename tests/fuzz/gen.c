/* engine_fuzz gen SEED [--ops LIST] [--no LIST] [--set 'VAR=VAL ...']: a
 * random program (--set: hostpin settings added to every program's).
 * Classes (LIST: comma separated): mem mmap discard realloc fork c1d ptds
 * uni attr batch c2d c3d peer devstream reg shared event capture reset
 * fail bogus partial inflight large relaxed delay config hold.  --ops keeps
 * only those named, --no drops those named.  The program names its
 * hostpin configuration ("hostpin" line) and the fake's ("env" line). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fz.h"

#include "gen.h"

unsigned long long rs;
unsigned rnd(unsigned n)
{
	rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
	return n ? (unsigned)(rs % n) : 0;
}
int chance(int pct) { return (int)rnd(100) < pct; }

const char *classes[NCL] = {"mem", "mmap", "discard", "realloc", "fork",
	"c1d", "ptds", "uni", "attr", "batch", "c2d", "c3d", "peer",
	"devstream", "reg", "shared", "event", "capture", "reset", "fail",
	"bogus", "partial", "inflight", "large", "relaxed", "delay", "config",
	"hold"};

int on[NCL];
int cl(const char *name)
{
	for (int i = 0; i < NCL; i++)
		if (!strcmp(classes[i], name))
			return on[i];
	return 0;
}
void set_list(const char *list, int v)
{
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *w = strtok(buf, ","); w; w = strtok(NULL, ","))
		for (int i = 0; i < NCL; i++)
			if (!strcmp(classes[i], w))
				on[i] = v;
}

struct th T[FZ_MAXT];
int nth, nslot_h, nslot_d, nslot_s, shared_slot = -1, relaxed;
size_t host_total;


static size_t rsize(void)
{
	unsigned r = rnd(100);
	size_t n;
	if (r < 35)
		n = 4 * KB + rnd(508) * KB;
	else if (r < 85 || !cl("large"))
		n = MB + (size_t)rnd(15 * 256) * 4 * KB;
	else if (r < 97)
		n = 16 * MB + (size_t)rnd(32 * 256) * 4 * KB;
	else
		n = 64 * MB + (size_t)rnd(236) * MB;
	if (host_total + n > 400 * MB)
		n = MB + rnd(4) * MB;
	if (chance(30))
		n += rnd(4096) & ~7u; /* not page-sized */
	return n;
}

void new_host(int t)
{
	struct th *x = &T[t];
	if (x->nh == 12)
		return;
	struct hb *b = &x->h[x->nh++];
	memset(b, 0, sizeof(*b));
	b->slot = nslot_h++, b->n = rsize(), b->live = 1;
	host_total += b->n;
	static const char *kinds[] = {"malloc", "calloc", "memalign", "mmap"};
	b->kind = (int)rnd(cl("mmap") ? 4 : 3);
	printf("%d alloc b%d %s %zu %u\n", t, b->slot, kinds[b->kind], b->n, rnd(1000));
	if (x->nd < 8 && chance(70)) {
		struct db *d = &x->d[x->nd++];
		d->slot = nslot_d++, d->n = b->n + (chance(20) ? rnd(64) * 4 * KB : 0);
		d->last[0] = 0;
		printf("%d dalloc d%d %zu %u\n", t, d->slot, d->n, rnd(1000));
	}
}

void new_stream(int t)
{
	struct th *x = &T[t];
	if (x->ns == 6)
		return;
	int dev = cl("devstream") && chance(30);
	x->s[x->ns] = nslot_s, x->sdev[x->ns++] = dev;
	printf("%d stream s%d %d\n", t, nslot_s++, dev);
}

struct hb *pick_host(int t)
{
	struct th *x = &T[t];
	int live[12], n = 0;
	for (int i = 0; i < x->nh; i++)
		if (x->h[i].live)
			live[n++] = i;
	return n ? &x->h[live[rnd((unsigned)n)]] : NULL;
}

/* A random stream of thread t's ("L", "P", "sN") */
const char *prefer_stream; /* a hold section's held stream, mostly */
/* a hold section: no work on the legacy stream, which is ordered with
 * every blocking stream's (gen2.c's gen_hold) */
int no_legacy;
void pick_stream(int t, char *out)
{
	struct th *x = &T[t];
	unsigned r = rnd(10);
	if (prefer_stream && chance(60)) {
		strcpy(out, prefer_stream);
		return;
	}
	if (r < 2)
		strcpy(out, "L");
	else if (r < 4 && cl("ptds"))
		strcpy(out, "P");
	else if (x->ns)
		sprintf(out, "s%d", x->s[rnd((unsigned)x->ns)]);
	else
		strcpy(out, "L");
}

static const char *forms1[] = {"sync", "syncpt", "async", "asyncpt", "uni",
	"unipt", "uniasync", "uniasyncpt", "attr", "attrpt", "batch", "batchpt",
	"attr3d", "attr3dpt", "batch3d", "batch3dpt"};
static const char *forms2[] = {"m2d", "m2dpt", "m2dua", "m2das", "m2daspt",
	"m2du", "m2dasu", "m3d", "m3dpt", "m3das", "m3daspt", "p3d", "p3das", "p3daspt"};
static int form_ok(const char *f, int async_only)
{
	int sync = !strcmp(f, "sync") || !strcmp(f, "syncpt") || !strcmp(f, "uni") ||
		   !strcmp(f, "unipt") || !strcmp(f, "m2d") || !strcmp(f, "m2dpt") ||
		   !strcmp(f, "m2dua") || !strcmp(f, "m2du") || !strcmp(f, "m3d") ||
		   !strcmp(f, "m3dpt") || !strcmp(f, "p3d");
	if (async_only && sync)
		return 0;
	if (strstr(f, "pt") && !cl("ptds"))
		return 0;
	if (!strncmp(f, "uni", 3) && !cl("uni"))
		return 0;
	if (!strncmp(f, "attr", 4) && !cl("attr"))
		return 0;
	if (!strncmp(f, "batch", 5) && !cl("batch"))
		return 0;
	if (!strncmp(f, "m3d", 3) && !cl("c3d"))
		return 0;
	if (f[0] == 'p' && !cl("peer"))
		return 0;
	if (!strncmp(f, "m2d", 3) && !cl("c2d"))
		return 0;
	return 1;
}

/* a copy on thread t; async_only: inside a capture section */
void gen_copy(int t, int async_only, const char *avoid)
{
	struct th *x = &T[t];
	struct hb *h = pick_host(t);
	int shared = shared_slot >= 0 && (!h || chance(30));
	if ((!h && !shared) || !x->nd)
		return;
	/* in a section: no buffer the program registered (its copies are
	 * waited for, which a global capture forbids) */
	if (async_only && (shared || h->nreg))
		return;
	struct db *d = &x->d[rnd((unsigned)x->nd)];
	int rect = (cl("c2d") || cl("c3d") || cl("peer")) && chance(30);
	const char *f = NULL;
	for (int i = 0; i < 20 && !f; i++) {
		const char *c = rect ? forms2[rnd(14)] : forms1[rnd(16)];
		if (form_ok(c, async_only) && (rect || cl("c1d") || strcmp(c, "sync")))
			f = c;
	}
	if (!f)
		return;
	char s[8];
	pick_stream(t, s);
	if (avoid && !strcmp(s, avoid))
		strcpy(s, x->ns ? "P" : "L");
	char eff[8];
	int syncf = !form_ok(f, 1);
	strcpy(eff, syncf ? (strstr(f, "pt") ? "P" : "L") :
	       (!strcmp(s, "L") && strstr(f, "pt")) ? "P" : s);
	if (no_legacy && !strcmp(eff, "L"))
		return;
	size_t hbase = shared ? x->poff : 0, hn = shared ? x->plen : h->n;
	int slot = shared ? shared_slot : h->slot;
	size_t lim = hn < d->n ? hn : d->n;
	size_t w, hh = 1, hp, dp, hoff, doff;
	if (!rect) {
		unsigned r = rnd(10);
		w = r < 3 ? lim : r < 6 ? 1 + rnd(64 * 1024) : 1 + rnd((unsigned)lim);
		if (w > lim)
			w = lim;
		hoff = rnd((unsigned)(hn - w + 1));
		if (chance(20)) { /* across a 1, 2 or 4 MiB boundary */
			size_t g = MB << rnd(3), k = (hn / g) ? g * (1 + rnd((unsigned)(hn / g))) : 0;
			if (k > w / 2 && k - w / 2 + w <= hn)
				hoff = k - w / 2;
		}
		doff = rnd((unsigned)(d->n - w + 1));
		hp = dp = w;
	} else {
		w = 1 + rnd(chance(50) ? 4096 : 256 * 1024);
		if (w > lim / 2)
			w = lim / 2 ? lim / 2 : 1;
		hp = w + rnd(8192), dp = w + rnd(8192);
		size_t mh = (hn - w) / hp + 1, md = (d->n - w) / dp + 1;
		size_t m = mh < md ? mh : md;
		if (m < 1)
			return;
		hh = 1 + rnd((unsigned)(m < 64 ? m : 64));
		hoff = rnd((unsigned)(hn - ((hh - 1) * hp + w) + 1));
		doff = rnd((unsigned)(d->n - ((hh - 1) * dp + w) + 1));
	}
	if (chance(4))
		doff = d->n - w / 2; /* past its end: refused whole */
	/* one buffer on two streams: the program waits in between (under
	 * "mode relaxed" its host buffers too: an async copy may still read
	 * or write them, as registered memory's do) */
	char *hl = relaxed ? (shared ? x->plast : h->last) : NULL;
	if ((d->last[0] && strcmp(d->last, eff)) || (hl && hl[0] && strcmp(hl, eff))) {
		if (async_only)
			return; /* no wait inside a capture section */
		printf("%d syncall\n", t);
	}
	strcpy(d->last, eff);
	if (hl)
		strcpy(hl, eff);
	int h2d = chance(50);
	if (cl("fail") && !async_only && chance(8)) {
		static const char *fns[] = {"cuMemHostRegister_v2", "cuEventRecord",
			"cuEventCreate", "cuMemcpy2DAsync_v2", "cuMemcpyAsync"};
		static const int codes[] = {2, 999, 700};
		char fn[64];
		/* mostly the entry a piece of this copy reaches the driver by */
		if (chance(70))
			snprintf(fn, sizeof(fn), "cuMemcpy%sAsync_v2%s", h2d ? "HtoD" : "DtoH",
				 strstr(f, "pt") && !syncf ? "_ptsz" : "");
		else
			snprintf(fn, sizeof(fn), "%s", fns[rnd(5)]);
		printf("%d fail %s %u %d\n", t, fn, 1 + rnd(3), codes[rnd(3)]);
	}
	printf("%d c %s %s %s b%d %zu d%d %zu %zu", t, h2d ? "h2d" : "d2h", f, s,
	       slot, hbase + hoff, d->slot, doff, w);
	if (rect)
		printf(" %zu %zu %zu", hh, hp, dp);
	printf("\n");
}

/* munmap (its tail), mremap or mapfix of thread t's mmap block h; also
 * while another thread may be capturing: a release that began before the
 * capture ends before it, one during it is refused (ENOMEM, hostpin(7)
 * Graph captures) and the program falls back (mem.c) */
static void gen_map(int t, struct hb *h)
{
	size_t n = chance(50) ? h->n / 2 : h->n * 2;
	if (chance(25) && h->n > 8 * KB) {
		size_t off = rnd((unsigned)h->n);
		printf("%d mapfix b%d %zu %u\n", t, h->slot, off,
		       rnd((unsigned)(h->n - off)) + 1);
		return;
	}
	printf("%d %s b%d %zu\n", t, chance(50) ? "munmap" : "mremap", h->slot, n);
	h->n = ((n + 4095) & ~(size_t)4095) < h->n ? n : h->n; /* conservative */
}

/* gen_map of one of t's mmap blocks the program registered nothing of,
 * inside a capture section; 0 if it has none. */
int gen_map_any(int t)
{
	struct th *x = &T[t];
	for (int i = 0; i < x->nh; i++) {
		struct hb *h = &x->h[(i + (int)rnd(12)) % x->nh];
		if (h->live && h->kind == 3 && !h->nreg) {
			gen_map(t, h);
			return 1;
		}
	}
	return 0;
}

void gen_mem(int t, int child)
{
	struct hb *h = pick_host(t);
	unsigned r = rnd(10);
	if (child == 1 && h) { /* the forked child: no driver call */
		if (r < 3 && h->n > 8 * KB)
			printf("%d discard b%d 0 %zu\n", t, h->slot, h->n);
		else if (r < 6 && h->kind != 3)
			printf("%d realloc b%d %zu\n", t, h->slot, h->n * 2);
		else if (r < 8)
			printf("%d free b%d\n", t, h->slot);
		else
			printf("%d check b%d\n", t, h->slot);
		return;
	}
	if (!h || (!child && r < 2)) {
		if (!child)
			new_host(t);
		return;
	}
	if (r < 4 && cl("discard") && h->n > 8 * KB) {
		size_t off = rnd((unsigned)h->n);
		printf("%d discard b%d %zu %u\n", t, h->slot, off, rnd((unsigned)(h->n - off)) + 1);
	} else if (child == 2 && h->nreg) {
		printf("%d check b%d\n", t, h->slot); /* no driver call */
		return;
	} else if (r < 6 && !child && h->nreg) {
		/* unregistered first: the block moves or loses pages */
		while (h->nreg)
			printf("%d unreg b%d %zu\n", t, h->slot, h->regoff[--h->nreg]);
	} else if (r < 5 && cl("realloc") && h->kind != 3) {
		size_t n = rsize();
		printf("%d realloc b%d %zu\n", t, h->slot, n);
		if (child != 1)
			h->n = n, h->kind = 0;
	} else if (r < 6 && h->kind == 3 && cl("mmap")) {
		gen_map(t, h);
	} else if (r < 8) {
		if (!child)
			for (int i = 0; i < h->nreg; i++)
				printf("%d unreg b%d %zu\n", t, h->slot, h->regoff[i]);
		printf("%d free b%d\n", t, h->slot);
		if (child != 1)
			h->live = 0, h->nreg = 0;
	} else if (r < 9)
		printf("%d fill b%d %u\n", t, h->slot, rnd(1000));
	else
		printf("%d check b%d\n", t, h->slot);
}
