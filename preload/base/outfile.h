/* The one way to open a file hostpin writes for the user: the log
 * (HOSTPIN_LOG_FILE), the JSON report (HOSTPIN_STATS_FILE) and the
 * Prometheus output of `hostpin status --prometheus-file`.  hostpin often
 * runs as root (containers, /etc/ld.so.preload) with these files in a
 * directory every user can write (/tmp), so what another local user may
 * have put there first is never trusted:
 *   - the path is walked one component at a time (openat, O_NOFOLLOW):
 *     a symbolic link on the way is followed only if it belongs to the
 *     user or root; the last component is never a link;
 *   - a directory on the way that others can write without the sticky
 *     bit's protection (mode o+w, or g+w and owned by a third user) is
 *     refused: whoever can rename its entries picks where the file goes;
 *   - the file is created O_EXCL (mode 0600 unless the caller says), or an
 *     existing one is opened O_NONBLOCK (a FIFO never hangs the process)
 *     and used only if it is a regular file of the user's with one link
 *     (a hard link to another file is never truncated), or a character
 *     device (/dev/null: only root makes those); truncation comes after
 *     those checks; then O_NONBLOCK is cleared.
 * A refusal fills why[] with one sentence (no errno there).  Included by
 * the library (log.c) and the status program: raw system calls, no
 * allocation; hp_snprintf for the words. */
#ifndef HP_OUTFILE_H
#define HP_OUTFILE_H

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../hp.h"

/* Symbolic links followed in one path, as the kernel's MAXSYMLINKS. */
#define HP_OUT_MAXLINKS 40

/* What a file that is not a regular one is, for the refusal's message. */
static inline const char *hp_outfile_kind(mode_t m)
{
	return S_ISFIFO(m)   ? "a FIFO"
	       : S_ISSOCK(m) ? "a socket"
	       : S_ISBLK(m)  ? "a block device"
	       : S_ISDIR(m)  ? "a directory"
			     : "a special file";
}

/* Directory fd (reached as `shown`) may be walked through, or (last)
 * hold the file: 0, or EPERM with why[] filled. */
static inline int hp_out_dir_ok(int fd, const char *shown, int last,
				char *why, size_t wcap)
{
	struct stat st;
	if (fstat(fd, &st))
		return errno;
	uid_t me = geteuid();
	if (last && st.st_uid != me && st.st_uid != 0) {
		hp_snprintf(why, wcap, "directory %s belongs to another user "
			    "(uid %u), which hostpin does not write into",
			    shown[0] ? shown : ".", (unsigned)st.st_uid);
		return EPERM;
	}
	int others = (st.st_mode & S_IWOTH) ||
		     ((st.st_mode & S_IWGRP) && st.st_uid != me && st.st_uid != 0);
	if (others && !(st.st_mode & S_ISVTX)) {
		hp_snprintf(why, wcap, "directory %s (owner uid %u, mode %04o) "
			    "can be changed by other users and has no sticky "
			    "bit, which hostpin refuses", shown[0] ? shown : ".",
			    (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		return EPERM;
	}
	return 0;
}

/* Open path for writing (append, else truncated), close-on-exec, as the
 * top of this file says; mode for a file it creates.  The descriptor, or
 * -1 with errno (and why[] filled for a refusal; why[0] == 0 otherwise:
 * the reason is errno's). */
static inline int hp_out_open_in(const char *path, int append, mode_t mode,
				 char *why, size_t wcap, int *pdir);
static inline int hp_out_open(const char *path, int append, mode_t mode,
			      char *why, size_t wcap)
{
	return hp_out_open_in(path, append, mode, why, wcap, NULL);
}

/* The walk alone (the top of this file): the directory that would hold
 * path's last component, as an O_PATH descriptor, that name in leaf[lcap]
 * (never empty, "." or ".."); -1 with errno (why[] filled for a refusal)
 * otherwise.  What the ledger (HOSTPIN_LEDGER) is made and opened in. */
static inline int hp_out_walk(const char *path, char *why, size_t wcap,
			      char *leaf, size_t lcap)
{
	/* paths of up to 2047 bytes: the stack of whatever thread logs */
	char rest[2048], shown[2048], comp[256];
	size_t sl = 0;
	int links = 0, err = 0;
	why[0] = '\0';
	size_t pl = strlen(path);
	if (!pl || pl >= sizeof(rest))
		return errno = pl ? ENAMETOOLONG : ENOENT, -1;
	memcpy(rest, path, pl + 1);
	shown[0] = '\0';
	int dir = open(rest[0] == '/' ? "/" : ".",
		       O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -1;
	if (rest[0] == '/')
		shown[sl++] = '/', shown[sl] = '\0';
	const char *p = rest;
	for (;;) {
		while (*p == '/')
			p++;
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		const char *q = p + n;
		while (*q == '/')
			q++;
		if (n >= sizeof(comp)) {
			err = ENAMETOOLONG;
			break;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		if ((err = hp_out_dir_ok(dir, shown, !*q, why, wcap)))
			break;
		if (!*q) { /* the last component: the file */
			if (!n || !strcmp(comp, ".") || !strcmp(comp, "..")) {
				err = EISDIR;
				break;
			}
			if (n >= lcap) {
				err = ENAMETOOLONG;
				break;
			}
			memcpy(leaf, comp, n + 1);
			return dir;
		}
		if (!n || !strcmp(comp, ".")) {
			p = q;
			continue;
		}
		int fd = openat(dir, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		if (fd < 0 || fstat(fd, &st)) {
			err = errno;
			if (fd >= 0)
				close(fd);
			break;
		}
		if (S_ISLNK(st.st_mode)) {
			char tgt[2048];
			ssize_t tl;
			if (st.st_uid != geteuid() && st.st_uid != 0) {
				hp_snprintf(why, wcap, "%s%s is a symbolic link of "
					    "another user (uid %u), which hostpin "
					    "does not follow", shown, comp,
					    (unsigned)st.st_uid);
				err = EPERM;
			} else if (++links > HP_OUT_MAXLINKS)
				err = ELOOP;
			else if ((tl = readlinkat(fd, "", tgt, sizeof(tgt))) <= 0)
				err = tl < 0 ? errno : ENOENT;
			else if ((size_t)tl + 1 + strlen(q) + 1 > sizeof(rest))
				err = ENAMETOOLONG;
			close(fd);
			if (err)
				break;
			/* the link's text, then what followed it */
			size_t ql = strlen(q);
			memmove(rest + tl + 1, q, ql + 1);
			memcpy(rest, tgt, (size_t)tl);
			rest[tl] = '/';
			p = rest;
			if (rest[0] == '/') {
				close(dir);
				if ((dir = open("/", O_PATH | O_DIRECTORY |
							 O_CLOEXEC)) < 0)
					return -1;
				sl = 0;
				shown[sl++] = '/', shown[sl] = '\0';
			}
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			close(fd);
			err = ENOTDIR;
			break;
		}
		close(dir);
		dir = fd;
		if (sl + n + 2 < sizeof(shown)) {
			memcpy(shown + sl, comp, n);
			sl += n;
			shown[sl++] = '/', shown[sl] = '\0';
		}
		p = q;
	}
	close(dir);
	errno = err ? err : EIO;
	return -1;
}

/* hp_out_open, and (pdir not NULL) the directory that holds the file, in
 * *pdir (an O_PATH descriptor: renameat there renames within the very
 * directory the checks were made in). */
static inline int hp_out_open_in(const char *path, int append, mode_t mode,
				 char *why, size_t wcap, int *pdir)
{
	char comp[256];
	int err = 0;
	int dir = hp_out_walk(path, why, wcap, comp, sizeof(comp));
	if (dir < 0)
		return -1;
	do {
		int fl = O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
			 O_CLOEXEC | (append ? O_APPEND : 0);
		int fd = openat(dir, comp, fl | O_CREAT | O_EXCL, mode);
		int made = fd >= 0;
		if (fd < 0 && errno == EEXIST)
			fd = openat(dir, comp, fl);
		struct stat st;
		if (fd < 0) {
			err = errno;
			/* a FIFO without a reader, a socket */
			if (err == ENXIO &&
			    fstatat(dir, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    !S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
				hp_snprintf(why, wcap, "it is %s, not a regular "
					    "file, which hostpin refuses",
					    hp_outfile_kind(st.st_mode));
				err = EPERM;
			}
			break;
		}
		if (fstat(fd, &st))
			err = errno;
		else if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
			hp_snprintf(why, wcap, "it is %s, not a regular file, "
				    "which hostpin refuses",
				    hp_outfile_kind(st.st_mode));
			err = EPERM;
		} else if (S_ISREG(st.st_mode) && st.st_uid != geteuid()) {
			hp_snprintf(why, wcap, "it belongs to another user "
				    "(uid %u), which hostpin never writes "
				    "into", (unsigned)st.st_uid);
			err = EPERM;
		} else if (S_ISREG(st.st_mode) && st.st_nlink != 1) {
			hp_snprintf(why, wcap, "it has %u hard links, which "
				    "hostpin refuses (it could be another "
				    "file's)", (unsigned)st.st_nlink);
			err = EPERM;
		} else if (S_ISREG(st.st_mode) && !append && !made &&
			   ftruncate(fd, 0))
			err = errno;
		else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK))
			err = errno;
		if (err) {
			close(fd);
			break;
		}
		if (pdir)
			*pdir = dir;
		else
			close(dir);
		return fd;
	} while (0);
	close(dir);
	errno = err ? err : EIO;
	return -1;
}

#endif
