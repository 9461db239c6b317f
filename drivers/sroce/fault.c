// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce fault injection, on kernels with CONFIG_FAULT_INJECTION_DEBUG_FS
 * (the debug-kernel lane): two standard fault_attr knobs under
 * /sys/kernel/debug/sroce/ (probability, interval, times, space,
 * task-filter, verbose: Documentation/fault-injection/):
 *
 *   fail_create  where object creation allocates or publishes: the SQ, RQ
 *                and SRQ rings, the CQ ring, MRs, the QP/MR index; every
 *                create path's unwinding runs when they fail
 *   fail_packet  packet allocation on the data path: the transport must
 *                recover as from a loss
 *
 * Not fail_function: on 6.1 its kprobe handler draws a random number in
 * int3 context, which lockdep reports as an inconsistent crng lock state.
 */
#include <linux/fault-inject.h>

#include "sroce.h"

static DECLARE_FAULT_ATTR(sroce_fail_create);
static DECLARE_FAULT_ATTR(sroce_fail_packet);

/**
 * sroce_fail - should this allocation fail on purpose?
 * @f: which knob
 *
 * Return: true when the knob says so.
 */
bool sroce_fail(enum sroce_fault f)
{
	return should_fail(f == SROCE_FAULT_CREATE ? &sroce_fail_create :
			   &sroce_fail_packet, 1);
}

void sroce_fault_init(struct dentry *dir)
{
	/* debugfs: failures only cost the knobs, never the module */
	fault_create_debugfs_attr("fail_create", dir, &sroce_fail_create);
	fault_create_debugfs_attr("fail_packet", dir, &sroce_fail_packet);
}
