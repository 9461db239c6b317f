// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce_orphan - a process whose device goes away under it.
 *
 * Builds a PD, an MR, a CQ with a completion channel, an SRQ and an RC QP
 * connected to itself, moves one message, leaves a receive posted and the
 * CQ armed, then prints "# ready" and waits for a line on stdin.  The test
 * script removes the device meanwhile (rdma link delete, netdev removal or
 * rmmod): ib_core disassociates the context, so the removal does not wait
 * for this process.  When the line comes, the program checks what a verbs
 * user is promised after that: IBV_EVENT_DEVICE_FATAL on the async fd,
 * commands fail with EIO, the mapped rings can still be touched, and every
 * destroy and the close return.  Run it with RDMAV_ALLOW_DISASSOC_DESTROY=1
 * to have the destroys succeed (the provider then frees its memory).
 *
 * Usage: sroce_orphan [DEVICE]   (default sroce0).  Prints TAP.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "common.h"

/* Poll @cq for up to 10 s until @n completions, all successful. */
static int poll_n(struct ibv_cq *cq, int n)
{
	struct ibv_wc wc;
	int i, got = 0;

	for (i = 0; i < 100000 && got < n; i++) {
		int r = ibv_poll_cq(cq, 1, &wc);

		if (r < 0 || (r == 1 && wc.status != IBV_WC_SUCCESS))
			return -1;
		got += r;
		if (!r)
			usleep(100);
	}
	return got == n ? 0 : -1;
}

/*
 * A destroy after disassociation fails with EIO unless the process set
 * RDMAV_ALLOW_DISASSOC_DESTROY, as the test script does: then libibverbs
 * reports success and the provider must free what it holds.
 */
static int gone(int err)
{
	return getenv("RDMAV_ALLOW_DISASSOC_DESTROY") ? !err : err == EIO;
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "sroce0";
	struct ibv_device **list, *dev = NULL;
	struct ibv_srq_init_attr si = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_qp_init_attr qi = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_async_event ev;
	struct ibv_comp_channel *ch;
	struct ibv_port_attr pattr;
	struct ibv_context *ctx;
	struct ibv_send_wr swr = {}, *bad_s;
	struct ibv_recv_wr rwr = {}, *bad_r;
	struct ibv_sge sge;
	struct ibv_srq *srq;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_wc wc;
	struct pollfd pfd;
	union ibv_gid gid;
	static char buf[8192];
	char line[64];
	int i, n, sgid, err, fatal = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			dev = list[i];
	tap(dev != NULL, "libibverbs lists %s", name);
	if (!dev)
		goto out;
	ctx = ibv_open_device(dev);
	tap(ctx != NULL, "ibv_open_device");
	if (!ctx)
		goto out;
	sgid = find_gid(ctx, &gid);
	pd = ibv_alloc_pd(ctx);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
			     IBV_ACCESS_REMOTE_WRITE) : NULL;
	ch = ibv_create_comp_channel(ctx);
	cq = ch ? ibv_create_cq(ctx, 16, NULL, ch, 0) : NULL;
	srq = pd ? ibv_create_srq(pd, &si) : NULL;
	qi.send_cq = cq;
	qi.recv_cq = cq;
	qp = cq ? ibv_create_qp(pd, &qi) : NULL;
	tap(sgid >= 0 && mr && cq && srq && qp,
	   "a GID, PD, MR, CQ with channel, SRQ and RC QP");
	if (sgid < 0 || !mr || !cq || !srq || !qp)
		goto out;
	tap(!to_rts(qp, sgid, &gid), "the QP is connected to itself");

	sge.addr = (uintptr_t)buf;
	sge.length = 64;
	sge.lkey = mr->lkey;
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	swr.sg_list = &sge;
	swr.num_sge = 1;
	swr.opcode = IBV_WR_SEND;
	swr.send_flags = IBV_SEND_SIGNALED;
	err = ibv_post_recv(qp, &rwr, &bad_r) ||
	      ibv_post_send(qp, &swr, &bad_s) || poll_n(cq, 2);
	tap(!err, "a SEND to itself completes");
	/* What the device finds in flight when it goes. */
	tap(!ibv_post_recv(qp, &rwr, &bad_r) && !ibv_post_srq_recv(srq, &rwr, &bad_r) &&
	   !ibv_req_notify_cq(cq, 0), "a receive posted and the CQ armed");

	printf("# ready\n");
	if (!fgets(line, sizeof(line), stdin))
		line[0] = 0;

	/* ib_core reports the removal on the async fd (IBA 11.6.2). */
	pfd.fd = ctx->async_fd;
	pfd.events = POLLIN;
	while (poll(&pfd, 1, 10000) == 1 && !ibv_get_async_event(ctx, &ev)) {
		if (ev.event_type == IBV_EVENT_DEVICE_FATAL)
			fatal = 1;
		ibv_ack_async_event(&ev);
		if (fatal)
			break;
	}
	tap(fatal, "IBV_EVENT_DEVICE_FATAL on the async fd");
	errno = 0;
	err = ibv_query_port(ctx, 1, &pattr);
	tap(err == EIO, "ibv_query_port fails with EIO (%d)", err);
	/* Neither must fault; what they return is the provider's choice. */
	ibv_post_send(qp, &swr, &bad_s);
	n = ibv_poll_cq(cq, 1, &wc);
	tap(n <= 1, "post and poll on the mapped rings return (poll %d)", n);
	err = ibv_destroy_qp(qp);
	tap(gone(err), "ibv_destroy_qp returns (%d)", err);
	err = ibv_destroy_srq(srq);
	tap(gone(err), "ibv_destroy_srq returns (%d)", err);
	err = ibv_destroy_cq(cq);
	tap(gone(err), "ibv_destroy_cq returns (%d)", err);
	err = ibv_destroy_comp_channel(ch);
	tap(gone(err), "ibv_destroy_comp_channel returns (%d)", err);
	err = ibv_dereg_mr(mr);
	tap(gone(err), "ibv_dereg_mr returns (%d)", err);
	err = ibv_dealloc_pd(pd);
	tap(gone(err), "ibv_dealloc_pd returns (%d)", err);
	tap(!ibv_close_device(ctx), "ibv_close_device");
out:
	if (list)
		ibv_free_device_list(list);
	return tap_end();
}
