// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce_cm_test - an in-kernel rdma_cm server and client, the way kernel
 * ULPs (NVMe-oF, iSER, RDS) connect: rdma_cm over ib_cm MADs on QP1, RC
 * QPs made by rdma_create_qp, sends echoed by the server.
 *
 * Driven through /sys/kernel/debug/sroce_cm_test/ctl; a write is one
 * command and fails with the command's error, a read returns the log:
 *
 *   listen ADDR PORT         start the server (echoes every message)
 *   connect ADDR PORT N M    N times: connect, M verified echoes, disconnect
 *   reject ADDR PORT         connect; must be rejected as "no QP available"
 *   hog                      fill the listener's device with QPs (so the
 *                            server cannot create any), "unhog" frees them
 *   stop                     disconnect and free everything of the server
 *
 * Nothing here knows about sroce: it also runs on rdma_rxe.
 */
#include <linux/debugfs.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#define CMT_LOG_SIZE	(32 * 1024)
#define CMT_MSG		256		/* bytes per message */
#define CMT_BUFS	4		/* server receive buffers per connection */
#define CMT_TIMEOUT	(30 * HZ)

/* One end of a connection: its verbs objects and message buffers. */
struct cmt_conn {
	struct rdma_cm_id *id;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct cmt_buf {
		struct ib_cqe cqe;
		struct cmt_conn *conn;
		u8 *data;
		u64 dma;
	} buf[CMT_BUFS];
	/* client */
	wait_queue_head_t wq;
	unsigned long events;		/* BIT(rdma_cm_event_type) seen */
	int status;			/* of the last event */
	int recv_status, send_status;	/* -1 while pending, else wc status */
	u32 recv_len;
	/* server */
	struct list_head list;		/* cmt_server.conns */
	struct work_struct release;
	atomic_t doomed;		/* release queued or under way */
};

static struct {
	struct mutex lock;		/* one command at a time */
	char *log;
	size_t len;
	struct rdma_cm_id *listen;
	spinlock_t conns_lock;		/* protects conns */
	struct list_head conns;
	struct workqueue_struct *wq;
	atomic_t accepted, rejected, echoed;
	/* hog */
	struct ib_pd *hog_pd;
	struct ib_cq *hog_cq;
	struct ib_qp **hog_qp;
	int nr_hog;
} cmt;

static __printf(1, 2) void cmt_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cmt.len += vscnprintf(cmt.log + cmt.len, CMT_LOG_SIZE - cmt.len, fmt,
			      ap);
	va_end(ap);
}

/* Verbs objects of one connection on @id's device, QP included. */
static int cmt_conn_objects(struct cmt_conn *c, struct rdma_cm_id *id,
			    enum ib_poll_context poll)
{
	struct ib_qp_init_attr attr = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = CMT_BUFS, .max_recv_wr = CMT_BUFS,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ib_device *dev = id->device;
	int i, err;

	c->pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(c->pd)) {
		err = PTR_ERR(c->pd);
		goto err;
	}
	c->cq = ib_alloc_cq(dev, c, 2 * CMT_BUFS, 0, poll);
	if (IS_ERR(c->cq)) {
		err = PTR_ERR(c->cq);
		goto err_pd;
	}
	for (i = 0; i < CMT_BUFS; i++) {
		c->buf[i].conn = c;
		c->buf[i].data = kzalloc(CMT_MSG, GFP_KERNEL);
		if (!c->buf[i].data) {
			err = -ENOMEM;
			goto err_bufs;
		}
		c->buf[i].dma = ib_dma_map_single(dev, c->buf[i].data, CMT_MSG,
						  DMA_BIDIRECTIONAL);
		if (ib_dma_mapping_error(dev, c->buf[i].dma)) {
			kfree(c->buf[i].data);
			err = -ENOMEM;
			goto err_bufs;
		}
	}
	attr.send_cq = c->cq;
	attr.recv_cq = c->cq;
	attr.qp_context = c;
	err = rdma_create_qp(id, c->pd, &attr);
	if (err)
		goto err_bufs;
	return 0;

err_bufs:
	while (i--) {
		ib_dma_unmap_single(dev, c->buf[i].dma, CMT_MSG,
				    DMA_BIDIRECTIONAL);
		kfree(c->buf[i].data);
	}
	ib_free_cq(c->cq);
err_pd:
	ib_dealloc_pd(c->pd);
err:
	c->pd = NULL;
	return err;
}

static void cmt_conn_free_objects(struct cmt_conn *c)
{
	struct ib_device *dev = c->id->device;
	int i;

	if (!c->pd)
		return;
	ib_drain_qp(c->id->qp);
	rdma_destroy_qp(c->id);
	for (i = 0; i < CMT_BUFS; i++) {
		ib_dma_unmap_single(dev, c->buf[i].dma, CMT_MSG,
				    DMA_BIDIRECTIONAL);
		kfree(c->buf[i].data);
	}
	ib_free_cq(c->cq);
	ib_dealloc_pd(c->pd);
	c->pd = NULL;
}

static int cmt_post_recv(struct cmt_conn *c, struct cmt_buf *b)
{
	struct ib_sge sge = {
		.addr = b->dma, .length = CMT_MSG, .lkey = c->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = { .wr_cqe = &b->cqe, .sg_list = &sge,
				 .num_sge = 1 };

	return ib_post_recv(c->id->qp, &wr, NULL);
}

static int cmt_post_send(struct cmt_conn *c, struct cmt_buf *b, u32 len)
{
	struct ib_sge sge = {
		.addr = b->dma, .length = len, .lkey = c->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = { .wr_cqe = &b->cqe, .sg_list = &sge,
				 .num_sge = 1, .opcode = IB_WR_SEND,
				 .send_flags = IB_SEND_SIGNALED };

	return ib_post_send(c->id->qp, &wr, NULL);
}

/* --- server ------------------------------------------------------------ */

static void cmt_srv_send_done(struct ib_cq *cq, struct ib_wc *wc);

/* A message arrived: echo it from the same buffer. */
static void cmt_srv_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct cmt_buf *b = container_of(wc->wr_cqe, struct cmt_buf, cqe);

	if (wc->status != IB_WC_SUCCESS)
		return;		/* flushed: the connection is going away */
	b->cqe.done = cmt_srv_send_done;
	if (cmt_post_send(b->conn, b, wc->byte_len))
		pr_warn("sroce_cm_test: echo not posted\n");
}

/* The echo went out: the buffer takes the next message. */
static void cmt_srv_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct cmt_buf *b = container_of(wc->wr_cqe, struct cmt_buf, cqe);

	if (wc->status != IB_WC_SUCCESS)
		return;
	atomic_inc(&cmt.echoed);
	b->cqe.done = cmt_srv_recv_done;
	if (cmt_post_recv(b->conn, b))
		pr_warn("sroce_cm_test: receive not reposted\n");
}

/* Free a connection; whoever set @doomed first calls this, once. */
static void cmt_srv_release(struct cmt_conn *c)
{
	spin_lock(&cmt.conns_lock);
	list_del(&c->list);
	spin_unlock(&cmt.conns_lock);
	cmt_conn_free_objects(c);
	rdma_destroy_id(c->id);
	kfree(c);
}

static void cmt_srv_release_work(struct work_struct *w)
{
	cmt_srv_release(container_of(w, struct cmt_conn, release));
}

/* CONNECT_REQUEST on the listener: a new connection, or a reject. */
static int cmt_srv_connect(struct rdma_cm_id *id)
{
	struct rdma_conn_param param = {
		.responder_resources = 1, .initiator_depth = 1,
		.retry_count = 7, .rnr_retry_count = 7,
	};
	struct cmt_conn *c;
	int i, err;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		goto reject;
	c->id = id;
	INIT_WORK(&c->release, cmt_srv_release_work);
	err = cmt_conn_objects(c, id, IB_POLL_WORKQUEUE);
	if (err) {
		kfree(c);
		goto reject;
	}
	for (i = 0; i < CMT_BUFS; i++) {
		c->buf[i].cqe.done = cmt_srv_recv_done;
		err = cmt_post_recv(c, &c->buf[i]);
		if (err)
			goto err_free;
	}
	id->context = c;
	spin_lock(&cmt.conns_lock);
	list_add_tail(&c->list, &cmt.conns);
	spin_unlock(&cmt.conns_lock);
	err = rdma_accept(id, &param);
	if (err) {
		/* Reported as ESTABLISH error or never: free it ourselves. */
		spin_lock(&cmt.conns_lock);
		list_del(&c->list);
		spin_unlock(&cmt.conns_lock);
		goto err_free;
	}
	atomic_inc(&cmt.accepted);
	return 0;

err_free:
	cmt_conn_free_objects(c);
	kfree(c);
	id->context = NULL;
	return err;
reject:
	/* IBA 12.6.7.2, table 112: reason 1, no QP available. */
	atomic_inc(&cmt.rejected);
	rdma_reject(id, NULL, 0, IB_CM_REJ_NO_QP);
	return -ENOMEM;		/* non-zero: rdma_cm destroys @id */
}

static int cmt_srv_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct cmt_conn *c = id->context;

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return cmt_srv_connect(id);
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		/* Not here: rdma_destroy_id waits for this handler. */
		if (c && id != cmt.listen && !atomic_xchg(&c->doomed, 1))
			queue_work(cmt.wq, &c->release);
		return 0;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (!c || id == cmt.listen)
			return 0;
		/* The id is destroyed by rdma_cm when we return non-zero. */
		if (atomic_xchg(&c->doomed, 1))
			return 0;
		spin_lock(&cmt.conns_lock);
		list_del(&c->list);
		spin_unlock(&cmt.conns_lock);
		cmt_conn_free_objects(c);
		kfree(c);
		return 1;
	default:
		return 0;
	}
}

static int cmt_listen(struct sockaddr *addr)
{
	struct rdma_cm_id *id;
	int err;

	if (cmt.listen)
		return -EBUSY;
	id = rdma_create_id(&init_net, cmt_srv_handler, NULL, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	err = rdma_bind_addr(id, addr);
	if (!err)
		err = rdma_listen(id, 16);
	if (err) {
		rdma_destroy_id(id);
		return err;
	}
	cmt.listen = id;
	cmt_log("listening on %pISpc (%s)\n", addr,
		id->device ? dev_name(&id->device->dev) : "any device");
	return 0;
}

static void cmt_stop(void)
{
	struct cmt_conn *c;

	if (cmt.listen) {
		rdma_destroy_id(cmt.listen);	/* no new connections */
		cmt.listen = NULL;
	}
	for (;;) {
		spin_lock(&cmt.conns_lock);
		c = list_first_entry_or_null(&cmt.conns, struct cmt_conn,
					     list);
		spin_unlock(&cmt.conns_lock);
		if (!c)
			break;
		if (atomic_xchg(&c->doomed, 1)) {
			/* Its release work is queued: let it run. */
			flush_workqueue(cmt.wq);
			continue;
		}
		rdma_disconnect(c->id);
		cmt_srv_release(c);
	}
	flush_workqueue(cmt.wq);
	cmt_log("stopped: %d accepted, %d rejected, %d messages echoed\n",
		atomic_read(&cmt.accepted), atomic_read(&cmt.rejected),
		atomic_read(&cmt.echoed));
}

/* --- QP hog: a device with no QP left --------------------------------- */

static void cmt_unhog(void)
{
	while (cmt.nr_hog)
		ib_destroy_qp(cmt.hog_qp[--cmt.nr_hog]);
	kvfree(cmt.hog_qp);
	cmt.hog_qp = NULL;
	if (cmt.hog_cq)
		ib_free_cq(cmt.hog_cq);
	if (cmt.hog_pd)
		ib_dealloc_pd(cmt.hog_pd);
	cmt.hog_cq = NULL;
	cmt.hog_pd = NULL;
}

static int cmt_hog(void)
{
	struct ib_qp_init_attr attr = {
		.qp_type = IB_QPT_UD,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ib_device *dev = cmt.listen ? cmt.listen->device : NULL;
	struct ib_qp *qp;
	int max;

	if (!dev || cmt.hog_pd)
		return -EINVAL;
	max = dev->attrs.max_qp;
	cmt.hog_qp = kvcalloc(max, sizeof(*cmt.hog_qp), GFP_KERNEL);
	if (!cmt.hog_qp)
		return -ENOMEM;
	cmt.hog_pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(cmt.hog_pd)) {
		cmt.hog_pd = NULL;
		goto err;
	}
	cmt.hog_cq = ib_alloc_cq(dev, NULL, 1, 0, IB_POLL_WORKQUEUE);
	if (IS_ERR(cmt.hog_cq)) {
		cmt.hog_cq = NULL;
		goto err;
	}
	attr.send_cq = cmt.hog_cq;
	attr.recv_cq = cmt.hog_cq;
	for (;;) {
		qp = ib_create_qp(cmt.hog_pd, &attr);
		if (IS_ERR(qp))
			break;
		if (cmt.nr_hog == max) {	/* the device lied about max_qp */
			ib_destroy_qp(qp);
			goto err;
		}
		cmt.hog_qp[cmt.nr_hog++] = qp;
	}
	cmt_log("hog: %d QPs made on %s, then create_qp: %ld\n", cmt.nr_hog,
		dev_name(&dev->dev), PTR_ERR(qp));
	return 0;
err:
	cmt_unhog();
	return -EIO;
}

/* --- client ------------------------------------------------------------ */

static int cmt_cli_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct cmt_conn *c = id->context;

	c->status = ev->status;
	/* Pairs with the waiter's test_bit in cmt_wait_event. */
	set_bit(ev->event, &c->events);
	wake_up(&c->wq);
	return 0;
}

/* Wait for @want; any event in @fail ends the wait too.  Return: the event. */
static int cmt_wait_event(struct cmt_conn *c, int want, unsigned long fail)
{
	long left;

	left = wait_event_timeout(c->wq, test_bit(want, &c->events) ||
				  (c->events & fail), CMT_TIMEOUT);
	if (!left)
		return -ETIMEDOUT;
	if (test_bit(want, &c->events))
		return want;
	return __ffs(c->events & fail);
}

static void cmt_cli_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct cmt_buf *b = container_of(wc->wr_cqe, struct cmt_buf, cqe);
	struct cmt_conn *c = b->conn;

	if (b == &c->buf[0]) {
		c->recv_len = wc->byte_len;
		WRITE_ONCE(c->recv_status, wc->status);
	} else {
		WRITE_ONCE(c->send_status, wc->status);
	}
	wake_up(&c->wq);
}

#define CMT_FAIL_EVENTS	(BIT(RDMA_CM_EVENT_ADDR_ERROR) |		\
			 BIT(RDMA_CM_EVENT_ROUTE_ERROR) |		\
			 BIT(RDMA_CM_EVENT_CONNECT_ERROR) |		\
			 BIT(RDMA_CM_EVENT_UNREACHABLE) |		\
			 BIT(RDMA_CM_EVENT_REJECTED) |			\
			 BIT(RDMA_CM_EVENT_DISCONNECTED) |		\
			 BIT(RDMA_CM_EVENT_DEVICE_REMOVAL))

/* Resolve and connect; Return: 0, or the failing event (> 0) or errno. */
static int cmt_cli_connect(struct cmt_conn *c, struct sockaddr *dst)
{
	struct rdma_conn_param param = {
		.responder_resources = 1, .initiator_depth = 1,
		.retry_count = 7, .rnr_retry_count = 7,
	};
	int ev, err;

	err = rdma_resolve_addr(c->id, NULL, dst, 5000);
	if (err)
		return err;
	ev = cmt_wait_event(c, RDMA_CM_EVENT_ADDR_RESOLVED, CMT_FAIL_EVENTS);
	if (ev != RDMA_CM_EVENT_ADDR_RESOLVED)
		return ev;
	err = rdma_resolve_route(c->id, 5000);
	if (err)
		return err;
	ev = cmt_wait_event(c, RDMA_CM_EVENT_ROUTE_RESOLVED, CMT_FAIL_EVENTS);
	if (ev != RDMA_CM_EVENT_ROUTE_RESOLVED)
		return ev;
	err = cmt_conn_objects(c, c->id, IB_POLL_SOFTIRQ);
	if (err)
		return err;
	err = rdma_connect(c->id, &param);
	if (err)
		return err;
	ev = cmt_wait_event(c, RDMA_CM_EVENT_ESTABLISHED, CMT_FAIL_EVENTS);
	return ev == RDMA_CM_EVENT_ESTABLISHED ? 0 : ev;
}

/* One message out and its echo back, byte-checked. */
static int cmt_cli_echo(struct cmt_conn *c, u32 seq)
{
	struct cmt_buf *rb = &c->buf[0], *sb = &c->buf[1];
	u32 len = 1 + seq % CMT_MSG, i;
	int err;

	for (i = 0; i < len; i++)
		sb->data[i] = (u8)(seq * 7 + i);
	memset(rb->data, 0, CMT_MSG);
	c->recv_status = -1;
	c->send_status = -1;
	rb->cqe.done = cmt_cli_done;
	sb->cqe.done = cmt_cli_done;
	err = cmt_post_recv(c, rb);
	if (!err)
		err = cmt_post_send(c, sb, len);
	if (err)
		return err;
	if (!wait_event_timeout(c->wq, READ_ONCE(c->recv_status) >= 0 &&
				READ_ONCE(c->send_status) >= 0, CMT_TIMEOUT))
		return -ETIMEDOUT;
	if (c->recv_status != IB_WC_SUCCESS || c->send_status != IB_WC_SUCCESS)
		return -EIO;
	if (c->recv_len != len || memcmp(rb->data, sb->data, len))
		return -EBADMSG;
	return 0;
}

static struct cmt_conn *cmt_cli_alloc(void)
{
	struct cmt_conn *c = kzalloc(sizeof(*c), GFP_KERNEL);

	if (!c)
		return ERR_PTR(-ENOMEM);
	init_waitqueue_head(&c->wq);
	c->id = rdma_create_id(&init_net, cmt_cli_handler, c, RDMA_PS_TCP,
			       IB_QPT_RC);
	if (IS_ERR(c->id)) {
		int err = PTR_ERR(c->id);

		kfree(c);
		return ERR_PTR(err);
	}
	return c;
}

static void cmt_cli_free(struct cmt_conn *c)
{
	cmt_conn_free_objects(c);
	rdma_destroy_id(c->id);
	kfree(c);
}

static int cmt_connect(struct sockaddr *dst, int count, int msgs)
{
	struct cmt_conn *c;
	int i, m, err = 0;

	for (i = 0; i < count && !err; i++) {
		c = cmt_cli_alloc();
		if (IS_ERR(c))
			return PTR_ERR(c);
		err = cmt_cli_connect(c, dst);
		if (err) {
			cmt_log("connection %d: not established (%d, status %d)\n",
				i, err, c->status);
			err = -ECONNREFUSED;
		}
		for (m = 0; m < msgs && !err; m++) {
			err = cmt_cli_echo(c, i * msgs + m);
			if (err)
				cmt_log("connection %d: message %d: %d\n", i,
					m, err);
		}
		if (!err) {
			rdma_disconnect(c->id);
			if (cmt_wait_event(c, RDMA_CM_EVENT_DISCONNECTED, 0) !=
			    RDMA_CM_EVENT_DISCONNECTED) {
				cmt_log("connection %d: no DISCONNECTED\n", i);
				err = -ETIMEDOUT;
			}
		}
		cmt_cli_free(c);
	}
	if (!err)
		cmt_log("%d connections to %pISpc, %d echoes each: all verified\n",
			count, dst, msgs);
	return err;
}

static int cmt_reject(struct sockaddr *dst)
{
	struct cmt_conn *c = cmt_cli_alloc();
	int ev, status;

	if (IS_ERR(c))
		return PTR_ERR(c);
	ev = cmt_cli_connect(c, dst);
	cmt_log("connect to %pISpc: event %d (%s), status %d\n", dst, ev,
		ev > 0 ? rdma_event_msg(ev) : "-", c->status);
	if (ev == RDMA_CM_EVENT_REJECTED)
		cmt_log("rejected: %s\n",
			rdma_reject_msg(c->id, c->status));
	status = c->status;
	cmt_cli_free(c);
	return ev == RDMA_CM_EVENT_REJECTED && status == IB_CM_REJ_NO_QP ?
	       0 : -EPROTO;
}

/* --- control file ------------------------------------------------------ */

static int cmt_addr(const char *addr, const char *port,
		    struct sockaddr_storage *ss)
{
	return inet_pton_with_scope(&init_net, AF_UNSPEC, addr, port, ss);
}

static int cmt_command(char *cmd)
{
	char addr[64], port[8];
	struct sockaddr_storage ss;
	int count, msgs, err;

	if (sscanf(cmd, "listen %63s %7s", addr, port) == 2) {
		err = cmt_addr(addr, port, &ss);
		return err ?: cmt_listen((struct sockaddr *)&ss);
	}
	if (sscanf(cmd, "connect %63s %7s %d %d", addr, port, &count,
		   &msgs) == 4) {
		err = cmt_addr(addr, port, &ss);
		return err ?: cmt_connect((struct sockaddr *)&ss, count, msgs);
	}
	if (sscanf(cmd, "reject %63s %7s", addr, port) == 2) {
		err = cmt_addr(addr, port, &ss);
		return err ?: cmt_reject((struct sockaddr *)&ss);
	}
	if (sysfs_streq(cmd, "hog"))
		return cmt_hog();
	if (sysfs_streq(cmd, "unhog")) {
		cmt_unhog();
		return 0;
	}
	if (sysfs_streq(cmd, "stop")) {
		cmt_stop();
		return 0;
	}
	return -EINVAL;
}

static ssize_t cmt_write(struct file *f, const char __user *ubuf,
			 size_t count, loff_t *pos)
{
	char *cmd;
	int err;

	cmd = memdup_user_nul(ubuf, min_t(size_t, count, 127));
	if (IS_ERR(cmd))
		return PTR_ERR(cmd);
	mutex_lock(&cmt.lock);
	cmt_log("> %s%s", cmd, strchr(cmd, '\n') ? "" : "\n");
	err = cmt_command(cmd);
	if (err)
		cmt_log("error %d\n", err);
	mutex_unlock(&cmt.lock);
	kfree(cmd);
	return err ?: count;
}

static ssize_t cmt_read(struct file *f, char __user *ubuf, size_t count,
			loff_t *pos)
{
	ssize_t ret;

	mutex_lock(&cmt.lock);
	ret = simple_read_from_buffer(ubuf, count, pos, cmt.log, cmt.len);
	mutex_unlock(&cmt.lock);
	return ret;
}

static const struct file_operations cmt_fops = {
	.owner = THIS_MODULE,
	.read = cmt_read,
	.write = cmt_write,
	.llseek = default_llseek,
};

static struct dentry *cmt_dir;

static int __init cmt_init(void)
{
	mutex_init(&cmt.lock);
	spin_lock_init(&cmt.conns_lock);
	INIT_LIST_HEAD(&cmt.conns);
	cmt.log = kvzalloc(CMT_LOG_SIZE, GFP_KERNEL);
	if (!cmt.log)
		return -ENOMEM;
	cmt.wq = alloc_ordered_workqueue("sroce_cm_test", 0);
	if (!cmt.wq) {
		kvfree(cmt.log);
		return -ENOMEM;
	}
	cmt_dir = debugfs_create_dir("sroce_cm_test", NULL);
	debugfs_create_file("ctl", 0600, cmt_dir, NULL, &cmt_fops);
	return 0;
}

static void __exit cmt_exit(void)
{
	debugfs_remove_recursive(cmt_dir);
	mutex_lock(&cmt.lock);
	cmt_unhog();
	cmt_stop();
	mutex_unlock(&cmt.lock);
	destroy_workqueue(cmt.wq);
	kvfree(cmt.log);
}

module_init(cmt_init);
module_exit(cmt_exit);

MODULE_DESCRIPTION("sroce in-kernel rdma_cm test server and client");
MODULE_LICENSE("Dual BSD/GPL");
