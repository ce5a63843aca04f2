/* Knobs, the settings list (hostpin --show, HOSTPIN_LOG=info): one line
 * per knob in the order of their names, its effective value after the
 * memory base, the CPU limit and the fallbacks, sizes as people read them.
 * Parsing and loading: options.c. */
#include <string.h>

#include "../hp.h"

/* A knob the settings list leaves out: the tests' own (options.def marks
 * them by a doc starting "test only:"). */
static int test_only(const hp_optdesc_t *d)
{
	return strncmp(d->doc, "test only:", 10) == 0;
}

/* Knob i's line in the settings list, into out[cap]: its effective value
 * (after the memory base, the CPU limit and the fallbacks), sizes as
 * people read them; 0 for a knob the list leaves out. */
static int show_line(int i, char *out, size_t cap)
{
	const hp_optdesc_t *d = &hp_optdesc[i];
	char val[300], note[400], h2[24];
	note[0] = '\0';
	if (test_only(d))
		return 0;
	switch (d->kind) {
	case HP_K_STR:
		hp_snprintf(val, sizeof(val), "\"%s\"", hp_optstr[i]);
		break;
	case HP_K_ENUM: {
		const char *c = d->choices;
		for (uint64_t k = 0; k < hp_opt[i] && c; k++) {
			c = strchr(c, '|');
			c = c ? c + 1 : NULL;
		}
		size_t n = c ? strcspn(c, "|") : 0;
		if (n > sizeof(val) - 1)
			n = sizeof(val) - 1;
		memcpy(val, c ? c : "", n);
		val[n] = '\0';
		break;
	}
	case HP_K_SIZE:
	case HP_K_CAP:
		hp_human(hp_opt[i], val);
		if (hp_opt_cap_pct[i])
			hp_snprintf(note, sizeof(note),
				    "%u%% of the memory base %s: %s",
				    (unsigned)hp_opt_cap_pct[i],
				    hp_human(hp_mem_base(), h2),
				    hp_mem_base_why());
		break;
	default:
		hp_snprintf(val, sizeof(val), "%llu",
			    (unsigned long long)hp_opt[i]);
	}
	/* the fallbacks: what the job gets where it differs from the knob */
	if (i == HP_OPT_PREFAULT_THREADS && hp_opt[i] > hp_cpu_limit()) {
		hp_snprintf(val, sizeof(val), "%u", hp_cpu_limit());
		hp_snprintf(note, sizeof(note), "asked: %llu; CPUs %u",
			    (unsigned long long)hp_opt[i], hp_cpu_limit());
	} else if (i == HP_OPT_HUGEPAGES && hp_opt[i] && !hp_thp_ok()) {
		hp_snprintf(val, sizeof(val), "0");
		hp_snprintf(note, sizeof(note), "asked: 1; the transparent "
			    "huge page mode is not always or madvise");
	} else if (i == HP_OPT_BACKEND && hp_backend &&
		   strcmp(val, hp_backend->name) != 0) {
		hp_snprintf(note, sizeof(note), "asked: %s", val);
		hp_snprintf(val, sizeof(val), "%s", hp_backend->name);
	}
	hp_snprintf(out, cap, "HOSTPIN_%s=%s%s%s%s", d->name, val,
		    note[0] ? " (" : "", note, note[0] ? ")" : "");
	return 1;
}

/* The knobs in the order of their names, as README's table and hostpin(7)
 * list them (options.def keeps them by concern). */
static void by_name(int order[HP_OPT_COUNT])
{
	for (int i = 0; i < HP_OPT_COUNT; i++) {
		int j = i;
		while (j > 0 && strcmp(hp_optdesc[order[j - 1]].name,
				       hp_optdesc[i].name) > 0) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
}

void hp_options_show(int fd)
{
	char line[800];
	int order[HP_OPT_COUNT];
	by_name(order);
	for (int k = 0; k < HP_OPT_COUNT; k++) {
		int i = order[k];
		if (!show_line(i, line, sizeof(line)))
			continue;
		if (fd < 0) {
			hp_log(HP_LOG_INFO, "%s", line);
			continue;
		}
		/* a string knob's value may hold any byte: one line, and
		 * nothing a terminal acts on */
		char esc[1600];
		size_t n = hp_escape(esc, sizeof(esc) - 1, line, strlen(line));
		esc[n] = '\n';
		hp_write_all(fd, esc, n + 1);
	}
}
