/* hostpin status --clean: remove this user's ledgers that no process uses
 * (they outlive every hostpin process, and an uninstall: 424 KiB in
 * /dev/shm/hostpin-UID.d/ until a reboot), then their directory if empty.
 * A ledger is in use while a process maps it (every process that attached
 * to it does, until it exits: ledger.h) or holds it open, or while a
 * launcher whose job has slots in it runs (its --stats report is printed
 * after the job's last process is gone).  A ledger's name is taken away
 * before its last check, so that no process attaches to a ledger being
 * removed (take_away).  make uninstall and the package's removal run it
 * (Makefile, deb: prerm). */
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

/* Who uses the file st (name, in dir): the pid of a process that maps it
 * or holds it open, or of a launcher whose job has slots in it (then *job
 * is set); 0 if none, -1 if /proc cannot be read. */
static int user_of(int dir, const char *name, const struct stat *st, int *job)
{
	int who = mapped_by(st);
	*job = 0;
	if (!who)
		who = opened_by(st);
	if (!who)
		who = *job = launcher_of(dir, name, st);
	return who;
}

/* Remove name in dir, a ledger no process used when checked.  A process
 * that starts meanwhile opens the ledger by that name (ledger.c): removed
 * then, it would count in a file no other process sees while the next one
 * makes a new ledger.  So the name goes first, to one no process opens
 * (HIDDEN-PID-name, never replacing a file), and the file is checked
 * again: a process that opened it before the rename holds it open or maps
 * it now, and the ledger goes back under its name, kept; a later one finds
 * no file there.  (A process that found none meanwhile made a new ledger
 * there: replaced by the one put back, which that process joins, as it
 * joins any file at its ledger's path other than the one it mapped:
 * ledger_join.c.)  0 once removed, else the user as user_of gives it, or
 * -2 with errno if the file cannot be renamed or removed. */
#define HIDDEN ".clean-"
static int take_away(int dir, const char *name, int *job)
{
	char hid[300];
	struct stat st;
	snprintf(hid, sizeof(hid), HIDDEN "%d-%s", (int)getpid(), name);
	int r = renameat2(dir, name, dir, hid, RENAME_NOREPLACE);
	if (r && errno == EINVAL) /* a file system without the flag */
		r = renameat(dir, name, dir, hid);
	if (r)
		return -2;
	int who = fstatat(dir, hid, &st, AT_SYMLINK_NOFOLLOW) ? -2
			  : user_of(dir, hid, &st, job);
	int err = errno;
	if (who == 0 && unlinkat(dir, hid, 0) == 0)
		return 0;
	if (who == 0)
		who = -2, err = errno;
	if (renameat(dir, hid, dir, name))
		fprintf(stderr, "hostpin status: cannot rename %s back to %s: "
			"%s\n", status_esc(hid), status_esc(name),
			strerror(errno));
	errno = err;
	return who;
}

/* A name HIDDEN-PID-... whose clean (PID) is no longer running: left by
 * a clean ended between its rename and its removal, and no process opens
 * it by that name any more (another clean's, still running, is its own). */
static int left_over(const char *name)
{
	int pid = atoi(name + strlen(HIDDEN));
	return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH;
}

/* One file of a directory of the user's ledgers (open on dir): removed if
 * it is a ledger (or a temporary) no process uses; the count added to
 * *gone or *kept. */
static void clean_one(int dir, const char *dname, const char *name,
		      int *gone, int *kept)
{
	int hidden = strncmp(name, HIDDEN, strlen(HIDDEN)) == 0;
	if (hidden ? !left_over(name)
		   : strncmp(name, "ledger-", 7) != 0 &&
			 strncmp(name, ".new-", 5) != 0)
		return;
	char path[600];
	snprintf(path, sizeof(path), "%s/%s", dname, name);
	struct stat st;
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) ||
	    !S_ISREG(st.st_mode) || st.st_uid != geteuid())
		return; /* not a ledger of the user's */
	int job, who = user_of(dir, name, &st, &job);
	if (!who && hidden) /* a name no process opens: no rename first */
		who = unlinkat(dir, name, 0) ? -2 : 0;
	else if (!who)
		who = take_away(dir, name, &job);
	if (who == 0) {
		(*gone)++;
		printf("removed %s: no process uses it\n", status_esc(path));
	} else if (who == -2) {
		fprintf(stderr, "hostpin status: cannot remove %s: %s\n",
			status_esc(path), strerror(errno));
	} else {
		(*kept)++;
		if (job)
			printf("kept %s: launcher %d has yet to report its "
			       "job\n", status_esc(path), who);
		else if (who > 0)
			printf("kept %s: in use by pid %d\n", status_esc(path),
			       who);
		else
			printf("kept %s: /proc cannot be read\n",
			       status_esc(path));
	}
}

/* One directory of the user's ledgers: the ledgers (and temporaries) no
 * process uses removed; the counts added to *gone and *kept. */
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
	/* the names first: a ledger renamed away and back (take_away) may
	 * come again in a listing read meanwhile */
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' && (!e->d_name[1] ||
		    (e->d_name[1] == '.' && !e->d_name[2])))
			continue;
		if (n == cap) {
			char **m = realloc(names, (cap = cap * 2 + 16) *
						      sizeof(*names));
			if (!m)
				break;
			names = m;
		}
		if (!(names[n] = strdup(e->d_name)))
			break;
		n++;
	}
	for (size_t i = 0; i < n; i++) {
		clean_one(dirfd(d), dir, names[i], gone, kept);
		free(names[i]);
	}
	free(names);
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
