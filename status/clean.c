/* hostpin status --clean: remove this user's ledgers that no process uses
 * (they outlive every hostpin process, and an uninstall: 424 KiB in
 * /dev/shm/hostpin-UID.d/ until a reboot), then their directory if empty.
 * A ledger is in use while a process maps it (every process that attached
 * to it does, until it exits: ledger.h) or holds it open, or while a
 * launcher whose job has slots in it runs (its --stats report is printed
 * after the job's last process is gone).  The package's removal does the
 * same in shell (Makefile, deb: postrm). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "status.h"

/* The pid of the first process of /proc for which has(pid, st) is true,
 * 0 if none, -1 if /proc cannot be read (then the file is kept). */
static int first_process(int (*has)(const char *, const struct stat *),
			 const struct stat *st)
{
	DIR *pd = opendir("/proc");
	if (!pd)
		return -1;
	int who = 0;
	struct dirent *e;
	while (!who && (e = readdir(pd))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		if (has(e->d_name, st))
			who = atoi(e->d_name);
	}
	closedir(pd);
	return who;
}

/* Does process pid map the file st (by device and inode, as
 * /proc/PID/maps gives them: the same path in another mount namespace is
 * another file)? */
static int maps_file(const char *pid, const struct stat *st)
{
	char mp[300], line[4096];
	snprintf(mp, sizeof(mp), "/proc/%s/maps", pid);
	FILE *f = fopen(mp, "re");
	if (!f)
		return 0; /* gone, or not ours to read */
	int hit = 0;
	while (!hit && fgets(line, sizeof(line), f)) {
		unsigned ma, mi;
		unsigned long long ino;
		hit = sscanf(line, "%*s %*s %*s %x:%x %llu", &ma, &mi, &ino) ==
			      3 &&
		      ino == (unsigned long long)st->st_ino &&
		      ma == major(st->st_dev) && mi == minor(st->st_dev);
	}
	fclose(f);
	return hit;
}

/* Does process pid hold the file st open (a descriptor)? */
static int holds_file(const char *pid, const struct stat *st)
{
	char fp[300];
	snprintf(fp, sizeof(fp), "/proc/%s/fd", pid);
	DIR *fd = opendir(fp);
	if (!fd)
		return 0;
	int hit = 0;
	struct dirent *f;
	while (!hit && (f = readdir(fd))) {
		struct stat fs;
		hit = f->d_name[0] != '.' &&
		      fstatat(dirfd(fd), f->d_name, &fs, 0) == 0 &&
		      fs.st_ino == st->st_ino && fs.st_dev == st->st_dev;
	}
	closedir(fd);
	return hit;
}

/* The pid of a process that maps the file st, 0 if none does, -1 if /proc
 * cannot be read. */
static int mapped_by(const struct stat *st)
{
	return first_process(maps_file, st);
}

/* The pid of a process that holds the file st open, 0 if none does: a
 * process between its open and its mapping. */
static int opened_by(const struct stat *st)
{
	return first_process(holds_file, st);
}

/* For a ledger of this layout: the pid of a launcher still running whose
 * job has slots in it (its merged report is yet to be printed, after the
 * job's last process has gone), else 0.  Read with pread, not mapped: a
 * file truncated meanwhile raises no SIGBUS here. */
static int launcher_of(int dir, const char *name, const struct stat *st)
{
	if ((size_t)st->st_size != sizeof(struct hp_ledger))
		return 0; /* another layout: its slots are not read */
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct hp_ledger *l = malloc(sizeof(*l));
	int who = 0;
	if (l && pread(fd, l, sizeof(*l), 0) == (ssize_t)sizeof(*l) &&
	    l->layout == HP_LEDGER_LAYOUT) {
		for (uint32_t i = 0; !who && i < l->hiwater && i < HP_LEDGER_SLOTS; i++) {
			struct hp_lslot *sl = &l->slot[i];
			uint32_t stt = HP_LS_ST(sl->state);
			if ((stt == HP_LS_LIVE || stt == HP_LS_DEAD ||
			     stt == HP_LS_SUM) &&
			    sl->job_pid > 0 &&
			    (kill(sl->job_pid, 0) == 0 || errno == EPERM))
				who = sl->job_pid;
		}
	}
	free(l);
	close(fd);
	return who;
}

/* One directory of the user's ledgers: the ledgers (and temporaries) no
 * process maps removed; the counts added to *gone and *kept. */
static void clean_dir(const char *dir, int *gone, int *kept)
{
	int fd = hp_own_dir(dir);
	if (fd < 0)
		return; /* none, or not the user's: not ours to touch */
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "ledger-", 7) != 0 &&
		    strncmp(e->d_name, ".new-", 5) != 0)
			continue;
		char path[600];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode) || st.st_uid != geteuid())
			continue; /* not a ledger of the user's */
		int who = mapped_by(&st), job = 0;
		if (!who)
			who = opened_by(&st);
		if (!who)
			who = job = launcher_of(dirfd(d), e->d_name, &st);
		if (who != 0) {
			(*kept)++;
			if (job)
				printf("kept %s: launcher %d has yet to report "
				       "its job\n", status_esc(path), who);
			else if (who > 0)
				printf("kept %s: in use by pid %d\n",
				       status_esc(path), who);
			else
				printf("kept %s: /proc cannot be read\n",
				       status_esc(path));
		} else if (unlinkat(dirfd(d), e->d_name, 0) == 0) {
			(*gone)++;
			printf("removed %s: no process uses it\n",
			       status_esc(path));
		} else
			fprintf(stderr, "hostpin status: cannot remove %s: %s\n",
				status_esc(path), strerror(errno));
	}
	closedir(d);
	if (rmdir(dir) == 0)
		printf("removed %s/\n", status_esc(dir));
}

int status_clean(void)
{
	int gone = 0, kept = 0;
	char dir[300];
	unsigned uid = (unsigned)geteuid();
	for (int k = 0; k <= HP_LEDGER_DIR_ALT; k++) {
		if (k)
			snprintf(dir, sizeof(dir), "/dev/shm/hostpin-%u.d-%d",
				 uid, k);
		else
			snprintf(dir, sizeof(dir), "/dev/shm/hostpin-%u.d", uid);
		clean_dir(dir, &gone, &kept);
	}
	printf("hostpin status --clean: %d ledger%s removed, %d in use kept\n",
	       gone, gone == 1 ? "" : "s", kept);
	return 0;
}
