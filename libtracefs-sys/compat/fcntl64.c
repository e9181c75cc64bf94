/*
 * fcntl64 for glibc before 2.28.
 *
 * The pinned libtracefs archive was compiled against glibc 2.36's headers, which call
 * fcntl through the symbol fcntl64 (added in glibc 2.28). On 64-bit Linux both names are
 * the same system call with the same argument, so this definition lets the archive link
 * against an older glibc (RHEL 7, CentOS 7-based XenServer dom0: 2.17). Linked into glk
 * only with the static libtracefs; the executable's own definition is used by the archive,
 * glibc keeps its own.
 */
#include <fcntl.h>
#include <stdarg.h>

int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	/* Every fcntl command takes at most one argument, an int or a pointer: read as a
	 * pointer-sized value, as glibc's own fcntl does. */
	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl(fd, cmd, arg);
}
