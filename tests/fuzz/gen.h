/* engine_fuzz gen: state shared by gen.c and gen2.c. */
#ifndef FZ_GEN_H
#define FZ_GEN_H
#include <stddef.h>
#define NCL 28
#define KB ((size_t)1024)
#define MB ((size_t)1 << 20)
struct hb { int slot; size_t n; int kind, live, regs; size_t regoff[4]; int nreg; char last[8]; };
struct db { int slot; size_t n; char last[8]; };
struct th {
	struct hb h[12]; int nh;
	struct db d[8]; int nd;
	int s[6], sdev[6]; int ns;
	size_t poff, plen; /* its piece of the shared block */
	char plast[8];     /* the stream that last used it */
};
extern struct th T[FZ_MAXT];
extern int nth, nslot_h, nslot_d, nslot_s, shared_slot, relaxed, refuse;
extern size_t host_total;
extern unsigned long long rs;
extern const char *classes[NCL];
extern int on[NCL];
unsigned rnd(unsigned n);
int chance(int pct);
int cl(const char *name);
void set_list(const char *list, int v);
void new_host(int t);
void new_stream(int t);
struct hb *pick_host(int t);
void pick_stream(int t, char *out);
extern const char *prefer_stream;
extern int no_legacy;
void gen_copy(int t, int async_only, const char *avoid);
void gen_mem(int t, int child);
int gen_map_any(int t);
#endif
