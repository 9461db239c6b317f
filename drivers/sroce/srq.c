// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce shared receive queues (IBA 10.2.9): one receive queue that many
 * QPs consume from.  ib_core refuses to destroy an SRQ that QPs use.
 */
#include "sroce.h"

static int sroce_srq_check(const struct ib_srq_attr *attr)
{
	if (attr->max_wr < 1 || attr->max_wr > SROCE_MAX_SRQ_WR ||
	    attr->max_sge > SROCE_MAX_SGE)
		return -EINVAL;
	return 0;
}

int sroce_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibsrq->device);
	struct sroce_srq *srq = to_ssrq(ibsrq);
	struct ib_srq_attr *attr = &init->attr;
	struct sroce_create_srq_resp resp = {};
	u32 sge, stride, map, size;
	int err;

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	err = sroce_srq_check(attr);
	if (err)
		return err;
	err = sroce_map_cmd(udata, &map);
	if (err)
		return err;
	if (!sroce_charge(&sdev->nr_srq, SROCE_MAX_SRQ))
		return -ENOMEM;
	sge = max_t(u32, attr->max_sge, 1);
	stride = sizeof(struct sroce_recv_wqe) + sge * sizeof(struct ib_sge);
	/* A power of two, as a QP's queues (sroce_queue_slot()). */
	size = roundup_pow_of_two(attr->max_wr);
	err = sroce_queue_init(&srq->rq, size, stride, sge);
	if (err)
		goto err_count;
	/*
	 * ibv_create_srq(3) calls srq_limit irrelevant at create, and
	 * mlx5 ignores it: a value it could not arm is not an error.
	 * One it can is armed, as rdma_rxe does.
	 */
	srq->limit = attr->srq_limit <= size ? attr->srq_limit : 0;
	attr->srq_limit = srq->limit;
	attr->max_wr = size;
	attr->max_sge = sge;
	if (map & SROCE_MAPPED) {
		err = sroce_uring_init(&srq->rq, udata, 0, false,
				       &resp.mmap_offset);
		if (err)
			goto err_queue;
		resp.flags = SROCE_MAPPED;
		resp.stride = srq->rq.ustride;
	}

	if (udata) {
		resp.entries = size;
		err = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
		if (err)
			goto err_queue;
	}
	sroce_live_inc(SROCE_OBJ_SRQ);
	return 0;

err_queue:
	sroce_queue_free(&srq->rq);
err_count:
	sroce_uncharge(&sdev->nr_srq);
	return err;
}

int sroce_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);
	int err = sroce_udata_none(udata);

	if (err)
		return err;
	/* No resizing (IB_DEVICE_SRQ_RESIZE is not advertised). */
	if (mask & IB_SRQ_MAX_WR)
		return -EOPNOTSUPP;
	if (mask & IB_SRQ_LIMIT) {
		if (attr->srq_limit > srq->rq.size)
			return -EINVAL;
		spin_lock_irq(&srq->rq.lock);
		srq->limit = attr->srq_limit;
		spin_unlock_irq(&srq->rq.lock);
	}
	return 0;
}

int sroce_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);

	attr->max_wr = srq->rq.size;
	attr->max_sge = srq->rq.max_sge;
	attr->srq_limit = srq->limit;
	return 0;
}

int sroce_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibsrq->device);
	struct sroce_srq *srq = to_ssrq(ibsrq);

	sroce_queue_free(&srq->rq);
	sroce_uncharge(&sdev->nr_srq);
	sroce_live_dec(SROCE_OBJ_SRQ);
	return 0;
}

int sroce_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	return sroce_queue_post_recv(&to_ssrq(ibsrq)->rq, wr, bad_wr);
}
