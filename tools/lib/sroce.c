// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libsroce-rdmav34.so: the libibverbs provider of sroce devices.
 *
 * libibverbs loads it through /etc/libibverbs.d/sroce.driver and matches
 * devices by the kernel's driver id (SROCE_DRIVER_ID), never by name.
 *
 * This first version runs every verb through the kernel's uverbs commands:
 * the uABI (include/uapi/rdma/sroce-abi.h) already describes mapped queues,
 * and the kernel says per object whether it mapped one (SROCE_MAPPED); no
 * current kernel does, so posting and polling are system calls for now.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/sroce-abi.h>

#include "verbs_provider.h"

struct sroce_device {
	struct verbs_device vdev;
};

struct sroce_context {
	struct verbs_context vctx;
};

struct sroce_cq {
	struct verbs_cq vcq;
	uint32_t flags;			/* enum sroce_queue_flags */
};

struct sroce_qp {
	struct verbs_qp vqp;
	uint32_t flags;
};

static inline struct sroce_context *to_sctx(struct ibv_context *ibctx)
{
	return (struct sroce_context *)((char *)ibctx -
		offsetof(struct sroce_context, vctx.context));
}

/* Responses: the core response, then ours. */
struct sroce_cq_resp {
	struct ib_uverbs_create_cq_resp core;
	struct sroce_create_cq_resp drv;
};

struct sroce_qp_resp {
	struct ib_uverbs_create_qp_resp core;
	struct sroce_create_qp_resp drv;
};

struct sroce_srq_resp {
	struct ib_uverbs_create_srq_resp core;
	struct sroce_create_srq_resp drv;
};

static int sroce_query_device_ex(struct ibv_context *ctx,
				 const struct ibv_query_device_ex_input *input,
				 struct ibv_device_attr_ex *attr,
				 size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);

	return ibv_cmd_query_device_any(ctx, input, attr, attr_size, &resp,
					&resp_size);
}

static int sroce_query_port(struct ibv_context *ctx, uint8_t port,
			    struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(ctx, port, attr, &cmd, sizeof(cmd));
}

static struct ibv_pd *sroce_alloc_pd(struct ibv_context *ctx)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_alloc_pd cmd;
	struct ibv_pd *pd;
	int err;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	err = ibv_cmd_alloc_pd(ctx, pd, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (err) {
		free(pd);
		errno = err;
		return NULL;
	}
	return pd;
}

static int sroce_dealloc_pd(struct ibv_pd *pd)
{
	int err = ibv_cmd_dealloc_pd(pd);

	if (!err)
		free(pd);
	return err;
}

static struct ibv_mr *sroce_reg_mr(struct ibv_pd *pd, void *addr,
				   size_t length, uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct verbs_mr *vmr;
	int err;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	err = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		free(vmr);
		errno = err;
		return NULL;
	}
	return &vmr->ibv_mr;
}

static int sroce_dereg_mr(struct verbs_mr *vmr)
{
	int err = ibv_cmd_dereg_mr(vmr);

	if (!err)
		free(vmr);
	return err;
}

static struct ibv_cq *sroce_create_cq(struct ibv_context *ctx, int cqe,
				      struct ibv_comp_channel *channel,
				      int comp_vector)
{
	struct sroce_cq_resp resp = {};
	struct ibv_create_cq cmd;
	struct sroce_cq *cq;
	int err;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	err = ibv_cmd_create_cq(ctx, cqe, channel, comp_vector, &cq->vcq.cq,
				&cmd, sizeof(cmd), &resp.core, sizeof(resp));
	if (err) {
		free(cq);
		errno = err;
		return NULL;
	}
	cq->flags = resp.drv.flags;
	return &cq->vcq.cq;
}

static int sroce_resize_cq(struct ibv_cq *cq, int cqe)
{
	struct ib_uverbs_resize_cq_resp resp;
	struct ibv_resize_cq cmd;

	return ibv_cmd_resize_cq(cq, cqe, &cmd, sizeof(cmd), &resp,
				 sizeof(resp));
}

static int sroce_destroy_cq(struct ibv_cq *ibcq)
{
	int err = ibv_cmd_destroy_cq(ibcq);

	if (!err)
		free((struct sroce_cq *)ibcq);
	return err;
}

static struct ibv_qp *sroce_create_qp_ex(struct ibv_context *ctx,
					 struct ibv_qp_init_attr_ex *attr)
{
	struct sroce_qp_resp resp = {};
	struct ibv_create_qp cmd;
	struct sroce_qp *qp;
	int err;

	/* The ibv_wr_* API (IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) comes later. */
	if (attr->comp_mask & ~(IBV_QP_INIT_ATTR_PD)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	err = ibv_cmd_create_qp_ex(ctx, &qp->vqp, attr, &cmd, sizeof(cmd),
				   &resp.core, sizeof(resp));
	if (err) {
		free(qp);
		errno = err;
		return NULL;
	}
	qp->flags = resp.drv.flags;
	return &qp->vqp.qp;
}

static struct ibv_qp *sroce_create_qp(struct ibv_pd *pd,
				      struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex = {};
	struct ibv_qp *qp;

	memcpy(&ex, attr, sizeof(*attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	qp = sroce_create_qp_ex(pd->context, &ex);
	if (qp)
		memcpy(attr, &ex, sizeof(*attr));	/* the caps granted */
	return qp;
}

static int sroce_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			  int mask, struct ibv_qp_init_attr *init)
{
	struct ibv_query_qp cmd;

	return ibv_cmd_query_qp(qp, attr, mask, init, &cmd, sizeof(cmd));
}

static int sroce_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			   int mask)
{
	struct ibv_modify_qp cmd = {};

	return ibv_cmd_modify_qp(qp, attr, mask, &cmd, sizeof(cmd));
}

static int sroce_destroy_qp(struct ibv_qp *ibqp)
{
	int err = ibv_cmd_destroy_qp(ibqp);

	if (!err)
		free((struct sroce_qp *)ibqp);
	return err;
}

static struct ibv_srq *sroce_create_srq(struct ibv_pd *pd,
					struct ibv_srq_init_attr *attr)
{
	struct sroce_srq_resp resp = {};
	struct ibv_create_srq cmd;
	struct ibv_srq *srq;
	int err;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	err = ibv_cmd_create_srq(pd, srq, attr, &cmd, sizeof(cmd), &resp.core,
				 sizeof(resp));
	if (err) {
		free(srq);
		errno = err;
		return NULL;
	}
	return srq;
}

static int sroce_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			    int mask)
{
	struct ibv_modify_srq cmd;

	return ibv_cmd_modify_srq(srq, attr, mask, &cmd, sizeof(cmd));
}

static int sroce_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd;

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

static int sroce_destroy_srq(struct ibv_srq *srq)
{
	int err = ibv_cmd_destroy_srq(srq);

	if (!err)
		free(srq);
	return err;
}

static struct ibv_ah *sroce_create_ah(struct ibv_pd *pd,
				      struct ibv_ah_attr *attr)
{
	struct ib_uverbs_create_ah_resp resp;
	struct ibv_ah *ah;
	int err;

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;
	/* The kernel resolves the destination MAC (ib_resolve_eth_dmac). */
	err = ibv_cmd_create_ah(pd, ah, attr, &resp, sizeof(resp));
	if (err) {
		free(ah);
		errno = err;
		return NULL;
	}
	return ah;
}

static int sroce_destroy_ah(struct ibv_ah *ah)
{
	int err = ibv_cmd_destroy_ah(ah);

	if (!err)
		free(ah);
	return err;
}

static void sroce_free_context(struct ibv_context *ibctx)
{
	struct sroce_context *ctx = to_sctx(ibctx);

	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

static const struct verbs_context_ops sroce_ctx_ops = {
	.alloc_pd = sroce_alloc_pd,
	.create_ah = sroce_create_ah,
	.create_cq = sroce_create_cq,
	.create_qp = sroce_create_qp,
	.create_qp_ex = sroce_create_qp_ex,
	.create_srq = sroce_create_srq,
	.dealloc_pd = sroce_dealloc_pd,
	.dereg_mr = sroce_dereg_mr,
	.destroy_ah = sroce_destroy_ah,
	.destroy_cq = sroce_destroy_cq,
	.destroy_qp = sroce_destroy_qp,
	.destroy_srq = sroce_destroy_srq,
	.free_context = sroce_free_context,
	.modify_qp = sroce_modify_qp,
	.modify_srq = sroce_modify_srq,
	.poll_cq = ibv_cmd_poll_cq,
	.post_recv = ibv_cmd_post_recv,
	.post_send = ibv_cmd_post_send,
	.post_srq_recv = ibv_cmd_post_srq_recv,
	.query_device_ex = sroce_query_device_ex,
	.query_port = sroce_query_port,
	.query_qp = sroce_query_qp,
	.query_srq = sroce_query_srq,
	.reg_mr = sroce_reg_mr,
	.req_notify_cq = ibv_cmd_req_notify_cq,
	.resize_cq = sroce_resize_cq,
};

static struct verbs_context *sroce_alloc_context(struct ibv_device *ibdev,
						 int cmd_fd,
						 void *private_data)
{
	struct ib_uverbs_get_context_resp resp;
	struct ibv_get_context cmd;
	struct sroce_context *ctx;

	ctx = _verbs_init_and_alloc_context(ibdev, cmd_fd, sizeof(*ctx),
				(struct verbs_context *)offsetof(struct sroce_context, vctx),
				SROCE_DRIVER_ID);
	if (!ctx)
		return NULL;
	if (ibv_cmd_get_context(&ctx->vctx, &cmd, sizeof(cmd), &resp,
				sizeof(resp))) {
		verbs_uninit_context(&ctx->vctx);
		free(ctx);
		return NULL;
	}
	verbs_set_ops(&ctx->vctx, &sroce_ctx_ops);
	return &ctx->vctx;
}

static struct verbs_device *sroce_alloc_device(struct verbs_sysfs_dev *sdev)
{
	struct sroce_device *dev = calloc(1, sizeof(*dev));

	return dev ? &dev->vdev : NULL;
}

static void sroce_uninit_device(struct verbs_device *vdev)
{
	free((struct sroce_device *)vdev);
}

static const struct verbs_match_ent sroce_match_table[] = {
	{ .u.driver_id = SROCE_DRIVER_ID, .kind = VERBS_MATCH_DRIVER_ID },
	{},
};

static const struct verbs_device_ops sroce_dev_ops = {
	.name = "sroce",
	.match_min_abi_version = SROCE_ABI_VERSION,
	.match_max_abi_version = SROCE_ABI_VERSION,
	.match_table = sroce_match_table,
	.alloc_device = sroce_alloc_device,
	.uninit_device = sroce_uninit_device,
	.alloc_context = sroce_alloc_context,
};

static void __attribute__((constructor)) sroce_register(void)
{
	verbs_register_driver_34(&sroce_dev_ops);
}
