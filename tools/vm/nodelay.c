// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nodelay.so - LD_PRELOAD for QEMU: TCP_NODELAY on its TCP sockets.
 *
 * Two VMs share a link through "-netdev socket,listen=/connect=": a TCP
 * stream on the host's loopback, one write per Ethernet frame.  QEMU does
 * not turn Nagle's algorithm off on it, so a frame written while another
 * is unacknowledged waits for the peer's ACK, which the host delays up to
 * 40 ms when the peer has nothing to send back: a burst of frames from
 * one VM arrived with its first frame, and the rest only when the other VM
 * next sent something.  A wire does not hold frames; this makes the
 * stream send each frame as it is written.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

/* Best effort, and errno as the caller left it (a Unix socket refuses). */
static void nodelay(int fd)
{
	int on = 1, type = 0, err = errno;
	socklen_t len = sizeof(type);

	if (fd >= 0 && !getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) &&
	    type == SOCK_STREAM)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
	errno = err;
}

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	static int (*real)(int, const struct sockaddr *, socklen_t);

	if (!real)
		real = dlsym(RTLD_NEXT, "connect");
	if (addr && (addr->sa_family == AF_INET || addr->sa_family == AF_INET6))
		nodelay(fd);
	return real(fd, addr, len);
}

int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	static int (*real)(int, struct sockaddr *, socklen_t *);
	int s;

	if (!real)
		real = dlsym(RTLD_NEXT, "accept");
	s = real(fd, addr, len);
	nodelay(s);
	return s;
}

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	static int (*real)(int, struct sockaddr *, socklen_t *, int);
	int s;

	if (!real)
		real = dlsym(RTLD_NEXT, "accept4");
	s = real(fd, addr, len, flags);
	nodelay(s);
	return s;
}
