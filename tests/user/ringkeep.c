// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce_ringkeep - keep the rings of destroyed CQs mapped.
 *
 * A process may map a CQ's ring a second time (at the offset the provider
 * mapped it at, on the same uverbs file) and keep that mapping after it
 * destroyed the CQ: the pages then live on in its address space.  This
 * program does that ROUNDS times with CQs of ENTRIES, and prints "kept N"
 * after each round and "stopped: ..." when a create or a mapping fails.
 * Run in a memory cgroup, it shows whether such pages count against the
 * cgroup's limit (tests/vm/hostile.sh): they must, or any process could
 * take the host's memory with them.
 *
 * Usage: sroce_ringkeep DEVICE ROUNDS ENTRIES.  Exits 0 unless the device
 * cannot be opened.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <infiniband/verbs.h>

#define MAX_MAPS 4096

/* The uverbs mappings of this process: start, end and file offset. */
static int uverbs_maps(unsigned long *lo, unsigned long *hi,
		       unsigned long long *off, int max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof(line), f))
		if (strstr(line, "/dev/infiniband/uverbs") &&
		    sscanf(line, "%lx-%lx %*s %llx", &lo[n], &hi[n],
			   &off[n]) == 3)
			n++;
	fclose(f);
	return n;
}

static unsigned long lo[MAX_MAPS], hi[MAX_MAPS];
static unsigned long long off[MAX_MAPS];
static void *kept[MAX_MAPS];

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int rounds, entries, i, n, r;

	if (argc != 4) {
		fprintf(stderr, "usage: %s DEVICE ROUNDS ENTRIES\n", argv[0]);
		return 2;
	}
	rounds = atoi(argv[2]);
	entries = atoi(argv[3]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "cannot open %s\n", argv[1]);
		return 1;
	}
	for (r = 0; r < rounds && r < MAX_MAPS; r++) {
		struct ibv_cq *cq = ibv_create_cq(ctx, entries, NULL, NULL, 0);
		int before_n, j;

		if (!cq) {
			printf("stopped: create %d: %s\n", r + 1,
			       strerror(errno));
			break;
		}
		/*
		 * The ring is the mapping at the highest file offset: ib_core
		 * hands out mmap offsets upwards and never reuses one.
		 */
		before_n = uverbs_maps(lo, hi, off, MAX_MAPS);
		for (i = 0, j = -1; i < before_n; i++)
			if (j < 0 || off[i] > off[j])
				j = i;
		if (j < 0) {
			printf("stopped: no uverbs mapping (not mapped?)\n");
			ibv_destroy_cq(cq);
			break;
		}
		kept[r] = mmap(NULL, hi[j] - lo[j], PROT_READ, MAP_SHARED,
			       ctx->cmd_fd, off[j]);
		ibv_destroy_cq(cq);
		if (kept[r] == MAP_FAILED) {
			printf("stopped: mmap %d: %s\n", r + 1,
			       strerror(errno));
			break;
		}
		printf("kept %d\n", r + 1);
	}
	/* The kept mappings go with the process. */
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
