// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce protection domains.  A PD only scopes MRs, QPs and AHs; ib_core
 * counts its users (pd->usecnt) and refuses to free a PD in use.
 */
#include "sroce.h"

int sroce_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibpd->device);
	int err = sroce_udata_none(udata);

	if (err)
		return err;
	if (!sroce_charge(&sdev->nr_pd, SROCE_MAX_PD))
		return -ENOMEM;
	sroce_live_inc(SROCE_OBJ_PD);
	return 0;
}

int sroce_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibpd->device);

	sroce_uncharge(&sdev->nr_pd);
	sroce_live_dec(SROCE_OBJ_PD);
	return 0;
}
