/* engine_fuzz's interpreter: reads a program, runs its setup ops, then
 * each thread's ops on a thread of its own, and prints each thread's
 * output in thread order.  A watchdog names each thread's op when the
 * program runs past FZ_TIMEOUT seconds in all (exit 3), with how long
 * that op has run (a slow program's last op is not a stuck one), and gdb
 * dumps every thread's stack first (dump_stacks). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fz.h"

int fz_relaxed, fz_nthreads;
struct fz_buf fz_host[FZ_MAXB], fz_dev[FZ_MAXB];
static struct fz_thread thr[FZ_MAXT + 2]; /* [0] setup, [1..] threads, last: end */
static pthread_barrier_t bar;
static int inflight_exit;

void fake_cuda_fail_arm(const char *fn, int n, int code);
void fake_cuda_fail_exempt(int on);

void fz_printf(struct fz_thread *t, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	if (t->outn + (size_t)n + 1 > t->outcap) {
		t->outcap = (t->outcap + (size_t)n + 1) * 2;
		t->out = realloc(t->out, t->outcap);
	}
	memcpy(t->out + t->outn, buf, (size_t)n + 1);
	t->outn += (size_t)n;
}

long long fz_num(const char *s)
{
	return s ? strtoll(s, NULL, 0) : 0;
}

/* A pattern of seed over [p, p+n), a word at a time. */
void fz_fill(void *p, size_t n, unsigned seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
	char *c = p;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		x += 0x9E3779B97F4A7C15ull;
		uint64_t w = x ^ (x >> 29);
		memcpy(c + i, &w, 8);
	}
	for (; i < n; i++)
		c[i] = (char)(seed + i);
}

uint64_t fz_sum(const void *p, size_t n)
{
	const unsigned char *c = p;
	uint64_t h = 1469598103934665603ull;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, c + i, 8);
		h = (h ^ w) * 1099511628211ull;
		h ^= h >> 31;
	}
	for (; i < n; i++)
		h = (h ^ c[i]) * 1099511628211ull;
	return h;
}

static __thread struct {
	char fn[64];
	int n, code, on;
} arm;
__thread int fz_fallible;

static void run_one(struct fz_thread *t, struct fz_op *o);
static int timeout_s = 60;

/* fork K: the child runs this thread's next K ops (memory ops), prints
 * them into a pipe and exits; the parent skips them and appends the
 * child's output and its exit status. */
static int do_fork(struct fz_thread *t, int i)
{
	int k = (int)fz_num(t->ops[i]->tok[1]);
	if (k > t->nops - i - 1)
		k = t->nops - i - 1;
	int pfd[2];
	if (pipe(pfd) != 0)
		return k;
	pid_t pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		alarm((unsigned)(timeout_s + 1) / 2); /* one that hangs dies */
		struct fz_thread c = {.id = t->id, .ops = t->ops};
		for (int j = i + 1; j <= i + k; j++)
			run_one(&c, t->ops[j]);
		if (c.outn)
			(void)!write(pfd[1], c.out, c.outn);
		_exit(0);
	}
	close(pfd[1]);
	char buf[4096];
	ssize_t r;
	fz_printf(t, "fork{\n");
	while ((r = read(pfd[0], buf, sizeof(buf) - 1)) > 0) {
		buf[r] = 0;
		fz_printf(t, "%s", buf);
	}
	close(pfd[0]);
	int st = 0;
	if (pid > 0)
		waitpid(pid, &st, 0);
	if (pid > 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
		fz_printf(t, "HANG-CHILD: the forked child ran past %d s\n", (timeout_s + 1) / 2);
	fz_printf(t, "} child status %d\n", pid > 0 ? st : -1);
	return k;
}

static void run_one(struct fz_thread *t, struct fz_op *o)
{
	const char *op = o->tok[0];
	if (strcmp(op, "fail") == 0) {
		snprintf(arm.fn, sizeof(arm.fn), "%s", o->tok[1]);
		arm.n = (int)fz_num(o->tok[2]);
		arm.code = (int)fz_num(o->tok[3]);
		arm.on = 1;
		return;
	}
	if (strcmp(op, "nap") == 0) { /* ms: order only, never outcome */
		usleep((useconds_t)fz_num(o->tok[1]) * 1000);
		return;
	}
	if (strcmp(op, "barrier") == 0) {
		pthread_barrier_wait(&bar);
		return;
	}
	int armed = arm.on;
	if (armed) {
		fake_cuda_fail_exempt(0);
		fake_cuda_fail_arm(arm.fn, arm.n, arm.code);
		fz_fallible = 1;
	}
	if (fz_op_mem(t, o) < 0 && fz_op_copy(t, o) < 0 && fz_op_ctl(t, o) < 0)
		fz_printf(t, "%d ? %s\n", o->line, op);
	if (armed) {
		fake_cuda_fail_arm(NULL, 0, 0);
		fake_cuda_fail_exempt(1);
		fz_fallible = 0;
		arm.on = 0;
	}
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void run_list(struct fz_thread *t)
{
	for (int i = 0; i < t->nops; i++) {
		t->since = now_ms();
		t->cur = i;
		if (strcmp(t->ops[i]->tok[0], "fork") == 0)
			i += do_fork(t, i);
		else
			run_one(t, t->ops[i]);
	}
	t->cur = t->nops;
}

static void *thread_main(void *arg)
{
	struct fz_thread *t = arg;
	fz_thread_start(t);
	run_list(t);
	return NULL;
}

/* The watchdog's stacks: gdb (FZ_GDB, default /usr/bin/gdb; none there:
 * none) prints every thread's into FZ_STACKS (a file, else stderr).  A
 * child runs it and kills it after FZ_GDB_S seconds (20): gdb stops this
 * process's threads, the watchdog's too, so only another process can
 * bound it.  Raw forks: fork() would run the atfork handlers (hostpin's
 * and malloc's), whose locks a hung thread may hold. */
static pid_t raw_fork(void)
{
	return (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
}

static void dump_stacks(void)
{
	const char *gdb = getenv("FZ_GDB"), *path = getenv("FZ_STACKS"), *e = getenv("FZ_GDB_S");
	int limit = e && atoi(e) > 0 ? atoi(e) : 20;
	if (!gdb)
		gdb = "/usr/bin/gdb";
	if (!gdb[0] || access(gdb, X_OK) != 0)
		return;
	int fd = path && path[0] ? open(path, O_WRONLY | O_CREAT | O_APPEND, 0644) : 2;
	if (fd < 0)
		return;
	char pid[24];
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	char *argv[] = {(char *)gdb, "-nx", "-q", "-batch", "-p", pid,
			"-iex", "set debuginfod enabled off", "-ex", "set pagination off",
			"-ex", "thread apply all bt", NULL};
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	pid_t c = raw_fork();
	if (c == 0) {
		pid_t g = raw_fork();
		if (g == 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			execv(gdb, argv);
			_exit(127);
		}
		int st;
		for (int i = 0; g > 0 && i < limit * 10; i++) {
			if (waitpid(g, &st, WNOHANG) == g)
				_exit(0);
			struct timespec ts = {0, 100000000};
			nanosleep(&ts, NULL);
		}
		if (g > 0) {
			kill(g, SIGKILL);
			waitpid(g, &st, 0);
		}
		kill(getppid(), SIGCONT); /* gdb killed while it held it stopped */
		_exit(0);
	}
	if (c > 0)
		waitpid(c, NULL, 0);
	if (fd != 2)
		close(fd);
}

static void *watchdog(void *arg)
{
	(void)arg;
	struct timespec ts = {.tv_sec = timeout_s};
	while (nanosleep(&ts, &ts) != 0)
		;
	/* no stdio, no malloc: the hang may hold their locks */
	char buf[600];
	int n = snprintf(buf, sizeof(buf), "HANG after %d s\n", timeout_s);
	(void)!write(1, buf, (size_t)n);
	for (int i = 0; i < fz_nthreads + 2; i++) {
		struct fz_thread *t = &thr[i];
		if (t->cur >= 0 && t->cur < t->nops) {
			long long ms = now_ms() - t->since;
			n = snprintf(buf, sizeof(buf), "HANG thread %d at line %d: %s (for %lld.%03lld s)\n",
				     i - 1, t->ops[t->cur]->line, t->ops[t->cur]->text,
				     ms / 1000, ms % 1000);
			(void)!write(1, buf, (size_t)n);
		}
	}
	dump_stacks();
	_exit(3);
}

static void add(struct fz_thread *t, struct fz_op *o)
{
	t->ops = realloc(t->ops, sizeof(*t->ops) * (size_t)(t->nops + 1));
	t->ops[t->nops++] = o;
}

/* Line format: "# comment", "threads N", "mode strict|relaxed",
 * "exit inflight", "env ..." (read by fuzz.sh), or "T OP ARGS..." where
 * T is S (setup), E (end) or a thread number. */
static int parse(FILE *f)
{
	char line[1024];
	int ln = 0;
	while (fgets(line, sizeof(line), f)) {
		ln++;
		line[strcspn(line, "\n")] = 0;
		if (!line[0] || line[0] == '#' || strncmp(line, "env ", 4) == 0 ||
		    strncmp(line, "hostpin ", 8) == 0)
			continue;
		if (sscanf(line, "threads %d", &fz_nthreads) == 1)
			continue;
		if (strcmp(line, "mode relaxed") == 0) {
			fz_relaxed = 1;
			continue;
		}
		if (strcmp(line, "mode strict") == 0)
			continue;
		if (strcmp(line, "exit inflight") == 0) {
			inflight_exit = 1;
			continue;
		}
		struct fz_op *o = calloc(1, sizeof(*o));
		o->text = strdup(line);
		o->line = ln;
		char *save = NULL, *w = strtok_r(strdup(line), " ", &save);
		const char *th = w;
		while ((w = strtok_r(NULL, " ", &save)) && o->ntok < FZ_MAXTOK)
			o->tok[o->ntok++] = w;
		if (!th || o->ntok == 0)
			continue;
		for (int i = o->ntok; i < FZ_MAXTOK; i++)
			o->tok[i] = NULL;
		int k = th[0] == 'S' ? 0 : th[0] == 'E' ? FZ_MAXT + 1 : atoi(th) + 1;
		if (k < 0 || k > FZ_MAXT + 1)
			continue;
		o->th = k - 1;
		if (!strcmp(o->tok[0], "reg") && o->ntok >= 4 && o->tok[1])
			fz_reg_static(atoi(o->tok[1] + 1) % FZ_MAXB,
				      (size_t)fz_num(o->tok[2]),
				      (size_t)fz_num(o->tok[3]));
		add(&thr[k], o);
	}
	if (fz_nthreads < 1 || fz_nthreads > FZ_MAXT)
		fz_nthreads = 1;
	/* the end list prints as the last slot */
	thr[fz_nthreads + 1] = thr[FZ_MAXT + 1];
	if (fz_nthreads + 1 != FZ_MAXT + 1)
		memset(&thr[FZ_MAXT + 1], 0, sizeof(thr[0]));
	return 0;
}

static int run_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		perror(path);
		return 2;
	}
	parse(f);
	fclose(f);
	const char *e = getenv("FZ_TIMEOUT");
	if (e && atoi(e) > 0)
		timeout_s = atoi(e);
	pthread_t wd;
	pthread_create(&wd, NULL, watchdog, NULL);
	fz_init_driver();
	for (int i = 0; i < fz_nthreads + 2; i++)
		thr[i].id = i - 1, thr[i].cur = -1;
	fz_thread_start(&thr[0]);
	run_list(&thr[0]);
	pthread_barrier_init(&bar, NULL, (unsigned)fz_nthreads);
	pthread_t th[FZ_MAXT];
	for (int i = 0; i < fz_nthreads; i++)
		pthread_create(&th[i], NULL, thread_main, &thr[i + 1]);
	for (int i = 0; i < fz_nthreads; i++)
		pthread_join(th[i], NULL);
	struct fz_thread *end = &thr[fz_nthreads + 1];
	run_list(end);
	if (!inflight_exit)
		fz_final(0);
	for (int i = 0; i < fz_nthreads + 2; i++) {
		printf("== %s%d\n", i == 0 ? "setup" : i == fz_nthreads + 1 ? "end" : "t",
		       i == 0 || i == fz_nthreads + 1 ? 0 : i - 1);
		if (thr[i].out)
			fputs(thr[i].out, stdout);
	}
	printf("== done\n");
	fflush(stdout);
	if (inflight_exit)
		fz_final(1);
	exit(0);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	if (argc >= 3 && strcmp(argv[1], "gen") == 0)
		return fz_gen(argc - 2, argv + 2);
	if (argc == 3 && strcmp(argv[1], "run") == 0)
		return run_file(argv[2]);
	fprintf(stderr, "usage: engine_fuzz gen SEED [--ops LIST] [--no LIST] | run FILE\n");
	return 2;
}
