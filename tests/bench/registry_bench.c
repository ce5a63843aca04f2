/* Registry lookups against a baseline with the same interface built on a
 * pthread_rwlock_t and a sorted array, side by side in one run.
 *   registry_bench time        ns per lookup, hit and miss, 1 reader and
 *                              2 readers with a writer churning
 *   registry_bench count K N   N lookups of kind K (hit|miss|gap) for
 *                              callgrind
 *   registry_bench meta        metadata bytes per registered byte */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "../../registry/registry.h"

#define NR 4096 /* live ranges */
#define RLEN ((size_t)1 << 20)
#define AREA ((uintptr_t)0x7f0000000000)

/* ---- baseline: rwlock + sorted array, binary search ---- */
static struct {
	pthread_rwlock_t lk;
	uintptr_t base[NR * 2];
	size_t len[NR * 2];
	int n;
} bl = {.lk = PTHREAD_RWLOCK_INITIALIZER};

static void bl_insert(uintptr_t b, size_t l)
{
	pthread_rwlock_wrlock(&bl.lk);
	int i = bl.n;
	while (i > 0 && bl.base[i - 1] > b) {
		bl.base[i] = bl.base[i - 1], bl.len[i] = bl.len[i - 1];
		i--;
	}
	bl.base[i] = b, bl.len[i] = l, bl.n++;
	pthread_rwlock_unlock(&bl.lk);
}

static void bl_remove(uintptr_t b)
{
	pthread_rwlock_wrlock(&bl.lk);
	for (int i = 0; i < bl.n; i++)
		if (bl.base[i] == b) {
			memmove(&bl.base[i], &bl.base[i + 1],
				sizeof(uintptr_t) * (size_t)(bl.n - i - 1));
			memmove(&bl.len[i], &bl.len[i + 1],
				sizeof(size_t) * (size_t)(bl.n - i - 1));
			bl.n--;
			break;
		}
	pthread_rwlock_unlock(&bl.lk);
}

static int bl_lookup(uintptr_t a)
{
	pthread_rwlock_rdlock(&bl.lk);
	int lo = 0, hi = bl.n - 1, found = 0;
	while (lo <= hi) {
		int m = (lo + hi) / 2;
		if (a < bl.base[m])
			hi = m - 1;
		else if (a >= bl.base[m] + bl.len[m])
			lo = m + 1;
		else {
			found = 1;
			break;
		}
	}
	pthread_rwlock_unlock(&bl.lk);
	return found;
}

/* ---- the registry under test ---- */
static hp_registry_t reg = HP_REGISTRY_INIT;
static hp_rec_t *recs[NR];

/* Range i: 1 MiB at a 2 MiB stride, so the gaps give in-bounds misses. */
static uintptr_t rbase(int i) { return AREA + (uintptr_t)i * 2 * RLEN; }

static void setup(void)
{
	for (int i = 0; i < NR; i++) {
		if (hp_registry_insert(&reg, rbase(i), RLEN, 1, &recs[i]))
			abort();
		bl_insert(rbase(i), RLEN);
	}
}

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
	return *s;
}

/* Addresses to look up: hits inside ranges, misses in the gaps. */
static uintptr_t addr(uint64_t *s, int hit)
{
	int i = (int)(rng(s) % (NR - 16));
	return rbase(i) + (hit ? 0 : RLEN) + rng(s) % RLEN;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

struct job {
	int use_reg, hit;
	long n;
	double ns;
	long found;
};

static _Atomic int churn_stop;

static void *reader(void *arg)
{
	struct job *j = arg;
	uint64_t s = (uintptr_t)arg | 1;
	static __thread uintptr_t a[1024];
	for (int k = 0; k < 1024; k++)
		a[k] = addr(&s, j->hit);
	long found = 0;
	double t0 = now();
	for (long i = 0; i < j->n; i++) {
		uintptr_t x = a[i & 1023];
		if (j->use_reg) {
			hp_snap_t sn;
			found += hp_registry_lookup(&reg, x, &sn) != NULL;
		} else {
			found += bl_lookup(x);
		}
	}
	j->ns = (now() - t0) * 1e9 / (double)j->n;
	j->found = found;
	return NULL;
}

/* The writer removes and re-inserts the last 16 ranges (never looked up,
 * so hit/miss answers stay fixed) as fast as it can. */
static void *writer(void *arg)
{
	int use_reg = *(int *)arg;
	while (!atomic_load(&churn_stop))
		for (int i = NR - 16; i < NR; i++) {
			if (use_reg) {
				hp_registry_remove(&reg, recs[i]);
				hp_registry_insert(&reg, rbase(i), RLEN, 1,
						   &recs[i]);
			} else {
				bl_remove(rbase(i));
				bl_insert(rbase(i), RLEN);
			}
		}
	return NULL;
}

static double run(int use_reg, int hit, int readers, int churn, long n)
{
	pthread_t t[4], w;
	struct job j[4];
	atomic_store(&churn_stop, 0);
	if (churn)
		pthread_create(&w, NULL, writer, &use_reg);
	for (int i = 0; i < readers; i++) {
		j[i] = (struct job){use_reg, hit, n, 0, 0};
		pthread_create(&t[i], NULL, reader, &j[i]);
	}
	double ns = 0;
	for (int i = 0; i < readers; i++) {
		pthread_join(t[i], NULL);
		ns += j[i].ns / readers;
		if ((j[i].found == j[i].n) != hit) {
			fprintf(stderr, "wrong answers\n");
			exit(1);
		}
	}
	atomic_store(&churn_stop, 1);
	if (churn)
		pthread_join(w, NULL);
	return ns;
}

int main(int argc, char **argv)
{
	setup();
	if (argc > 3 && strcmp(argv[1], "count") == 0) {
		/* For callgrind: --toggle-collect=hp_registry_lookup */
		long n = atol(argv[3]), found = 0;
		uint64_t s = 99;
		uintptr_t far = 0x1000;
		for (long i = 0; i < n; i++) {
			hp_snap_t sn;
			uintptr_t a = strcmp(argv[2], "hit") == 0   ? addr(&s, 1)
				      : strcmp(argv[2], "gap") == 0 ? addr(&s, 0)
								    : far;
			found += hp_registry_lookup(&reg, a, &sn) != NULL;
		}
		printf("%ld found\n", found);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "edit") == 0) {
		/* insert + remove of a 40 MiB range: on a 2 MiB boundary (as
		 * hostpin places its large blocks) and at an odd page offset,
		 * over leaves earlier ranges left at the same addresses */
		static hp_registry_t er = HP_REGISTRY_INIT;
		uintptr_t base = (uintptr_t)1 << 40;
		for (int aligned = 1; aligned >= 0; aligned--) {
			int n = 20000;
			double t0 = now();
			for (int i = 0; i < n; i++) {
				hp_rec_t *rec;
				uintptr_t at = base + (uintptr_t)(i % 64) * (64u << 20) +
					       (aligned ? (2u << 20)
							: (uintptr_t)(1 + i % 500) * 7 * HP_PAGE_SIZE);
				if (hp_registry_insert(&er, at, (size_t)40 << 20, 1, &rec))
					return 1;
				hp_registry_remove(&er, rec);
			}
			printf("edit 40MiB %s: %.2f us per insert+remove\n",
			       aligned ? "2MiB-aligned" : "unaligned",
			       (now() - t0) * 1e6 / n);
		}
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "meta") == 0) {
		hp_registry_t *r1 = calloc(1, sizeof(*r1));
		hp_registry_init(r1);
		size_t sizes[2] = {RLEN, (size_t)1 << 30};
		int counts[2] = {1024, 64};
		for (int k = 0; k < 2; k++) {
			hp_registry_t *r = mmap(NULL, sizeof(*r),
						PROT_READ | PROT_WRITE,
						MAP_PRIVATE | MAP_ANONYMOUS, -1,
						0);
			hp_registry_init(r);
			hp_rec_t *x;
			/* ranges at an odd page offset: the unaligned case */
			for (int i = 0; i < counts[k]; i++)
				hp_registry_insert(r,
						   AREA + (uintptr_t)i *
							      (sizes[k] + 8192) +
							  4096,
						   sizes[k], 1, &x);
			double reg_bytes = (double)sizes[k] * counts[k];
			printf("meta %s %d ranges: used %.4f%% mapped %.4f%%\n",
			       k ? "1GiB" : "1MiB", counts[k],
			       100.0 * (double)hp_registry_used_meta_bytes(r) /
				   reg_bytes,
			       100.0 * (double)hp_registry_meta_bytes(r) /
				   reg_bytes);
		}
		free(r1);
		return 0;
	}
	long n = argc > 2 ? atol(argv[2]) : 4000000;
	if (n <= 0)
		n = 4000000;
	printf("%-34s %10s %10s %8s\n", "case", "registry", "rwlock", "ratio");
	const char *names[] = {"miss", "hit"};
	for (int hit = 1; hit >= 0; hit--)
		for (int mode = 0; mode < 2; mode++) {
			int readers = mode ? 2 : 1;
			double r = run(1, hit, readers, mode, n);
			double b = run(0, hit, readers, mode, n);
			char label[64];
			snprintf(label, sizeof(label), "%s, %s", names[hit],
				 mode ? "2 readers + churning writer"
				      : "1 reader");
			printf("%-34s %8.1fns %8.1fns %7.1fx\n", label, r, b,
			       b / r);
		}
	return 0;
}
