/*
 * bpf_hist.c — quantiles of the bpf source's span histograms
 * (probe_bpf.h). Plain arithmetic on the shared bucket layout: built with
 * or without bpf.
 */
#include "probe_bpf.h"

#include <linux/types.h>
#include <math.h>

#include "loopstat_bpf.h"

_Static_assert(PROBE_BPF_HIST == LSB_HIST, "the histogram's public size is the kernel's");
_Static_assert(PROBE_BPF_STACK == LSB_STACK, "a stall's frames are the kernel's");

uint64_t probe_bpf_bucket_lo(int idx)
{
	return idx <= 0 ? 0 : lsb_bucket_lo((__u32)idx);
}

uint64_t probe_bpf_quantile(const uint32_t *hist, double q, uint64_t max_ns, uint64_t *lo, uint64_t *hi)
{
	uint64_t n = 0;
	int top = -1;
	for (int i = 0; i < PROBE_BPF_HIST; i++) {
		n += hist[i];
		if (hist[i])
			top = i;
	}
	if (lo)
		*lo = 0;
	if (hi)
		*hi = 0;
	if (!n || q <= 0 || q > 1)
		return 0;
	uint64_t rank = (uint64_t)ceil(q * (double)n), seen = 0;
	if (rank < 1)
		rank = 1;
	int idx = 0;
	for (; idx < PROBE_BPF_HIST; idx++) {
		seen += hist[idx];
		if (seen >= rank)
			break;
	}
	uint64_t b_lo = probe_bpf_bucket_lo(idx);
	uint64_t b_hi = idx + 1 < PROBE_BPF_HIST ? probe_bpf_bucket_lo(idx + 1) : b_lo * 2;
	if (lo)
		*lo = b_lo;
	if (hi)
		*hi = b_hi;
	/* the largest span is known exactly: the last rank in the top bucket is it */
	if (max_ns >= b_lo && max_ns < b_hi && idx == top && rank == n)
		return max_ns;
	/* the rank's place among the bucket's spans, taken as spread evenly
	 * across it (each at the middle of its share) */
	double before = (double)(seen - hist[idx]);
	double v = (double)b_lo + ((double)rank - before - 0.5) / (double)hist[idx] * (double)(b_hi - b_lo);
	uint64_t est = (uint64_t)v;
	return max_ns >= b_lo && max_ns < est ? max_ns : est;
}

void probe_bpf_hist_sub(uint32_t *after, const uint32_t *before)
{
	for (int i = 0; i < PROBE_BPF_HIST; i++)
		after[i] = after[i] >= before[i] ? after[i] - before[i] : 0;
}
