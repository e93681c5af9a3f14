// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Messages about one pod or cgroup, logged once per key and rate-limited per kind, without a
 * hard cap that would turn into a flood (pods_first_time). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arith.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "pods/internal.h"

static uint64_t fnv1a(const char *a, const char *b)
{
	uint64_t hash = 0xcbf29ce484222325ull;

	for (const char *p = a; *p; p++)
		hash = (hash ^ (unsigned char)*p) * 0x100000001b3ull;
	hash = (hash ^ 0xff) * 0x100000001b3ull;	/* separator: ("ab","c") != ("a","bc") */
	for (const char *p = b; p && *p; p++)
		hash = (hash ^ (unsigned char)*p) * 0x100000001b3ull;
	return hash;
}

/* The most keys remembered: what the tables can produce, so nothing a refresh asks about
 * again is forgotten, and no more. */
static size_t warned_bound(const struct pods *pods)
{
	size_t per = pods->cap_items + pods->cap_prev + pods->meta.n_items;
	size_t bound = per * WARNED_PER_POD;

	return bound > WARNED_MIN ? bound : WARNED_MIN;
}

static struct warned_key *warned_slot(struct warned_key *set, size_t cap, uint64_t hash)
{
	size_t i = (size_t)hash & (cap - 1);

	while (set[i].hash && set[i].hash != hash)
		i = (i + 1) & (cap - 1);
	return &set[i];
}

/* Rebuild into cap slots; with `expire`, drop the keys not asked about in this refresh or
 * the one before (their pods are gone: if the condition comes back, it is logged again). */
static int warned_rehash(struct pods *pods, size_t cap, bool expire)
{
	struct warned_key *set = calloc(cap, sizeof(*set));
	size_t n = 0;

	if (!set)
		return -ENOMEM;
	for (size_t i = 0; i < pods->cap_warned; i++) {
		const struct warned_key *key = &pods->warned[i];

		if (!key->hash || (expire && pods->warn_generation - key->seen > 1))
			continue;
		*warned_slot(set, cap, key->hash) = *key;
		n++;
	}
	free(pods->warned);
	pods->warned = set;
	pods->cap_warned = cap;
	pods->n_warned = n;
	return 0;
}

/* Remember hash. false when it cannot be (no memory, or the bound reached with every key
 * still in use): the token bucket alone then bounds the lines. */
static bool warned_insert(struct pods *pods, uint64_t hash)
{
	size_t bound = warned_bound(pods);

	if (pods->n_warned + 1 > bound) {
		if (warned_rehash(pods, pods->cap_warned, true) || pods->n_warned + 1 > bound)
			return false;
	}
	/* At most half full. */
	if ((pods->n_warned + 1) * 2 > pods->cap_warned &&
	    warned_rehash(pods, pods->cap_warned ? pods->cap_warned * 2 : 256, false))
		return false;
	*warned_slot(pods->warned, pods->cap_warned, hash) =
		(struct warned_key){ .hash = hash, .seen = pods->warn_generation };
	pods->n_warned++;
	return true;
}

static struct warn_bucket *warn_bucket_of(struct pods *pods, const char *kind)
{
	struct warn_bucket *b;
	size_t i;

	for (i = 0; i < WARN_KINDS; i++) {
		b = &pods->warn_buckets[i];
		if (!b->kind || strcmp(b->kind, kind) == 0)
			break;
	}
	if (i == WARN_KINDS)
		return &pods->warn_buckets[WARN_KINDS - 1];	/* shared by the rest */
	if (!b->kind) {
		snprintf(b->kind_copy, sizeof(b->kind_copy), "%s", kind);
		b->kind = b->kind_copy;
		b->tokens_ns = WARN_BURST * WARN_REFILL_NS;
		b->last_ns = clock_monotonic_ns();
	}
	return b;
}

/* One line of this kind allowed now? Refills at one per WARN_REFILL_NS up to WARN_BURST. */
static bool warn_bucket_take(struct warn_bucket *b)
{
	int64_t now = clock_monotonic_ns();

	if (now > b->last_ns) {
		b->tokens_ns = sat_add_i64(b->tokens_ns, now - b->last_ns);
		if (b->tokens_ns > WARN_BURST * WARN_REFILL_NS)
			b->tokens_ns = WARN_BURST * WARN_REFILL_NS;
		b->last_ns = now;
	}
	if (b->tokens_ns < WARN_REFILL_NS) {
		b->held++;
		return false;
	}
	b->tokens_ns -= WARN_REFILL_NS;
	return true;
}

/*
 * true the first time (kind, key) is seen: the caller logs then. Rate-limited by key (a hash
 * set, bounded by the tables and expiring keys no longer asked about) and by kind (a token
 * bucket): no set of pods, however large, turns this into a line per pod per evaluation.
 */
bool pods_first_time(struct pods *pods, const char *kind, const char *key)
{
	uint64_t hash = fnv1a(kind, key);
	struct warn_bucket *bucket;
	struct warned_key *slot;

	if (!hash)
		hash = 1;	/* 0 marks an empty slot */
	if (pods->cap_warned) {
		slot = warned_slot(pods->warned, pods->cap_warned, hash);
		if (slot->hash) {
			slot->seen = pods->warn_generation;
			return false;
		}
	}
	bucket = warn_bucket_of(pods, kind);
	if (!warn_bucket_take(bucket))
		return false;	/* not remembered: it gets its line when the rate allows */
	warned_insert(pods, hash);
	if (bucket->held) {
		log_warn("pods: %zu more \"%s\" messages held back by the rate limit (%d, then one "
			 "a second)", bucket->held, bucket->kind, WARN_BURST);
		bucket->held = 0;
	}
	return true;
}

