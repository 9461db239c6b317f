/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * TAP output of the libibverbs test programs: tap() prints one result as
 * "ok N - what" or "not ok N - what" (flushed, so a crash loses none),
 * tap_end() the plan and the program's exit status.  Each program
 * includes it once.
 */
#ifndef SROCE_TEST_TAP_H
#define SROCE_TEST_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tap_n, tap_failed;

static inline void tap(int cond, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static inline void tap(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		tap_failed++;
}

/* The plan, last; the exit status: 1 when a result failed. */
static inline int tap_end(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif /* SROCE_TEST_TAP_H */
