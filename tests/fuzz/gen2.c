/* engine_fuzz gen, continued: the op mix, sections and the program. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fz.h"
#include "gen.h"

/* FAKE_CUDA_REFUSE_PARTIAL=1 in this program (fz_gen; gen.h) */
int refuse;

static void gen_ctl(int t)
{
	struct th *x = &T[t];
	char s[8];
	pick_stream(t, s);
	unsigned r = rnd(12);
	if (r < 3)
		printf("%d sync %s\n", t, s);
	else if (r < 4)
		printf("%d query %s\n", t, s);
	else if (r < 6 && cl("event"))
		printf("%d event %s %u\n", t, s, rnd(2));
	else if (r < 7)
		printf("%d syncall\n", t);
	else if (r < 8)
		new_stream(t);
	else if (r < 9 && cl("devstream"))
		printf("%d cur %u\n", t, rnd(2));
	else if (r < 11 && cl("reg")) {
		struct hb *h = pick_host(t);
		int sh = shared_slot >= 0 && (!h || chance(50));
		if (sh) {
			size_t off = x->poff + (chance(50) ? 0 : rnd((unsigned)x->plen / 2));
			/* its piece's last page left out: OFF counts from the
			 * block's first page boundary (ctl.c), up to 4095
			 * bytes past its start (glibc's malloc), and a
			 * registration to the piece's end would reach into
			 * the next thread's piece, whose copies may still be
			 * in flight when this thread unregisters (seed
			 * 73100404: the run without hostpin's VIOLATION
			 * unregister-with-copy-in-flight) */
			size_t n = x->plen - (off - x->poff) - 4096;
			printf("%d reg b%d %zu %zu %u\n", t, shared_slot, off, n, rnd(3));
			if (chance(80))
				printf("%d unreg b%d %zu\n", t, shared_slot, off);
			else
				x->poff = x->poff; /* left for the end */
		} else if (h && h->nreg < 4) {
			size_t off = chance(50) ? 0 : rnd((unsigned)h->n) & ~(size_t)4095;
			size_t n = chance(50) ? h->n - off : rnd((unsigned)(h->n - off)) + 1;
			printf("%d reg b%d %zu %zu %u\n", t, h->slot, off, n, rnd(3));
			h->regoff[h->nreg++] = off;
		} else if (h && h->nreg) {
			printf("%d unreg b%d %zu\n", t, h->slot, h->regoff[--h->nreg]);
		}
	} else if (cl("bogus") && x->nd) {
		struct hb *h = pick_host(t);
		if (h)
			printf("%d bogus %u b%d d%d\n", t, rnd(6), h->slot, x->d[0].slot);
	} else
		printf("%d ctxsync\n", t);
}

static void gen_any(int t)
{
	unsigned r = rnd(20);
	if (r < 9)
		gen_copy(t, 0, NULL);
	else if (r < 13 && cl("mem"))
		gen_mem(t, 0);
	else if (r < 14 && cl("fork") && !relaxed) {
		unsigned k = 1 + rnd(3);
		printf("%d fork %u\n", t, k);
		for (unsigned i = 0; i < k; i++) { /* exactly k lines */
			if (pick_host(t))
				gen_mem(t, 1);
			else
				printf("%d check b63\n", t);
		}
	} else if (r < 15) {
		struct hb *h = pick_host(t);
		if (h && !relaxed)
			printf("%d check b%d\n", t, h->slot);
		else if (T[t].nd)
			printf("%d dsum d%d\n", t, T[t].d[rnd((unsigned)T[t].nd)].slot);
	} else
		gen_ctl(t);
}

/* A section: the threads meet, one does something the others must not
 * overlap (a capture, a context's end), the others only async copies
 * (memory ops too under strict), and they meet again. */
/* A hold section: thread b holds one of its streams (what a host function
 * waiting on the program does), the threads meet, b queues work behind
 * the hold (its D2H there returns only once released), another thread a
 * does async copies, maybe a capture, then releases b's stream; they meet
 * again.  Nothing of another thread's may wait for b's stream, so no
 * thread queues work on the legacy stream in the section: it would wait
 * for every blocking stream's work queued before it (b's held stream's
 * too), and every blocking stream's work queued after it would wait for
 * it (a's copies, which a hostpin staging them waits for before the
 * release: a hang no GPU has without hostpin). */
static void gen_hold(void)
{
	int b = (int)rnd((unsigned)nth), a = (b + 1 + (int)rnd((unsigned)nth - 1)) % nth;
	char x[8];
	if (T[b].ns && chance(50))
		sprintf(x, "s%d", T[b].s[rnd((unsigned)T[b].ns)]);
	else
		strcpy(x, cl("ptds") ? "P" : "L");
	if (!strcmp(x, "L"))
		return;
	/* held once every thread stopped: none waits for it but a */
	for (int t = 0; t < nth; t++)
		printf("%d barrier\n", t);
	printf("%d syncall\n%d hold %s 0\n", b, b, x);
	for (int t = 0; t < nth; t++)
		printf("%d barrier\n", t);
	char s[8] = "";
	int cap = cl("capture") && T[a].ns && chance(50);
	if (cap) {
		sprintf(s, "s%d", T[a].s[rnd((unsigned)T[a].ns)]);
		printf("%d syncall\n%d capbegin %s %u\n", a, a, s, rnd(3));
	}
	/* a's copies mostly after b's (a nap: the outcome never depends
	 * on it), on its own stream of the same kind */
	printf("%d nap 20\n", a);
	prefer_stream = !strcmp(x, "P") ? "P" : NULL;
	no_legacy = 1;
	for (unsigned i = 1 + rnd(3); i > 0; i--)
		gen_copy(a, 1, cap ? s : NULL);
	prefer_stream = NULL;
	if (cap)
		printf("%d capend %s\n", a, s);
	printf("%d release 0\n", a);
	prefer_stream = x;
	for (unsigned i = 1 + rnd(3); i > 0; i--)
		gen_copy(b, 1, NULL);
	prefer_stream = NULL;
	for (int t = 0; t < nth; t++)
		if (t != a && t != b)
			for (unsigned i = rnd(3); i > 0; i--)
				gen_copy(t, 1, NULL);
	no_legacy = 0;
	for (int t = 0; t < nth; t++)
		printf("%d barrier\n", t);
}

/* fresh: a capture section may begin with a block thread a allocates just
 * then and earns the registration of (FAKE_CUDA_REGISTER_DELAY_US,
 * HOSTPIN_REGISTER_CHUNK=1M: still being registered, part way, when the
 * capture begins; FAKE_CUDA_REFUSE_PARTIAL=1), then copies it on the capturing stream itself, across
 * 1 MiB registrations: a copy of a block being registered on a stream
 * capturing must go by pieces, never whole across the registered part's
 * end (issue 39 item 6).  Decided by the seed alone (one in 8 of those
 * with these classes), no draw: the other seeds' programs stay as they
 * were; such a program registers in the background
 * (HOSTPIN_PIN_AFTER=2: the second copy earns it, HOSTPIN_STAGE=1). */
static int fresh;

/* The fresh block for thread a, registration earned by whole-block copies
 * on the legacy stream (synchronised before the capture); its slot and
 * its device buffer's in *hs, *ds, or 0. */
static int gen_fresh_block(int a, int *hs, int *ds, size_t *n)
{
	struct th *x = &T[a];
	if (x->nh == 12 || x->nd == 8 || host_total > 300 * MB)
		return 0;
	struct hb *b = &x->h[x->nh++];
	memset(b, 0, sizeof(*b));
	b->slot = nslot_h++, b->n = 16 * MB + (size_t)rnd(24) * MB, b->live = 1;
	b->kind = chance(50) ? 2 : 0;
	host_total += b->n;
	printf("%d alloc b%d %s %zu %u\n", a, b->slot,
	       b->kind ? "memalign" : "malloc", b->n, rnd(1000));
	struct db *d = &x->d[x->nd++];
	d->slot = nslot_d++, d->n = b->n, d->last[0] = 0;
	printf("%d dalloc d%d %zu %u\n", a, d->slot, d->n, rnd(1000));
	/* (the second earns it, HOSTPIN_PIN_AFTER=2: the registration is
	 * still under way when the capture begins, mostly) */
	for (unsigned i = 1 + rnd(2); i > 0; i--)
		printf("%d c h2d sync L b%d 0 d%d 0 %zu\n", a, b->slot, d->slot, b->n);
	if (chance(50))
		printf("%d nap %u\n", a, rnd(10));
	*hs = b->slot, *ds = d->slot, *n = b->n;
	return 1;
}

/* Copies on s, capturing, of the fresh block: async 1D, 2D or 3D across
 * one of its 1 MiB boundaries */
static void gen_fresh_copies(int a, const char *s, int hs, int ds, size_t n)
{
	for (unsigned i = 1 + rnd(3); i > 0; i--) {
		size_t k = MB * (1 + rnd((unsigned)(n / MB - 1)));
		int h2d = chance(50), r = (int)rnd(3);
		if (r == 0 || !cl("c2d")) {
			size_t w = 1 + rnd((unsigned)(2 * MB));
			printf("%d c %s async %s b%d %zu d%d %zu %zu\n", a,
			       h2d ? "h2d" : "d2h", s, hs, k - w / 2, ds,
			       k - w / 2, w);
			continue;
		}
		size_t w = 1 + rnd(64 * 1024), hp = w + rnd(8192),
		       hh = 2 + rnd(16), off = k - hh / 2 * hp - w / 2;
		printf("%d c %s %s %s b%d %zu d%d %zu %zu %zu %zu %zu\n", a,
		       h2d ? "h2d" : "d2h", r == 2 && cl("c3d") ? "m3das" : "m2das",
		       s, hs, off, ds, off, w, hh, hp, hp);
	}
}

static void gen_section(void)
{
	int a = (int)rnd((unsigned)nth);
	if (nth > 1 && cl("hold") && chance(50))
		return gen_hold();
	for (int t = 0; t < nth; t++)
		printf("%d barrier\n", t);
	int cap = cl("capture") && (!cl("reset") || chance(60));
	if (cap) {
		struct th *x = &T[a];
		char s[8];
		if (x->ns && chance(70))
			sprintf(s, "s%d", x->s[rnd((unsigned)x->ns)]);
		else if (cl("ptds"))
			strcpy(s, "P");
		else
			goto out;
		int mode = (int)rnd(3), hs = 0, ds = 0;
		size_t fn = 0;
		int fb = fresh && gen_fresh_block(a, &hs, &ds, &fn);
		printf("%d syncall\n", a);
		/* a's own buffers idle now: a copy on the capturing stream
		 * needs no wait for another stream of theirs */
		for (int i = 0; i < x->nd; i++)
			x->d[i].last[0] = 0;
		for (int i = 0; i < x->nh; i++)
			x->h[i].last[0] = 0;
		printf("%d capbegin %s %d\n", a, s, mode);
		if (fb)
			gen_fresh_copies(a, s, hs, ds, fn);
		for (int t = 0; t < nth; t++) {
			unsigned k = rnd(4);
			for (unsigned i = 0; i < k; i++) {
				if (!relaxed && chance(25) && cl("mem") && t != a) {
					if (!cl("mmap") || chance(50) ||
					    !gen_map_any(t))
						gen_mem(t, 2);
				}
				else if (t == a && chance(50)) {
					/* on the capturing stream itself:
					 * captured, never run (cut at a
					 * block's registrations, issue 39
					 * item 6) */
					prefer_stream = s;
					gen_copy(t, 1, NULL);
					prefer_stream = NULL;
				} else
					gen_copy(t, 1, t == a ? s : NULL);
			}
		}
		printf("%d capend %s\n", a, s);
	} else if (cl("reset")) {
		static const char *what[] = {"reset", "ctxrelease", "destroy"};
		printf("%d %s %u\n", a, what[rnd(3)], chance(70) ? 0 : 1);
		/* then: does hostpin still call a block registered that the
		 * driver dropped?  (after copies that earn registration) */
		struct hb *h = pick_host(a);
		if (h && h->n >= MB && T[a].nd && chance(70)) {
			struct db *d = &T[a].d[0];
			size_t n = h->n < d->n ? h->n : d->n;
			printf("%d syncall\n", a);
			for (int i = 0; i < 3; i++)
				printf("%d c h2d sync L b%d 0 d%d 0 %zu\n", a, h->slot, d->slot, n);
			strcpy(d->last, "L");
			printf("%d probe b%d\n", a, h->slot);
		}
	}
out:
	for (int t = 0; t < nth; t++)
		printf("%d barrier\n", t);
}

int fz_gen(int argc, char **argv)
{
	const char *extra = NULL;
	rs = strtoull(argv[0], NULL, 0) * 2654435761ull + 88172645463325252ull;
	for (int i = 0; i < 5; i++)
		rnd(1);
	for (int i = 0; i < NCL; i++)
		on[i] = 1;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--ops")) {
			for (int j = 0; j < NCL; j++)
				on[j] = 0;
			set_list(argv[i + 1], 1);
		} else if (!strcmp(argv[i], "--no"))
			set_list(argv[i + 1], 0);
		else if (!strcmp(argv[i], "--set"))
			extra = argv[i + 1]; /* VAR=VAL... added to the hostpin line */
	}
	nth = 1 + (int)rnd(chance(30) ? 1 : 4);
	relaxed = cl("relaxed") && chance(20);
	printf("# engine_fuzz gen %s\nthreads %d\nmode %s\n", argv[0], nth,
	       relaxed ? "relaxed" : "strict");
	if (cl("inflight") && chance(10))
		printf("exit inflight\n");
	/* the fake's settings */
	printf("env FAKE_CUDA_LATE_DMA=1 FAKE_CUDA_PTDS_PER_THREAD=1");
	refuse = cl("partial") && chance(30);
	fresh = cl("capture") && cl("delay") && cl("config") &&
		cl("partial") && strtoull(argv[0], NULL, 0) % 8 == 1;
	if (refuse || fresh)
		printf(" FAKE_CUDA_REFUSE_PARTIAL=1");
	if (cl("delay") && chance(40))
		printf(" FAKE_CUDA_REGISTER_DELAY_US=%u",
		       fresh ? 2000 : 200 + rnd(3000));
	else if (fresh)
		printf(" FAKE_CUDA_REGISTER_DELAY_US=2000");
	printf("\n");
	/* hostpin's */
	printf("hostpin");
	if (cl("config")) {
		static const char *pa[] = {"0", "1", "2"};
		static const char *chunk[] = {"1M", "2M", "4M", "8M"};
		static const char *buf[] = {"2M", "4M", "8M"};
		static const char *smin[] = {"4K", "64K", "1M", "2M"};
		static const char *thr[] = {"1", "2", "8"};
		static const char *cap[] = {"8M", "24M", "48M", "96M"};
		if (chance(60)) printf(" HOSTPIN_PIN_AFTER=%s", pa[rnd(3)]);
		if (chance(40)) printf(" HOSTPIN_REGISTER_CHUNK=%s", chunk[rnd(4)]);
		if (chance(40)) printf(" HOSTPIN_STAGE_BUFFER=%s", buf[rnd(3)]);
		if (chance(40)) printf(" HOSTPIN_STAGE_MIN=%s", smin[rnd(4)]);
		if (chance(40)) printf(" HOSTPIN_STAGE_THREADS=%s", thr[rnd(3)]);
		if (chance(20)) printf(" HOSTPIN_MAX_PINNED=%s", cap[rnd(4)]);
		if (chance(30)) printf(" HOSTPIN_CACHE=0");
		if (chance(12)) printf(" HOSTPIN_STAGE=0");
		if (chance(12)) printf(" HOSTPIN_REGISTER_BACKGROUND=0");
		if (chance(15)) printf(" HOSTPIN_THRESHOLD=256K");
		/* the speed gate (speed.c): 1 GB/s stages all; 55, the
		 * default, stages by this machine's memcpy and load; 100000
		 * shuts it (a D2H into fresh memory still staged): copies
		 * passed through, or staged, in rounds of one copy */
		static const char *link[] = {"1", "55", "100000"};
		if (chance(25)) printf(" HOSTPIN_STAGE_LINK=%s", link[rnd(3)]);
	}
	if (fresh) /* (after config's: the last one set wins) */
		printf(" HOSTPIN_REGISTER_CHUNK=1M HOSTPIN_PIN_AFTER=2"
		       " HOSTPIN_STAGE=1 HOSTPIN_REGISTER_BACKGROUND=1");
	printf(" HOSTPIN_COPY=%s%s%s\n", relaxed && chance(70) ? "async" : "sync",
	       extra ? " " : "", extra ? extra : "");
	if (cl("shared") && nth > 1 && chance(50)) {
		/* whole pages: the threads' pieces registered at once must
		 * not share one (the driver refuses the second, 712, in
		 * whichever order the threads come: seed 7300028) */
		size_t piece = MB * (1 + rnd(8)) +
			       (chance(50) ? (rnd(4096) * 8) & ~(size_t)4095 : 0);
		shared_slot = nslot_h++;
		printf("S alloc b%d %s %zu %u\n", shared_slot, chance(50) ? "memalign" : "malloc",
		       piece * (size_t)nth, rnd(1000));
		for (int t = 0; t < nth; t++)
			T[t].poff = piece * (size_t)t, T[t].plen = piece;
		host_total += piece * (size_t)nth;
	}
	for (int t = 0; t < nth; t++) {
		unsigned k = 1 + rnd(2);
		for (unsigned i = 0; i < k; i++)
			new_host(t);
		if (!T[t].nd)
			printf("%d dalloc d%d %u %u\n", t, T[t].d[T[t].nd].slot = nslot_d++,
			       (unsigned)(T[t].d[T[t].nd].n = 4 * MB), rnd(1000)),
				T[t].nd++;
		for (unsigned i = rnd(3); i > 0; i--)
			new_stream(t);
	}
	int rounds = 2 + (int)rnd(6);
	for (int r = 0; r < rounds; r++) {
		for (int t = 0; t < nth; t++)
			for (unsigned i = 3 + rnd(8); i > 0; i--)
				gen_any(t);
		if ((cl("capture") || cl("reset") || cl("hold")) && chance(40))
			gen_section();
	}
	for (int t = 0; t < nth; t++) {
		if (!relaxed)
			for (int i = 0; i < T[t].nh; i++)
				if (T[t].h[i].live)
					printf("%d check b%d\n", t, T[t].h[i].slot);
		for (int i = 0; i < T[t].nd; i++)
			printf("%d dsum d%d\n", t, T[t].d[i].slot);
	}
	if (shared_slot >= 0)
		printf("E check b%d\n", shared_slot);
	return 0;
}
